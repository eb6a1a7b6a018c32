//! Decoded objects by storage key and revision, with their JSON encoding made once.
//!
//! A stored object at one revision never changes, so decoding it (JSON → the served form) and
//! encoding the response (served form → JSON) are done once per revision instead of once per
//! GET, LIST item, watch event and update. This is the registry's counterpart of the
//! apiserver's `cachingObject` (one serialization per object shared by all watchers). The
//! memo is bounded by entries and by bytes (it starts over when full; a deleted key's entry
//! simply ages out); entries are only a cache, and a miss decodes again.

use bytes::Bytes;
use serde_json::Value;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex, OnceLock};

/// How many objects one resource keeps decoded.
const CAPACITY: usize = 4096;

/// How many bytes of stored JSON one resource keeps decoded. A decoded tree and its encoding
/// take about six times its JSON, so large objects (CRDs with their schemas) are kept a
/// hundred or so at a time rather than all of them: 4 MiB of 2,000 CRDs pinned ~25 MB after
/// one LIST of them.
const BUDGET_BYTES: usize = 1 << 20;

/// One object as served, at one revision.
#[derive(Debug)]
pub(crate) struct Decoded {
    /// The served object, `metadata.resourceVersion` included.
    pub obj: Value,
    json: OnceLock<Encoded>,
    /// The watch event line first made of it, with its type: every watcher sent this object
    /// as that type shares it (upstream's cachingObject serializes an object once for all
    /// watchers too), so a thousand watchers queue one copy, not a thousand.
    line: OnceLock<(&'static str, Bytes)>,
}

/// An object's JSON encoding and where its `metadata` value lies in it.
#[derive(Debug, Clone)]
pub(crate) struct Encoded {
    /// Exactly what `serde_json::to_vec` writes for the object.
    pub bytes: Bytes,
    /// The byte range of the `metadata` object, when the object has one.
    pub metadata: Option<Range<usize>>,
}

impl Encoded {
    /// Encodes `obj` as serde_json does, noting where a top-level `metadata` object lies.
    pub(crate) fn of(obj: &Value) -> Encoded {
        Encoded::without(obj, &[])
    }

    /// Encodes `obj` as [`Self::of`] encodes it once `metadata.resourceVersion` and
    /// `metadata.selfLink` are removed (the stored form of a resource stored as served),
    /// without changing or copying `obj`.
    pub(crate) fn of_stored(obj: &Value) -> Encoded {
        Encoded::without(obj, &["resourceVersion", "selfLink"])
    }

    /// Encodes `obj` as serde_json does, leaving out the `metadata` fields `skipped`.
    fn without(obj: &Value, skipped: &[&str]) -> Encoded {
        let Value::Object(map) = obj else {
            return Encoded {
                bytes: serde_json::to_vec(obj).unwrap_or_default().into(),
                metadata: None,
            };
        };
        // serde_json's compact map form, entry by entry: `{"k":v,...}`.
        let mut out = Vec::with_capacity(512);
        let mut metadata = None;
        out.push(b'{');
        for (i, (k, v)) in map.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            // Writing a Value into a Vec cannot fail (keys are strings, numbers finite).
            let _ = serde_json::to_writer(&mut out, k);
            out.push(b':');
            let start = out.len();
            match v {
                Value::Object(meta) if k == "metadata" => {
                    out.push(b'{');
                    let kept = meta.iter().filter(|(k, _)| !skipped.contains(&k.as_str()));
                    for (i, (k, v)) in kept.enumerate() {
                        if i > 0 {
                            out.push(b',');
                        }
                        let _ = serde_json::to_writer(&mut out, k);
                        out.push(b':');
                        let _ = serde_json::to_writer(&mut out, v);
                    }
                    out.push(b'}');
                    metadata = Some(start..out.len());
                }
                _ => {
                    let _ = serde_json::to_writer(&mut out, v);
                }
            }
        }
        out.push(b'}');
        // The buffer doubled as it grew, and what is kept of it (the watch cache's copy, the
        // memo's) keeps its capacity: large objects give back the slack.
        if out.capacity() > 4096 && out.capacity() - out.len() > out.len() / 4 {
            out.shrink_to_fit();
        }
        Encoded {
            bytes: out.into(),
            metadata,
        }
    }

    /// The encoding of the same object after [`stamp_resource_version`] (which appends the
    /// key to a metadata object without one), by splicing instead of encoding again.
    fn stamped(&self, revision: i64) -> Encoded {
        self.with_version(&revision.to_string())
    }

    /// The encoding of the same object with `metadata.resourceVersion` set to `version`,
    /// appended to the metadata (as [`stamp_resource_version`] appends it), by splicing.
    pub(crate) fn with_version(&self, version: &str) -> Encoded {
        let Some(meta) = self.metadata.clone() else {
            return self.clone();
        };
        let close = meta.end - 1;
        let mut field = Vec::with_capacity(version.len() + 22);
        if meta.len() > 2 {
            field.push(b',');
        }
        field.extend_from_slice(b"\"resourceVersion\":");
        // A string always serializes.
        let _ = serde_json::to_writer(&mut field, version);
        let mut out = Vec::with_capacity(self.bytes.len() + field.len());
        out.extend_from_slice(&self.bytes[..close]);
        out.extend_from_slice(&field);
        out.extend_from_slice(&self.bytes[close..]);
        Encoded {
            bytes: out.into(),
            metadata: Some(meta.start..meta.end + field.len()),
        }
    }
}

impl Decoded {
    /// Wraps a served object.
    pub(crate) fn new(obj: Value) -> Decoded {
        Decoded {
            obj,
            json: OnceLock::new(),
            line: OnceLock::new(),
        }
    }

    /// The watch event `{"type":<kind>,"object":<the object>}` and a newline, as
    /// `serde_json` writes it; made once per object for the first type asked (an object at
    /// one revision is nearly always sent as one type).
    pub(crate) fn event_line(&self, kind: &'static str) -> Bytes {
        let (first, line) = self
            .line
            .get_or_init(|| (kind, spliced_line(kind, self.json())));
        if *first == kind {
            line.clone()
        } else {
            spliced_line(kind, self.json())
        }
    }

    /// The object's JSON encoding (what `serde_json::to_vec(&self.obj)` gives), made once.
    pub(crate) fn json(&self) -> &Bytes {
        &self.encoded().bytes
    }

    /// The JSON of `metadata`, a slice of [`Self::json`] (None without a metadata object).
    pub(crate) fn metadata_json(&self) -> Option<&[u8]> {
        let e = self.encoded();
        e.metadata.clone().map(|r| &e.bytes[r])
    }

    fn encoded(&self) -> &Encoded {
        self.json.get_or_init(|| Encoded::of(&self.obj))
    }
}

/// One watch event line around an object's JSON encoding: `{"type":<kind>,"object":<json>}`
/// and a newline.
pub(crate) fn spliced_line(kind: &str, json: &[u8]) -> Bytes {
    let mut bytes = Vec::with_capacity(json.len() + kind.len() + 24);
    bytes.extend_from_slice(b"{\"type\":\"");
    bytes.extend_from_slice(kind.as_bytes());
    bytes.extend_from_slice(b"\",\"object\":");
    bytes.extend_from_slice(json);
    bytes.extend_from_slice(b"}\n");
    Bytes::from(bytes)
}

/// What the memo holds for one key.
#[derive(Debug)]
enum Slot {
    /// The object at a revision.
    At(i64, Arc<Decoded>),
    /// A write in flight: its stored encoding and the served object without a resourceVersion.
    Pending(Encoded, Value),
}

/// The bounded memo of one resource.
#[derive(Default)]
pub(crate) struct Memo {
    entries: Mutex<Entries>,
}

/// The memo's entries, each with the size of its stored JSON, and their total.
#[derive(Default)]
struct Entries {
    map: HashMap<String, (Slot, usize)>,
    bytes: usize,
}

impl Memo {
    /// The object stored under `key` at `revision`, if it is memoized.
    pub(crate) fn get(&self, key: &str, revision: i64) -> Option<Arc<Decoded>> {
        match self.lock().map.get(key) {
            Some((Slot::At(rev, d), _)) if *rev == revision => Some(d.clone()),
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
        let (slot, _) = entries.map.get_mut(key)?;
        let Slot::Pending(stored, obj) = slot else {
            return None;
        };
        if stored.bytes != value {
            return None;
        }
        let mut obj = std::mem::take(obj);
        stamp_resource_version(&mut obj, revision);
        let d = Arc::new(Decoded {
            obj,
            json: OnceLock::from(stored.stamped(revision)),
            line: OnceLock::new(),
        });
        *slot = Slot::At(revision, d.clone());
        Some(d)
    }

    /// Leaves the served object of a write about to store `bytes` under `key` (see
    /// [`Self::take_pending`]); a later write or a newer revision replaces it.
    pub(crate) fn pend(&self, key: &str, stored: Encoded, obj: Value) {
        let size = stored.bytes.len();
        let replaced = self.lock().store(key, Slot::Pending(stored, obj), size);
        drop(replaced);
    }

    /// Remembers `decoded`, stored as `size` bytes of JSON, as the object under `key` at
    /// `revision` (a newer revision replaces an older one, never the reverse).
    pub(crate) fn put(&self, key: &str, revision: i64, decoded: Arc<Decoded>, size: usize) {
        let replaced = {
            let mut entries = self.lock();
            if matches!(entries.map.get(key), Some((Slot::At(rev, _), _)) if *rev > revision) {
                return;
            }
            entries.store(key, Slot::At(revision, decoded), size)
        };
        // The replaced object trees are freed after the lock is released.
        drop(replaced);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Entries {
    /// Puts `slot` (of `size` bytes) under `key`; returns the slot it replaced and, when the
    /// memo started over, the entries it dropped (freed by the caller, after the lock).
    fn store(&mut self, key: &str, slot: Slot, size: usize) -> Dropped {
        let replaced = match self.map.get_mut(key) {
            Some(old) => {
                self.bytes = self.bytes - old.1 + size;
                Some(std::mem::replace(old, (slot, size)))
            }
            None => {
                self.bytes += size;
                self.map.insert(key.to_string(), (slot, size));
                None
            }
        };
        let mut evicted = None;
        if self.map.len() > CAPACITY || (self.bytes > BUDGET_BYTES && self.map.len() > 1) {
            // A cache, not a store: start over (keeping the newest) rather than track
            // recency on every read.
            let mut all = std::mem::take(&mut self.map);
            self.bytes = 0;
            if let Some(newest) = all.remove(key) {
                self.bytes = newest.1;
                self.map.insert(key.to_string(), newest);
            }
            evicted = Some(all);
        }
        (replaced, evicted)
    }
}

/// What [`Entries::store`] took out of the memo.
type Dropped = (
    Option<(Slot, usize)>,
    Option<HashMap<String, (Slot, usize)>>,
);

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
        memo.put("/k", 5, Arc::new(Decoded::new(json!({"v": 5}))), 10);
        assert_eq!(memo.get("/k", 5).unwrap().obj["v"], 5);
        assert!(memo.get("/k", 6).is_none());
        memo.put("/k", 4, Arc::new(Decoded::new(json!({"v": 4}))), 10);
        assert_eq!(memo.get("/k", 5).unwrap().obj["v"], 5);
        memo.put("/k", 7, Arc::new(Decoded::new(json!({"v": 7}))), 10);
        assert!(memo.get("/k", 5).is_none());
        assert_eq!(memo.get("/k", 7).unwrap().obj["v"], 7);
    }

    #[test]
    fn a_pending_write_is_served_once_stored_with_the_same_bytes() {
        let memo = Memo::default();
        let obj = json!({"metadata": {"name": "x"}, "spec": {}});
        let stored = Encoded::of(&obj);
        let bytes = stored.bytes.clone();
        memo.pend("/k", stored, obj);
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
        assert_eq!(d.metadata_json(), None);
    }

    /// Splicing the resourceVersion into the stored encoding gives byte for byte what encoding
    /// the stamped object gives, and the metadata slice is the metadata's own encoding.
    #[test]
    fn a_stamped_encoding_is_the_encoding_of_the_stamped_object() {
        for obj in [
            json!({"kind": "Lease", "metadata": {"name": "a\"b", "labels": {"k": "v"}}, "spec": {"x": 1}}),
            json!({"metadata": {}, "data": {"metadata": "\u{e9}}"}}),
            json!({"spec": {}, "metadata": {"name": "last"}}),
            json!({"metadata": "not an object"}),
            json!({"spec": {}}),
            json!({}),
            json!([1, 2]),
        ] {
            let stored = Encoded::of(&obj);
            assert_eq!(stored.bytes, serde_json::to_vec(&obj).unwrap(), "{obj}");
            let mut served = obj.clone();
            stamp_resource_version(&mut served, 42);
            let want = serde_json::to_vec(&served).unwrap();
            let spliced = stored.stamped(42);
            assert_eq!(
                String::from_utf8_lossy(&spliced.bytes),
                String::from_utf8_lossy(&want),
                "{obj}"
            );
            let d = Decoded {
                obj: served.clone(),
                json: OnceLock::from(spliced),
                line: OnceLock::new(),
            };
            let meta = served
                .get("metadata")
                .filter(|m| m.is_object())
                .map(|m| serde_json::to_vec(m).unwrap());
            assert_eq!(d.metadata_json().map(<[u8]>::to_vec), meta, "{obj}");
            assert_eq!(
                Decoded::new(served).metadata_json().map(<[u8]>::to_vec),
                meta,
                "{obj}"
            );
        }
    }

    /// The stored form encoded straight from the served object is the encoding of the object
    /// with resourceVersion and selfLink removed, and splicing the version back gives the
    /// served object (its resourceVersion last in metadata).
    #[test]
    fn the_stored_encoding_leaves_out_the_version_without_touching_the_object() {
        for obj in [
            json!({"kind": "ConfigMap", "metadata": {"name": "a", "resourceVersion": "7",
                   "labels": {"resourceVersion": "x"}}, "data": {"k": "v\n"}}),
            json!({"metadata": {"resourceVersion": "7", "selfLink": "/x"}}),
            json!({"metadata": {"name": "n"}, "spec": {"metadata": {"resourceVersion": "1"}}}),
            json!({"metadata": "not an object"}),
            json!([1]),
        ] {
            let mut stored = obj.clone();
            let version = stored
                .get_mut("metadata")
                .and_then(Value::as_object_mut)
                .and_then(|m| {
                    m.shift_remove("selfLink");
                    m.shift_remove("resourceVersion")
                });
            let encoded = Encoded::of_stored(&obj);
            assert_eq!(
                String::from_utf8_lossy(&encoded.bytes),
                String::from_utf8_lossy(&serde_json::to_vec(&stored).unwrap()),
                "{obj}"
            );
            assert_eq!(encoded.metadata, Encoded::of(&stored).metadata, "{obj}");
            if let Some(Value::String(v)) = version {
                let served: Value =
                    serde_json::from_slice(&encoded.with_version(&v).bytes).unwrap();
                let mut want = obj.clone();
                want["metadata"]
                    .as_object_mut()
                    .unwrap()
                    .shift_remove("selfLink");
                assert_eq!(served, want, "{obj}");
            }
        }
    }

    #[test]
    fn stays_bounded() {
        let memo = Memo::default();
        for i in 0..(CAPACITY + 10) {
            memo.put(&format!("/k{i}"), 1, Arc::new(Decoded::new(json!(i))), 10);
        }
        assert!(memo.entries.lock().unwrap().map.len() <= CAPACITY);
    }

    #[test]
    fn large_objects_are_kept_within_the_byte_budget() {
        let memo = Memo::default();
        let size = BUDGET_BYTES / 4 + 1;
        for i in 0..10 {
            memo.put(&format!("/k{i}"), 1, Arc::new(Decoded::new(json!(i))), size);
            let entries = memo.entries.lock().unwrap();
            assert!(entries.bytes <= BUDGET_BYTES, "{} bytes", entries.bytes);
            assert_eq!(entries.bytes, entries.map.len() * size);
        }
        // The newest entry survives a start-over.
        assert!(memo.get("/k9", 1).is_some());
        // Replacing an entry counts its new size, not both.
        memo.put("/k9", 2, Arc::new(Decoded::new(json!(9))), 7);
        let entries = memo.entries.lock().unwrap();
        assert_eq!(entries.bytes, (entries.map.len() - 1) * size + 7);
    }

    #[test]
    fn watchers_share_one_event_line_per_object() {
        let obj =
            json!({"kind": "ConfigMap", "metadata": {"name": "a\"b", "resourceVersion": "7"}});
        let d = Decoded::new(obj.clone());
        let serde = |kind: &str| {
            let mut v = serde_json::to_vec(&json!({"type": kind, "object": obj})).unwrap();
            v.push(b'\n');
            v
        };
        let first = d.event_line("ADDED");
        assert_eq!(first, serde("ADDED"));
        // The same bytes, not a copy.
        assert_eq!(d.event_line("ADDED").as_ptr(), first.as_ptr());
        // Another type is made on its own and leaves the shared line alone.
        assert_eq!(d.event_line("MODIFIED"), serde("MODIFIED"));
        assert_eq!(d.event_line("ADDED").as_ptr(), first.as_ptr());
    }
}
