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
//! as [`MetaOnly`] goes) shows a change that can matter (an owned object, an owner being
//! deleted with a GC finalizer, the deletion of a known owner or of a dependent), at most
//! every [`DEBOUNCE`], and every [`RESYNC`].
//! Every write carries the resourceVersion it was computed from, so a stale pass only conflicts
//! and is retried. Not done: upstream's cycle breaking between foreground dependents,
//! owner kinds discovery does not list (such references are left alone), and namespaced owners of
//! cluster-scoped dependents (invalid in Kubernetes; left alone).
//!
//! May use: nothing internal (a client of the API).

use super::informer::SharedWatch;
use super::meta_only::MetaOnly;
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

/// One kind the collector watches, as discovery lists it.
#[derive(Debug, PartialEq, Eq)]
struct Kind {
    group: String,
    version: String,
    kind: String,
    plural: String,
    namespaced: bool,
}

/// Resources whose objects the collector leaves alone, as upstream's default
/// (`garbagecollector.DefaultIgnoredResources`): events, in both of their groups.
const IGNORED: [(&str, &str); 2] = [("", "events"), ("events.k8s.io", "events")];

/// The kinds the collector handles: every served resource that can be listed, watched and
/// deleted (upstream's GetDeletableResources over the preferred versions), built-in or not.
#[derive(Debug, Default, PartialEq, Eq)]
struct Kinds(Vec<Arc<Kind>>);

impl Kinds {
    /// Asks the API server's discovery.
    async fn discover(client: &Client) -> Result<Kinds, Error> {
        let discovery = Discovery::new(client.clone())
            .run()
            .await
            .map_err(Error::Discovery)?;
        let mut kinds = Vec::new();
        for group in discovery.groups() {
            for (ar, caps) in group.recommended_resources() {
                let deletable = [verbs::LIST, verbs::WATCH, verbs::DELETE]
                    .iter()
                    .all(|v| caps.supports_operation(v));
                if !deletable || IGNORED.contains(&(ar.group.as_str(), ar.plural.as_str())) {
                    continue;
                }
                kinds.push(Arc::new(Kind {
                    group: ar.group,
                    version: ar.version,
                    kind: ar.kind,
                    plural: ar.plural,
                    namespaced: caps.scope == Scope::Namespaced,
                }));
            }
        }
        Ok(Kinds(kinds))
    }

    /// The kind an ownerReference's apiVersion + kind names (any version of the group).
    fn find(&self, api_version: &str, kind: &str) -> Option<&Arc<Kind>> {
        let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
        self.0.iter().find(|k| k.group == group && k.kind == kind)
    }
}

/// Identifies one of a pass's kinds (they are shared, one `Arc` each).
fn kind_key(kind: &Arc<Kind>) -> usize {
    Arc::as_ptr(kind) as usize
}

fn api_resource(k: &Kind) -> ApiResource {
    ApiResource {
        group: k.group.clone(),
        version: k.version.clone(),
        api_version: if k.group.is_empty() {
            k.version.clone()
        } else {
            format!("{}/{}", k.group, k.version)
        },
        kind: k.kind.clone(),
        plural: k.plural.clone(),
    }
}

fn api(client: &Client, kind: &Kind, namespace: &str) -> Api<DynamicObject> {
    let ar = api_resource(kind);
    if kind.namespaced && !namespace.is_empty() {
        Api::namespaced_with(client.clone(), namespace, &ar)
    } else {
        Api::all_with(client.clone(), &ar)
    }
}

/// The metadata of one object as a pass sees it.
#[derive(Debug, Clone)]
struct Obj {
    kind: Arc<Kind>,
    namespace: String,
    name: String,
    uid: String,
    rv: String,
    owners: Vec<OwnerReference>,
    finalizers: Vec<String>,
    deleting: bool,
}

impl Obj {
    fn new(kind: Arc<Kind>, m: ObjectMeta) -> Obj {
        Obj {
            kind,
            namespace: m.namespace.unwrap_or_default(),
            name: m.name.unwrap_or_default(),
            uid: m.uid.unwrap_or_default(),
            rv: m.resource_version.unwrap_or_default(),
            owners: m.owner_references.unwrap_or_default(),
            finalizers: m.finalizers.unwrap_or_default(),
            deleting: m.deletion_timestamp.is_some(),
        }
    }

    fn has(&self, finalizer: &str) -> bool {
        self.finalizers.iter().any(|f| f == finalizer)
    }

    /// An owner whose dependents must go first (deleting, with `foregroundDeletion`).
    fn waits_for_dependents(&self) -> bool {
        self.deleting && self.has(FOREGROUND)
    }

    fn label(&self) -> String {
        let k = &self.kind.plural;
        match self.namespace.as_str() {
            "" => format!("{k}/{}", self.name),
            ns => format!("{k}/{ns}/{}", self.name),
        }
    }
}

/// Every served object's metadata, indexed.
struct Snapshot {
    kinds: Arc<Kinds>,
    objects: Vec<Obj>,
    /// ([`kind_key`], namespace, name) → index.
    by_name: HashMap<(usize, String, String), usize>,
    /// owner uid → indexes of the objects referencing it.
    dependents: HashMap<String, Vec<usize>>,
}

impl Snapshot {
    fn new(kinds: Arc<Kinds>, objects: Vec<Obj>) -> Snapshot {
        let mut by_name = HashMap::new();
        let mut dependents: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, o) in objects.iter().enumerate() {
            by_name.insert((kind_key(&o.kind), o.namespace.clone(), o.name.clone()), i);
            for r in &o.owners {
                dependents.entry(r.uid.clone()).or_default().push(i);
            }
        }
        Snapshot {
            kinds,
            objects,
            by_name,
            dependents,
        }
    }

    /// The dependents of `owner`: objects referencing its uid (in its namespace when it is
    /// namespaced), each with that reference.
    fn dependents_of(&self, owner: &Obj) -> Vec<(&Obj, &OwnerReference)> {
        let namespaced = owner.kind.namespaced;
        self.dependents
            .get(&owner.uid)
            .into_iter()
            .flatten()
            .map(|&i| &self.objects[i])
            .filter(|d| !namespaced || d.namespace == owner.namespace)
            .filter_map(|d| d.owners.iter().find(|r| r.uid == owner.uid).map(|r| (d, r)))
            .collect()
    }
}

/// What a pass failed on.
#[derive(Debug, thiserror::Error)]
enum Error {
    #[error("listing {0} failed")]
    List(String, #[source] kube::Error),
    #[error("discovery failed")]
    Discovery(#[source] kube::Error),
}

/// Objects per page of a pass's lists: a pass over many objects never makes the server
/// decode and encode them all in one response (upstream's pager uses 500 too).
const PAGE: u32 = 500;

/// Lists the metadata of every served kind, page by page.
async fn snapshot(client: &Client, kinds: Arc<Kinds>) -> Result<Snapshot, Error> {
    let mut objects = Vec::new();
    for k in &kinds.0 {
        let api = api(client, k, "");
        let mut params = ListParams::default().limit(PAGE);
        loop {
            let list = api
                .list_metadata(&params)
                .await
                .map_err(|e| Error::List(k.plural.clone(), e))?;
            objects.extend(
                list.items
                    .into_iter()
                    .map(|o| Obj::new(k.clone(), o.metadata)),
            );
            match list.metadata.continue_.filter(|c| !c.is_empty()) {
                Some(token) => params = params.continue_token(&token),
                None => break,
            }
        }
    }
    Ok(Snapshot::new(kinds, objects))
}

/// How one ownerReference of a dependent stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Owner {
    /// The owner exists (or cannot be checked): the dependent stays.
    Solid,
    /// The owner is gone (or replaced by another object of the same name).
    Dangling,
    /// The owner is being deleted in the foreground.
    Waiting,
}

/// The outcome of one write: done, or to be retried (conflict, error).
type Done = bool;

fn outcome(what: &str, obj: &Obj, r: Result<(), kube::Error>) -> Done {
    match r {
        Ok(()) => true,
        Err(kube::Error::Api(s)) if s.code == 404 => true,
        Err(kube::Error::Api(s)) if s.code == 409 => {
            debug!(object = %obj.label(), "{what}: conflict, retrying");
            false
        }
        Err(e) => {
            warn!(object = %obj.label(), error = %e, "garbage collector: {what} failed");
            false
        }
    }
}

/// A JSON merge patch of metadata carrying the resourceVersion it was computed from (so it
/// conflicts instead of overwriting a newer object); an empty list becomes null (removed).
async fn patch_meta(
    client: &Client,
    obj: &Obj,
    field: &str,
    list: Value,
) -> Result<(), kube::Error> {
    let list = match list {
        Value::Array(a) if a.is_empty() => Value::Null,
        v => v,
    };
    let body = json!({ "metadata": { "resourceVersion": obj.rv, field: list } });
    api(client, &obj.kind, &obj.namespace)
        .patch_metadata(&obj.name, &PatchParams::default(), &Patch::Merge(body))
        .await
        .map(|_| ())
}

async fn remove_finalizer(client: &Client, obj: &Obj, finalizer: &str) -> Done {
    let rest: Vec<&String> = obj.finalizers.iter().filter(|f| *f != finalizer).collect();
    let r = patch_meta(client, obj, "finalizers", json!(rest)).await;
    let done = outcome("removing a finalizer", obj, r);
    if done {
        info!(object = %obj.label(), finalizer, "dependents handled, finalizer removed");
    }
    done
}

async fn remove_owner_refs(client: &Client, dep: &Obj, uids: &HashSet<&str>) -> Done {
    let rest: Vec<&OwnerReference> = dep
        .owners
        .iter()
        .filter(|r| !uids.contains(r.uid.as_str()))
        .collect();
    let r = patch_meta(client, dep, "ownerReferences", json!(rest)).await;
    outcome("removing ownerReferences", dep, r)
}

async fn delete(client: &Client, obj: &Obj, policy: PropagationPolicy) -> Done {
    let what = format!("{policy:?}");
    let dp = DeleteParams {
        propagation_policy: Some(policy),
        preconditions: Some(Preconditions {
            uid: Some(obj.uid.clone()),
            resource_version: Some(obj.rv.clone()),
        }),
        ..DeleteParams::default()
    };
    let r = api(client, &obj.kind, &obj.namespace)
        .delete(&obj.name, &dp)
        .await
        .map(|_| ());
    let done = outcome("deleting a dependent", obj, r);
    if done {
        info!(object = %obj.label(), policy = what, "deleted: no owner left");
    }
    done
}

/// How `dep`'s reference `r` stands: from the snapshot when it shows the owner, else from a
/// live GET (a list may predate the owner's creation).
async fn classify(client: &Client, snap: &Snapshot, dep: &Obj, r: &OwnerReference) -> Owner {
    let Some(kind) = snap.kinds.find(&r.api_version, &r.kind) else {
        return Owner::Solid;
    };
    let namespace = if kind.namespaced {
        if dep.namespace.is_empty() {
            return Owner::Solid;
        }
        dep.namespace.clone()
    } else {
        String::new()
    };
    let state = |o: &Obj| {
        if o.waits_for_dependents() {
            Owner::Waiting
        } else {
            Owner::Solid
        }
    };
    let key = (kind_key(kind), namespace.clone(), r.name.clone());
    if let Some(&i) = snap.by_name.get(&key) {
        let o = &snap.objects[i];
        if o.uid == r.uid {
            return state(o);
        }
    }
    match api(client, kind, &namespace)
        .get_metadata_opt(&r.name)
        .await
    {
        Ok(Some(m)) if m.metadata.uid.as_deref() == Some(r.uid.as_str()) => {
            state(&Obj::new(kind.clone(), m.metadata))
        }
        Ok(_) => Owner::Dangling,
        Err(e) => {
            debug!(error = %e, "garbage collector: reading an owner failed");
            Owner::Solid
        }
    }
}

/// attemptToDeleteItem for one dependent that is not being deleted.
async fn collect(client: &Client, snap: &Snapshot, dep: &Obj) -> Done {
    let mut solid = false;
    let mut gone: HashSet<&str> = HashSet::new();
    let mut waiting = false;
    for r in &dep.owners {
        match classify(client, snap, dep, r).await {
            Owner::Solid => solid = true,
            Owner::Dangling => {
                gone.insert(r.uid.as_str());
            }
            Owner::Waiting => {
                waiting = true;
                gone.insert(r.uid.as_str());
            }
        }
    }
    if solid {
        return gone.is_empty() || remove_owner_refs(client, dep, &gone).await;
    }
    let has_dependents = snap.dependents.get(&dep.uid).is_some_and(|d| !d.is_empty());
    let policy = if waiting && has_dependents {
        PropagationPolicy::Foreground
    } else if dep.has(ORPHAN) {
        PropagationPolicy::Orphan
    } else if dep.has(FOREGROUND) {
        PropagationPolicy::Foreground
    } else {
        PropagationPolicy::Background
    };
    delete(client, dep, policy).await
}

/// attemptToOrphan: drop `owner` from its dependents' ownerReferences, then its finalizer.
async fn orphan(client: &Client, snap: &Snapshot, owner: &Obj) -> Done {
    let uid = HashSet::from([owner.uid.as_str()]);
    let mut done = true;
    for (dep, _) in snap.dependents_of(owner) {
        done &= remove_owner_refs(client, dep, &uid).await;
    }
    done && remove_finalizer(client, owner, ORPHAN).await
}

/// processDeletingDependentsItem: the finalizer goes once no blocking dependent is left (the
/// dependents themselves are deleted by [`collect`], which sees this owner as waiting).
async fn finish_foreground(client: &Client, snap: &Snapshot, owner: &Obj) -> Done {
    let blocked = snap
        .dependents_of(owner)
        .iter()
        .any(|(_, r)| r.block_owner_deletion == Some(true));
    blocked || remove_finalizer(client, owner, FOREGROUND).await
}

/// One pass over everything; Ok(false) when something must be retried.
async fn pass(client: &Client, kinds: Arc<Kinds>) -> Result<(Snapshot, Done), Error> {
    let snap = snapshot(client, kinds).await?;
    let mut done = true;
    for o in snap.objects.iter().filter(|o| o.deleting) {
        if o.has(ORPHAN) {
            done &= orphan(client, &snap, o).await;
        } else if o.has(FOREGROUND) {
            done &= finish_foreground(client, &snap, o).await;
        }
    }
    for d in snap
        .objects
        .iter()
        .filter(|o| !o.deleting && !o.owners.is_empty())
    {
        done &= collect(client, &snap, d).await;
    }
    Ok((snap, done))
}

/// What the watches have seen: which uids exist and which are referenced as owners.
#[derive(Default)]
struct Seen {
    present: HashSet<String>,
    owners: HashSet<String>,
}

impl Seen {
    fn reset(&mut self, snap: &Snapshot) {
        self.present = snap.objects.iter().map(|o| o.uid.clone()).collect();
        self.owners = snap.dependents.keys().cloned().collect();
    }

    /// Records a watch event; true when it may give the collector work.
    fn observe(&mut self, ev: watcher::Event<Obj>) -> bool {
        match ev {
            watcher::Event::Apply(o) | watcher::Event::InitApply(o) => {
                self.present.insert(o.uid.clone());
                let mut work = o.deleting && (o.has(ORPHAN) || o.has(FOREGROUND));
                for r in &o.owners {
                    work |= !self.present.contains(&r.uid);
                    self.owners.insert(r.uid.clone());
                }
                work
            }
            watcher::Event::Delete(o) => {
                self.present.remove(&o.uid);
                !o.owners.is_empty() || self.owners.contains(&o.uid)
            }
            watcher::Event::Init => false,
            watcher::Event::InitDone => true,
        }
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
    let watches = kinds.0.iter().map(|k| {
        let resource = api_resource(k);
        let k = k.clone();
        if leases.follows(&resource) {
            return leases
                .subscribe(client)
                .map(move |e| Ok(to_obj(&k, e)))
                .boxed();
        }
        let api: Api<MetaOnly> = Api::all_with(client.clone(), &resource);
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
                    if seen.observe(ev) {
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

#[cfg(test)]
#[path = "garbage_collector_tests.rs"]
mod tests;
