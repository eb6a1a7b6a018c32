//! The admission webhooks (k8s.io/apiserver/pkg/admission/plugin/webhook): the mutating and
//! validating configurations followed from storage, which webhooks a write matches (rules,
//! scope, namespaceSelector, objectSelector, matchConditions), the calls with their
//! failurePolicy and timeout, JSON patches and reinvocation.

use super::policies::{self, Binding, Params, Policy};
use super::review::{self, Answer};
use super::{exempt, Attributes, Error, Request};
use crate::api::trace;
use crate::metrics::admission::WebhookOutcome;
use crate::registry::follow::{follow, Synced};
use crate::registry::webhook::Endpoint;
use crate::registry::{GenericStore, Registry, Resource};
use kube::core::{Selector, SelectorExt};
use kube_cel::{CompiledVapExpression, VapError, VapEvaluator, VapExpression};
use opentelemetry::KeyValue;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::Duration;

/// The audit annotation prefix of a mutating webhook's call (MutationAuditAnnotationPrefix).
const MUTATION_ANNOTATION_PREFIX: &str = "mutation.webhook.admission.k8s.io/";

/// The audit annotation key of the (round, index)-th webhook call under `prefix`.
fn call_key(prefix: &str, (round, index): (usize, usize)) -> String {
    format!("{prefix}round_{round}_index_{index}")
}

/// The group of the configurations.
const GROUP: &str = "admissionregistration.k8s.io";

/// Which configurations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// mutatingwebhookconfigurations.
    Mutating,
    /// validatingwebhookconfigurations.
    Validating,
    /// validatingadmissionpolicies.
    Policies,
    /// validatingadmissionpolicybindings.
    PolicyBindings,
}

impl Kind {
    /// Every kind.
    pub(crate) const ALL: [Kind; 4] = [
        Kind::Mutating,
        Kind::Validating,
        Kind::Policies,
        Kind::PolicyBindings,
    ];

    fn resource(self) -> &'static str {
        match self {
            Kind::Mutating => "mutatingwebhookconfigurations",
            Kind::Validating => "validatingwebhookconfigurations",
            Kind::Policies => "validatingadmissionpolicies",
            Kind::PolicyBindings => "validatingadmissionpolicybindings",
        }
    }
}

/// The policies in force, each with a binding of it.
type Bound = Arc<Vec<(Arc<Policy>, Arc<Binding>)>>;

/// A compiled matchCondition.
type Condition = (String, Result<CompiledVapExpression, VapError>);

/// One webhook of a configuration, ready to call.
struct Hook {
    name: String,
    /// The configuration it is part of.
    configuration: String,
    rules: Vec<Value>,
    namespace_selector: Option<Selector>,
    object_selector: Option<Selector>,
    conditions: Vec<Condition>,
    /// failurePolicy Fail (the default).
    fail: bool,
    timeout: Duration,
    /// sideEffects None or NoneOnDryRun: dry runs may reach it.
    dry_run_ok: bool,
    /// The AdmissionReview version it takes.
    version: &'static str,
    /// reinvocationPolicy IfNeeded.
    if_needed: bool,
    endpoint: Result<Arc<Endpoint>, String>,
}

/// The webhooks in force, kept from storage.
#[derive(Default)]
pub(crate) struct Chain {
    mutating: RwLock<Arc<Vec<Arc<Hook>>>>,
    validating: RwLock<Arc<Vec<Arc<Hook>>>>,
    /// The policies with their bindings.
    bound: RwLock<Bound>,
    /// The stored configurations of each kind by name.
    configs: Mutex<[BTreeMap<String, Value>; 4]>,
    /// What params are read from.
    registry: OnceLock<std::sync::Weak<Registry>>,
    /// Endpoints by client configuration, kept across changes so connections are reused.
    endpoints: Mutex<HashMap<String, Arc<Endpoint>>>,
    namespaces: OnceLock<Arc<GenericStore>>,
    synced: Synced,
}

pub(super) fn selector(v: Option<&Value>) -> Option<Selector> {
    let v = v.filter(|v| v.as_object().is_some_and(|o| !o.is_empty()))?;
    let parsed: k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector =
        serde_json::from_value(v.clone()).ok()?;
    Selector::try_from(parsed).ok()
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn strings(v: &Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

impl Chain {
    /// Whether no webhook is configured (the write path skips admission).
    pub(crate) fn is_empty(&self) -> bool {
        let read = |l: &RwLock<Arc<Vec<Arc<Hook>>>>| l.read().map(|h| h.is_empty()).unwrap_or(true);
        read(&self.mutating)
            && read(&self.validating)
            && self.bound.read().map(|b| b.is_empty()).unwrap_or(true)
    }

    /// Whether any mutating webhook is configured.
    pub(crate) fn has_mutating(&self) -> bool {
        !self.hooks(Kind::Mutating).is_empty()
    }

    /// Whether any validating webhook or bound policy is configured.
    pub(crate) fn has_validating(&self) -> bool {
        !self.hooks(Kind::Validating).is_empty()
            || self.bound.read().map(|b| !b.is_empty()).unwrap_or(false)
    }

    /// Whether any webhook, mutating or validating, is configured.
    pub(crate) fn has_webhooks(&self) -> bool {
        !self.hooks(Kind::Mutating).is_empty() || !self.hooks(Kind::Validating).is_empty()
    }

    fn hooks(&self, kind: Kind) -> Arc<Vec<Arc<Hook>>> {
        let lock = match kind {
            Kind::Mutating => &self.mutating,
            _ => &self.validating,
        };
        lock.read().map(|h| h.clone()).unwrap_or_default()
    }

    /// Waits until both kinds have been listed once.
    pub(crate) async fn wait_synced(&self) {
        self.synced.wait(Kind::ALL.len()).await;
    }

    /// Follows one kind of configuration in `registry` until the future is dropped or
    /// storage fails.
    ///
    /// # Errors
    ///
    /// The kind is not served, or reading it failed (the caller retries).
    pub(crate) async fn follow(
        &self,
        registry: &Arc<Registry>,
        kind: Kind,
    ) -> Result<(), crate::registry::Error> {
        let _ = self.registry.set(Arc::downgrade(registry));
        let store = |group: &str, resource: &str| match registry
            .resources()
            .lookup(group, "v1", resource)?
            .as_ref()
        {
            Resource::Stored(s) => Some(Arc::clone(s)),
            Resource::Review(_) => None,
        };
        if let Some(ns) = store("", "namespaces") {
            let _ = self.namespaces.set(ns);
        }
        let Some(configs) = store(GROUP, kind.resource()) else {
            // Not served (yet): nothing to follow, and nothing configured.
            self.synced.mark(kind as usize);
            std::future::pending::<()>().await;
            return Ok(());
        };
        let name =
            |o: &Value| str_of(o.get("metadata").unwrap_or(&Value::Null), "name").to_string();
        follow(&configs, &|change| {
            {
                let mut all = self.configs.lock().unwrap_or_else(|p| p.into_inner());
                change.mirror(&mut all[kind as usize], name, Value::clone);
            }
            self.rebuild(kind);
            self.synced.mark(kind as usize);
        })
        .await
    }

    /// Rebuilds the hooks of `kind` from the configurations, in name order.
    fn rebuild(&self, kind: Kind) {
        if matches!(kind, Kind::Policies | Kind::PolicyBindings) {
            return self.rebind();
        }
        let configs = self.configs.lock().unwrap_or_else(|p| p.into_inner())[kind as usize].clone();
        let mut hooks = Vec::new();
        for (configuration, config) in &configs {
            for w in config
                .get("webhooks")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                hooks.push(Arc::new(self.hook(kind, configuration, w)));
            }
        }
        let lock = match kind {
            Kind::Mutating => &self.mutating,
            _ => &self.validating,
        };
        *lock.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(hooks);
    }

    /// Compiles the policies and pairs each binding with its policy, in binding name order.
    fn rebind(&self) {
        let (policies, bindings) = {
            let all = self.configs.lock().unwrap_or_else(|p| p.into_inner());
            (
                all[Kind::Policies as usize].clone(),
                all[Kind::PolicyBindings as usize].clone(),
            )
        };
        let policies: BTreeMap<&String, Arc<Policy>> = policies
            .iter()
            .map(|(name, p)| (name, Arc::new(Policy::new(p))))
            .collect();
        let bound = bindings
            .values()
            .filter_map(|b| {
                let binding = Binding::new(b);
                let policy = policies.get(&binding.policy().to_string())?.clone();
                Some((policy, Arc::new(binding)))
            })
            .collect();
        *self.bound.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(bound);
    }

    fn hook(&self, kind: Kind, configuration: &str, w: &Value) -> Hook {
        let timeout = Duration::from_secs(
            w.get("timeoutSeconds")
                .and_then(Value::as_u64)
                .unwrap_or(10)
                .clamp(1, 30),
        );
        let versions = strings(w, "admissionReviewVersions");
        let version = if versions.is_empty() || versions.iter().any(|v| v == "v1") {
            "v1"
        } else {
            "v1beta1"
        };
        let compiler = VapEvaluator::builder().build();
        let conditions = w
            .get("matchConditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|c| {
                let expr = VapExpression {
                    expression: str_of(c, "expression").to_string(),
                    message: None,
                    message_expression: None,
                };
                // One result per expression given.
                let compiled = compiler.compile_expressions(std::slice::from_ref(&expr));
                Some((str_of(c, "name").to_string(), compiled.into_iter().next()?))
            })
            .collect();
        Hook {
            name: str_of(w, "name").to_string(),
            configuration: configuration.to_string(),
            rules: w
                .get("rules")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
            namespace_selector: selector(w.get("namespaceSelector")),
            object_selector: selector(w.get("objectSelector")),
            conditions,
            fail: str_of(w, "failurePolicy") != "Ignore",
            timeout,
            dry_run_ok: matches!(str_of(w, "sideEffects"), "None" | "NoneOnDryRun"),
            version,
            if_needed: kind == Kind::Mutating && str_of(w, "reinvocationPolicy") == "IfNeeded",
            endpoint: self.endpoint(w.get("clientConfig"), timeout),
        }
    }

    /// The endpoint of a clientConfig; upstream's client adds `?timeout=<n>s` to the URL.
    fn endpoint(&self, config: Option<&Value>, timeout: Duration) -> Result<Arc<Endpoint>, String> {
        let mut config = config.cloned().unwrap_or(Value::Null);
        let with_timeout = |u: &str| {
            let sep = if u.contains('?') { '&' } else { '?' };
            format!("{u}{sep}timeout={}s", timeout.as_secs())
        };
        if let Some(url) = config.get("url").and_then(Value::as_str).map(with_timeout) {
            config["url"] = url.into();
        } else if let Some(svc) = config.get_mut("service").filter(|s| s.is_object()) {
            let path = with_timeout(str_of(svc, "path"));
            svc["path"] = path.into();
        }
        let key = config.to_string();
        let mut endpoints = self.endpoints.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(e) = endpoints.get(&key) {
            return Ok(e.clone());
        }
        let parsed = serde_json::from_value(config).map_err(|e| e.to_string())?;
        let mut endpoint = Endpoint::new(&parsed).map_err(|e| e.to_string())?;
        if let Some(registry) = self.registry.get().and_then(std::sync::Weak::upgrade) {
            endpoint = endpoint.resolving(registry.services());
        }
        let endpoint = Arc::new(endpoint);
        endpoints.insert(key, endpoint.clone());
        Ok(endpoint)
    }

    /// Namespace `name`, when it can be read.
    async fn namespace(&self, name: &str) -> Option<Arc<crate::registry::Decoded>> {
        let store = self.namespaces.get()?;
        let ctx = crate::registry::Context::default();
        store.get_shared(&ctx, name).await.ok()
    }
}

impl Params for Chain {
    fn find(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
        name: Option<&str>,
        selector: Option<&Selector>,
    ) -> futures::future::BoxFuture<'_, Result<Vec<Value>, String>> {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let store = self
            .registry
            .get()
            .and_then(std::sync::Weak::upgrade)
            .and_then(|r| {
                r.resources().iter().find_map(|res| match res.as_ref() {
                    Resource::Stored(s) => {
                        let i = s.strategy().info();
                        (i.group == group && i.version == version && i.kind == kind)
                            .then(|| Arc::clone(s))
                    }
                    Resource::Review(_) => None,
                })
            });
        let (namespace, name) = (namespace.to_string(), name.map(str::to_string));
        let selector = selector.cloned();
        let missing = format!("failed to find resource for param kind {kind} in {api_version}");
        Box::pin(async move {
            let store = store.ok_or(missing)?;
            let ctx = crate::registry::Context {
                namespace: if store.strategy().info().namespaced {
                    namespace
                } else {
                    String::new()
                },
                ..crate::registry::Context::default()
            };
            if let Some(name) = name {
                return Ok(match store.get_shared(&ctx, &name).await {
                    Ok(obj) => vec![obj.obj.clone()],
                    Err(crate::registry::Error::NotFound { .. }) => Vec::new(),
                    Err(e) => return Err(e.to_string()),
                });
            }
            let list = store
                .list(&ctx, &crate::registry::ListOptions::default())
                .await
                .map_err(|e| e.to_string())?;
            Ok(list
                .items
                .iter()
                .filter(|d| {
                    selector
                        .as_ref()
                        .is_none_or(|s| s.matches(&labels(Some(&d.obj))))
                })
                .map(|d| d.obj.clone())
                .collect())
        })
    }
}

pub(super) fn labels(obj: Option<&Value>) -> BTreeMap<String, String> {
    obj.and_then(|o| o.pointer("/metadata/labels"))
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

/// Whether one rule (RuleWithOperations) covers the write (rules.Matcher).
pub(super) fn rule_matches(rule: &Value, attrs: &Attributes<'_>, subresource: &str) -> bool {
    let has = |key: &str, want: &str| strings(rule, key).iter().any(|v| v == "*" || v == want);
    let resource = strings(rule, "resources").iter().any(|r| {
        let (res, sub) = r.split_once('/').unwrap_or((r, ""));
        (res == "*" || res == attrs.resource) && (sub == "*" || sub == subresource)
    });
    let scope = match str_of(rule, "scope") {
        "Cluster" => attrs.namespace.is_empty(),
        "Namespaced" => !attrs.namespace.is_empty(),
        _ => true,
    };
    has("operations", attrs.operation.as_str())
        && has("apiGroups", attrs.group)
        && has("apiVersions", attrs.version)
        && resource
        && scope
}

/// How a webhook's matchConditions decided.
enum Conditions {
    Call,
    Skip,
    Failed(String),
}

/// The write's namespace, read at most once per admission pass (None when unreadable).
type NamespaceCell = tokio::sync::OnceCell<Option<Arc<crate::registry::Decoded>>>;

impl Hook {
    /// Whether the write is one this webhook asks for (rules, selectors), before its
    /// matchConditions.
    async fn matches(
        &self,
        (chain, ns): (&Chain, &NamespaceCell),
        req: &Request,
        attrs: &Attributes<'_>,
        object: Option<&Value>,
    ) -> bool {
        if !self
            .rules
            .iter()
            .any(|r| rule_matches(r, attrs, &req.subresource))
        {
            return false;
        }
        if let Some(sel) = &self.object_selector {
            let on = |o: Option<&Value>| o.is_some() && sel.matches(&labels(o));
            if !on(object) && !on(attrs.old_object) {
                return false;
            }
        }
        if let Some(sel) = &self.namespace_selector {
            let is_namespace = attrs.group.is_empty() && attrs.resource == "namespaces";
            if is_namespace {
                if !sel.matches(&labels(object.or(attrs.old_object))) {
                    return false;
                }
            } else if !attrs.namespace.is_empty() {
                let namespace = ns.get_or_init(|| chain.namespace(attrs.namespace)).await;
                if !sel.matches(&labels(namespace.as_ref().map(|n| &n.obj))) {
                    return false;
                }
            }
        }
        true
    }

    /// The matchConditions: all true → call; one false → skip; an error → per failurePolicy.
    fn conditions(
        &self,
        req: &Request,
        attrs: &Attributes<'_>,
        object: Option<&Value>,
    ) -> Conditions {
        if self.conditions.is_empty() {
            return Conditions::Call;
        }
        let mut builder = VapEvaluator::builder()
            .object(object.cloned().unwrap_or(Value::Null))
            .request(kube_cel::AdmissionRequest {
                operation: attrs.operation.as_str().into(),
                username: req.user.name.clone(),
                uid: req.user.uid.clone(),
                groups: req.user.groups.clone(),
                name: attrs.name.into(),
                namespace: attrs.namespace.into(),
                dry_run: attrs.dry_run,
                kind: kube_cel::GroupVersionKind {
                    group: attrs.group.into(),
                    version: attrs.version.into(),
                    kind: attrs.kind.into(),
                },
                resource: kube_cel::GroupVersionResource {
                    group: attrs.group.into(),
                    version: attrs.version.into(),
                    resource: attrs.resource.into(),
                },
            });
        if let Some(old) = attrs.old_object {
            builder = builder.old_object(old.clone());
        }
        let evaluator = builder.build();
        let compiled: Vec<_> = self.conditions.iter().map(|(_, c)| c).collect();
        let mut failure = None;
        for ((name, _), c) in self.conditions.iter().zip(compiled) {
            // The interpreter panics on some expressions (object construction): an error.
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                evaluator.evaluate_compiled(std::slice::from_ref(c)).pop()
            }))
            .unwrap_or_else(|_| {
                failure.get_or_insert_with(|| {
                    format!("matchCondition {name:?} uses CEL that kapi cannot evaluate yet")
                });
                None
            });
            match result {
                Some(r) if r.passed => {}
                Some(r)
                    if r.message
                        .as_deref()
                        .is_none_or(|m| m.starts_with("validation expression")) =>
                {
                    return Conditions::Skip;
                }
                Some(r) => {
                    failure.get_or_insert_with(|| {
                        format!(
                            "matchCondition {name:?} failed: {}",
                            r.message.unwrap_or_default()
                        )
                    });
                }
                None => {}
            }
        }
        match failure {
            Some(f) => Conditions::Failed(f),
            None => Conditions::Call,
        }
    }

    /// Calls the webhook: its checked answer, or why the call failed.
    async fn call(
        &self,
        mutating: bool,
        req: &Request,
        attrs: &Attributes<'_>,
        object: Option<&Value>,
    ) -> Result<Answer, String> {
        let started = std::time::Instant::now();
        let result = self.call_once(mutating, req, attrs, object).await;
        let outcome = match &result {
            Ok(answer) if answer.allowed => WebhookOutcome::Allowed,
            Ok(answer) => WebhookOutcome::Rejected(review::denied_code(answer.status.as_ref())),
            Err(_) => WebhookOutcome::CallFailed {
                fail_closed: self.fail,
            },
        };
        crate::metrics::global().admission.webhook(
            &self.name,
            mutating,
            attrs.operation.as_str(),
            outcome,
            started.elapsed(),
        );
        result
    }

    /// [`Self::call`] without the metrics.
    async fn call_once(
        &self,
        mutating: bool,
        req: &Request,
        attrs: &Attributes<'_>,
        object: Option<&Value>,
    ) -> Result<Answer, String> {
        let endpoint = self
            .endpoint
            .as_ref()
            .map_err(|e| format!("failed to call webhook: {e}"))?;
        let uid = uuid::Uuid::new_v4().to_string();
        let body = review::request(self.version, &uid, req, attrs, object);
        let name = if mutating {
            "Call mutating webhook"
        } else {
            "Call validating webhook"
        };
        let answer = trace::in_span(
            name,
            || self.span_attributes(req, attrs, &uid),
            endpoint.post_json(body, self.timeout),
        )
        .await
        .map_err(|e| format!("failed to call webhook: {e}"))?;
        review::answer(self.version, &uid, mutating, &answer)
            .map_err(|e| format!("received invalid webhook response: {e}"))
    }

    /// The attributes of upstream's "Call mutating/validating webhook" span.
    fn span_attributes(&self, req: &Request, attrs: &Attributes<'_>, uid: &str) -> Vec<KeyValue> {
        // schema.GroupVersionResource's String().
        let resource = format!(
            "{}/{}, Resource={}",
            attrs.group, attrs.version, attrs.resource
        );
        vec![
            KeyValue::new("configuration", self.configuration.clone()),
            KeyValue::new("webhook", self.name.clone()),
            KeyValue::new("resource", resource),
            KeyValue::new("subresource", req.subresource.clone()),
            KeyValue::new("operation", attrs.operation.as_str()),
            KeyValue::new("UID", uid.to_string()),
        ]
    }

    /// Whether the webhook decides this write: it matches, a dry run may reach it, and its
    /// matchConditions hold. A call failure under failurePolicy Fail is an error.
    async fn decides(
        &self,
        namespace: (&Chain, &NamespaceCell),
        req: &Request,
        attrs: &Attributes<'_>,
        object: Option<&Value>,
    ) -> Result<bool, Error> {
        if !self.matches(namespace, req, attrs, object).await {
            return Ok(false);
        }
        if attrs.dry_run && !self.dry_run_ok {
            return Err(Error::DryRunUnsupported(self.name.clone()));
        }
        match self.conditions(req, attrs, object) {
            Conditions::Call => Ok(true),
            Conditions::Skip => Ok(false),
            Conditions::Failed(cause) => self.failed(cause).map(|()| false),
        }
    }

    /// A failed call: an error under failurePolicy Fail, logged and passed over under Ignore.
    fn failed(&self, cause: String) -> Result<(), Error> {
        if self.fail {
            tracing::warn!(webhook = %self.name, error = %cause, "Failed calling webhook, failing closed");
            Err(Error::Call {
                webhook: self.name.clone(),
                cause,
            })
        } else {
            tracing::warn!(webhook = %self.name, error = %cause, "Failed calling webhook, failing open");
            Ok(())
        }
    }

    /// A call that failed ([`Self::failed`]); failing open is recorded in the request's
    /// audit event under `failed_open_key`.
    fn call_failed(
        &self,
        req: &Request,
        failed_open_key: String,
        cause: String,
    ) -> Result<(), Error> {
        self.failed(cause)?;
        req.annotate(failed_open_key, self.name.clone());
        Ok(())
    }

    /// The webhook's `auditAnnotations`, each under `<webhook name>/<key>`.
    fn annotate(&self, req: &Request, annotations: Vec<(String, String)>) {
        for (key, value) in annotations {
            req.annotate(format!("{}/{key}", self.name), value);
        }
    }
}

/// Runs one admission step, mutating (admit) or validating, timed in the metrics
/// (apiserver_admission_step_admission_duration_seconds).
async fn timed_step(
    mutating: bool,
    attrs: &Attributes<'_>,
    step: impl std::future::Future<Output = Result<(), crate::registry::Error>>,
) -> Result<(), crate::registry::Error> {
    let started = std::time::Instant::now();
    let result = step.await;
    crate::metrics::global().admission.step(
        mutating,
        attrs.operation.as_str(),
        result.is_err(),
        started.elapsed(),
    );
    result
}

impl Request {
    /// Mutating admission of `object` (None for a delete): each matching mutating webhook in
    /// order, its JSON patch applied and the result made canonical again by `redecode`; the
    /// IfNeeded webhooks are called once more if a later one changed the object.
    pub(crate) async fn mutate(
        &self,
        attrs: &Attributes<'_>,
        object: &mut Option<Value>,
        redecode: &(dyn Fn(Value) -> Result<Value, crate::registry::Error> + Sync),
    ) -> Result<(), crate::registry::Error> {
        if exempt(attrs.group, attrs.resource) {
            return Ok(());
        }
        timed_step(true, attrs, self.mutate_all(attrs, object, redecode)).await
    }

    /// [`Self::mutate`] without the metrics.
    async fn mutate_all(
        &self,
        attrs: &Attributes<'_>,
        object: &mut Option<Value>,
        redecode: &(dyn Fn(Value) -> Result<Value, crate::registry::Error> + Sync),
    ) -> Result<(), crate::registry::Error> {
        let hooks = self.chain.hooks(Kind::Mutating);
        let ns = NamespaceCell::new();
        let mut changes = 0usize;
        // IfNeeded webhooks called, with the number of changes made before they were.
        let mut called: Vec<(usize, usize)> = Vec::new();
        for (i, hook) in hooks.iter().enumerate() {
            if !hook
                .decides((&self.chain, &ns), self, attrs, object.as_ref())
                .await?
            {
                continue;
            }
            if self
                .mutate_once(hook, (0, i), attrs, object, redecode)
                .await?
            {
                changes += 1;
            }
            if hook.if_needed {
                called.push((i, changes));
            }
        }
        for (i, seen) in called {
            if changes > seen {
                let hook = &hooks[i];
                if self
                    .mutate_once(hook, (1, i), attrs, object, redecode)
                    .await?
                {
                    changes += 1;
                }
            }
        }
        Ok(())
    }

    /// One call of a mutating webhook, the `at` = (round, index)-th, recorded in the audit
    /// event as upstream's dispatcher does; whether it changed the object.
    async fn mutate_once(
        &self,
        hook: &Hook,
        at: (usize, usize),
        attrs: &Attributes<'_>,
        object: &mut Option<Value>,
        redecode: &(dyn Fn(Value) -> Result<Value, crate::registry::Error> + Sync),
    ) -> Result<bool, crate::registry::Error> {
        let result = self.call_mutating(hook, at, attrs, object, redecode).await;
        let mutated = matches!(result, Ok(true));
        self.annotate(
            call_key(MUTATION_ANNOTATION_PREFIX, at),
            serde_json::json!({
                "configuration": hook.configuration,
                "webhook": hook.name,
                "mutated": mutated,
            })
            .to_string(),
        );
        result
    }

    /// [`Self::mutate_once`] without the mutation annotation.
    async fn call_mutating(
        &self,
        hook: &Hook,
        at: (usize, usize),
        attrs: &Attributes<'_>,
        object: &mut Option<Value>,
        redecode: &(dyn Fn(Value) -> Result<Value, crate::registry::Error> + Sync),
    ) -> Result<bool, crate::registry::Error> {
        let failed_open_key = || call_key(&format!("failed-open.{MUTATION_ANNOTATION_PREFIX}"), at);
        let answer = match hook.call(true, self, attrs, object.as_ref()).await {
            Ok(a) => a,
            Err(cause) => {
                return hook
                    .call_failed(self, failed_open_key(), cause)
                    .map(|()| false)
                    .map_err(Into::into)
            }
        };
        hook.annotate(self, answer.audit_annotations);
        self.warn(answer.warnings);
        if !answer.allowed {
            return Err(review::denied(&hook.name, answer.status.as_ref()).into());
        }
        let (Some(patch), Some(current)) = (answer.patch, object.as_ref()) else {
            return Ok(false);
        };
        let patched = serde_json::from_slice::<json_patch::Patch>(&patch)
            .map_err(|e| e.to_string())
            .and_then(|p| {
                let mut doc = current.clone();
                json_patch::patch(&mut doc, &p).map_err(|e| e.to_string())?;
                Ok(doc)
            });
        let patched = match patched {
            Ok(p) => p,
            Err(e) => {
                return hook
                    .call_failed(self, failed_open_key(), format!("JSONPatch failed: {e}"))
                    .map(|()| false)
                    .map_err(Into::into)
            }
        };
        if &patched == current {
            return Ok(false);
        }
        *object = Some(redecode(patched)?);
        Ok(true)
    }

    /// Validating admission of `object`: every matching validating webhook, called in
    /// parallel; the first refusal (in configuration order) wins.
    pub(crate) async fn validate(
        &self,
        attrs: &Attributes<'_>,
        object: Option<&Value>,
    ) -> Result<(), crate::registry::Error> {
        if exempt(attrs.group, attrs.resource) {
            return Ok(());
        }
        timed_step(false, attrs, self.validate_all(attrs, object)).await
    }

    /// [`Self::validate`] without the metrics.
    async fn validate_all(
        &self,
        attrs: &Attributes<'_>,
        object: Option<&Value>,
    ) -> Result<(), crate::registry::Error> {
        let bound = self
            .chain
            .bound
            .read()
            .map(|b| b.clone())
            .unwrap_or_default();
        let ns = NamespaceCell::new();
        if !bound.is_empty() {
            // The namespace is read only when a selector or an expression looks at it.
            let wanted = bound
                .iter()
                .any(|(p, b)| p.needs_namespace() || b.needs_namespace());
            let namespace = match attrs.namespace {
                name if wanted && !name.is_empty() => {
                    ns.get_or_init(|| self.chain.namespace(name)).await
                }
                _ => &None,
            };
            let namespace = namespace.as_ref().map(|n| &n.obj);
            policies::validate(&bound, self.chain.as_ref(), self, attrs, object, namespace).await?;
        }
        let hooks = self.chain.hooks(Kind::Validating);
        let mut deciding = Vec::new();
        for hook in hooks.iter() {
            if hook
                .decides((&self.chain, &ns), self, attrs, object)
                .await?
            {
                deciding.push(hook.clone());
            }
        }
        let calls = deciding.iter().enumerate().map(|(i, hook)| async move {
            match hook.call(false, self, attrs, object).await {
                Ok(answer) => {
                    hook.annotate(self, answer.audit_annotations);
                    self.warn(answer.warnings);
                    if answer.allowed {
                        Ok(())
                    } else {
                        Err(review::denied(&hook.name, answer.status.as_ref()))
                    }
                }
                Err(cause) => hook.call_failed(
                    self,
                    call_key("failed-open.validating.webhook.admission.k8s.io/", (0, i)),
                    cause,
                ),
            }
        });
        for result in futures::future::join_all(calls).await {
            result?;
        }
        Ok(())
    }
}
