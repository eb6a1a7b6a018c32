//! A bounded map from request bytes to what they decode to, shared between threads: the
//! typed round trip's tables of remembered metadata and remembered rests. Keys (bodies of up
//! to a few KiB) are hashed with foldhash, randomly seeded; when full, an insert evicts one
//! entry (the first in the map's randomly seeded order). May use: nothing internal.

use foldhash::fast::RandomState;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

pub(super) struct Bounded<V> {
    capacity: usize,
    map: Mutex<HashMap<Box<[u8]>, Arc<V>, RandomState>>,
}

impl<V> Bounded<V> {
    pub(super) fn new(capacity: usize) -> Bounded<V> {
        Bounded {
            capacity,
            map: Mutex::new(HashMap::default()),
        }
    }

    pub(super) fn get(&self, key: &[u8]) -> Option<Arc<V>> {
        self.lock().get(key).cloned()
    }

    /// Remembers `value` under `key`, evicting one entry when full.
    pub(super) fn insert(&self, key: &[u8], value: Arc<V>) {
        let mut map = self.lock();
        if map.len() >= self.capacity {
            if let Some(k) = map.keys().next().cloned() {
                map.remove(&k);
            }
        }
        map.insert(key.into(), value);
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<Box<[u8]>, Arc<V>, RandomState>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::Bounded;
    use std::sync::Arc;

    #[test]
    fn holds_at_most_its_capacity() {
        let b = Bounded::new(2);
        for k in [b"a", b"b", b"c"] {
            b.insert(k, Arc::new(k[0]));
        }
        let kept = [b"a", b"b", b"c"]
            .iter()
            .filter(|k| b.get(&k[..]).is_some())
            .count();
        assert_eq!(kept, 2);
        assert_eq!(
            b.get(b"c").as_deref(),
            Some(&b'c'),
            "the newest entry is kept"
        );
    }
}
