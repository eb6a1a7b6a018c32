//! The UIDs of the stored ServiceAccounts and Secrets that are not being deleted, kept from
//! storage: what the token authenticator checks a bound token's subject against on every
//! request (a deleted service account's tokens stop working at once).

use super::follow::{follow, ns_name, Change, Synced};
use super::{Error, GenericStore, Registry, Resource};
use crate::serviceaccount::Subjects;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

/// Which objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// v1 ServiceAccounts.
    ServiceAccounts,
    /// v1 Secrets.
    Secrets,
}

impl Kind {
    /// Both kinds.
    pub(crate) const ALL: [Kind; 2] = [Kind::ServiceAccounts, Kind::Secrets];

    fn resource(self) -> &'static str {
        match self {
            Kind::ServiceAccounts => "serviceaccounts",
            Kind::Secrets => "secrets",
        }
    }
}

/// `namespace/name` → UID of the live objects of each kind.
#[derive(Default)]
pub(crate) struct Index {
    service_accounts: RwLock<HashMap<String, Arc<str>>>,
    secrets: RwLock<HashMap<String, Arc<str>>>,
    synced: Synced,
}

fn key(namespace: &str, name: &str) -> String {
    let mut k = String::with_capacity(namespace.len() + name.len() + 1);
    k.push_str(namespace);
    k.push('/');
    k.push_str(name);
    k
}

/// The UID of a live object, None when it is being deleted.
fn live_uid(obj: &Value) -> Option<Arc<str>> {
    let meta = obj.get("metadata")?;
    if meta.get("deletionTimestamp").is_some_and(|t| !t.is_null()) {
        return None;
    }
    meta.get("uid").and_then(Value::as_str).map(Arc::from)
}

impl Index {
    fn map(&self, kind: Kind) -> &RwLock<HashMap<String, Arc<str>>> {
        match kind {
            Kind::ServiceAccounts => &self.service_accounts,
            Kind::Secrets => &self.secrets,
        }
    }

    fn get(&self, kind: Kind, key: &str) -> Option<Arc<str>> {
        let map = self.map(kind).read().unwrap_or_else(|p| p.into_inner());
        map.get(key).cloned()
    }

    /// Waits until both kinds have been listed once.
    pub(crate) async fn wait_synced(&self) {
        self.synced.wait(Kind::ALL.len()).await;
    }

    /// Follows one kind in `registry` until the future is dropped or storage fails.
    ///
    /// # Errors
    ///
    /// The kind is not served, or reading it failed (the caller retries).
    pub(crate) async fn follow(&self, registry: &Registry, kind: Kind) -> Result<(), Error> {
        let store = core_store(registry, kind.resource())
            .ok_or_else(|| Error::Internal(format!("{} are not served", kind.resource())))?;
        let map = self.map(kind);
        let write = || map.write().unwrap_or_else(|p| p.into_inner());
        follow(&store, &|change| match change {
            Change::Listed(items) => {
                let fresh: HashMap<String, Arc<str>> = items
                    .into_iter()
                    .filter_map(|o| {
                        let (ns, name) = ns_name(o);
                        Some((key(ns, name), live_uid(o)?))
                    })
                    .collect();
                *write() = fresh;
                self.synced.mark(kind as usize);
            }
            Change::Put(o) => {
                let (ns, name) = ns_name(o);
                match live_uid(o) {
                    Some(uid) => write().insert(key(ns, name), uid),
                    None => write().remove(&key(ns, name)),
                };
            }
            Change::Deleted(o) => {
                let (ns, name) = ns_name(o);
                write().remove(&key(ns, name));
            }
        })
        .await
    }
}

fn core_store(registry: &Registry, resource: &str) -> Option<Arc<GenericStore>> {
    match registry.resources().lookup("", "v1", resource)?.as_ref() {
        Resource::Stored(s) => Some(Arc::clone(s)),
        Resource::Review(_) => None,
    }
}

impl Subjects for Index {
    fn service_account(&self, key: &str) -> Option<Arc<str>> {
        self.get(Kind::ServiceAccounts, key)
    }

    fn secret(&self, key: &str) -> Option<Arc<str>> {
        self.get(Kind::Secrets, key)
    }
}
