//! The admission webhooks (k8s.io/apiserver/pkg/admission/plugin/webhook): which webhooks a
//! write matches (rules, scope, namespaceSelector, objectSelector, matchConditions), the calls
//! with their failurePolicy and timeout, and a mutating webhook's JSON patch.

use super::activation::{compile, run, Compiled, Uses, BASE};
use super::chain::Chain;
use super::review::{self, Answer};
use super::{Attributes, Error, Request};
use crate::api::trace;
use crate::metrics::admission::WebhookOutcome;
use crate::registry::cel::budget::{with_budget, MATCH_CONDITIONS_BUDGET, OUT_OF_BUDGET};
use crate::registry::webhook::Endpoint;
use kube::core::{Selector, SelectorExt};
use kube_cel::cel::Value as CelValue;
use opentelemetry::KeyValue;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// The audit annotation prefix of a mutating webhook's call (MutationAuditAnnotationPrefix).
const MUTATION_ANNOTATION_PREFIX: &str = "mutation.webhook.admission.k8s.io/";

/// The audit annotation key of the (round, index)-th webhook call under `prefix`.
pub(super) fn call_key(prefix: &str, (round, index): (usize, usize)) -> String {
    format!("{prefix}round_{round}_index_{index}")
}

/// A matchCondition, compiled as policies' expressions are (one CEL engine, `object`,
/// `oldObject`, `request` and `authorizer`).
struct Condition {
    expression: String,
    compiled: Compiled,
}

/// One webhook of a configuration, ready to call.
pub(super) struct Hook {
    /// The webhook's name.
    pub(super) name: String,
    /// The configuration it is part of.
    configuration: String,
    rules: Vec<Value>,
    namespace_selector: Option<Selector>,
    object_selector: Option<Selector>,
    conditions: Vec<Condition>,
    /// The variables the matchConditions read.
    uses: Uses,
    /// failurePolicy Fail (the default).
    fail: bool,
    /// matchPolicy Equivalent (the default): rules naming another version of the resource
    /// written match it too, and the webhook sees the write converted to that version.
    equivalent: bool,
    timeout: Duration,
    /// sideEffects None or NoneOnDryRun: dry runs may reach it.
    dry_run_ok: bool,
    /// The AdmissionReview version it takes.
    version: &'static str,
    /// reinvocationPolicy IfNeeded.
    pub(super) if_needed: bool,
    endpoint: Result<Arc<Endpoint>, String>,
}

/// A label selector (None when absent, empty or malformed: it selects everything).
pub(super) fn selector(v: Option<&Value>) -> Option<Selector> {
    let v = v.filter(|v| v.as_object().is_some_and(|o| !o.is_empty()))?;
    let parsed: k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector =
        serde_json::from_value(v.clone()).ok()?;
    Selector::try_from(parsed).ok()
}

/// The string `key` of `v` ("" when absent).
pub(super) fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
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

/// Whether an objectSelector selects the write: the new or the old object carries matching
/// labels (an absent object never matches).
pub(super) fn object_selected(
    sel: &Selector,
    attrs: &Attributes<'_>,
    object: Option<&Value>,
) -> bool {
    let on = |o: Option<&Value>| o.is_some() && sel.matches(&labels(o));
    on(object) || on(attrs.old_object)
}

/// Whether the write is of a Namespace itself (a namespaceSelector then reads its own labels).
pub(super) fn is_namespace(attrs: &Attributes<'_>) -> bool {
    attrs.group.is_empty() && attrs.resource == "namespaces"
}

/// The labels of `obj` (none when absent).
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

/// The first of the written resource's other served versions that one of `rules` names,
/// rule by rule (what matchPolicy Equivalent matches when no rule names the version written).
pub(super) fn equivalent_version(
    rules: &[Value],
    attrs: &Attributes<'_>,
    subresource: &str,
) -> Option<String> {
    let versions = attrs.equivalents?.versions();
    rules.iter().find_map(|r| {
        versions
            .iter()
            .filter(|v| *v != attrs.version)
            .find(|v| {
                rule_matches(
                    r,
                    &Attributes {
                        version: v,
                        ..*attrs
                    },
                    subresource,
                )
            })
            .map(|v| v.to_string())
    })
}

/// How a webhook's matchConditions decided.
enum Conditions {
    Call,
    Skip,
    Failed(String),
}

/// The write's namespace, read at most once per admission pass (None when unreadable).
pub(super) type NamespaceCell = tokio::sync::OnceCell<Option<Arc<crate::registry::Decoded>>>;

impl Hook {
    /// The webhook `w` of `configuration`; `endpoint` makes the client of a clientConfig with
    /// a timeout.
    pub(super) fn new(
        mutating: bool,
        configuration: &str,
        w: &Value,
        endpoint: impl FnOnce(Option<&Value>, Duration) -> Result<Arc<Endpoint>, String>,
    ) -> Hook {
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
        let conditions: Vec<Condition> = w
            .get("matchConditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|c| Condition {
                expression: str_of(c, "expression").to_string(),
                compiled: compile(str_of(c, "expression")),
            })
            .collect();
        let uses = Uses::of(conditions.iter().map(|c| &c.compiled));
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
            uses,
            fail: str_of(w, "failurePolicy") != "Ignore",
            equivalent: str_of(w, "matchPolicy") != "Exact",
            timeout,
            dry_run_ok: matches!(str_of(w, "sideEffects"), "None" | "NoneOnDryRun"),
            version,
            if_needed: mutating && str_of(w, "reinvocationPolicy") == "IfNeeded",
            endpoint: endpoint(w.get("clientConfig"), timeout),
        }
    }

    /// Whether a rule names the write (None), or, under matchPolicy Equivalent, another
    /// version of its resource (Some(Some(version))), as upstream's ShouldCallHook: the
    /// version written first, then each rule in order against the other versions.
    fn matched_version(&self, req: &Request, attrs: &Attributes<'_>) -> Option<Option<String>> {
        let sub = &req.subresource;
        if self.rules.iter().any(|r| rule_matches(r, attrs, sub)) {
            return Some(None);
        }
        if !self.equivalent {
            return None;
        }
        equivalent_version(&self.rules, attrs, sub).map(Some)
    }

    /// Whether the webhook's selectors take the write.
    async fn selected(
        &self,
        (chain, ns): (&Chain, &NamespaceCell),
        attrs: &Attributes<'_>,
        object: Option<&Value>,
    ) -> bool {
        if let Some(sel) = &self.object_selector {
            if !object_selected(sel, attrs, object) {
                return false;
            }
        }
        if let Some(sel) = &self.namespace_selector {
            if is_namespace(attrs) {
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

    /// The matchConditions (matchconditions.Matcher): one false → skip, whatever the others
    /// did; otherwise errors → failed (every error, as an aggregate); otherwise call.
    fn conditions(
        &self,
        req: &Request,
        attrs: &Attributes<'_>,
        object: Option<&Value>,
    ) -> Conditions {
        if self.conditions.is_empty() {
            return Conditions::Call;
        }
        let (errors, ran_out) = with_budget(MATCH_CONDITIONS_BUDGET, || {
            BASE.with(|base| {
                let mut ctx = base.new_inner_scope();
                // Webhooks' conditions have no namespaceObject, as upstream's.
                self.uses.bind(&mut ctx, (req, attrs), object, None);
                let mut errors = Vec::new();
                for c in &self.conditions {
                    let what = || format!("expression '{}'", c.expression);
                    match run(&ctx, &c.compiled, &what) {
                        Ok(CelValue::Bool(true)) => {}
                        Ok(CelValue::Bool(false)) => return None,
                        Ok(_) => errors.push(format!("{} must evaluate to bool", what())),
                        Err(e) => errors.push(e),
                    }
                }
                Some(errors)
            })
        });
        match errors {
            // One error for the lot, as upstream's matcher gives.
            _ if ran_out => Conditions::Failed(OUT_OF_BUDGET.to_string()),
            None => Conditions::Skip,
            Some(e) if e.is_empty() => Conditions::Call,
            // utilerrors.NewAggregate's text.
            Some(mut e) if e.len() == 1 => Conditions::Failed(e.remove(0)),
            Some(e) => Conditions::Failed(format!("[{}]", e.join(", "))),
        }
    }

    /// Calls the webhook: its checked answer, or why the call failed.
    pub(super) async fn call(
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
        let uid = crate::api::new_uuid().to_string();
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

    /// Whether the webhook decides this write, and how it sees it: its rules and selectors
    /// take it, a dry run may reach it, and its matchConditions hold (evaluated on the write
    /// as the webhook sees it). A call failure under failurePolicy Fail is an error.
    pub(super) async fn decides(
        &self,
        namespace: (&Chain, &NamespaceCell),
        req: &Request,
        attrs: &Attributes<'_>,
        object: Option<&Value>,
    ) -> Result<Option<Invocation>, Error> {
        let Some(version) = self.matched_version(req, attrs) else {
            return Ok(None);
        };
        if !self.selected(namespace, attrs, object).await {
            return Ok(None);
        }
        if attrs.dry_run && !self.dry_run_ok {
            return Err(Error::DryRunUnsupported(self.name.clone()));
        }
        let invocation = Invocation::new(version, attrs, object)?;
        let (attrs, object) = invocation.view(attrs, object);
        match self.conditions(req, &attrs, object) {
            Conditions::Call => Ok(Some(invocation)),
            Conditions::Skip => Ok(None),
            // Failing closed refuses the write as Forbidden, without calling the webhook;
            // failing open skips the webhook (generic/webhook.go's ShouldCallHook).
            Conditions::Failed(cause) if self.fail => {
                tracing::warn!(webhook = %self.name, error = %cause, "Failed evaluating match conditions, failing closed");
                Err(Error::MatchConditions {
                    message: cause,
                    group: attrs.group.to_string(),
                    resource: attrs.resource.to_string(),
                    name: attrs.name.to_string(),
                })
            }
            Conditions::Failed(_) => Ok(None),
        }
    }

    /// A failed call: an error under failurePolicy Fail, logged and passed over under Ignore.
    pub(super) fn failed(&self, cause: String) -> Result<(), Error> {
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
    pub(super) fn call_failed(
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
    pub(super) fn annotate(&self, req: &Request, annotations: Vec<(String, String)>) {
        for (key, value) in annotations {
            req.annotate(format!("{}/{key}", self.name), value);
        }
    }

    /// One call of this mutating webhook, the `at` = (round, index)-th, recorded in the audit
    /// event as upstream's dispatcher does: its JSON patch applied and the result made
    /// canonical again by `redecode`; whether it changed the object.
    pub(super) async fn mutate(
        &self,
        at: (usize, usize),
        (req, attrs): (&Request, &Attributes<'_>),
        invocation: &Invocation,
        object: &mut Option<Value>,
        redecode: &super::Redecode<'_>,
    ) -> Result<bool, crate::registry::Error> {
        let result = self
            .call_mutating(at, (req, attrs), invocation, object, redecode)
            .await;
        let mutated = matches!(result, Ok(true));
        req.annotate(
            call_key(MUTATION_ANNOTATION_PREFIX, at),
            serde_json::json!({
                "configuration": self.configuration,
                "webhook": self.name,
                "mutated": mutated,
            })
            .to_string(),
        );
        result
    }

    /// [`Self::mutate`] without the mutation annotation.
    async fn call_mutating(
        &self,
        at: (usize, usize),
        (req, attrs): (&Request, &Attributes<'_>),
        invocation: &Invocation,
        object: &mut Option<Value>,
        redecode: &super::Redecode<'_>,
    ) -> Result<bool, crate::registry::Error> {
        let failed_open_key = || call_key(&format!("failed-open.{MUTATION_ANNOTATION_PREFIX}"), at);
        let (seen, current) = invocation.view(attrs, object.as_ref());
        let answer = match self.call(true, req, &seen, current).await {
            Ok(a) => a,
            Err(cause) => {
                return self
                    .call_failed(req, failed_open_key(), cause)
                    .map(|()| false)
                    .map_err(Into::into)
            }
        };
        self.annotate(req, answer.audit_annotations);
        req.warn(answer.warnings);
        if !answer.allowed {
            return Err(review::denied(&self.name, answer.status.as_ref()).into());
        }
        let (Some(patch), Some(current)) = (answer.patch, current) else {
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
                return self
                    .call_failed(req, failed_open_key(), format!("JSONPatch failed: {e}"))
                    .map(|()| false)
                    .map_err(Into::into)
            }
        };
        if &patched == current {
            return Ok(false);
        }
        let patched = invocation.back(attrs, patched)?;
        *object = Some(redecode(patched)?);
        Ok(true)
    }
}

/// How a webhook sees a write it decides: as written, or converted to the equivalent version
/// its rules name (upstream's WebhookInvocation and VersionedAttributes).
#[derive(Default)]
pub(super) struct Invocation {
    /// The version the webhook matched, when not the one written.
    version: Option<String>,
    object: Option<Value>,
    old_object: Option<Value>,
}

impl Invocation {
    /// The invocation at `version` (None: the version written), the objects converted to it.
    pub(super) fn new(
        version: Option<String>,
        attrs: &Attributes<'_>,
        object: Option<&Value>,
    ) -> Result<Invocation, Error> {
        let (Some(version), Some(equivalents)) = (version, attrs.equivalents) else {
            return Ok(Invocation::default());
        };
        let convert = |o: &Value| {
            equivalents
                .convert(o.clone(), &version)
                .map_err(Error::Conversion)
        };
        Ok(Invocation {
            object: object.map(convert).transpose()?,
            old_object: attrs.old_object.map(convert).transpose()?,
            version: Some(version),
        })
    }

    /// The write's attributes and object as the webhook sees them.
    pub(super) fn view<'b>(
        &'b self,
        attrs: &Attributes<'b>,
        object: Option<&'b Value>,
    ) -> (Attributes<'b>, Option<&'b Value>) {
        match &self.version {
            None => (*attrs, object),
            Some(version) => (
                Attributes {
                    version,
                    request_version: Some(attrs.version),
                    old_object: self.old_object.as_ref(),
                    old_json: None,
                    object_stored: None,
                    ..*attrs
                },
                self.object.as_ref(),
            ),
        }
    }

    /// A patched object the webhook saw, back at the version written.
    pub(super) fn back(&self, attrs: &Attributes<'_>, patched: Value) -> Result<Value, Error> {
        self.convert(attrs, patched, attrs.version)
    }

    /// An object at the version written, at the version the webhook or policy sees.
    pub(super) fn forth(&self, attrs: &Attributes<'_>, object: Value) -> Result<Value, Error> {
        match &self.version {
            Some(version) => self.convert(attrs, object, version),
            None => Ok(object),
        }
    }

    /// The object it sees, taken out (a policy mutates it in place).
    pub(super) fn take_object(&mut self) -> Option<Value> {
        self.object.take()
    }

    /// `obj` at `to`, when this invocation is at another version than the one written.
    fn convert(&self, attrs: &Attributes<'_>, obj: Value, to: &str) -> Result<Value, Error> {
        match (&self.version, attrs.equivalents) {
            (Some(_), Some(equivalents)) => equivalents.convert(obj, to).map_err(Error::Conversion),
            _ => Ok(obj),
        }
    }
}
