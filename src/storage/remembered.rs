//! The value each recently updated key had after its last update, as the apiserver's
//! storage passes the watch cache's copy into GuaranteedUpdate: a guess that saves the read
//! before an update. It is never trusted: the write compares the key's mod revision, and a
//! decision taken on a remembered value (an error, or "nothing to change") is taken again on
//! the value read from the store.

use super::KeyValue;
use std::collections::HashMap;
use std::sync::Mutex;

/// How many keys are remembered; the map starts over when full.
const REMEMBERED_KEYS: usize = 4096;
/// How many value bytes are remembered in all (objects may be up to 1.5 MiB each); the map
/// starts over when a new value would pass it.
const REMEMBERED_BYTES: usize = 16 << 20;

/// Recently updated keys and their values, bounded by [`REMEMBERED_KEYS`] and
/// [`REMEMBERED_BYTES`].
#[derive(Default)]
pub(crate) struct Remembered {
    known: Mutex<Known>,
}

#[derive(Default)]
struct Known {
    values: HashMap<String, KeyValue>,
    /// Sum of the remembered values' lengths.
    bytes: usize,
}

impl Remembered {
    /// The value last written or read under `key` in an update, if remembered.
    pub(super) fn get(&self, key: &str) -> Option<KeyValue> {
        self.lock().values.get(key).cloned()
    }

    /// Remembers (or, with None, forgets) the value under `key` for the next update's guess.
    pub(super) fn set(&self, key: &str, kv: Option<&KeyValue>) {
        let mut known = self.lock();
        if let Some(old) = known.values.remove(key) {
            known.bytes -= old.value.len();
        }
        let Some(kv) = kv else {
            return;
        };
        if known.values.len() >= REMEMBERED_KEYS || known.bytes + kv.value.len() > REMEMBERED_BYTES
        {
            *known = Known::default();
        }
        if kv.value.len() <= REMEMBERED_BYTES {
            known.bytes += kv.value.len();
            known.values.insert(key.to_string(), kv.clone());
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Known> {
        self.known.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn kv(key: &str, rev: i64) -> KeyValue {
        KeyValue {
            key: key.into(),
            value: Bytes::from(format!("v{rev}")),
            create_revision: 1,
            mod_revision: rev,
        }
    }

    #[test]
    fn remembers_the_last_value_and_forgets_on_none() {
        let r = Remembered::default();
        assert_eq!(r.get("/a"), None);
        r.set("/a", Some(&kv("/a", 2)));
        r.set("/a", Some(&kv("/a", 3)));
        assert_eq!(r.get("/a").map(|k| k.mod_revision), Some(3));
        r.set("/a", None);
        assert_eq!(r.get("/a"), None);
    }

    #[test]
    fn stays_bounded_in_keys() {
        let r = Remembered::default();
        for i in 0..(REMEMBERED_KEYS + 10) {
            r.set(&format!("/k{i}"), Some(&kv("/k", 2)));
        }
        let len = r.lock().values.len();
        assert!(len <= REMEMBERED_KEYS, "{len} keys remembered");
        assert!(r.get(&format!("/k{}", REMEMBERED_KEYS + 9)).is_some());
    }

    #[test]
    fn stays_bounded_in_bytes() {
        let r = Remembered::default();
        let big = |rev| KeyValue {
            value: Bytes::from(vec![b'x'; 1536 * 1024]),
            ..kv("/big", rev)
        };
        for i in 0..40 {
            r.set(&format!("/big{i}"), Some(&big(i)));
            // Replacing a key's value counts only the new one.
            r.set(&format!("/big{i}"), Some(&big(i + 1)));
        }
        let known = r.lock();
        let sum: usize = known.values.values().map(|v| v.value.len()).sum();
        assert_eq!(known.bytes, sum);
        assert!(sum <= REMEMBERED_BYTES, "{sum} bytes remembered");
        assert!(known.values.contains_key("/big39"));
    }
}
