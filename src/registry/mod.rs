//! REST semantics over storage (pkg/registry): one generic store plus per-resource strategies.
//! Sees no HTTP types. May use: storage, api.

pub(crate) mod apiextensions;
mod bounded;
pub(crate) mod error;
pub(crate) mod memo;
pub(crate) mod resources;
mod roundtrip;
mod roundtrip_rest;
pub(crate) mod store;
mod store_codec;
pub(crate) mod store_delete;
pub(crate) mod store_list;
pub(crate) mod strategy;
pub(crate) mod validation;

#[cfg(test)]
pub(crate) use error::FieldError;
pub(crate) use error::{Error, Result};
pub(crate) use memo::Decoded;
pub(crate) use resources::reviews::Review;
pub(crate) use store::{DeleteOptions, GenericStore};
pub(crate) use store_list::{ListOptions, WatchEvent, WatchProgress};
pub(crate) use strategy::{ResourceInfo, Strategy};

use crate::storage::Storage;
use std::sync::Arc;

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
}

/// A served resource.
pub(crate) enum Resource {
    /// Stored in the generic store.
    Stored(Arc<GenericStore>),
    /// A create-only review, answered from the request.
    Review(Review),
}

impl Resource {
    /// Discovery info.
    pub(crate) fn info(&self) -> &'static ResourceInfo {
        match self {
            Resource::Stored(s) => s.strategy().info(),
            Resource::Review(r) => r.info(),
        }
    }
}

/// Every served resource, over one store.
pub(crate) struct Registry {
    resources: Vec<Resource>,
}

impl Registry {
    #[cfg(test)]
    /// Builds the registry of all served resources over `storage`, keys under `/registry`.
    pub(crate) fn new(storage: Arc<dyn Storage>) -> Self {
        Registry::with_prefix(storage, DEFAULT_PREFIX)
    }

    /// Builds the registry with keys under `prefix` (`--etcd-prefix`).
    pub(crate) fn with_prefix(storage: Arc<dyn Storage>, prefix: &str) -> Self {
        let resources = resources::built_in()
            .into_iter()
            .map(|b| match b {
                resources::BuiltIn::Stored(strategy, key_root) => Resource::Stored(Arc::new(
                    GenericStore::new(Arc::clone(&storage), prefix, strategy, key_root),
                )),
                resources::BuiltIn::Review(r) => Resource::Review(r),
            })
            .collect();
        Registry { resources }
    }

    /// Stops serving one resource (e.g. LeaseCandidates when CoordinatedLeaderElection is off).
    pub(crate) fn without(mut self, group: &str, version: &str, resource: &str) -> Self {
        self.resources.retain(|r| {
            let i = r.info();
            !(i.group == group && i.version == version && i.resource == resource)
        });
        self
    }

    /// All resources, in discovery order.
    pub(crate) fn resources(&self) -> &[Resource] {
        &self.resources
    }

    /// The resource served at group/version/resource.
    pub(crate) fn lookup(&self, group: &str, version: &str, resource: &str) -> Option<&Resource> {
        self.resources.iter().find(|r| {
            let i = r.info();
            i.group == group && i.version == version && i.resource == resource
        })
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_writes;
