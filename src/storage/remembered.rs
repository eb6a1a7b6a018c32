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

/// Recently updated keys and their values, bounded by [`REMEMBERED_KEYS`].
#[derive(Default)]
pub(crate) struct Remembered {
    known: Mutex<HashMap<String, KeyValue>>,
}

impl Remembered {
    /// The value last written or read under `key` in an update, if remembered.
    pub fn get(&self, key: &str) -> Option<KeyValue> {
        let known = self.known.lock().unwrap_or_else(|e| e.into_inner());
        known.get(key).cloned()
    }

    /// Remembers (or, with None, forgets) the value under `key` for the next update's guess.
    pub fn set(&self, key: &str, kv: Option<&KeyValue>) {
        let mut known = self.known.lock().unwrap_or_else(|e| e.into_inner());
        match kv {
            Some(kv) => {
                if known.len() >= REMEMBERED_KEYS && !known.contains_key(key) {
                    known.clear();
                }
                match known.get_mut(key) {
                    Some(slot) => *slot = kv.clone(),
                    None => {
                        known.insert(key.to_string(), kv.clone());
                    }
                }
            }
            None => {
                known.remove(key);
            }
        }
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
    fn stays_bounded() {
        let r = Remembered::default();
        for i in 0..(REMEMBERED_KEYS + 10) {
            r.set(&format!("/k{i}"), Some(&kv("/k", 2)));
        }
        let len = r.known.lock().map(|m| m.len()).unwrap_or(usize::MAX);
        assert!(len <= REMEMBERED_KEYS, "{len} keys remembered");
        assert!(r.get(&format!("/k{}", REMEMBERED_KEYS + 9)).is_some());
    }
}
