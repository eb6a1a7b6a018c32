//! Unit tests of the garbage collector's decisions.
use super::*;

fn obj(kind: usize, ns: &str, name: &str, uid: &str, owners: &[(&str, &str, &str)]) -> Obj {
    Obj {
        kind,
        namespace: ns.into(),
        name: name.into(),
        uid: uid.into(),
        rv: "1".into(),
        owners: owners
            .iter()
            .map(|(kind, name, uid)| OwnerReference {
                api_version: "v1".into(),
                kind: (*kind).into(),
                name: (*name).into(),
                uid: (*uid).into(),
                block_owner_deletion: Some(true),
                ..OwnerReference::default()
            })
            .collect(),
        finalizers: vec![],
        deleting: false,
    }
}

#[test]
fn owner_kinds_resolve_across_versions_and_event_groups() {
    assert_eq!(kind_index("v1", "ConfigMap"), Some(1));
    assert_eq!(kind_index("events.k8s.io/v1", "Event"), Some(4));
    assert_eq!(kind_index("coordination.k8s.io/v2", "Lease"), Some(5));
    assert_eq!(kind_index("apps/v1", "Deployment"), None);
    assert_eq!(kind_index("v1", "Namespace"), Some(0));
}

#[test]
fn dependents_stay_in_the_owners_namespace() {
    let owner = obj(1, "a", "owner", "u1", &[]);
    let snap = Snapshot::new(vec![
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
    let ns = obj(0, "", "a", "n1", &[]);
    let snap = Snapshot::new(vec![
        ns.clone(),
        obj(1, "a", "x", "u4", &[("Namespace", "a", "n1")]),
        obj(2, "b", "y", "u5", &[("Namespace", "a", "n1")]),
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
    // A dependent of an unseen owner: work (maybe dangling).
    let orphaned = obj(1, "a", "o", "u3", &[("ConfigMap", "gone", "u9")]);
    assert!(seen.observe(watcher::Event::Apply(orphaned)));
    // An unrelated object coming and going: nothing.
    let other = obj(5, "a", "lease", "u7", &[]);
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
    let shared: Vec<&str> = (0..KINDS.len())
        .filter(|&i| leases.follows(&api_resource(i)))
        .map(|i| KINDS[i].kind)
        .collect();
    assert_eq!(shared, ["Lease"]);
}
