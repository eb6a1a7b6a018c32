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
//! Instead of upstream's in-memory graph, each pass lists the metadata of every served kind
//! (the lists are cheap and the passes rare): a pass runs when a watch (decoded only as far
//! as [`MetaOnly`] goes) shows a change that can matter (an owned object whose owner is gone,
//! an owner being deleted with a GC finalizer, the deletion of a known owner or of a
//! dependent), at most every [`DEBOUNCE`], and every [`RESYNC`]. The watches ask the server
//! for only those events ([`CollectorEvents`]: objects that are owned or being deleted, and
//! deletions), so the objects nothing owns, most of a cluster's writes, cost the collector
//! nothing; an owner the watches have not shown since the last pass is looked up with a GET
//! before it counts as gone, as upstream verifies a missing owner with a live lookup.
//! Every write carries the resourceVersion it was computed from, so a stale pass only conflicts
//! and is retried. Not done: upstream's cycle breaking between foreground dependents,
//! owner kinds discovery does not list (such references are left alone), and namespaced owners of
//! cluster-scoped dependents (invalid in Kubernetes; left alone).
//!
//! May use: api (that extension); otherwise a client of the API.

use super::informer::{carrying, SharedWatch};
use super::meta_only::MetaOnly;
use crate::api::CollectorEvents;
use futures::stream::{select_all, StreamExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, Preconditions,
    PropagationPolicy,
};
use kube::discovery::{verbs, Discovery, Scope};
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, Client};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;
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
    present: HashSet<String>,
    owners: HashSet<String>,
    /// Owners (with their dependent's namespace) to look up before they count as gone.
    unknown: Vec<(String, OwnerReference)>,
}

impl Seen {
    fn reset(&mut self, snap: &Snapshot) {
        self.present = snap.objects.iter().map(|o| o.uid.clone()).collect();
        self.owners = snap.dependents.keys().cloned().collect();
    }

    /// Records a watch event; true when it may give the collector work.
    fn observe(&mut self, ev: watcher::Event<Obj>) -> bool {
        match ev {
            watcher::Event::Apply(o) => self.applied(o, false),
            // An initial list ends with InitDone, which runs a pass anyway.
            watcher::Event::InitApply(o) => self.applied(o, true),
            watcher::Event::Delete(o) => {
                self.present.remove(&o.uid);
                !o.owners.is_empty() || self.owners.contains(&o.uid)
            }
            watcher::Event::Init => false,
            watcher::Event::InitDone => true,
        }
    }

    fn applied(&mut self, o: Obj, listing: bool) -> bool {
        self.present.insert(o.uid.clone());
        for r in &o.owners {
            if !listing && !self.present.contains(&r.uid) {
                self.unknown.push((o.namespace.clone(), r.clone()));
            }
            self.owners.insert(r.uid.clone());
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
            if self.present.contains(&r.uid) {
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
                    self.present.insert(r.uid);
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
/// come from discovery, asked again at every resync: when they change (a resource added or
/// removed), the watches are set up again.
pub(crate) async fn run(client: Client, cancel: CancellationToken, leases: SharedWatch) {
    let mut failures = 0u32;
    loop {
        let kinds = tokio::select! {
            () = cancel.cancelled() => return,
            k = Kinds::discover(&client) => k,
        };
        match kinds {
            Ok(kinds) => {
                failures = 0;
                if watch(&client, &cancel, &leases, Arc::new(kinds)).await {
                    return;
                }
            }
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

/// Watches `kinds` and runs passes until `cancel` fires (true) or discovery shows other
/// kinds (false).
async fn watch(
    client: &Client,
    cancel: &CancellationToken,
    leases: &SharedWatch,
    kinds: Arc<Kinds>,
) -> bool {
    // One client for all the watches: each kube Client has a request buffer of its own
    // (1,024 slots and a task), which with thousands of CRDs came to tens of MB.
    let collector = carrying(client, CollectorEvents);
    let watches = kinds.0.iter().map(|k| {
        let resource = api_resource(k);
        let k = k.clone();
        if leases.follows(&resource) {
            return leases
                .subscribe(client)
                .map(move |e| Ok(to_obj(&k, e)))
                .boxed();
        }
        let api: Api<MetaOnly> = Api::all_with(collector.clone(), &resource);
        watcher(api, watcher::Config::default())
            .default_backoff()
            .map(move |ev| ev.map(|e| to_obj(&k, e)))
            .boxed()
    });
    let mut events = select_all(watches);
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
            () = &mut cancelled => return true,
            Some(ev) = events.next() => match ev {
                Ok(ev) => {
                    let mut work = seen.observe(ev);
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
                last = Instant::now();
                if resync {
                    match Kinds::discover(client).await {
                        Ok(now) if now != *kinds => {
                            info!("garbage collector: the served resources changed; watching them again");
                            return false;
                        }
                        Ok(_) => {}
                        Err(e) => debug!(error = %format!("{e:#}"), "garbage collector: discovery failed"),
                    }
                }
                // A pass over many objects takes a while (pages of 500): shutdown does not wait.
                let passed = tokio::select! {
                    () = &mut cancelled => return true,
                    p = pass(client, kinds.clone()) => p,
                };
                let done = match passed {
                    Ok((snap, done)) => {
                        seen.reset(&snap);
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
