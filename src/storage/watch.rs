//! Event hub: fans committed events out to watchers of key prefixes through bounded
//! per-watcher queues. Events are shared (`Arc`): a queue holds one pointer per event, so a
//! watcher costs at most [`DEFAULT_QUEUE`] pointers however large the objects are. A watcher
//! whose queue is full is unresponsive: like kube-apiserver's cacheWatcher it is closed (its
//! stream ends after the events it already has, and the client re-watches from the last
//! resourceVersion it saw), logged once ("Forcing watcher close due to unresponsiveness") and
//! counted, instead of buffering without limit. Replay of older
//! events is the caller's job: [`Hub::subscribe`] returns the revision up to which events were
//! already published, so history up to it plus the live queue after it has no gap and no
//! duplicate. A watcher may leave out the updates marked as heartbeats; the revisions it
//! skips reach it in the next progress notification.

use super::{Error, Result, Revision, WatchEvent, WatchStream};
use futures::StreamExt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::mpsc;

/// Default bound of one watcher's queue: the budget a watcher may fall behind (about 1 s of
/// events at 1,000 writes/s to its resource) before it is closed.
pub(crate) const DEFAULT_QUEUE: usize = 1024;

/// Watchers closed for unresponsiveness since the process started (upstream's
/// `apiserver_terminated_watchers_total`).
static TERMINATED: AtomicU64 = AtomicU64::new(0);

/// Fans events out to subscribed watchers.
pub(crate) struct Hub {
    inner: Mutex<Inner>,
    capacity: usize,
}

struct Inner {
    revision: Revision,
    slots: Vec<Slot>,
}

struct Slot {
    prefix: String,
    /// Leaves out updates marked as heartbeats.
    without_heartbeats: bool,
    tx: mpsc::Sender<Arc<WatchEvent>>,
    /// Set when the hub ends the watcher because its view cannot be continued (compaction,
    /// a relisted cache): its stream ends with `Err(Compacted)`.
    cut_off: Arc<AtomicBool>,
    last_sent: Revision,
}

/// The receiving half of one watcher.
pub(crate) struct Subscription {
    rx: mpsc::Receiver<Arc<WatchEvent>>,
    cut_off: Arc<AtomicBool>,
}

impl Hub {
    /// A hub whose last published revision is `revision`.
    pub(super) fn new(revision: Revision, capacity: usize) -> Hub {
        Hub {
            inner: Mutex::new(Inner {
                revision,
                slots: Vec::new(),
            }),
            capacity: capacity.max(1),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding this lock leaves consistent data (plain pushes/retains).
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The last published revision.
    pub(super) fn revision(&self) -> Revision {
        self.lock().revision
    }

    /// Number of live watchers.
    #[cfg(test)]
    pub(super) fn watchers(&self) -> usize {
        self.lock().slots.len()
    }

    /// Registers a watcher of `prefix`; returns the last published revision: every event after
    /// it arrives through the subscription (but heartbeats, when `without_heartbeats`).
    pub(super) fn subscribe(
        &self,
        prefix: &str,
        without_heartbeats: bool,
    ) -> (Revision, Subscription) {
        let (tx, rx) = mpsc::channel(self.capacity);
        let cut_off = Arc::new(AtomicBool::new(false));
        let mut inner = self.lock();
        let rev = inner.revision;
        inner.slots.push(Slot {
            prefix: prefix.to_string(),
            without_heartbeats,
            tx,
            cut_off: cut_off.clone(),
            last_sent: rev,
        });
        (rev, Subscription { rx, cut_off })
    }

    /// Publishes committed events (in revision order) and the new store revision.
    pub(super) fn publish(&self, events: &[WatchEvent], revision: Revision) {
        let mut inner = self.lock();
        // Shared only when someone listens: a store without watchers allocates nothing here.
        if !inner.slots.is_empty() {
            let shared: Vec<Arc<WatchEvent>> = events.iter().cloned().map(Arc::new).collect();
            fan_out(&mut inner, &shared, self.capacity);
        }
        inner.revision = inner.revision.max(revision);
    }

    /// [`Self::publish`] of events already shared (the watch cache keeps them in its ring too).
    pub(super) fn publish_shared(&self, events: &[Arc<WatchEvent>], revision: Revision) {
        let mut inner = self.lock();
        fan_out(&mut inner, events, self.capacity);
        inner.revision = inner.revision.max(revision);
    }

    /// Tells every watcher that missed later revisions (changes outside its prefix) that it is
    /// up to date: a progress notification at the current revision.
    pub(super) fn progress(&self) {
        let mut inner = self.lock();
        let rev = inner.revision;
        let progress = Arc::new(WatchEvent::Progress(rev));
        let capacity = self.capacity;
        inner
            .slots
            .retain_mut(|slot| slot.last_sent >= rev || send(slot, progress.clone(), capacity));
    }

    /// Ends every watcher (their streams end without error).
    pub(super) fn close_all(&self) {
        self.lock().slots.clear();
    }

    /// Ends every watcher with `Err(Compacted)`: their view can no longer be continued.
    pub(super) fn cut_off_all(&self) {
        let mut inner = self.lock();
        for slot in &inner.slots {
            slot.cut_off.store(true, Ordering::Release);
        }
        inner.slots.clear();
    }
}

/// Queues `events` for every watcher of their keys, dropping the watchers that are gone or
/// unresponsive.
fn fan_out(inner: &mut Inner, events: &[Arc<WatchEvent>], capacity: usize) {
    inner.slots.retain_mut(|slot| {
        for ev in events {
            let wanted = ev.key().starts_with(slot.prefix.as_str())
                && !(slot.without_heartbeats && ev.is_heartbeat());
            if wanted && !send(slot, ev.clone(), capacity) {
                return false;
            }
        }
        true
    });
}

/// Sends one event; false when the watcher is gone or is closed for being unresponsive (its
/// queue of `capacity` events is full).
fn send(slot: &mut Slot, ev: Arc<WatchEvent>, capacity: usize) -> bool {
    let rev = ev.revision();
    match slot.tx.try_send(ev) {
        Ok(()) => {
            slot.last_sent = rev;
            true
        }
        Err(mpsc::error::TrySendError::Full(_)) => {
            let total = TERMINATED.fetch_add(1, Ordering::Relaxed) + 1;
            crate::metrics::global().watch.terminated(&slot.prefix);
            tracing::info!(
                key = %slot.prefix,
                queued = capacity,
                last_sent = slot.last_sent,
                terminated_total = total,
                "Forcing watcher close due to unresponsiveness"
            );
            false
        }
        Err(mpsc::error::TrySendError::Closed(_)) => false,
    }
}

/// Builds a watch stream: `replay` first, then live events after `after` (events at or below
/// it are skipped). It ends after its last queued event when the hub closed it for being
/// unresponsive (the client resumes from there), and with `Err(Compacted)` when the hub cut
/// it off because its view can no longer be continued.
pub(crate) fn stream(
    replay: Vec<Arc<WatchEvent>>,
    sub: Subscription,
    after: Revision,
) -> WatchStream {
    let last = replay
        .last()
        .map(|e| e.revision())
        .unwrap_or(after)
        .max(after);
    let Subscription { rx, cut_off } = sub;
    struct State {
        rx: mpsc::Receiver<Arc<WatchEvent>>,
        cut_off: Arc<AtomicBool>,
        last: Revision,
        done: bool,
    }
    let live = futures::stream::unfold(
        State {
            rx,
            cut_off,
            last,
            done: false,
        },
        |mut st| async move {
            if st.done {
                return None;
            }
            loop {
                match st.rx.recv().await {
                    Some(ev) => {
                        let rev = ev.revision();
                        let skip = match *ev {
                            WatchEvent::Progress(_) => rev < st.last,
                            _ => rev <= st.last,
                        };
                        if skip {
                            continue;
                        }
                        st.last = rev;
                        return Some((Ok(Arc::unwrap_or_clone(ev)), st));
                    }
                    None if st.cut_off.load(Ordering::Acquire) => {
                        st.done = true;
                        let err: Result<WatchEvent> = Err(Error::Compacted {
                            requested: st.last + 1,
                            oldest: st.last + 2,
                        });
                        return Some((err, st));
                    }
                    None => return None,
                }
            }
        },
    );
    futures::stream::iter(replay.into_iter().map(|ev| Ok(Arc::unwrap_or_clone(ev))))
        .chain(live)
        .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::KeyValue;
    use bytes::Bytes;

    fn created(key: &str, rev: Revision) -> WatchEvent {
        WatchEvent::Created(KeyValue {
            key: key.into(),
            value: Bytes::new(),
            create_revision: rev,
            mod_revision: rev,
        })
    }

    #[tokio::test]
    async fn filters_by_prefix_and_skips_replayed() {
        let hub = Hub::new(1, 16);
        let (rev, sub) = hub.subscribe("/a/", false);
        assert_eq!(rev, 1);
        hub.publish(
            &[created("/a/x", 2), created("/b/y", 3), created("/a/z", 4)],
            4,
        );
        let mut s = stream(vec![Arc::new(created("/a/x", 2))], sub, 1);
        let got: Vec<_> = (&mut s)
            .take(2)
            .map(|e| e.unwrap().revision())
            .collect()
            .await;
        assert_eq!(got, vec![2, 4]);
        hub.progress();
        hub.publish(&[created("/b/q", 5)], 5);
        hub.progress();
        let ev = s.next().await.unwrap().unwrap();
        assert_eq!(ev, WatchEvent::Progress(5));
    }

    #[tokio::test]
    async fn unresponsive_watcher_is_closed_after_its_queued_events() {
        let hub = Hub::new(0, 2);
        let (_, slow) = hub.subscribe("/", false);
        let (_, other) = hub.subscribe("/other/", false);
        let before = TERMINATED.load(Ordering::Relaxed);
        for i in 1..=5 {
            hub.publish(&[created("/k", i)], i);
        }
        // The slow watcher is gone; the one that had nothing to take stays.
        assert_eq!(hub.watchers(), 1);
        assert!(TERMINATED.load(Ordering::Relaxed) > before);
        // Its stream delivers what it had queued, then ends without an error: the client
        // resumes from revision 2.
        let items: Vec<_> = stream(vec![], slow, 0).collect().await;
        let revs: Vec<_> = items.into_iter().map(|e| e.unwrap().revision()).collect();
        assert_eq!(revs, vec![1, 2]);
        drop(other);
    }

    #[tokio::test]
    async fn cut_off_watcher_ends_with_compacted() {
        let hub = Hub::new(0, 8);
        let (_, sub) = hub.subscribe("/", false);
        hub.publish(&[created("/k", 1)], 1);
        hub.cut_off_all();
        let items: Vec<_> = stream(vec![], sub, 0).collect().await;
        assert_eq!(items.len(), 2);
        assert!(matches!(items[1], Err(Error::Compacted { .. })));
    }
}
