//! REST semantics over storage (pkg/registry): one generic store plus per-resource strategies.
//! Sees no HTTP types. May use: storage, api, serviceaccount (TokenRequest),
//! metrics.

pub(crate) mod admission;
pub(crate) mod apiextensions;
pub(crate) mod cel;
pub(crate) mod codec;
pub(crate) mod connections;
pub(crate) mod error;
pub(crate) mod follow;
pub(crate) mod rbac;
pub(crate) mod resources;
pub(crate) mod services;
pub(crate) mod store;
pub(crate) mod strategy;
pub(crate) mod subjects;
pub(crate) mod tokens;
pub(crate) mod validation;
pub(crate) mod webhook;

pub(crate) use codec::memo::Decoded;
#[cfg(test)]
pub(crate) use error::FieldError;
pub(crate) use error::{Error, Result};
pub(crate) use resources::reviews::Review;
pub(crate) use store::list::{ListOptions, WatchEvent, WatchProgress};
pub(crate) use store::{DeleteOptions, GenericStore};
pub(crate) use strategy::{ResourceInfo, Strategy};

use crate::storage::Storage;
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

/// The Conflict reason of a stale resourceVersion (OptimisticLockErrorMsg).
pub(crate) const OPTIMISTIC_LOCK_MSG: &str =
    "the object has been modified; please apply your changes to the latest version and try again";

#[cfg(test)]
/// The default key prefix (`--etcd-prefix` default of kube-apiserver).
pub(crate) const DEFAULT_PREFIX: &str = "/registry";

/// fieldValidation of a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum FieldValidation {
    /// Unknown fields are dropped silently.
    Ignore,
    /// Unknown fields are dropped with a warning (the default).
    #[default]
    Warn,
    /// Unknown fields fail the request.
    Strict,
}

/// Per-request inputs of a registry call (the request context of k8s, minus HTTP).
#[derive(Debug, Clone, Default)]
pub(crate) struct Context {
    /// Namespace of the request ("" for cluster-scoped or all namespaces).
    pub namespace: String,
    /// dryRun=All.
    pub dry_run: bool,
    /// fieldValidation.
    pub field_validation: FieldValidation,
    /// Who writes, for the checks of writes that depend on the writer (RBAC's escalation
    /// prevention); None for the server's own calls.
    pub access: Option<rbac::escalation::Access>,
    /// The admission webhooks a write goes through (None: none are configured, or the
    /// server's own call).
    pub admission: Option<Arc<admission::Request>>,
    /// The warnings the call leaves for the response.
    pub warnings: Warnings,
}

/// The warnings a registry call leaves for the response (k8s' warning.AddWarning on the
/// request context), shared by the clones of one request's [`Context`].
#[derive(Debug, Clone, Default)]
pub(crate) struct Warnings(Arc<std::sync::Mutex<Vec<String>>>);

impl Warnings {
    /// Adds a warning, once (a write computed again after a conflict finds the same ones;
    /// upstream's recorder skips a text it has).
    pub(crate) fn add(&self, warning: String) {
        // A poisoned list lost a warning of a request that failed anyway.
        if let Ok(mut w) = self.0.lock() {
            if !w.contains(&warning) {
                w.push(warning);
            }
        }
    }

    /// The warnings added so far, leaving none.
    pub(crate) fn take(&self) -> Vec<String> {
        self.0
            .lock()
            .map(|mut w| std::mem::take(&mut *w))
            .unwrap_or_default()
    }
}

/// A served resource.
pub(crate) enum Resource {
    /// Stored in the generic store.
    Stored(Arc<GenericStore>),
    /// A create-only review, answered from the request.
    Review(Review),
}

impl Resource {
    /// The generic store of a stored resource (None for a review).
    pub(crate) fn stored(&self) -> Option<&Arc<GenericStore>> {
        match self {
            Resource::Stored(s) => Some(s),
            Resource::Review(_) => None,
        }
    }

    /// Discovery info.
    pub(crate) fn info(&self) -> &ResourceInfo {
        match self {
            Resource::Stored(s) => s.strategy().info(),
            Resource::Review(r) => r.info(),
        }
    }
}

/// The resources served at one moment, in discovery order. A request works with one of these
/// from start to end, so it sees the set from before a change or after it, never half.
pub(crate) struct Resources {
    list: Vec<Arc<Resource>>,
    /// "group/version/resource" → position in `list`.
    index: HashMap<String, usize>,
    /// Counts the changes of the set: equal generations, equal sets.
    generation: u64,
}

fn index_key(group: &str, version: &str, resource: &str) -> String {
    let mut k = String::with_capacity(group.len() + version.len() + resource.len() + 2);
    for (n, part) in [group, version, resource].into_iter().enumerate() {
        if n > 0 {
            k.push('/');
        }
        k.push_str(part);
    }
    k
}

impl Resources {
    fn new(list: Vec<Arc<Resource>>, generation: u64) -> Resources {
        let index = list
            .iter()
            .enumerate()
            .map(|(n, r)| {
                let i = r.info();
                (index_key(&i.group, &i.version, &i.resource), n)
            })
            .collect();
        Resources {
            list,
            index,
            generation,
        }
    }

    /// The resource served at group/version/resource.
    pub(crate) fn lookup(
        &self,
        group: &str,
        version: &str,
        resource: &str,
    ) -> Option<&Arc<Resource>> {
        self.index
            .get(&index_key(group, version, resource))
            .map(|&n| &self.list[n])
    }

    /// The generic store of `group`/`version`/`resource`, when it is served and stored.
    pub(crate) fn stored(
        &self,
        group: &str,
        version: &str,
        resource: &str,
    ) -> Option<Arc<GenericStore>> {
        self.lookup(group, version, resource)?.stored().cloned()
    }

    /// Every resource, in discovery order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Arc<Resource>> {
        self.list.iter()
    }

    /// Which set this is ([`Registry::resources`] after a change has a larger one).
    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }
}

/// Every served resource, over one store; resources can be added and removed while serving.
pub(crate) struct Registry {
    current: RwLock<Arc<Resources>>,
    storage: Arc<dyn Storage>,
    /// The key prefix (`--etcd-prefix`).
    prefix: String,
    /// "group/version/resource" of the built-in resources, which nothing may replace.
    built_in: std::collections::HashSet<String>,
    /// The RBAC objects, as the authorizer and the escalation checks read them.
    rbac: Arc<rbac::Rbac>,
    /// The live service accounts and secrets, as the token authenticator checks them.
    subjects: Arc<subjects::Index>,
    /// The Services and EndpointSlices, as followed (webhooks and the aggregator resolve
    /// Services through them).
    services: Arc<services::Services>,
    /// What service-account tokens are issued with (set once by the server).
    issuer: std::sync::OnceLock<Arc<crate::serviceaccount::Issuer>>,
    /// The server's token authenticator, for TokenReview (set once by the server).
    token_reviewer: std::sync::OnceLock<Arc<dyn crate::api::authorizer::TokenReviewer>>,
    /// The server's authorizer (set once by the server; unset, writes are not checked).
    authorizer: std::sync::OnceLock<Arc<dyn crate::api::authorizer::Authorizer>>,
    /// The admission webhooks, as stored.
    admission: Arc<admission::Chain>,
    /// The runtime that serves clients (the one the registry was built on), where webhook
    /// connections run.
    serving: Option<tokio::runtime::Handle>,
}

impl Registry {
    #[cfg(test)]
    /// Builds the registry of all served resources over `storage`, keys under `/registry`.
    pub(crate) fn new(storage: Arc<dyn Storage>) -> Self {
        Registry::with_prefix(storage, DEFAULT_PREFIX)
    }

    /// Builds the registry with keys under `prefix` (`--etcd-prefix`).
    pub(crate) fn with_prefix(storage: Arc<dyn Storage>, prefix: &str) -> Self {
        let list: Vec<Arc<Resource>> = resources::built_in()
            .into_iter()
            .map(|b| {
                Arc::new(match b {
                    resources::BuiltIn::Stored(strategy, key_root) => Resource::Stored(Arc::new(
                        GenericStore::new(Arc::clone(&storage), prefix, strategy, key_root),
                    )),
                    resources::BuiltIn::Review(r) => Resource::Review(r),
                })
            })
            .collect();
        let built_in = list
            .iter()
            .map(|r| {
                let i = r.info();
                index_key(&i.group, &i.version, &i.resource)
            })
            .collect();
        Registry {
            current: RwLock::new(Arc::new(Resources::new(list, 0))),
            storage,
            prefix: prefix.to_string(),
            built_in,
            rbac: rbac::Rbac::new(),
            subjects: Arc::default(),
            services: Arc::default(),
            issuer: std::sync::OnceLock::new(),
            token_reviewer: std::sync::OnceLock::new(),
            authorizer: std::sync::OnceLock::new(),
            admission: Arc::default(),
            serving: tokio::runtime::Handle::try_current().ok(),
        }
    }

    /// The runtime that serves clients, when the registry was built on one.
    pub(crate) fn serving(&self) -> Option<&tokio::runtime::Handle> {
        self.serving.as_ref()
    }

    /// The admission webhooks this registry's writes go through.
    pub(crate) fn admission(&self) -> &Arc<admission::Chain> {
        &self.admission
    }

    /// The admission side of a write by `user` to `subresource`; None when no webhook is
    /// configured.
    pub(crate) fn admission_request(
        &self,
        user: &Arc<crate::api::UserInfo>,
        subresource: &str,
        field_manager: Option<&str>,
    ) -> Option<Arc<admission::Request>> {
        if self.admission.is_empty() {
            return None;
        }
        Some(Arc::new(admission::Request {
            chain: Arc::clone(&self.admission),
            user: Arc::clone(user),
            subresource: subresource.to_string(),
            field_manager: field_manager.map(str::to_string),
            warnings: std::sync::Mutex::new(Vec::new()),
            audit_annotations: std::sync::Mutex::new(Vec::new()),
        }))
    }

    /// The RBAC objects this registry serves, as the RBAC authorizer reads them.
    pub(crate) fn rbac(&self) -> &Arc<rbac::Rbac> {
        &self.rbac
    }

    /// The Services and EndpointSlices, as followed.
    pub(crate) fn services(&self) -> &Arc<services::Services> {
        &self.services
    }

    /// The live service accounts and secrets.
    pub(crate) fn subjects(&self) -> &Arc<subjects::Index> {
        &self.subjects
    }

    /// Sets what service-account tokens are issued with (TokenRequest). Only the first call
    /// counts.
    pub(crate) fn set_token_issuer(&self, issuer: Arc<crate::serviceaccount::Issuer>) {
        let _ = self.issuer.set(issuer);
    }

    /// What service-account tokens are issued with, once set.
    pub(crate) fn token_issuer(&self) -> Option<&Arc<crate::serviceaccount::Issuer>> {
        self.issuer.get()
    }

    /// Sets the server's token authenticator (TokenReview). Only the first call counts.
    pub(crate) fn set_token_reviewer(
        &self,
        reviewer: Arc<dyn crate::api::authorizer::TokenReviewer>,
    ) {
        let _ = self.token_reviewer.set(reviewer);
    }

    /// The server's token authenticator, once set.
    pub(crate) fn token_reviewer(&self) -> Option<&Arc<dyn crate::api::authorizer::TokenReviewer>> {
        self.token_reviewer.get()
    }

    /// Sets the server's authorizer, which the access reviews and the RBAC resources' writes
    /// consult. Only the first call counts.
    pub(crate) fn set_authorizer(&self, authorizer: Arc<dyn crate::api::authorizer::Authorizer>) {
        let _ = self.authorizer.set(authorizer);
    }

    /// The server's authorizer, once set.
    pub(crate) fn authorizer(&self) -> Option<&Arc<dyn crate::api::authorizer::Authorizer>> {
        self.authorizer.get()
    }

    /// What writes by `user` are checked with (None before the server set its authorizer).
    pub(crate) fn access(&self, user: &crate::api::UserInfo) -> Option<rbac::escalation::Access> {
        Some(rbac::escalation::Access {
            user: Arc::new(user.clone()),
            authorizer: Arc::clone(self.authorizer.get()?),
            rbac: Arc::clone(&self.rbac),
        })
    }

    /// A generic store for `strategy` over this registry's storage, under
    /// `<prefix>/<key root>/`.
    pub(crate) fn store_for(&self, strategy: Arc<dyn Strategy>, key_root: &str) -> GenericStore {
        GenericStore::new(Arc::clone(&self.storage), &self.prefix, strategy, key_root)
    }

    /// Drops the watch cache of the keys under `<prefix>/<key root>/` (a deleted CRD's).
    pub(crate) fn forget_cached(&self, key_root: &str) {
        self.storage.forget_cached(&format!(
            "{}/{key_root}/",
            self.prefix.trim_end_matches('/')
        ));
    }

    /// Stops serving the resources at `remove` ("group/version/resource" triples) and serves
    /// `add` after the others, in one change: a request sees the set before or after it.
    /// Built-in resources are neither removed nor replaced; returns the triples of `add` that
    /// are served now.
    pub(crate) fn replace(
        &self,
        remove: &[(String, String, String)],
        add: Vec<Arc<Resource>>,
    ) -> Vec<(String, String, String)> {
        let mut served = Vec::new();
        self.change(|list| {
            list.retain(|r| {
                let i = r.info();
                let built_in =
                    self.built_in
                        .contains(&index_key(&i.group, &i.version, &i.resource));
                built_in || !remove.iter().any(|(g, v, res)| i.is(g, v, res))
            });
            for r in add {
                let i = r.info();
                if self
                    .built_in
                    .contains(&index_key(&i.group, &i.version, &i.resource))
                {
                    continue;
                }
                list.retain(|o| !o.info().is(&i.group, &i.version, &i.resource));
                served.push((
                    i.group.to_string(),
                    i.version.to_string(),
                    i.resource.to_string(),
                ));
                list.push(r);
            }
        });
        served
    }

    /// The set served now.
    pub(crate) fn resources(&self) -> Arc<Resources> {
        self.current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Replaces the set with `change(current list)`; requests already under way keep the set
    /// they started with.
    fn change(&self, change: impl FnOnce(&mut Vec<Arc<Resource>>)) {
        let mut cur = self.current.write().unwrap_or_else(|e| e.into_inner());
        let mut list = cur.list.clone();
        change(&mut list);
        *cur = Arc::new(Resources::new(list, cur.generation + 1));
    }

    /// Serves one more resource, after the others (replacing one served at the same
    /// group/version/resource).
    #[cfg(test)]
    pub(crate) fn install(&self, resource: Arc<Resource>) {
        self.change(|list| {
            let i = resource.info();
            list.retain(|r| !r.info().is(&i.group, &i.version, &i.resource));
            list.push(resource);
        });
    }

    /// Stops serving one resource (e.g. LeaseCandidates when CoordinatedLeaderElection is off).
    pub(crate) fn remove(&self, group: &str, version: &str, resource: &str) {
        self.change(|list| list.retain(|r| !r.info().is(group, version, resource)));
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_writes;
