//! Unit tests of the garbage collector's decisions.
use super::*;

/// Kinds as discovery lists kapi's built-ins (events left out, as upstream's collector does).
fn kinds() -> Arc<Kinds> {
    static KINDS: std::sync::OnceLock<Arc<Kinds>> = std::sync::OnceLock::new();
    let kind = |group: &str, version: &str, kind: &str, plural: &str, namespaced| {
        Arc::new(Kind {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
            plural: plural.into(),
            namespaced,
        })
    };
    KINDS
        .get_or_init(|| {
            Arc::new(Kinds(vec![
                kind("", "v1", "Namespace", "namespaces", false),
                kind("", "v1", "ConfigMap", "configmaps", true),
                kind("", "v1", "Secret", "secrets", true),
                kind("", "v1", "ServiceAccount", "serviceaccounts", true),
                kind("coordination.k8s.io", "v1", "Lease", "leases", true),
                kind(
                    "coordination.k8s.io",
                    "v1beta1",
                    "LeaseCandidate",
                    "leasecandidates",
                    true,
                ),
            ]))
        })
        .clone()
}

/// The uid a test writes `u<n>`, as the server would make it: a UUID.
fn uid(short: &str) -> String {
    let n: u64 = short[1..].parse().expect("test uids are u<n>");
    format!("00000000-0000-4000-8000-{n:012x}")
}

fn obj(kind: usize, ns: &str, name: &str, id: &str, owners: &[(&str, &str, &str)]) -> Obj {
    Obj {
        kind: kinds().0[kind].clone(),
        namespace: ns.into(),
        name: name.into(),
        uid: uid(id),
        rv: "1".into(),
        owners: owners
            .iter()
            .map(|(kind, name, id)| OwnerReference {
                api_version: "v1".into(),
                kind: (*kind).into(),
                name: (*name).into(),
                uid: uid(id),
                block_owner_deletion: Some(true),
                ..OwnerReference::default()
            })
            .collect(),
        finalizers: vec![],
        deleting: false,
    }
}

fn snapshot(objects: Vec<Obj>) -> Snapshot {
    let mut snap = Snapshot::new(kinds());
    for o in objects {
        snap.add(o);
    }
    snap
}

#[test]
fn a_pass_keeps_only_what_it_acts_on_and_finds_owners_by_uid_and_name() {
    let mut deleting = obj(1, "a", "fg", "u3", &[]);
    deleting.deleting = true;
    deleting.finalizers = vec![FOREGROUND.into()];
    let mut odd_uid = obj(1, "a", "odd", "u5", &[("ConfigMap", "gone", "u6")]);
    odd_uid.uid = "not-a-uuid".into();
    let snap = snapshot(vec![
        obj(1, "a", "owner", "u1", &[]),
        obj(1, "a", "dep", "u2", &[("ConfigMap", "owner", "u1")]),
        deleting,
        obj(1, "a", "plain", "u4", &[]),
        odd_uid,
    ]);
    // Every object is known by uid; only the owned and the deleting ones are kept whole,
    // whatever their uid.
    assert_eq!(snap.uids.len(), 4);
    let kept: Vec<&str> = snap.objects.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(kept, ["dep", "fg", "odd"]);

    let configmaps = &kinds().0[1];
    let reference = |name: &str, id: &str| OwnerReference {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: name.into(),
        uid: uid(id),
        ..OwnerReference::default()
    };
    let found = |ns: &str, r: &OwnerReference| {
        snap.owner(configmaps, ns, r)
            .map(|o| o.map(|o| o.name.as_str()))
    };
    // Present and not kept: it exists, nothing more to know.
    assert_eq!(found("a", &reference("owner", "u1")), Some(None));
    // Being deleted: the pass has it whole, to see it waits for its dependents.
    assert_eq!(found("a", &reference("fg", "u3")), Some(Some("fg")));
    // The right uid under another name or namespace, an unknown uid, a uid that is no UUID:
    // not shown (the pass looks them up live, as upstream does).
    assert_eq!(found("a", &reference("other", "u1")), None);
    assert_eq!(found("b", &reference("owner", "u1")), None);
    assert_eq!(found("a", &reference("owner", "u9")), None);
    let mut bad = reference("owner", "u1");
    bad.uid = "not-a-uuid".into();
    assert_eq!(found("a", &bad), None);

    // An object of an owner kind listed for its identity only: it exists, and is not kept.
    let mut snap = snap;
    let listed = ObjectMeta {
        namespace: Some("b".into()),
        name: Some("owner".into()),
        uid: Some(uid("u7")),
        ..ObjectMeta::default()
    };
    snap.identify(configmaps, listed);
    assert!(matches!(
        snap.owner(configmaps, "b", &reference("owner", "u7")),
        Some(None)
    ));
    assert_eq!((snap.uids.len(), snap.objects.len()), (5, 3));
}

#[test]
fn owner_kinds_resolve_across_versions() {
    let k = kinds();
    let plural = |av, kind| k.find(av, kind).map(|k| k.plural.as_str());
    assert_eq!(plural("v1", "ConfigMap"), Some("configmaps"));
    assert_eq!(plural("coordination.k8s.io/v2", "Lease"), Some("leases"));
    assert_eq!(plural("apps/v1", "Deployment"), None);
    assert_eq!(plural("v1", "Namespace"), Some("namespaces"));
    assert_eq!(plural("events.k8s.io/v1", "Event"), None);
}

#[test]
fn dependents_stay_in_the_owners_namespace() {
    let owner = obj(1, "a", "owner", "u1", &[]);
    let snap = snapshot(vec![
        owner.clone(),
        obj(1, "a", "dep", "u2", &[("ConfigMap", "owner", "u1")]),
        obj(1, "b", "elsewhere", "u3", &[("ConfigMap", "owner", "u1")]),
    ]);
    let deps: Vec<&str> = snap
        .dependents_of(&owner)
        .iter()
        .map(|(d, _)| d.name.as_str())
        .collect();
    assert_eq!(deps, ["dep"]);
    // A cluster-scoped owner (a namespace) has dependents everywhere.
    let ns = obj(0, "", "a", "u10", &[]);
    let snap = snapshot(vec![
        ns.clone(),
        obj(1, "a", "x", "u4", &[("Namespace", "a", "u10")]),
        obj(2, "b", "y", "u5", &[("Namespace", "a", "u10")]),
    ]);
    assert_eq!(snap.dependents_of(&ns).len(), 2);
}

#[test]
fn only_relevant_events_wake_the_collector() {
    let mut seen = Seen::default();
    let owner = obj(1, "a", "owner", "u1", &[]);
    assert!(!seen.observe(watcher::Event::InitApply(owner.clone())));
    // A dependent of a known, present owner: nothing to do yet.
    let dep = obj(1, "a", "dep", "u2", &[("ConfigMap", "owner", "u1")]);
    assert!(!seen.observe(watcher::Event::Apply(dep.clone())));
    // Its owner disappears: work.
    assert!(seen.observe(watcher::Event::Delete(owner)));
    // A dependent of an owner the watches did not show (they leave out objects nothing
    // owns): not work yet, but the owner is to be looked up.
    let orphaned = obj(1, "a", "o", "u3", &[("ConfigMap", "gone", "u9")]);
    assert!(!seen.observe(watcher::Event::Apply(orphaned.clone())));
    let queued: Vec<_> = seen
        .unknown
        .iter()
        .map(|(ns, r)| (ns.as_str(), r.uid.as_str()))
        .collect();
    assert_eq!(queued, [("a", uid("u9").as_str())]);
    seen.unknown.clear();
    // In an initial list the owner may come later; the pass after InitDone sorts it out.
    assert!(!seen.observe(watcher::Event::InitApply(orphaned)));
    assert!(seen.unknown.is_empty());
    // An unrelated object coming and going: nothing.
    let other = obj(4, "a", "lease", "u7", &[]);
    assert!(!seen.observe(watcher::Event::Apply(other.clone())));
    assert!(!seen.observe(watcher::Event::Delete(other)));
    // An owner being deleted with a GC finalizer: work.
    let mut deleting = obj(1, "a", "fg", "u8", &[]);
    deleting.deleting = true;
    deleting.finalizers = vec![FOREGROUND.into()];
    assert!(seen.observe(watcher::Event::Apply(deleting)));
}

#[test]
fn leases_come_from_the_shared_lease_watch() {
    let leases = SharedWatch::new(ApiResource::erase::<
        k8s_openapi::api::coordination::v1::Lease,
    >(&()));
    let k = kinds();
    let shared: Vec<&str> =
        k.0.iter()
            .filter(|k| leases.follows(&api_resource(k)))
            .map(|k| k.kind.as_str())
            .collect();
    assert_eq!(shared, ["Lease"]);
}

#[tokio::test]
async fn watches_start_a_few_at_a_time_and_follow_discovery() {
    use std::sync::Mutex;
    // An API server that takes every request and never answers: a watch holds its turn
    // until its initial list ends, which here it never does.
    let asked = Arc::new(Mutex::new(Vec::<String>::new()));
    let service = {
        let asked = asked.clone();
        tower::service_fn(move |req: http::Request<kube::client::Body>| {
            asked.lock().unwrap().push(req.uri().path().to_string());
            std::future::pending::<Result<http::Response<kube::client::Body>, std::io::Error>>()
        })
    };
    let client = Client::new(service, "default");
    let leases = SharedWatch::new(ApiResource::erase::<
        k8s_openapi::api::coordination::v1::Lease,
    >(&()));
    let crd = |i: usize| {
        Arc::new(Kind {
            group: "example.com".into(),
            version: "v1".into(),
            kind: format!("K{i}"),
            plural: format!("k{i}s"),
            namespaced: true,
        })
    };
    let listed = |asked: &Mutex<Vec<String>>| {
        let mut l = asked.lock().unwrap().clone();
        l.sort();
        l
    };
    let path = |i: usize| format!("/apis/example.com/v1/k{i}s");

    // Takes what the watches yield (their Init events) until they all wait.
    async fn drain(w: &mut Watches) {
        while let Ok(Some(_)) =
            tokio::time::timeout(Duration::from_millis(100), w.events.next()).await
        {}
    }

    let mut w = Watches::new(&client, &leases);
    let first = w.follow(Kinds((0..20).map(crd).collect()));
    assert_eq!(w.starting, 20);
    drain(&mut w).await;
    let mut want: Vec<String> = (0..STARTING).map(path).collect();
    want.sort();
    assert_eq!(
        listed(&asked),
        want,
        "only {STARTING} initial lists at once"
    );

    // Discovery no longer lists k0..k9 and now lists k20: their watches stop, which hands
    // their turns to the waiting ones; k10..k19 keep their watches (and their Arcs).
    let second = w.follow(Kinds((10..21).map(crd).collect()));
    assert!(Arc::ptr_eq(&first.0[10], &second.0[0]));
    assert!(Arc::ptr_eq(&first.0[19], &second.0[9]));
    assert_eq!(*second.0[10], *crd(20));
    assert_eq!(w.starting, 21);
    drain(&mut w).await;
    assert_eq!(w.events.len(), 11, "the removed kinds' watches ended");
    let mut want: Vec<String> = (0..21).map(path).collect();
    want.sort();
    assert_eq!(listed(&asked), want, "each kind listed once, none again");
}
