//! The watch cache of one resource (`<prefix>/<resource>/`): an in-memory copy of its keys
//! kept current by ONE backend watch (the reflector), a ring of recent events for
//! watch-from-revision, and a [`Hub`] fanning events out to every watcher of the resource.
//! Events are applied and published under the same lock that watchers subscribe under, so a
//! watcher's replay from the ring and its live queue neither overlap nor leave a gap.
//!
//! The ring keeps at least [`CacherOptions::history_age`] of events (upstream's
//! eventFreshDuration, 75 s), between [`HISTORY_FLOOR`] (or [`HISTORY_FLOOR_BYTES`]) and
//! [`CacherOptions::history`] events and within [`CacherOptions::history_bytes`],
//! so a watcher closed for being slow can resume where it was instead of relisting. A replay
//! is read from the ring lazily, a batch at a time as the client takes it: a watcher holds
//! a cursor, not a copy of the history, and subscribes to the live queue only once it has
//! caught up.

use crate::storage::watch::{self, Hub};
use crate::storage::{
    Chain, Error, KeyValue, ListOptions, ListResult, ListRevision, Result, Revision, Storage,
    WatchEvent, WatchStream,
};
use futures::StreamExt;
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};
use tokio::sync::watch as tokio_watch;
use tokio_util::sync::CancellationToken;

/// Events the ring keeps whatever their age: this many, as long as they hold no more than
/// [`HISTORY_FLOOR_BYTES`] (a resource of large objects, CRDs with their schemas, keeps
/// fewer: 1,024 of those held tens of MB long after anyone could want them).
const HISTORY_FLOOR: usize = 1024;
const HISTORY_FLOOR_BYTES: usize = 1 << 20;
/// How often (at most) events past their age leave the ring when no new event pushes them
/// out.
const TRIM_EVERY: Duration = Duration::from_secs(5);
/// Events a replay takes from the ring per lock, and the ring entries it scans at most.
const REPLAY_BATCH: usize = 64;
const REPLAY_SCAN: usize = 4096;

/// Tunables of the watch cache.
#[derive(Debug, Clone)]
pub struct CacherOptions {
    /// At most this many events are kept per resource for watch-from-revision (upstream's
    /// upper bound of the watch cache, 100 Ki events).
    pub history: usize,
    /// Events younger than this stay in the ring (up to `history`).
    pub history_age: Duration,
    /// ... and up to this many bytes of keys and values (an update keeps the value before it
    /// alive, so lease renewals at 20,000/s would otherwise hold 100 Ki old leases).
    pub history_bytes: usize,
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
            history: 100 * 1024,
            history_age: Duration::from_secs(75),
            history_bytes: 64 << 20,
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
    /// Events in revision order, with when they were applied.
    ring: VecDeque<(Instant, Arc<WatchEvent>)>,
    /// Bytes of keys and values the ring's events hold ([`event_bytes`]).
    ring_bytes: usize,
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
    /// apiserver_watch_cache_events_dispatched_total of this resource.
    dispatched: prometheus_client::metrics::counter::Counter,
}

impl ResourceCache {
    /// Starts caching `prefix` from `backend`, the tasks on `runtime` (else the current one).
    pub(super) fn start(
        prefix: String,
        backend: Arc<dyn Storage>,
        opts: CacherOptions,
        runtime: Option<&tokio::runtime::Handle>,
    ) -> Arc<ResourceCache> {
        let (revision_tx, _) = tokio_watch::channel((false, 0));
        let dispatched = crate::metrics::global().watch.dispatched(&prefix);
        let rc = Arc::new(ResourceCache {
            dispatched,
            prefix,
            state: RwLock::new(State {
                items: BTreeMap::new(),
                revision: 0,
                ring_start: 0,
                ring: VecDeque::new(),
                ring_bytes: 0,
                ready: false,
            }),
            hub: Arc::new(Hub::new(0, opts.watcher_queue)),
            opts,
            revision_tx,
            stop: CancellationToken::new(),
        });
        // Both detached: they hold the cache only weakly, return once its Drop cancels `stop`,
        // have no result, and log their own errors.
        let current;
        let runtime = match runtime {
            Some(r) => r,
            None => {
                current = tokio::runtime::Handle::current();
                &current
            }
        };
        runtime.spawn(reflect(Arc::downgrade(&rc), backend, rc.stop.clone()));
        runtime.spawn(upkeep(Arc::downgrade(&rc), rc.stop.clone()));
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
    /// `without_heartbeats`); None while the cache has no initial list (the caller asks the
    /// backend instead). A revision older than the ring is `Err(Compacted)`, as upstream's
    /// watch cache answers "too old resource version": the client relists. (Replaying it
    /// from the backend instead let every lagging watcher hold its own copy of the history.)
    pub(super) fn watch(
        self: &Arc<Self>,
        prefix: &str,
        after: Option<Revision>,
        without_heartbeats: bool,
    ) -> Option<Result<WatchStream>> {
        let st = self.read();
        if !st.ready {
            return None;
        }
        let after = match after {
            Some(a) if a < st.ring_start => {
                return Some(Err(Error::Compacted {
                    requested: a,
                    oldest: st.ring_start + 1,
                }))
            }
            Some(a) => a,
            None => {
                // From now: straight to the live queue.
                let (published, sub) = self.hub.subscribe(prefix, without_heartbeats);
                return Some(Ok(watch::stream(vec![], sub, published)));
            }
        };
        drop(st);
        let replay = Replay {
            cache: Arc::clone(self),
            prefix: prefix.to_string(),
            without_heartbeats,
            after,
            cursor: after,
            sent: after,
            batch: VecDeque::new(),
        };
        Some(Ok(replay.into_stream()))
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
        st.ring_bytes = 0;
        st.ready = true;
        self.hub.cut_off_all();
        self.hub.publish(&[], revision);
        drop(st);
        self.revision_tx.send_replace((true, revision));
    }

    /// Applies one backend event (or progress notification) and publishes it.
    fn apply(&self, mut ev: WatchEvent) {
        let mut st = self.write();
        let rev = ev.revision();
        if rev <= st.revision && !matches!(ev, WatchEvent::Progress(_)) {
            return;
        }
        // The backend reads the value before a change afresh; the cache holds the same
        // revision already (the event that wrote it may still be in the ring), so the event
        // shares that copy instead of keeping a second one for as long as the ring does.
        if let WatchEvent::Updated { prev, .. } | WatchEvent::Deleted { prev, .. } = &mut ev {
            if let Some(cur) = st.items.get(&prev.key) {
                if cur.mod_revision == prev.mod_revision {
                    prev.value = cur.value.clone();
                }
            }
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
            let size = event_bytes(&ev);
            let now = Instant::now();
            trim(&mut st, &self.opts, now, size);
            let ev = Arc::new(ev);
            st.ring_bytes += size;
            st.ring.push_back((now, ev.clone()));
            self.hub.publish_shared(std::slice::from_ref(&ev), rev);
            self.dispatched.inc();
        } else {
            self.hub.publish(&[], rev);
        }
        let revision = st.revision;
        drop(st);
        self.revision_tx.send_replace((true, revision));
    }
}

/// Drops from the front of the ring what it need not keep, making room for one more event of
/// `incoming` bytes (none when 0): events past `history` or `history_bytes`, and events older
/// than `history_age` beyond the floor.
fn trim(st: &mut State, opts: &CacherOptions, now: Instant, incoming: usize) {
    let max = opts.history.max(1);
    let room = usize::from(incoming > 0);
    while let Some((at, old)) = st.ring.front() {
        let above_floor =
            st.ring.len() >= HISTORY_FLOOR.min(max) || st.ring_bytes > HISTORY_FLOOR_BYTES;
        let aged = above_floor && now.duration_since(*at) > opts.history_age;
        let full = st.ring_bytes + incoming > opts.history_bytes;
        if st.ring.len() + room <= max && !aged && !full {
            break;
        }
        let (start, bytes) = (old.revision(), event_bytes(old));
        st.ring_start = start;
        st.ring_bytes -= bytes;
        st.ring.pop_front();
    }
}

/// The bytes of keys and values an event keeps alive, as the ring counts them.
fn event_bytes(ev: &WatchEvent) -> usize {
    let kv = |kv: &crate::storage::KeyValue| kv.key.len() + kv.value.len();
    match ev {
        WatchEvent::Created(new) => kv(new),
        WatchEvent::Updated { kv: new, prev, .. } => kv(new) + kv(prev),
        WatchEvent::Deleted { prev, .. } => kv(prev),
        WatchEvent::Progress(_) => 0,
    }
}

/// A watch from a revision still in the ring: events are taken from the ring a batch at a
/// time; once the cursor reaches the ring's end the watcher subscribes to the live queue
/// under the same lock (no gap, no overlap). Should the ring drop events past the cursor
/// before they are taken (a watcher reading slower than the ring ages), the stream ends with
/// `Err(Compacted)`.
struct Replay {
    cache: Arc<ResourceCache>,
    prefix: String,
    without_heartbeats: bool,
    /// Where the watch started: nothing at or before it is sent.
    after: Revision,
    /// The revision up to which the ring was read.
    cursor: Revision,
    /// The revision of the last event handed out (or `after`).
    sent: Revision,
    batch: VecDeque<Arc<WatchEvent>>,
}

/// What one look at the ring gives a replay.
enum Step {
    /// More events (possibly none yet, when the scan budget ran out).
    More,
    /// Caught up: the live stream goes on from here.
    Live(WatchStream),
    Gone(Error),
}

impl Replay {
    fn into_stream(self) -> WatchStream {
        enum State {
            Replay(Box<Replay>),
            Live(WatchStream),
            Done,
        }
        futures::stream::unfold(State::Replay(Box::new(self)), |state| async move {
            match state {
                State::Done => None,
                State::Live(mut live) => live.next().await.map(|item| (item, State::Live(live))),
                State::Replay(mut r) => loop {
                    if let Some(ev) = r.batch.pop_front() {
                        r.sent = ev.revision();
                        return Some((Ok(Arc::unwrap_or_clone(ev)), State::Replay(r)));
                    }
                    match r.step() {
                        Step::More => {}
                        // The last events of the replay were left out (heartbeats, other
                        // prefixes): say how far the watcher is, as a progress notification.
                        Step::Live(live) if r.cursor > r.sent => {
                            let progress = WatchEvent::Progress(r.cursor);
                            return Some((Ok(progress), State::Live(live)));
                        }
                        Step::Live(mut live) => {
                            return live.next().await.map(|item| (item, State::Live(live)));
                        }
                        Step::Gone(e) => return Some((Err(e), State::Done)),
                    }
                },
            }
        })
        .boxed()
    }

    /// Takes the next batch from the ring, or subscribes once there is nothing left.
    fn step(&mut self) -> Step {
        let st = self.cache.read();
        if self.cursor < st.ring_start {
            return Step::Gone(Error::Compacted {
                requested: self.cursor,
                oldest: st.ring_start + 1,
            });
        }
        let start = st
            .ring
            .partition_point(|(_, e)| e.revision() <= self.cursor);
        for (_, ev) in st.ring.range(start..).take(REPLAY_SCAN) {
            self.cursor = ev.revision();
            if ev.key().starts_with(self.prefix.as_str())
                && !(self.without_heartbeats && ev.is_heartbeat())
            {
                self.batch.push_back(ev.clone());
                if self.batch.len() >= REPLAY_BATCH {
                    break;
                }
            }
        }
        if !self.batch.is_empty() || start + REPLAY_SCAN < st.ring.len() {
            return Step::More;
        }
        // Every event up to the hub's published revision is in the ring, and this is its end.
        let (_, sub) = (self.cache.hub).subscribe(&self.prefix, self.without_heartbeats);
        Step::Live(watch::stream(vec![], sub, self.after.max(self.cursor)))
    }
}

impl Drop for ResourceCache {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Sends watchers their progress notifications every `bookmark_interval` (none when it is
/// zero), and every [`TRIM_EVERY`] lets aged events leave the ring of a resource nobody
/// writes to.
async fn upkeep(cache: std::sync::Weak<ResourceCache>, stop: CancellationToken) {
    let Some((interval, age)) = cache
        .upgrade()
        .map(|c| (c.opts.bookmark_interval, c.opts.history_age))
    else {
        return;
    };
    let every = |period: Duration| {
        let mut t = tokio::time::interval(period);
        t.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        t
    };
    // No point trimming more often than events age (tests set a short age).
    let mut trims = every(TRIM_EVERY.min(age).max(Duration::from_millis(10)));
    let mut bookmarks = (!interval.is_zero()).then(|| every(interval));
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            () = tick(&mut bookmarks) => {
                let Some(cache) = cache.upgrade() else { return };
                cache.hub.progress();
            }
            _ = trims.tick() => {
                let Some(cache) = cache.upgrade() else { return };
                trim(&mut cache.write(), &cache.opts, Instant::now(), 0);
            }
        }
    }
}

/// The next tick of `timer`; never, without one.
async fn tick(timer: &mut Option<tokio::time::Interval>) {
    match timer {
        Some(t) => {
            t.tick().await;
        }
        None => std::future::pending().await,
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

#[cfg(test)]
mod tests;
