//! A bounded map from request bytes to what they decode to, shared between threads: the
//! typed round trip's tables of remembered metadata and remembered rests. A quick_cache
//! cache (S3-FIFO): a key seen again stays while one-off keys come and go, so a table that
//! has filled up keeps serving its hot keys (a server writing the same objects makes a new
//! key per object every second, from managedFields' times). Keys (bodies of up to a few
//! KiB) are hashed with a randomly seeded hasher. May use: nothing internal.

use std::sync::Arc;

pub(super) struct Bounded<V> {
    map: quick_cache::sync::Cache<Box<[u8]>, Arc<V>>,
}

impl<V> Bounded<V> {
    pub(super) fn new(capacity: usize) -> Bounded<V> {
        Bounded {
            map: quick_cache::sync::Cache::new(capacity),
        }
    }

    pub(super) fn get(&self, key: &[u8]) -> Option<Arc<V>> {
        self.map.get(key)
    }

    /// Remembers `value` under `key`, evicting when full.
    pub(super) fn insert(&self, key: &[u8], value: Arc<V>) {
        self.map.insert(key.into(), value);
    }
}

#[cfg(test)]
mod tests {
    use super::Bounded;
    use std::sync::Arc;

    #[test]
    fn holds_at_most_its_capacity() {
        let b = Bounded::new(100);
        for k in 0..1000u32 {
            b.insert(&k.to_be_bytes(), Arc::new(k));
        }
        let kept = (0..1000u32)
            .filter(|k| b.get(&k.to_be_bytes()).is_some())
            .count();
        assert!(kept <= 100, "{kept} kept");
        assert!(kept > 0);
    }

    /// What a server sees: a few keys used over and over (the current metadata of the objects
    /// being written) and a stream of keys used once or twice (each object's metadata of a
    /// past second). Once full, the hot keys must still be found.
    #[test]
    fn keys_in_use_survive_a_stream_of_one_off_keys() {
        let b = Bounded::new(1024);
        let hot: Vec<Vec<u8>> = (0..64u32)
            .map(|k| format!("hot-{k}").into_bytes())
            .collect();
        let (mut lookups, mut misses) = (0, 0);
        for round in 0..200u32 {
            for h in 0..8u32 {
                let cold = format!("cold-{round}-{h}").into_bytes();
                b.insert(&cold, Arc::new(0));
            }
            for key in &hot {
                let found = b.get(key).is_some();
                if !found {
                    b.insert(key, Arc::new(1));
                }
                if round >= 100 {
                    lookups += 1;
                    misses += usize::from(!found);
                }
            }
        }
        assert!(
            misses * 100 <= lookups,
            "{misses} of {lookups} lookups of keys in use missed"
        );
    }
}
