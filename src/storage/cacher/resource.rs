//! The watch cache of one resource (`<prefix>/<resource>/`): an in-memory copy of its keys
//! kept current by ONE backend watch (the reflector), a ring of recent events for
//! watch-from-revision, and a [`Hub`] fanning events out to every watcher of the resource.
//! Events are applied and published under the same lock that watchers subscribe under, so a
//! watcher's replay from the ring and its live queue neither overlap nor leave a gap.

use crate::storage::watch::{self, Hub};
use crate::storage::{
    Chain, Error, KeyValue, ListOptions, ListResult, ListRevision, Result, Revision, Storage,
    WatchEvent, WatchStream,
};
use futures::StreamExt;
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;
use tokio::sync::watch as tokio_watch;
use tokio_util::sync::CancellationToken;

/// Tunables of the watch cache.
#[derive(Debug, Clone)]
pub struct CacherOptions {
    /// Events kept per resource for watch-from-revision.
    pub history: usize,
    /// Bound of one watcher's queue; a watcher that falls behind it is closed with Compacted.
    pub watcher_queue: usize,
    /// How often watchers that saw no event get a progress notification (bookmark).
    pub bookmark_interval: Duration,
    /// How long a NotOlderThan list waits for the cache to catch up before asking the backend.
    pub fresh_wait: Duration,
}

impl Default for CacherOptions {
    fn default() -> Self {
        CacherOptions {
            history: 4096,
            watcher_queue: watch::DEFAULT_QUEUE,
            bookmark_interval: Duration::from_secs(1),
            fresh_wait: Duration::from_millis(250),
        }
    }
}

struct State {
    items: BTreeMap<String, KeyValue>,
    revision: Revision,
    /// Every event after this revision is in `ring`.
    ring_start: Revision,
    ring: VecDeque<Arc<WatchEvent>>,
    ready: bool,
}

/// The cache of one resource prefix.
pub(crate) struct ResourceCache {
    prefix: String,
    state: RwLock<State>,
    hub: Arc<Hub>,
    opts: CacherOptions,
    revision_tx: tokio_watch::Sender<(bool, Revision)>,
    stop: CancellationToken,
}

impl ResourceCache {
    /// Starts caching `prefix` from `backend`.
    pub(super) fn start(
        prefix: String,
        backend: Arc<dyn Storage>,
        opts: CacherOptions,
    ) -> Arc<ResourceCache> {
        let (revision_tx, _) = tokio_watch::channel((false, 0));
        let rc = Arc::new(ResourceCache {
            prefix,
            state: RwLock::new(State {
                items: BTreeMap::new(),
                revision: 0,
                ring_start: 0,
                ring: VecDeque::new(),
                ready: false,
            }),
            hub: Arc::new(Hub::new(0, opts.watcher_queue)),
            opts,
            revision_tx,
            stop: CancellationToken::new(),
        });
        // Both detached: they hold the cache only weakly, return once its Drop cancels `stop`,
        // have no result, and log their own errors.
        tokio::spawn(reflect(Arc::downgrade(&rc), backend, rc.stop.clone()));
        tokio::spawn(bookmarks(
            Arc::downgrade(&rc.hub),
            rc.opts.bookmark_interval,
            rc.stop.clone(),
        ));
        rc
    }

    fn read(&self) -> RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits (at most `wait`) until the cache is ready and at least at `min`; false on timeout.
    pub(super) async fn wait_fresh(&self, min: Revision, wait: Duration) -> bool {
        let mut rx = self.revision_tx.subscribe();
        let ok =
            tokio::time::timeout(wait, rx.wait_for(|(ready, rev)| *ready && *rev >= min)).await;
        matches!(ok, Ok(Ok(_)))
    }

    /// A page of the cached keys under `prefix` (a sub-prefix of the resource).
    /// The cached value of `key`, if the cache holds it.
    pub(super) fn get(&self, key: &str) -> Option<KeyValue> {
        self.read().items.get(key).cloned()
    }

    pub(super) fn list(&self, prefix: &str, opts: &ListOptions) -> ListResult {
        let st = self.read();
        let from = match &opts.start_key {
            Some(s) if s.as_str() > prefix => s.clone(),
            _ => prefix.to_string(),
        };
        let mut items = Vec::new();
        let mut next_key = None;
        let mut remaining = 0i64;
        for (k, kv) in st.items.range(from..) {
            if !k.starts_with(prefix) {
                break;
            }
            if opts.limit > 0 && items.len() >= opts.limit {
                if next_key.is_none() {
                    next_key = Some(k.clone());
                }
                remaining += 1;
                continue;
            }
            items.push(kv.clone());
        }
        ListResult {
            items,
            revision: st.revision,
            remaining: next_key.as_ref().map(|_| remaining),
            next_key,
        }
    }

    /// Watches `prefix` after `after` from the ring (leaving out heartbeats when
    /// `without_heartbeats`); None when `after` is older than the ring (the caller asks the
    /// backend instead).
    pub(super) fn watch(
        &self,
        prefix: &str,
        after: Option<Revision>,
        without_heartbeats: bool,
    ) -> Option<WatchStream> {
        let st = self.read();
        if !st.ready {
            return None;
        }
        let (published, sub) = self.hub.subscribe(prefix, without_heartbeats);
        let after = after.unwrap_or(published);
        if after < st.ring_start {
            return None;
        }
        let replay: Vec<Arc<WatchEvent>> = st
            .ring
            .iter()
            .filter(|e| e.revision() > after && e.key().starts_with(prefix))
            .filter(|e| !(without_heartbeats && e.is_heartbeat()))
            .cloned()
            .collect();
        Some(watch::stream(replay, sub, after))
    }

    /// Whether the cache has its initial list.
    pub(super) fn ready(&self) -> bool {
        self.read().ready
    }

    /// Replaces the state with a fresh list; every current watcher is ended (they relist).
    fn replace(&self, items: Vec<KeyValue>, revision: Revision) {
        let mut st = self.write();
        st.items = items.into_iter().map(|kv| (kv.key.clone(), kv)).collect();
        st.revision = revision;
        st.ring_start = revision;
        st.ring.clear();
        st.ready = true;
        self.hub.cut_off_all();
        self.hub.publish(&[], revision);
        drop(st);
        self.revision_tx.send_replace((true, revision));
    }

    /// Applies one backend event (or progress notification) and publishes it.
    fn apply(&self, ev: WatchEvent) {
        let mut st = self.write();
        let rev = ev.revision();
        if rev <= st.revision && !matches!(ev, WatchEvent::Progress(_)) {
            return;
        }
        match &ev {
            WatchEvent::Created(kv) | WatchEvent::Updated { kv, .. } => {
                st.items.insert(kv.key.clone(), kv.clone());
            }
            WatchEvent::Deleted { prev, .. } => {
                st.items.remove(&prev.key);
            }
            WatchEvent::Progress(_) => {}
        }
        st.revision = st.revision.max(rev);
        if !matches!(ev, WatchEvent::Progress(_)) {
            if st.ring.len() >= self.opts.history.max(1) {
                if let Some(old) = st.ring.pop_front() {
                    st.ring_start = old.revision();
                }
            }
            let ev = Arc::new(ev);
            st.ring.push_back(ev.clone());
            self.hub.publish_shared(std::slice::from_ref(&ev), rev);
        } else {
            self.hub.publish(&[], rev);
        }
        let revision = st.revision;
        drop(st);
        self.revision_tx.send_replace((true, revision));
    }
}

impl Drop for ResourceCache {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Sends bookmarks to idle watchers every `interval`.
async fn bookmarks(hub: std::sync::Weak<Hub>, interval: Duration, stop: CancellationToken) {
    if interval.is_zero() {
        return;
    }
    let mut tick = tokio::time::interval(interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tick.tick() => match hub.upgrade() {
                Some(hub) => hub.progress(),
                None => return,
            },
        }
    }
}

/// Lists the whole resource consistently (pages at one revision).
async fn list_all(backend: &dyn Storage, prefix: &str) -> Result<(Vec<KeyValue>, Revision)> {
    let mut opts = ListOptions {
        revision: ListRevision::Latest,
        limit: 10_000,
        start_key: None,
    };
    let mut items = Vec::new();
    loop {
        let page = backend.list(prefix, opts.clone()).await?;
        items.extend(page.items);
        match page.next_key {
            Some(next) => {
                opts.revision = ListRevision::Exact(page.revision);
                opts.start_key = Some(next);
            }
            None => return Ok((items, page.revision)),
        }
    }
}

/// The reflector: list, then follow the backend watch; on a broken watch resume from the
/// cache's revision, and relist only when that revision was compacted away.
async fn reflect(
    cache: std::sync::Weak<ResourceCache>,
    backend: Arc<dyn Storage>,
    stop: CancellationToken,
) {
    let Some(prefix) = cache.upgrade().map(|c| c.prefix.clone()) else {
        return;
    };
    let mut backoff = Duration::from_millis(100);
    let mut need_list = true;
    loop {
        if stop.is_cancelled() {
            return;
        }
        let step = async {
            if need_list {
                let (items, rev) = list_all(backend.as_ref(), &prefix).await?;
                let Some(c) = cache.upgrade() else {
                    return Ok(true);
                };
                c.replace(items, rev);
                need_list = false;
            }
            let from = match cache.upgrade() {
                Some(c) => c.read().revision,
                None => return Ok(true),
            };
            let mut stream = backend.watch(&prefix, Some(from)).await?;
            backoff = Duration::from_millis(100);
            while let Some(ev) = stream.next().await {
                let ev = ev?;
                let Some(c) = cache.upgrade() else {
                    return Ok(true);
                };
                c.apply(ev);
            }
            // The backend closed the watch (it fell behind, or was restarted): resume.
            Ok(false)
        };
        let res: Result<bool> = tokio::select! {
            _ = stop.cancelled() => return,
            r = step => r,
        };
        match res {
            Ok(true) => return,
            Ok(false) => {
                tracing::debug!(prefix = %prefix, "watch cache's backend watch ended; resuming");
                // Never a busy loop, should a backend end watches at once.
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tokio::time::sleep(Duration::from_millis(10)) => {}
                }
            }
            Err(Error::Compacted { .. }) => {
                tracing::info!(prefix = %prefix, "watch cache fell behind compaction; relisting");
                need_list = true;
            }
            Err(e) => {
                tracing::warn!(prefix = %prefix, error = %Chain(&e), "watch cache lost its backend watch; retrying");
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tokio::time::sleep(backoff) => {}
                }
                backoff = (backoff * 2).min(Duration::from_secs(5));
            }
        }
    }
}
