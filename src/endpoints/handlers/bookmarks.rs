//! Periodic BOOKMARKs for a watch that allows them, scheduled like kube-apiserver's cacher
//! (storage/cacher/cache_watcher.go `nextBookmarkTime`): every `bookmarkFrequency` (1 min),
//! and 2 s before the watch's deadline, so a client re-watching after the timeout resumes
//! from a recent resourceVersion instead of one that may have been compacted. A bookmark
//! carries the revision the stream is consistent with ([`WatchProgress`]); none is sent while
//! the initial events are still going out. May use: registry.

use crate::registry::{WatchEvent, WatchProgress};
use futures::stream::{BoxStream, StreamExt};
use std::pin::Pin;
use std::time::Duration;
use tokio::time::{Instant, Sleep};

/// How often an idle watcher gets a bookmark (the cacher's `bookmarkFrequency`).
pub(crate) const BOOKMARK_FREQUENCY: Duration = Duration::from_secs(60);
/// The last bookmark goes out this long before the watch's deadline.
const BEFORE_DEADLINE: Duration = Duration::from_secs(2);

/// nextBookmarkTime: the earlier of `now + frequency` and `deadline - 2 s`; None once that is
/// not in the future (no more bookmarks for this watch).
fn next_bookmark(now: Instant, deadline: Instant, frequency: Duration) -> Option<Instant> {
    let pre_timeout = deadline.checked_sub(BEFORE_DEADLINE)?;
    let at = (now + frequency).min(pre_timeout);
    (at > now).then_some(at)
}

struct State {
    events: BoxStream<'static, WatchEvent>,
    progress: WatchProgress,
    deadline: Instant,
    frequency: Duration,
    /// Fires at the next bookmark time while `armed`; one timer for the whole watch.
    timer: Pin<Box<Sleep>>,
    armed: bool,
}

impl State {
    fn schedule(&mut self) {
        match next_bookmark(Instant::now(), self.deadline, self.frequency) {
            Some(at) => self.timer.as_mut().reset(at),
            None => self.armed = false,
        }
    }
}

/// `events` with periodic bookmarks interleaved; ends when `events` ends.
pub(crate) fn with_bookmarks(
    events: BoxStream<'static, WatchEvent>,
    progress: WatchProgress,
    deadline: Instant,
    frequency: Duration,
) -> BoxStream<'static, WatchEvent> {
    let mut state = State {
        events,
        progress,
        deadline,
        frequency,
        timer: Box::pin(tokio::time::sleep_until(deadline)),
        armed: true,
    };
    state.schedule();
    futures::stream::unfold(state, |mut s| async move {
        loop {
            tokio::select! {
                biased;
                ev = s.events.next() => return ev.map(|e| (e, s)),
                () = &mut s.timer, if s.armed => {
                    s.schedule();
                    if let Some(rev) = s.progress.revision() {
                        let bookmark = WatchEvent::Bookmark {
                            resource_version: rev.to_string(),
                            initial_events_end: false,
                        };
                        return Some((bookmark, s));
                    }
                }
            }
        }
    })
    .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_follows_the_cacher() {
        let now = Instant::now();
        let min = Duration::from_secs(60);
        // Far deadline: every minute.
        let far = now + Duration::from_secs(3600);
        assert_eq!(next_bookmark(now, far, min), Some(now + min));
        // Near deadline: 2 s before it.
        let near = now + Duration::from_secs(10);
        assert_eq!(
            next_bookmark(now, near, min),
            Some(now + Duration::from_secs(8))
        );
        // Within the last 2 s: no more bookmarks.
        let close = now + Duration::from_secs(1);
        assert_eq!(next_bookmark(now, close, min), None);
    }

    fn bookmark_rv(ev: &WatchEvent) -> Option<&str> {
        match ev {
            WatchEvent::Bookmark {
                resource_version,
                initial_events_end: false,
            } => Some(resource_version),
            _ => None,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn idle_watch_gets_periodic_and_pre_deadline_bookmarks() {
        let progress = WatchProgress::default();
        let (tx, rx) = futures::channel::mpsc::unbounded::<WatchEvent>();
        let start = Instant::now();
        let deadline = start + Duration::from_secs(150);
        let mut s = with_bookmarks(rx.boxed(), progress.clone(), deadline, BOOKMARK_FREQUENCY);
        tx.unbounded_send(WatchEvent::Added(std::sync::Arc::new(
            crate::registry::Decoded::new(serde_json::json!({})),
        )))
        .unwrap();
        assert!(matches!(s.next().await, Some(WatchEvent::Added(_))));
        // Progress unknown (initial events still going out): the 60 s bookmark is skipped.
        let quiet = tokio::time::timeout(Duration::from_secs(61), s.next()).await;
        assert!(quiet.is_err(), "no bookmark without progress");
        progress.advance(7);
        let ev = s.next().await.unwrap();
        assert_eq!(bookmark_rv(&ev), Some("7"));
        assert_eq!(Instant::now() - start, Duration::from_secs(120));
        // Then 2 s before the deadline, then none.
        progress.advance(9);
        let ev = s.next().await.unwrap();
        assert_eq!(bookmark_rv(&ev), Some("9"));
        assert_eq!(Instant::now() - start, Duration::from_secs(148));
        let none = tokio::time::timeout(Duration::from_secs(600), s.next()).await;
        assert!(none.is_err(), "no bookmark after the pre-deadline one");
        drop(tx);
        assert!(s.next().await.is_none());
    }
}
