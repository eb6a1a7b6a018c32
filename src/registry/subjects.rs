//! The UIDs of the stored ServiceAccounts and Secrets that are not being deleted, kept from
//! storage: what the token authenticator checks a bound token's subject against on every
//! request (a deleted service account's tokens stop working at once), and what the legacy
//! authenticator reads of `kubernetes.io/service-account-token` Secrets. It also queues the
//! last-used labels that authenticator asks for, for [`Index::last_used`] to write.

use super::follow::{follow, ns_name, Change, Synced};
use super::{Error, GenericStore, Registry};
use crate::serviceaccount::{legacy, Subjects, TokenSecret};
use base64::Engine as _;
use serde_json::Value;
use std::sync::{Arc, Mutex, RwLock};

/// Hash maps looked up by name or token on every request: foldhash, randomly seeded per map
/// (hashbrown's default), a fraction of SipHash's cost on these short keys.
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

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
    /// The live token secrets that hold a token.
    token_secrets: RwLock<HashMap<String, Arc<TokenSecret>>>,
    /// The secrets each service account lists in `secrets` (those that list any).
    listed_secrets: RwLock<HashMap<String, Vec<String>>>,
    /// Last-used labels to write: `namespace/name` → (UID, date).
    marks: Mutex<HashMap<String, (String, String)>>,
    marked: tokio::sync::Notify,
    synced: Synced,
}

/// A last-used label to write: the secret, its UID (the write's precondition) and the date.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Mark {
    /// Namespace of the secret.
    pub namespace: String,
    /// Name of the secret.
    pub name: String,
    /// Its UID when the token was used.
    pub uid: String,
    /// `YYYY-MM-DD`, UTC.
    pub date: String,
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

/// What the legacy authenticator reads of a live token secret that holds a token.
fn token_secret(obj: &Value) -> Option<TokenSecret> {
    if obj.get("type").and_then(Value::as_str) != Some(legacy::SECRET_TYPE) {
        return None;
    }
    let uid = live_uid(obj)?;
    let encoded = obj.pointer("/data/token").and_then(Value::as_str)?;
    let token = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())?;
    let label = |key: &str| {
        obj.pointer("/metadata/labels")
            .and_then(|l| l.get(key))
            .and_then(Value::as_str)
    };
    Some(TokenSecret {
        uid,
        token,
        last_used: label(legacy::LAST_USED_LABEL).map(str::to_string),
        invalid: label(legacy::INVALID_SINCE_LABEL).is_some_and(|v| !v.is_empty()),
    })
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

    /// Keeps the names a service account lists in `secrets`.
    fn put_listed_secrets(&self, key: String, obj: Option<&Value>) {
        let names: Vec<String> = obj
            .and_then(|o| o.get("secrets"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|r| r.get("name").and_then(Value::as_str).map(str::to_string))
            .collect();
        let mut map = self
            .listed_secrets
            .write()
            .unwrap_or_else(|p| p.into_inner());
        if names.is_empty() {
            map.remove(&key);
        } else {
            map.insert(key, names);
        }
    }

    fn put_token_secret(&self, key: String, obj: &Value) {
        let mut map = self
            .token_secrets
            .write()
            .unwrap_or_else(|p| p.into_inner());
        match token_secret(obj) {
            Some(t) => map.insert(key, Arc::new(t)),
            None => map.remove(&key),
        };
    }

    /// Waits for last-used labels to write, and takes them.
    pub(crate) async fn last_used(&self) -> Vec<Mark> {
        loop {
            let notified = self.marked.notified();
            let marks: Vec<Mark> = {
                let mut pending = self.marks.lock().unwrap_or_else(|p| p.into_inner());
                pending
                    .drain()
                    .map(|(key, (uid, date))| {
                        let (namespace, name) = key.split_once('/').unwrap_or(("", &key));
                        Mark {
                            namespace: namespace.to_string(),
                            name: name.to_string(),
                            uid,
                            date,
                        }
                    })
                    .collect()
            };
            if !marks.is_empty() {
                return marks;
            }
            notified.await;
        }
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
                if kind == Kind::Secrets {
                    let tokens = items
                        .iter()
                        .filter_map(|o| {
                            let (ns, name) = ns_name(o);
                            Some((key(ns, name), Arc::new(token_secret(o)?)))
                        })
                        .collect();
                    *self
                        .token_secrets
                        .write()
                        .unwrap_or_else(|p| p.into_inner()) = tokens;
                } else {
                    self.listed_secrets
                        .write()
                        .unwrap_or_else(|p| p.into_inner())
                        .clear();
                    for &o in &items {
                        let (ns, name) = ns_name(o);
                        self.put_listed_secrets(key(ns, name), Some(o));
                    }
                }
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
                if kind == Kind::Secrets {
                    self.put_token_secret(key(ns, name), o);
                } else {
                    self.put_listed_secrets(key(ns, name), Some(o));
                }
                match live_uid(o) {
                    Some(uid) => write().insert(key(ns, name), uid),
                    None => write().remove(&key(ns, name)),
                };
            }
            Change::Deleted(o) => {
                let (ns, name) = ns_name(o);
                if kind == Kind::Secrets {
                    self.token_secrets
                        .write()
                        .unwrap_or_else(|p| p.into_inner())
                        .remove(&key(ns, name));
                } else {
                    self.put_listed_secrets(key(ns, name), None);
                }
                write().remove(&key(ns, name));
            }
        })
        .await
    }
}

fn core_store(registry: &Registry, resource: &str) -> Option<Arc<GenericStore>> {
    registry.resources().stored("", "v1", resource)
}

impl Subjects for Index {
    fn service_account(&self, key: &str) -> Option<Arc<str>> {
        self.get(Kind::ServiceAccounts, key)
    }

    fn secret(&self, key: &str) -> Option<Arc<str>> {
        self.get(Kind::Secrets, key)
    }

    fn token_secret(&self, key: &str) -> Option<Arc<TokenSecret>> {
        let map = self.token_secrets.read().unwrap_or_else(|p| p.into_inner());
        map.get(key).cloned()
    }

    fn mark_used(&self, key: &str, uid: &str, date: &str) {
        let mut pending = self.marks.lock().unwrap_or_else(|p| p.into_inner());
        pending.insert(key.to_string(), (uid.to_string(), date.to_string()));
        drop(pending);
        self.marked.notify_one();
    }

    fn lists_secret(&self, service_account: &str, secret: &str) -> bool {
        let map = self
            .listed_secrets
            .read()
            .unwrap_or_else(|p| p.into_inner());
        map.get(service_account)
            .is_some_and(|names| names.iter().any(|n| n == secret))
    }
}
