//! The admission configuration in force, followed from storage: the mutating and validating
//! webhook configurations, the ValidatingAdmissionPolicies and MutatingAdmissionPolicies with
//! their bindings (the latter only when the MutatingAdmissionPolicy API is served), where
//! params are read from, and the webhooks' endpoints.

use super::matching::{Binding, Params};
use super::mutating::Policy as MutatingPolicy;
use super::patch::Merge;
use super::policies::Policy;
use super::webhooks::{labels, str_of, Hook};
use crate::registry::follow::{follow, Synced};
use crate::registry::webhook::Endpoint;
use crate::registry::{GenericStore, Registry};
use kube::core::{Selector, SelectorExt};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::Duration;

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
    /// mutatingadmissionpolicies (v1beta1, when served).
    MutatingPolicies,
    /// mutatingadmissionpolicybindings (v1beta1, when served).
    MutatingPolicyBindings,
}

impl Kind {
    /// Every kind.
    pub(crate) const ALL: [Kind; 6] = [
        Kind::Mutating,
        Kind::Validating,
        Kind::Policies,
        Kind::PolicyBindings,
        Kind::MutatingPolicies,
        Kind::MutatingPolicyBindings,
    ];

    fn resource(self) -> &'static str {
        match self {
            Kind::Mutating => "mutatingwebhookconfigurations",
            Kind::Validating => "validatingwebhookconfigurations",
            Kind::Policies => "validatingadmissionpolicies",
            Kind::PolicyBindings => "validatingadmissionpolicybindings",
            Kind::MutatingPolicies => "mutatingadmissionpolicies",
            Kind::MutatingPolicyBindings => "mutatingadmissionpolicybindings",
        }
    }

    fn version(self) -> &'static str {
        match self {
            Kind::MutatingPolicies | Kind::MutatingPolicyBindings => "v1beta1",
            _ => "v1",
        }
    }
}

/// Policies in force, each with a binding of it, in binding name order.
pub(super) type Bound<P> = Arc<Vec<(Arc<P>, Arc<Binding>)>>;

/// Webhooks in force, in configuration name order.
type Hooks = Arc<Vec<Arc<Hook>>>;

/// The webhooks and policies in force, kept from storage.
#[derive(Default)]
pub(crate) struct Chain {
    mutating: RwLock<Hooks>,
    validating: RwLock<Hooks>,
    /// The ValidatingAdmissionPolicies with their bindings.
    bound: RwLock<Bound<Policy>>,
    /// The MutatingAdmissionPolicies with their bindings.
    mutating_bound: RwLock<Bound<MutatingPolicy>>,
    /// The stored configurations of each kind by name.
    configs: Mutex<[BTreeMap<String, Value>; Kind::ALL.len()]>,
    /// What params are read from.
    registry: OnceLock<std::sync::Weak<Registry>>,
    /// Endpoints by client configuration, kept across changes so connections are reused.
    endpoints: Mutex<HashMap<String, Arc<Endpoint>>>,
    namespaces: OnceLock<Arc<GenericStore>>,
    /// Server-side apply's merge, for ApplyConfiguration mutations (set by the server).
    merge: OnceLock<Arc<dyn Merge>>,
    synced: Synced,
}

/// Reads the value behind `lock` (the default when a writer panicked).
fn read<T: Clone + Default>(lock: &RwLock<T>) -> T {
    lock.read().map(|v| v.clone()).unwrap_or_default()
}

impl Chain {
    /// Whether nothing is configured (the write path skips admission).
    pub(crate) fn is_empty(&self) -> bool {
        !self.has_mutating() && !self.has_validating()
    }

    /// Whether any mutating webhook or bound MutatingAdmissionPolicy is configured.
    pub(crate) fn has_mutating(&self) -> bool {
        !self.hooks(Kind::Mutating).is_empty() || !self.mutating_policies().is_empty()
    }

    /// Whether any validating webhook or bound ValidatingAdmissionPolicy is configured.
    pub(crate) fn has_validating(&self) -> bool {
        !self.hooks(Kind::Validating).is_empty() || !self.validating_policies().is_empty()
    }

    /// Whether any webhook, mutating or validating, is configured.
    pub(crate) fn has_webhooks(&self) -> bool {
        !self.hooks(Kind::Mutating).is_empty() || !self.hooks(Kind::Validating).is_empty()
    }

    /// The webhooks of `kind` (Mutating or Validating).
    pub(super) fn hooks(&self, kind: Kind) -> Hooks {
        match kind {
            Kind::Mutating => read(&self.mutating),
            _ => read(&self.validating),
        }
    }

    /// The ValidatingAdmissionPolicies in force.
    pub(super) fn validating_policies(&self) -> Bound<Policy> {
        read(&self.bound)
    }

    /// The MutatingAdmissionPolicies in force.
    pub(super) fn mutating_policies(&self) -> Bound<MutatingPolicy> {
        read(&self.mutating_bound)
    }

    /// Sets the merge ApplyConfiguration mutations use. Only the first call counts.
    pub(crate) fn set_merge(&self, merge: Arc<dyn Merge>) {
        let _ = self.merge.set(merge);
    }

    /// The merge ApplyConfiguration mutations use, once set.
    pub(super) fn merge(&self) -> Option<&dyn Merge> {
        self.merge.get().map(|m| m.as_ref())
    }

    /// Waits until every kind has been listed once.
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
        let store = |group: &str, version: &str, resource: &str| {
            registry.resources().stored(group, version, resource)
        };
        if let Some(ns) = store("", "v1", "namespaces") {
            let _ = self.namespaces.set(ns);
        }
        let Some(configs) = store(GROUP, kind.version(), kind.resource()) else {
            // Not served (the MutatingAdmissionPolicy gate is off): nothing is configured.
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

    /// Rebuilds what `kind` configures from the stored configurations, in name order.
    fn rebuild(&self, kind: Kind) {
        let configs =
            |k: Kind| self.configs.lock().unwrap_or_else(|p| p.into_inner())[k as usize].clone();
        match kind {
            Kind::Policies | Kind::PolicyBindings => {
                let bound = bind(
                    &configs(Kind::Policies),
                    &configs(Kind::PolicyBindings),
                    Policy::new,
                );
                *self.bound.write().unwrap_or_else(|p| p.into_inner()) = bound;
            }
            Kind::MutatingPolicies | Kind::MutatingPolicyBindings => {
                let bound = bind(
                    &configs(Kind::MutatingPolicies),
                    &configs(Kind::MutatingPolicyBindings),
                    MutatingPolicy::new,
                );
                *self
                    .mutating_bound
                    .write()
                    .unwrap_or_else(|p| p.into_inner()) = bound;
            }
            Kind::Mutating | Kind::Validating => {
                let mut hooks = Vec::new();
                for (configuration, config) in &configs(kind) {
                    for w in config
                        .get("webhooks")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        let endpoint = |c: Option<&Value>, t| self.endpoint(c, t);
                        let hook = Hook::new(kind == Kind::Mutating, configuration, w, endpoint);
                        hooks.push(Arc::new(hook));
                    }
                }
                let lock = match kind {
                    Kind::Mutating => &self.mutating,
                    _ => &self.validating,
                };
                *lock.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(hooks);
            }
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
            endpoint = endpoint
                .resolving(registry.services())
                .on(registry.serving());
        }
        let endpoint = Arc::new(endpoint);
        endpoints.insert(key, endpoint.clone());
        Ok(endpoint)
    }

    /// The server's authorizer, once the server set it (policies' `authorizer`).
    pub(super) fn authorizer(&self) -> Option<Arc<dyn crate::api::authorizer::Authorizer>> {
        let registry = self.registry.get()?.upgrade()?;
        registry.authorizer().cloned()
    }

    /// Namespace `name`, when it can be read.
    pub(super) async fn namespace(&self, name: &str) -> Option<Arc<crate::registry::Decoded>> {
        let store = self.namespaces.get()?;
        let ctx = crate::registry::Context::default();
        store.get_shared(&ctx, name).await.ok()
    }
}

/// Compiles the policies and pairs each binding with its policy, in binding name order.
fn bind<P>(
    policies: &BTreeMap<String, Value>,
    bindings: &BTreeMap<String, Value>,
    compile: impl Fn(&Value) -> P,
) -> Bound<P> {
    let policies: BTreeMap<&str, Arc<P>> = policies
        .iter()
        .map(|(name, p)| (name.as_str(), Arc::new(compile(p))))
        .collect();
    let bound = bindings
        .values()
        .filter_map(|b| {
            let binding = Binding::new(b);
            let policy = policies.get(binding.policy())?.clone();
            Some((policy, Arc::new(binding)))
        })
        .collect();
    Arc::new(bound)
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
                r.resources().iter().find_map(|res| {
                    let s = res.stored()?;
                    let i = s.strategy().info();
                    (i.group == group && i.version == version && i.kind == kind)
                        .then(|| Arc::clone(s))
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
