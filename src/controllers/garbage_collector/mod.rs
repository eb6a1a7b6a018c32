//! The garbage collector (kube-controller-manager's `pkg/controller/garbagecollector`), run
//! in-process as hook `start-garbage-collector-controller` over every resource discovery lists
//! as listable, watchable and deletable (events excepted, as upstream's default), so resources
//! added while the server runs are collected too. It acts on ownerReferences by uid, like
//! upstream:
//! - a dependent none of whose owners exists any more (by uid; confirmed by a live GET) is
//!   deleted (Background, or as its own `orphan` / `foregroundDeletion` finalizer says); a
//!   dependent that still has an owner only loses its references to the vanished ones;
//! - an owner being deleted with the `orphan` finalizer: its references are removed from every
//!   dependent, then the finalizer;
//! - an owner being deleted with `foregroundDeletion`: its dependents are deleted (Foreground
//!   when they have dependents of their own), and once no dependent whose reference has
//!   `blockOwnerDeletion` is left the finalizer is removed, so the owner disappears.
//!
//! Instead of upstream's in-memory graph of every object, each pass lists the metadata of the
//! objects that are owned or being deleted (the server picks them out, [`CollectorEvents`]),
//! then of every object of the kinds their owners are: the objects nothing owns of a kind that
//! owns nothing, most of a cluster, cost a pass nothing. A pass runs when a watch (decoded
//! only as far as [`MetaOnly`] goes) shows a change that can matter (an owned object whose
//! owner is gone, an owner being deleted with a GC finalizer, the deletion of a known owner or
//! of a dependent), at most every [`DEBOUNCE`], and every [`RESYNC`]. The watches ask the
//! server for only those events (objects that are owned or being deleted, and deletions), so
//! the objects nothing owns, most of a cluster's writes, cost the collector nothing; an owner
//! the watches have not shown since the last pass is looked up with a GET before it counts as
//! gone, as upstream verifies a missing owner with a live lookup. Every write carries the
//! resourceVersion it was computed from, so a stale pass only conflicts and is retried. Not
//! done: upstream's cycle breaking between foreground dependents, owner kinds discovery does
//! not list (such references are left alone), and namespaced owners of cluster-scoped
//! dependents (invalid in Kubernetes; left alone).
//!
//! May use: api (that extension); otherwise a client of the API.

use super::informer::{carrying, SharedWatch};
use super::meta_only::MetaOnly;
use crate::api::CollectorEvents;
use futures::stream::{self, BoxStream, SelectAll, StreamExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, ListParams, ObjectList, Patch, PatchParams,
    Preconditions, PropagationPolicy,
};
use kube::discovery::{verbs, Discovery, Scope};
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, Client, Resource};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

mod actions;
mod graph;
#[cfg(test)]
mod tests;

use actions::*;
use graph::*;

/// `metav1.FinalizerOrphanDependents`.
const ORPHAN: &str = "orphan";
/// `metav1.FinalizerDeleteDependents`.
const FOREGROUND: &str = "foregroundDeletion";
/// Events closer together than this share one pass.
const DEBOUNCE: Duration = Duration::from_millis(200);
/// A pass that could not finish (conflict, error) is retried this soon, doubling up to
/// [`RESYNC`] while it keeps failing.
const RETRY: Duration = Duration::from_secs(1);
/// A full pass runs at least this often.
const RESYNC: Duration = Duration::from_secs(60);

/// What the watches have seen: which uids exist and which are referenced as owners. The
/// watches leave out objects nothing owns, so an owner missing from `present` may exist.
#[derive(Default)]
struct Seen {
    present: HashSet<Uid>,
    owners: HashSet<Uid>,
    /// Owners (with their dependent's namespace) to look up before they count as gone.
    unknown: Vec<(String, OwnerReference)>,
}

impl Seen {
    fn reset(&mut self, snap: Snapshot) {
        self.owners = snap.dependents.keys().filter_map(|u| uid_key(u)).collect();
        self.present = snap.uids.into_keys().collect();
    }

    /// Records a watch event; true when it may give the collector work.
    fn observe(&mut self, ev: watcher::Event<Obj>) -> bool {
        match ev {
            watcher::Event::Apply(o) => self.applied(o, false),
            // An initial list ends with InitDone, which runs a pass anyway.
            watcher::Event::InitApply(o) => self.applied(o, true),
            watcher::Event::Delete(o) => {
                let uid = uid_key(&o.uid);
                if let Some(uid) = uid {
                    self.present.remove(&uid);
                }
                !o.owners.is_empty() || uid.is_some_and(|u| self.owners.contains(&u))
            }
            watcher::Event::Init => false,
            watcher::Event::InitDone => true,
        }
    }

    fn applied(&mut self, o: Obj, listing: bool) -> bool {
        if let Some(uid) = uid_key(&o.uid) {
            self.present.insert(uid);
        }
        for r in &o.owners {
            let owner = uid_key(&r.uid);
            if !listing && !owner.is_some_and(|u| self.present.contains(&u)) {
                self.unknown.push((o.namespace.clone(), r.clone()));
            }
            if let Some(u) = owner {
                self.owners.insert(u);
            }
        }
        o.deleting && (o.has(ORPHAN) || o.has(FOREGROUND))
    }

    /// Looks up the owners [`Seen::observe`] did not know; true when one of them is gone (or
    /// cannot be looked up), which a pass then confirms. References to kinds discovery does
    /// not list, and namespaced owners of cluster-scoped dependents, are left alone as the
    /// pass leaves them.
    async fn verify(&mut self, client: &Client, kinds: &Kinds) -> bool {
        let mut gone = false;
        for (namespace, r) in std::mem::take(&mut self.unknown) {
            let uid = uid_key(&r.uid);
            if uid.is_some_and(|u| self.present.contains(&u)) {
                continue;
            }
            let Some(kind) = kinds.find(&r.api_version, &r.kind) else {
                continue;
            };
            let resource = api_resource(kind);
            let api: Api<MetaOnly> = match (kind.namespaced, namespace.is_empty()) {
                (true, true) => continue,
                (true, false) => Api::namespaced_with(client.clone(), &namespace, &resource),
                (false, _) => Api::all_with(client.clone(), &resource),
            };
            match api.get_opt(&r.name).await {
                Ok(Some(owner)) if owner.metadata.uid.as_deref() == Some(r.uid.as_str()) => {
                    self.present.extend(uid);
                }
                Ok(_) => gone = true,
                Err(e) => {
                    debug!(owner = %r.name, error = %e, "garbage collector: owner lookup failed");
                    gone = true;
                }
            }
        }
        gone
    }
}

fn to_obj(kind: &Arc<Kind>, ev: watcher::Event<MetaOnly>) -> watcher::Event<Obj> {
    use watcher::Event as E;
    match ev {
        E::Apply(o) => E::Apply(Obj::new(kind.clone(), o.metadata)),
        E::InitApply(o) => E::InitApply(Obj::new(kind.clone(), o.metadata)),
        E::Delete(o) => E::Delete(Obj::new(kind.clone(), o.metadata)),
        E::Init => E::Init,
        E::InitDone => E::InitDone,
    }
}

/// Runs the collector until `cancel` fires. Leases come from the watch shared with the
/// coordinated-leader-election controller; every other kind has a watch of its own. The kinds
/// come from discovery, asked again at every resync: a resource added while the server runs
/// gets a watch, a removed one loses its watch, and the others keep theirs.
pub(crate) async fn run(client: Client, cancel: CancellationToken, leases: SharedWatch) {
    let mut failures = 0u32;
    loop {
        let kinds = tokio::select! {
            () = cancel.cancelled() => return,
            k = Kinds::discover(&client) => k,
        };
        match kinds {
            Ok(kinds) => return watch(&client, &cancel, &leases, kinds).await,
            Err(e) => {
                failures = failures.saturating_add(1);
                debug!(error = %format!("{e:#}"), "garbage collector: discovery failed");
                let backoff = RETRY.saturating_mul(1 << (failures - 1).min(5)).min(RESYNC);
                tokio::select! {
                    () = cancel.cancelled() => return,
                    () = tokio::time::sleep(backoff) => {}
                }
            }
        }
    }
}

/// Watches `kinds`, following discovery at every resync, and runs passes until `cancel`
/// fires.
async fn watch(client: &Client, cancel: &CancellationToken, leases: &SharedWatch, kinds: Kinds) {
    let mut watches = Watches::new(client, leases);
    let mut kinds = watches.follow(kinds);
    let mut seen = Seen::default();
    // The first pass follows the watches' initial lists (InitDone).
    let mut due = None;
    let mut last = Instant::now();
    let mut failures = 0u32;
    // One timer and one cancellation waiter for the whole loop: a new `sleep_until` per event
    // would register and drop a timer for every lease update.
    let cancelled = cancel.cancelled();
    tokio::pin!(cancelled);
    let timer = tokio::time::sleep_until(last + RESYNC);
    tokio::pin!(timer);
    loop {
        let at = due.unwrap_or(last + RESYNC);
        if timer.deadline() != at {
            timer.as_mut().reset(at);
        }
        tokio::select! {
            () = &mut cancelled => return,
            Some(ev) = watches.events.next() => match ev {
                Ok(ev) => {
                    let synced = watches.synced(&ev);
                    let mut work = seen.observe(ev) && synced;
                    if !seen.unknown.is_empty() {
                        work |= seen.verify(client, &kinds).await;
                    }
                    if work {
                        let soon = Instant::now() + DEBOUNCE;
                        due = Some(due.map_or(soon, |d| d.min(soon)));
                    }
                }
                Err(e) => debug!(error = %e, "garbage collector watch error"),
            },
            () = &mut timer => {
                let resync = due.is_none();
                due = None;
                watches.passing();
                last = Instant::now();
                if resync {
                    match Kinds::discover(client).await {
                        Ok(now) if now != *kinds => kinds = watches.follow(now),
                        Ok(_) => {}
                        Err(e) => debug!(error = %format!("{e:#}"), "garbage collector: discovery failed"),
                    }
                }
                // A pass over many objects takes a while (pages of 500): shutdown does not wait.
                let passed = tokio::select! {
                    () = &mut cancelled => return,
                    p = pass(client, &watches.collector, kinds.clone()) => p,
                };
                let done = match passed {
                    Ok((snap, done)) => {
                        seen.reset(snap);
                        done
                    }
                    Err(e) => {
                        debug!(error = %format!("{e:#}"), "garbage collector pass failed");
                        false
                    }
                };
                failures = if done { 0 } else { failures.saturating_add(1) };
                if failures > 0 {
                    let backoff = RETRY.saturating_mul(1 << (failures - 1).min(5)).min(RESYNC);
                    due = Some(Instant::now() + backoff);
                }
            }
        }
    }
}

/// Initial lists in flight at once. Thousands of CRDs found at one resync start their watches
/// a few at a time: each initial list, and each watch while it opens, holds buffers on both
/// ends, which all at once came to tens of MB for a moment.
const STARTING: usize = 16;

type Events = BoxStream<'static, Result<watcher::Event<Obj>, watcher::Error>>;

/// The collector's watches, one per kind, merged into one stream of events.
struct Watches {
    /// One client for all the watches: each kube Client has a request buffer of its own
    /// (1,024 slots and a task), which with thousands of CRDs came to tens of MB.
    collector: Client,
    leases: SharedWatch,
    client: Client,
    running: Vec<(Arc<Kind>, CancellationToken)>,
    events: SelectAll<Events>,
    starts: Arc<Semaphore>,
    /// Watches whose initial list has not ended yet: until they all have, an InitDone is not
    /// work (the first pass waits for them all instead of running once per batch).
    starting: usize,
}

impl Watches {
    fn new(client: &Client, leases: &SharedWatch) -> Watches {
        Watches {
            collector: carrying(client, CollectorEvents),
            leases: leases.clone(),
            client: client.clone(),
            running: Vec::new(),
            events: SelectAll::new(),
            starts: Arc::new(Semaphore::new(STARTING)),
            starting: 0,
        }
    }

    /// Watches exactly `kinds` from now on: new kinds get a watch, the watches of kinds no
    /// longer served stop, the rest go on. Returns the kinds, sharing the `Arc` of each kind
    /// already watched (passes tell kinds apart by it).
    fn follow(&mut self, kinds: Kinds) -> Arc<Kinds> {
        let first = self.running.is_empty();
        let mut old: HashMap<_, _> = std::mem::take(&mut self.running).into_iter().collect();
        let mut added = 0;
        let mut now = Vec::with_capacity(kinds.0.len());
        for k in kinds.0 {
            let (k, stop) = match old.remove_entry(&k) {
                Some(kept) => kept,
                None => {
                    added += 1;
                    let stop = CancellationToken::new();
                    self.events.push(self.start(&k, &stop));
                    (k, stop)
                }
            };
            now.push(k.clone());
            self.running.push((k, stop));
        }
        for stop in old.values() {
            stop.cancel();
        }
        if !first && (added > 0 || !old.is_empty()) {
            info!(
                added,
                removed = old.len(),
                "garbage collector: the served resources changed"
            );
        }
        self.starting += added;
        Arc::new(Kinds(now))
    }

    /// The events of one kind's watch, until `stop` fires.
    fn start(&self, k: &Arc<Kind>, stop: &CancellationToken) -> Events {
        let resource = api_resource(k);
        let stopped = stop.clone().cancelled_owned();
        let k = k.clone();
        if self.leases.follows(&resource) {
            return self
                .leases
                .subscribe(&self.client)
                .map(move |e| Ok(to_obj(&k, e)))
                .take_until(stopped)
                .boxed();
        }
        let api: Api<MetaOnly> = Api::all_with(self.collector.clone(), &resource);
        let starts = self.starts.clone();
        stream::once(async move { starts.acquire_owned().await.ok() })
            .flat_map(move |mut permit| {
                let k = k.clone();
                watcher(api.clone(), watcher::Config::default())
                    .default_backoff()
                    .map(move |ev| {
                        // The turn ends with the initial list, or with its first error.
                        if !matches!(ev, Ok(watcher::Event::Init | watcher::Event::InitApply(_))) {
                            permit.take();
                        }
                        ev.map(|e| to_obj(&k, e))
                    })
            })
            .take_until(stopped)
            .boxed()
    }

    /// A pass is about to run: it covers what the watches still listing would have shown, so
    /// their InitDone events are work again (those of watches added after it still wait).
    fn passing(&mut self) {
        self.starting = 0;
    }

    /// Counts the end of initial lists; false for an InitDone while other watches are still
    /// listing.
    fn synced(&mut self, ev: &watcher::Event<Obj>) -> bool {
        if !matches!(ev, watcher::Event::InitDone) || self.starting == 0 {
            return true;
        }
        self.starting -= 1;
        self.starting == 0
    }
}
