//! Decoded objects by storage key and revision, with their JSON encoding made once.
//!
//! A stored object at one revision never changes, so decoding it (JSON → the served form) and
//! encoding the response (served form → JSON) are done once per revision instead of once per
//! GET, LIST item, watch event and update. This is the registry's counterpart of the
//! apiserver's `cachingObject` (one serialization per object shared by all watchers). The
//! memo is bounded (it starts over when full; a deleted key's entry simply ages out); entries
//! are only a cache, and a miss decodes again.

use bytes::Bytes;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// How many objects one resource keeps decoded.
const CAPACITY: usize = 4096;

/// One object as served, at one revision.
#[derive(Debug)]
pub struct Decoded {
    /// The served object, `metadata.resourceVersion` included.
    pub obj: Value,
    json: OnceLock<Bytes>,
}

impl Decoded {
    /// Wraps a served object.
    pub fn new(obj: Value) -> Decoded {
        Decoded {
            obj,
            json: OnceLock::new(),
        }
    }

    /// The object's JSON encoding (what `serde_json::to_vec(&self.obj)` gives), made once.
    pub fn json(&self) -> &Bytes {
        self.json
            .get_or_init(|| Bytes::from(serde_json::to_vec(&self.obj).unwrap_or_default()))
    }
}

/// What the memo holds for one key.
#[derive(Debug)]
enum Slot {
    /// The object at a revision.
    At(i64, Arc<Decoded>),
    /// A write in flight: its stored bytes and the served object without a resourceVersion.
    Pending(Bytes, Value),
}

/// The bounded memo of one resource.
#[derive(Default)]
pub(crate) struct Memo {
    entries: Mutex<HashMap<String, Slot>>,
}

impl Memo {
    /// The object stored under `key` at `revision`, if it is memoized.
    pub(crate) fn get(&self, key: &str, revision: i64) -> Option<Arc<Decoded>> {
        match self.lock().get(key) {
            Some(Slot::At(rev, d)) if *rev == revision => Some(d.clone()),
            _ => None,
        }
    }

    /// The object a write stored as `value` under `key` at `revision`, when the writer left it
    /// pending here ([`Self::pend`]): stamped with the revision and memoized, so whoever sees
    /// the write first (the writer or a watcher) does not decode it.
    pub(crate) fn take_pending(
        &self,
        key: &str,
        revision: i64,
        value: &Bytes,
    ) -> Option<Arc<Decoded>> {
        let mut entries = self.lock();
        let slot = entries.get_mut(key)?;
        let Slot::Pending(bytes, obj) = slot else {
            return None;
        };
        if bytes != value {
            return None;
        }
        let mut obj = std::mem::take(obj);
        stamp_resource_version(&mut obj, revision);
        let d = Arc::new(Decoded::new(obj));
        *slot = Slot::At(revision, d.clone());
        Some(d)
    }

    /// Leaves the served object of a write about to store `bytes` under `key` (see
    /// [`Self::take_pending`]); a later write or a newer revision replaces it.
    pub(crate) fn pend(&self, key: &str, bytes: Bytes, obj: Value) {
        let replaced = store(&mut self.lock(), key, Slot::Pending(bytes, obj));
        drop(replaced);
    }

    /// Remembers `decoded` as the object under `key` at `revision` (a newer revision
    /// replaces an older one, never the reverse).
    pub(crate) fn put(&self, key: &str, revision: i64, decoded: Arc<Decoded>) {
        let replaced = {
            let mut entries = self.lock();
            if matches!(entries.get(key), Some(Slot::At(rev, _)) if *rev > revision) {
                return;
            }
            store(&mut entries, key, Slot::At(revision, decoded))
        };
        // The replaced object tree is freed after the lock is released.
        drop(replaced);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Slot>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Puts `slot` under `key` and returns what it replaced.
fn store(entries: &mut HashMap<String, Slot>, key: &str, slot: Slot) -> Option<Slot> {
    if let Some(old) = entries.get_mut(key) {
        return Some(std::mem::replace(old, slot));
    }
    if entries.len() >= CAPACITY {
        // A cache, not a store: start over rather than track recency on every read.
        entries.clear();
    }
    entries.insert(key.to_string(), slot);
    None
}

/// Sets `metadata.resourceVersion` the way every served object gets it: the stored form has
/// none, so it goes last in metadata (a write's pending object and a decoded one must match
/// byte for byte).
pub(crate) fn stamp_resource_version(obj: &mut Value, revision: i64) {
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("resourceVersion".into(), Value::from(revision.to_string()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn serves_only_the_memoized_revision_and_never_goes_back() {
        let memo = Memo::default();
        memo.put("/k", 5, Arc::new(Decoded::new(json!({"v": 5}))));
        assert_eq!(memo.get("/k", 5).unwrap().obj["v"], 5);
        assert!(memo.get("/k", 6).is_none());
        memo.put("/k", 4, Arc::new(Decoded::new(json!({"v": 4}))));
        assert_eq!(memo.get("/k", 5).unwrap().obj["v"], 5);
        memo.put("/k", 7, Arc::new(Decoded::new(json!({"v": 7}))));
        assert!(memo.get("/k", 5).is_none());
        assert_eq!(memo.get("/k", 7).unwrap().obj["v"], 7);
    }

    #[test]
    fn a_pending_write_is_served_once_stored_with_the_same_bytes() {
        let memo = Memo::default();
        let obj = json!({"metadata": {"name": "x"}, "spec": {}});
        let bytes = Bytes::from(serde_json::to_vec(&obj).unwrap());
        memo.pend("/k", bytes.clone(), obj);
        assert!(
            memo.get("/k", 9).is_none(),
            "not served before it is stored"
        );
        assert!(memo
            .take_pending("/k", 9, &Bytes::from_static(b"{}"))
            .is_none());
        let d = memo.take_pending("/k", 9, &bytes).unwrap();
        assert_eq!(
            &d.json()[..],
            br#"{"metadata":{"name":"x","resourceVersion":"9"},"spec":{}}"#
        );
        assert!(Arc::ptr_eq(&memo.get("/k", 9).unwrap(), &d));
        assert!(memo.take_pending("/k", 9, &bytes).is_none(), "taken once");
    }

    #[test]
    fn json_is_the_serde_encoding() {
        let d = Decoded::new(json!({"b": 1, "a": [1, "x"]}));
        assert_eq!(
            &d.json()[..],
            serde_json::to_vec(&d.obj).unwrap().as_slice()
        );
    }

    #[test]
    fn stays_bounded() {
        let memo = Memo::default();
        for i in 0..(CAPACITY + 10) {
            memo.put(&format!("/k{i}"), 1, Arc::new(Decoded::new(json!(i))));
        }
        assert!(memo.entries.lock().unwrap().len() <= CAPACITY);
    }
}
