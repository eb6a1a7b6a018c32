//! One watch of a resource shared by several controllers, like the shared informers
//! kube-apiserver hands its controllers (`VersionedInformers`): the garbage collector and the
//! coordinated-leader-election controller both follow every Lease, and each lease renewal
//! would otherwise be encoded, sent and decoded once per controller.
//!
//! The watch runs while anyone subscribes: the first subscriber starts it, the last one to go
//! stops it (so it closes with its controllers at shutdown). It keeps the current objects
//! (decoded as far as [`MetaOnly`] goes) and hands every subscriber kube-runtime's watcher
//! events: a subscriber that joins late, or falls more than [`BUFFER`] events behind, first
//! gets the objects known so far as an initial list (`Init`, `InitApply`…, `InitDone`), then
//! live events, exactly as a watcher of its own would after a relist.
//!
//! Its subscribers act on no renewal of an object (a lease's new `spec.renewTime`), and the
//! renewals of every lease are most of a cluster's writes, so the watch asks the server to
//! leave them out (the [`OmitRenewals`] extension on its requests, which reach the handler
//! chain in process): the objects it keeps may then lag their renewals, with every other
//! field current.
//!
//! May use: api (that extension); otherwise a client of the API.

use super::meta_only::MetaOnly;
use super::util::object_key as key;
use crate::api::OmitRenewals;
use futures::{Stream, StreamExt};
use kube::api::ApiResource;
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, Client};
use std::collections::{BTreeMap, VecDeque};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use tokio::sync::broadcast;
use tokio_stream::wrappers::{errors::BroadcastStreamRecvError, BroadcastStream};
use tokio_util::sync::CancellationToken;
use tracing::debug;

/// Events a subscriber may fall behind by before it is given a fresh initial list.
pub(crate) const BUFFER: usize = 1024;

type Event = watcher::Event<MetaOnly>;

/// A shared watch of one resource, all namespaces. Clones share the watch.
#[derive(Clone)]
pub(crate) struct SharedWatch {
    resource: ApiResource,
    state: Arc<Mutex<State>>,
}

/// What the watch knows, and who listens.
struct State {
    tx: broadcast::Sender<Event>,
    /// `namespace/name` → object, as of the last complete list plus the events since.
    items: BTreeMap<String, MetaOnly>,
    /// The objects of a list in progress (between `Init` and `InitDone`).
    listing: Option<BTreeMap<String, MetaOnly>>,
    /// A list has completed since the watch started.
    ready: bool,
    /// Stops the running watch task; None while none runs.
    stop: Option<CancellationToken>,
}

impl State {
    fn new() -> State {
        State {
            tx: broadcast::channel(BUFFER).0,
            items: BTreeMap::new(),
            listing: None,
            ready: false,
            stop: None,
        }
    }

    fn apply(&mut self, ev: &Event) {
        match ev {
            watcher::Event::Init => self.listing = Some(BTreeMap::new()),
            watcher::Event::InitApply(o) => {
                self.listing
                    .get_or_insert_default()
                    .insert(key(o), o.clone());
            }
            watcher::Event::InitDone => {
                self.items = self.listing.take().unwrap_or_default();
                self.ready = true;
            }
            watcher::Event::Apply(o) => {
                self.items.insert(key(o), o.clone());
            }
            watcher::Event::Delete(o) => {
                self.items.remove(&key(o));
            }
        }
    }

    /// A new receiver and what its subscriber must see before the receiver's events: the
    /// known objects as an initial list (or the part of a list in progress that was missed).
    fn attach(&self) -> (broadcast::Receiver<Event>, VecDeque<Event>) {
        let mut first = VecDeque::new();
        match (&self.listing, self.ready) {
            (Some(partial), _) => {
                first.push_back(watcher::Event::Init);
                first.extend(partial.values().cloned().map(watcher::Event::InitApply));
            }
            (None, true) => {
                first.push_back(watcher::Event::Init);
                first.extend(self.items.values().cloned().map(watcher::Event::InitApply));
                first.push_back(watcher::Event::InitDone);
            }
            // Nothing listed yet: the watch's own initial list is still to come.
            (None, false) => {}
        }
        (self.tx.subscribe(), first)
    }
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

impl SharedWatch {
    pub(crate) fn new(resource: ApiResource) -> SharedWatch {
        SharedWatch {
            resource,
            state: Arc::new(Mutex::new(State::new())),
        }
    }

    /// Whether this is the watch of `resource` (same group, version and plural).
    pub(crate) fn follows(&self, resource: &ApiResource) -> bool {
        let r = &self.resource;
        (&r.group, &r.version, &r.plural) == (&resource.group, &resource.version, &resource.plural)
    }

    /// The events of the shared watch, starting it with `client` if it is not running.
    /// Watch errors are logged here (the watch retries with backoff), not passed on.
    pub(crate) fn subscribe(&self, client: &Client) -> Subscription {
        let mut s = lock(&self.state);
        if s.stop.is_none() {
            let stop = CancellationToken::new();
            s.stop = Some(stop.clone());
            (s.items, s.listing, s.ready) = (BTreeMap::new(), None, false);
            let api: Api<MetaOnly> = Api::all_with(carrying(client, OmitRenewals), &self.resource);
            let plural = self.resource.plural.clone();
            // Detached: it returns once the last Subscription cancels `stop`, has no result,
            // and logs its own errors.
            tokio::spawn(run(api, plural, self.state.clone(), stop));
        }
        Subscription::attach(&s, self.state.clone())
    }
}

/// `client`, its requests carrying the request extension `ext` (which the handler chain
/// reads, as the requests reach it in process).
pub(super) fn carrying<E: Clone + Send + Sync + 'static>(client: &Client, ext: E) -> Client {
    let (base, namespace) = (client.clone(), client.default_namespace().to_string());
    let service = tower::service_fn(move |mut req: http::Request<kube::client::Body>| {
        let (base, ext) = (base.clone(), ext.clone());
        async move {
            req.extensions_mut().insert(ext);
            base.send(req).await
        }
    });
    Client::new(service, namespace)
}

/// The watch task: applies each event to the shared state and hands it to the subscribers,
/// until stopped. kube-runtime's watcher retries and relists by itself; were its stream ever
/// to end, a new one starts (with its own initial list), so subscribers never stall.
async fn run(
    api: Api<MetaOnly>,
    plural: String,
    state: Arc<Mutex<State>>,
    stop: CancellationToken,
) {
    // One cancellation waiter for the task, not one per event.
    let cancelled = stop.cancelled();
    tokio::pin!(cancelled);
    loop {
        let mut events = watcher(api.clone(), watcher::Config::default())
            .default_backoff()
            .boxed();
        loop {
            let ev = tokio::select! {
                () = &mut cancelled => return,
                ev = events.next() => ev,
            };
            match ev {
                Some(Ok(ev)) => {
                    let mut s = lock(&state);
                    // Stopped while this event was on its way: a newer task may own the state.
                    if stop.is_cancelled() {
                        return;
                    }
                    s.apply(&ev);
                    let _ = s.tx.send(ev);
                }
                Some(Err(e)) => debug!(resource = %plural, error = %e, "shared watch error"),
                None => {
                    debug!(resource = %plural, "shared watch ended; starting it again");
                    break;
                }
            }
        }
    }
}

/// One subscriber's stream of watcher events.
pub(crate) struct Subscription {
    first: VecDeque<Event>,
    rx: BroadcastStream<Event>,
    state: Arc<Mutex<State>>,
}

impl Subscription {
    fn attach(s: &State, state: Arc<Mutex<State>>) -> Subscription {
        let (rx, first) = s.attach();
        Subscription {
            first,
            rx: BroadcastStream::new(rx),
            state,
        }
    }
}

impl Stream for Subscription {
    type Item = Event;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Event>> {
        loop {
            if let Some(ev) = self.first.pop_front() {
                return Poll::Ready(Some(ev));
            }
            match self.rx.poll_next_unpin(cx) {
                Poll::Ready(Some(Err(BroadcastStreamRecvError::Lagged(missed)))) => {
                    debug!(missed, "shared watch subscriber fell behind; relisting it");
                    let state = self.state.clone();
                    // Attached before the old one goes, so the watch is never without
                    // subscribers; the lock is released before the old one's drop takes it.
                    let fresh = Subscription::attach(&lock(&state), state.clone());
                    *self = fresh;
                }
                Poll::Ready(Some(Ok(ev))) => return Poll::Ready(Some(ev)),
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

impl Drop for Subscription {
    /// The last subscriber to go stops the watch (its own receiver still counts here).
    fn drop(&mut self) {
        let mut s = lock(&self.state);
        if s.tx.receiver_count() <= 1 {
            if let Some(stop) = s.stop.take() {
                stop.cancel();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use kube::ResourceExt;

    fn obj(name: &str, rv: &str) -> MetaOnly {
        MetaOnly {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                resource_version: Some(rv.into()),
                ..ObjectMeta::default()
            },
        }
    }

    /// A state as the watch task would leave it, without a task: events go in by hand.
    fn shared() -> Arc<Mutex<State>> {
        Arc::new(Mutex::new(State::new()))
    }

    fn send(state: &Mutex<State>, ev: Event) {
        let mut s = lock(state);
        s.apply(&ev);
        let _ = s.tx.send(ev);
    }

    fn subscribe(state: &Arc<Mutex<State>>) -> Subscription {
        Subscription::attach(&lock(state), state.clone())
    }

    /// What the subscription yields without waiting, rendered as `Init`, `+a@1`, `-a`, `Done`.
    fn drain(sub: &mut Subscription) -> Vec<String> {
        let mut out = Vec::new();
        while let Some(Some(ev)) = sub.next().now_or_never() {
            out.push(match ev {
                watcher::Event::Init => "Init".to_string(),
                watcher::Event::InitDone => "Done".to_string(),
                watcher::Event::InitApply(o) | watcher::Event::Apply(o) => format!(
                    "+{}@{}",
                    o.name_any(),
                    o.resource_version().unwrap_or_default()
                ),
                watcher::Event::Delete(o) => format!("-{}", o.name_any()),
            });
        }
        out
    }

    use futures::FutureExt;

    #[test]
    fn an_early_subscriber_sees_the_watch_as_it_comes() {
        let state = shared();
        let mut sub = subscribe(&state);
        send(&state, watcher::Event::Init);
        send(&state, watcher::Event::InitApply(obj("a", "1")));
        send(&state, watcher::Event::InitDone);
        send(&state, watcher::Event::Apply(obj("a", "2")));
        send(&state, watcher::Event::Delete(obj("a", "3")));
        assert_eq!(drain(&mut sub), ["Init", "+a@1", "Done", "+a@2", "-a"]);
    }

    #[test]
    fn a_late_subscriber_first_gets_the_current_objects_as_a_list() {
        let state = shared();
        send(&state, watcher::Event::Init);
        send(&state, watcher::Event::InitApply(obj("a", "1")));
        send(&state, watcher::Event::InitApply(obj("b", "1")));
        send(&state, watcher::Event::InitDone);
        send(&state, watcher::Event::Apply(obj("a", "2")));
        send(&state, watcher::Event::Delete(obj("b", "3")));
        let mut sub = subscribe(&state);
        send(&state, watcher::Event::Apply(obj("c", "4")));
        assert_eq!(drain(&mut sub), ["Init", "+a@2", "Done", "+c@4"]);
    }

    #[test]
    fn joining_during_a_list_gets_what_was_listed_then_the_rest() {
        let state = shared();
        send(&state, watcher::Event::Init);
        send(&state, watcher::Event::InitApply(obj("a", "1")));
        let mut sub = subscribe(&state);
        send(&state, watcher::Event::InitApply(obj("b", "1")));
        send(&state, watcher::Event::InitDone);
        assert_eq!(drain(&mut sub), ["Init", "+a@1", "+b@1", "Done"]);
        // The state the next subscriber starts from is the finished list.
        let mut late = subscribe(&state);
        assert_eq!(drain(&mut late), ["Init", "+a@1", "+b@1", "Done"]);
    }

    #[test]
    fn a_subscriber_that_falls_behind_is_relisted_with_nothing_lost() {
        let state = shared();
        send(&state, watcher::Event::Init);
        send(&state, watcher::Event::InitDone);
        let mut sub = subscribe(&state);
        assert_eq!(drain(&mut sub), ["Init", "Done"]);
        for i in 0..BUFFER + 10 {
            send(
                &state,
                watcher::Event::Apply(obj(&format!("o{}", i % 3), &i.to_string())),
            );
        }
        let got = drain(&mut sub);
        let last = BUFFER + 9;
        // A fresh list of the newest state of each object, then live events again.
        assert_eq!(
            got,
            [
                "Init".to_string(),
                format!("+o0@{}", last - 1),
                format!("+o1@{}", last),
                format!("+o2@{}", last - 2),
                "Done".to_string()
            ]
        );
        send(&state, watcher::Event::Delete(obj("o1", "x")));
        assert_eq!(drain(&mut sub), ["-o1"]);
    }

    #[test]
    fn follows_its_own_resource_only() {
        use k8s_openapi::api::coordination::v1::Lease;
        use k8s_openapi::api::coordination::v1beta1::LeaseCandidate;
        let leases = SharedWatch::new(ApiResource::erase::<Lease>(&()));
        assert!(leases.follows(&ApiResource::erase::<Lease>(&())));
        assert!(!leases.follows(&ApiResource::erase::<LeaseCandidate>(&())));
    }

    #[test]
    fn the_last_subscriber_to_go_stops_the_watch() {
        let state = shared();
        let stop = CancellationToken::new();
        lock(&state).stop = Some(stop.clone());
        let (a, b) = (subscribe(&state), subscribe(&state));
        drop(a);
        assert!(!stop.is_cancelled());
        drop(b);
        assert!(stop.is_cancelled());
        assert!(
            lock(&state).stop.is_none(),
            "a new subscriber starts a new watch"
        );
    }
}
