//! Following one stored resource from inside the server, as an informer does: a full list,
//! then every watch event; an expired watch lists again. What the server keeps in memory
//! about stored objects (the RBAC index, the token subjects) is kept current with it.

use super::error::Error;
use super::store::list::{ListOptions, WatchEvent};
use super::{Context, GenericStore};
use futures::StreamExt;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use tokio::sync::Notify;

/// Which of up to eight followed kinds have been listed once.
#[derive(Default)]
pub(crate) struct Synced {
    bits: AtomicU8,
    notify: Notify,
}

impl Synced {
    /// Marks kind number `n` (0-7) as listed.
    pub(crate) fn mark(&self, n: usize) {
        self.bits.fetch_or(1 << n, Ordering::AcqRel);
        self.notify.notify_waiters();
    }

    /// Whether the first `count` kinds have all been listed.
    fn all(&self, count: usize) -> bool {
        let want = ((1u16 << count) - 1) as u8;
        self.bits.load(Ordering::Acquire) & want == want
    }

    /// Waits until the first `count` kinds have all been listed.
    pub(crate) async fn wait(&self, count: usize) {
        loop {
            let notified = self.notify.notified();
            if self.all(count) {
                return;
            }
            notified.await;
        }
    }
}

/// What a follower is told.
pub(crate) enum Change<'a> {
    /// A full list: these objects, and no others, exist now.
    Listed(Vec<&'a Value>),
    /// One object was created or changed.
    Put(&'a Value),
    /// One object was deleted.
    Deleted(&'a Value),
}

impl<'a> Change<'a> {
    /// Mirrors the change into `map`: every object, as `make` turns it, under `key`.
    pub(crate) fn mirror<K: Ord, T>(
        self,
        map: &mut BTreeMap<K, T>,
        key: impl Fn(&Value) -> K,
        make: impl Fn(&'a Value) -> T,
    ) {
        match self {
            Change::Listed(items) => *map = items.into_iter().map(|o| (key(o), make(o))).collect(),
            Change::Put(o) => {
                map.insert(key(o), make(o));
            }
            Change::Deleted(o) => {
                map.remove(&key(o));
            }
        }
    }
}

/// Follows `store` until the future is dropped or storage fails, telling `apply` every
/// change.
///
/// # Errors
///
/// Listing or watching failed (the caller retries).
pub(crate) async fn follow(
    store: &Arc<GenericStore>,
    apply: &(dyn Fn(Change<'_>) + Send + Sync),
) -> Result<(), Error> {
    let ctx = Context::default();
    loop {
        let list = store.list(&ctx, &ListOptions::default()).await?;
        apply(Change::Listed(list.items.iter().map(|d| &d.obj).collect()));
        let opts = ListOptions {
            resource_version: Some(list.resource_version.clone()),
            ..ListOptions::default()
        };
        let (mut events, _) = store.watch_with_progress(&ctx, &opts).await?;
        while let Some(event) = events.next().await {
            match event {
                WatchEvent::Added(d) | WatchEvent::Modified(d) => apply(Change::Put(&d.obj)),
                WatchEvent::Deleted(d) => apply(Change::Deleted(&d.obj)),
                WatchEvent::Bookmark { .. } => {}
                WatchEvent::Error(_) => break,
            }
        }
    }
}

/// `metadata.namespace` and `metadata.name` of an object.
pub(crate) fn ns_name(obj: &Value) -> (&str, &str) {
    let m = |f: &str| {
        obj.get("metadata")
            .and_then(|m| m.get(f))
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    (m("namespace"), m("name"))
}

/// `namespace/name` of an object.
pub(crate) fn object_key(obj: &Value) -> String {
    let (ns, name) = ns_name(obj);
    format!("{ns}/{name}")
}
