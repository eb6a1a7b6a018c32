//! The watch cache (k8s.io/apiserver's cacher) in front of either backend. Per resource
//! (`<prefix>/<resource>/`) one backend watch feeds an in-memory copy and every watcher of
//! that resource. Served from memory: lists at `Any` / `NotOlderThan` (after waiting briefly
//! for the cache to catch up, else from the backend) and watches whose start is still in the
//! cache's event ring, and [`Storage::get_cached`] of a key the cache holds. A watch from
//! before the ring is `Err(Compacted)` (upstream's "too old resource version"). Everything
//! else — reads at `Latest` or `Exact`, writes — goes to the backend. A watch without heartbeats ([`Storage::watch_without_heartbeats`])
//! is not sent the updates the writer marked as heartbeats, live or replayed from the ring.

mod resource;

pub use resource::CacherOptions;

use super::{
    DeleteCheck, KeyValue, ListOptions, ListResult, ListRevision, Result, Revision, Storage,
    UpdateFn, WatchStream,
};
use bytes::Bytes;
use resource::ResourceCache;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long a first request waits for a new resource cache to fill.
const INIT_WAIT: Duration = Duration::from_secs(5);

/// The watch cache.
pub struct Cacher {
    backend: Arc<dyn Storage>,
    prefix: String,
    opts: CacherOptions,
    resources: Mutex<HashMap<String, Arc<ResourceCache>>>,
    /// Where each resource cache's tasks run: the runtime the cache was made on (the one that
    /// serves clients), not whichever runtime first asks for a resource. The controllers' own
    /// runtime (one thread) asks first for most resources; had it the tasks that apply every
    /// write and feed every watcher, client load would queue on that thread.
    runtime: Option<tokio::runtime::Handle>,
}

impl Cacher {
    /// A cache for keys under `prefix` (e.g. `/registry`) in front of `backend`; its tasks run
    /// on the current runtime.
    pub fn new(backend: Arc<dyn Storage>, prefix: &str, opts: CacherOptions) -> Cacher {
        Cacher {
            backend,
            prefix: prefix.trim_end_matches('/').to_string(),
            opts,
            resources: Mutex::new(HashMap::new()),
            runtime: tokio::runtime::Handle::try_current().ok(),
        }
    }

    /// The resource prefix that `prefix` lies under, if any: `<prefix>/<resource>/`, or
    /// `<prefix>/<group>/<resource>/` when the first part is a dotted group (custom resources
    /// and the groups kube-apiserver keys that way, such as apiextensions.k8s.io).
    fn resource_of(&self, prefix: &str) -> Option<String> {
        let rest = prefix
            .strip_prefix(self.prefix.as_str())?
            .strip_prefix('/')?;
        let (first, after) = rest.split_once('/')?;
        if first.is_empty() {
            return None;
        }
        if !first.contains('.') {
            return Some(format!("{}/{first}/", self.prefix));
        }
        let (resource, _) = after.split_once('/')?;
        (!resource.is_empty()).then(|| format!("{}/{first}/{resource}/", self.prefix))
    }

    /// The ready cache of `prefix`'s resource (started on first use), or None.
    async fn cache(&self, prefix: &str) -> Option<Arc<ResourceCache>> {
        let resource = self.resource_of(prefix)?;
        let rc = {
            let mut map = self.resources.lock().unwrap_or_else(|e| e.into_inner());
            map.entry(resource.clone())
                .or_insert_with(|| {
                    let (backend, opts) = (self.backend.clone(), self.opts.clone());
                    ResourceCache::start(resource, backend, opts, self.runtime.as_ref())
                })
                .clone()
        };
        if rc.ready() || rc.wait_fresh(0, INIT_WAIT).await {
            Some(rc)
        } else {
            None
        }
    }
}

impl Cacher {
    /// A watch from the cache's ring (`Err(Compacted)` when `after` is older than the ring),
    /// or from the backend while the cache has no initial list (every event comes from there,
    /// heartbeats too).
    async fn watch_from(
        &self,
        prefix: &str,
        after: Option<Revision>,
        without_heartbeats: bool,
    ) -> Result<WatchStream> {
        if let Some(rc) = self.cache(prefix).await {
            if let Some(stream) = rc.watch(prefix, after, without_heartbeats) {
                return stream;
            }
        }
        self.backend.watch(prefix, after).await
    }
}

#[async_trait::async_trait]
impl Storage for Cacher {
    async fn get(&self, key: &str) -> Result<KeyValue> {
        self.backend.get(key).await
    }

    fn remembered(&self, key: &str) -> Option<KeyValue> {
        self.backend.remembered(key)
    }

    fn forget_cached(&self, prefix: &str) {
        if let Some(resource) = self.resource_of(prefix) {
            self.resources
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&resource);
        }
    }

    async fn start_cache(&self, prefix: &str) {
        self.cache(prefix).await;
    }

    async fn get_cached(&self, key: &str) -> Result<KeyValue> {
        if let Some(kv) = self.cache(key).await.and_then(|rc| rc.get(key)) {
            return Ok(kv);
        }
        self.backend.get(key).await
    }

    async fn list(&self, prefix: &str, opts: ListOptions) -> Result<ListResult> {
        let min = match opts.revision {
            ListRevision::Any => 0,
            ListRevision::NotOlderThan(r) => r,
            ListRevision::Latest | ListRevision::Exact(_) => {
                return self.backend.list(prefix, opts).await
            }
        };
        if let Some(rc) = self.cache(prefix).await {
            if rc.wait_fresh(min, self.opts.fresh_wait).await {
                return Ok(rc.list(prefix, &opts));
            }
        }
        self.backend.list(prefix, opts).await
    }

    async fn create(&self, key: &str, value: Bytes, ttl: Option<Duration>) -> Result<KeyValue> {
        self.backend.create(key, value, ttl).await
    }

    async fn guaranteed_update(
        &self,
        key: &str,
        ignore_not_found: bool,
        update: UpdateFn<'_>,
    ) -> Result<KeyValue> {
        self.backend
            .guaranteed_update(key, ignore_not_found, update)
            .await
    }

    async fn delete(&self, key: &str, check: DeleteCheck<'_>) -> Result<KeyValue> {
        self.backend.delete(key, check).await
    }

    async fn watch(&self, prefix: &str, after: Option<Revision>) -> Result<WatchStream> {
        self.watch_from(prefix, after, false).await
    }

    async fn watch_without_heartbeats(
        &self,
        prefix: &str,
        after: Option<Revision>,
    ) -> Result<WatchStream> {
        self.watch_from(prefix, after, true).await
    }

    async fn current_revision(&self) -> Result<Revision> {
        self.backend.current_revision().await
    }

    async fn compact(&self, revision: Revision) -> Result<()> {
        self.backend.compact(revision).await
    }

    async fn check_health(&self) -> Result<()> {
        self.backend.check_health().await
    }

    fn close(&self) {
        self.backend.close();
    }

    async fn db_size(&self) -> Result<Option<(String, i64)>> {
        self.backend.db_size().await
    }
}
