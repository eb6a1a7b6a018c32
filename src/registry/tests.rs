//! Registry tests over the real embedded store in a temp dir (no mocks).

use super::*;
use crate::storage::{self, BackendConfig, Config};
use futures::StreamExt;
use serde_json::{json, Value};
use std::time::Duration;

pub(super) async fn registry() -> (tempfile::TempDir, Registry) {
    let (dir, r, _) = registry_on(false).await;
    (dir, r)
}

/// A registry, with the watch cache or without, and the storage it is on.
pub(super) async fn registry_on(
    watch_cache: bool,
) -> (tempfile::TempDir, Registry, Arc<dyn storage::Storage>) {
    let dir = tempfile::tempdir().unwrap();
    let storage = storage::open(Config {
        backend: BackendConfig::Embedded {
            dir: dir.path().to_path_buf(),
        },
        prefix: "/registry".into(),
        compaction_interval: Duration::ZERO,
        watch_cache,
        healthcheck_timeout: Duration::from_secs(2),
        traced: false,
    })
    .await
    .unwrap();
    (dir, Registry::new(storage.clone()), storage)
}

pub(super) fn store(
    r: &Registry,
    group: &str,
    version: &str,
    resource: &str,
) -> &'static Arc<GenericStore> {
    // The tests' registries never change: keeping their set for the test's life is harmless.
    let set: &'static Resources = Box::leak(Box::new(r.resources()));
    match set.lookup(group, version, resource).map(|r| &**r) {
        Some(Resource::Stored(s)) => s,
        _ => panic!("{resource} is stored"),
    }
}

pub(super) fn ctx(ns: &str) -> Context {
    Context {
        namespace: ns.into(),
        field_validation: FieldValidation::Strict,
        ..Default::default()
    }
}

pub(super) async fn create(s: &GenericStore, c: &Context, obj: Value) -> Result<Value> {
    let (obj, _) = s.decode_request(c, obj)?;
    Ok(s.create(c, obj).await?.obj.clone())
}

pub(super) async fn make_ns(r: &Registry, name: &str) -> Value {
    create(
        store(r, "", "v1", "namespaces"),
        &ctx(""),
        json!({"metadata": {"name": name}}),
    )
    .await
    .unwrap()
}

pub(super) async fn timed<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(10), f)
        .await
        .expect("test step timed out")
}

#[tokio::test]
async fn namespace_create_sets_phase_finalizer_and_system_fields() {
    let (_d, r) = registry().await;
    let ns = timed(make_ns(&r, "team-a")).await;
    assert_eq!(ns["status"]["phase"], "Active");
    assert_eq!(ns["spec"]["finalizers"], json!(["kubernetes"]));
    assert_eq!(
        ns["metadata"]["labels"]["kubernetes.io/metadata.name"],
        "team-a"
    );
    assert!(ns["metadata"]["uid"].as_str().unwrap().len() == 36);
    assert!(
        ns["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse::<i64>()
            .unwrap()
            > 0
    );
    assert!(ns["metadata"]["creationTimestamp"]
        .as_str()
        .unwrap()
        .ends_with('Z'));
    let bad = timed(create(
        store(&r, "", "v1", "namespaces"),
        &ctx(""),
        json!({"metadata": {"name": "Bad_Name"}}),
    ))
    .await;
    assert!(matches!(bad, Err(Error::Invalid { .. })), "{bad:?}");
}

#[tokio::test]
async fn configmap_crud_conflict_and_lifecycle_admission() {
    let (_d, r) = registry().await;
    let cms = store(&r, "", "v1", "configmaps");
    let missing = timed(create(
        cms,
        &ctx("nope"),
        json!({"metadata": {"name": "x"}}),
    ))
    .await;
    assert!(
        matches!(&missing, Err(Error::NotFound { resource, name, .. }) if resource == "namespaces" && name == "nope")
    );
    timed(make_ns(&r, "default")).await;
    let cm = timed(create(cms, &ctx("default"), json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": "1"}}))).await.unwrap();
    assert_eq!(cm["metadata"]["namespace"], "default");
    let dup = timed(create(
        cms,
        &ctx("default"),
        json!({"metadata": {"name": "x"}}),
    ))
    .await;
    assert!(matches!(dup, Err(Error::AlreadyExists { .. })));
    // Stale update → Conflict with kube's message.
    let mut stale = cm.clone();
    stale["data"]["a"] = json!("2");
    let t = |_: Option<&Value>| Ok(stale.clone());
    timed(cms.update(&ctx("default"), "x", "", false, &t))
        .await
        .unwrap();
    let again = timed(cms.update(&ctx("default"), "x", "", false, &t)).await;
    assert!(
        matches!(&again, Err(Error::Conflict { message, .. }) if message == OPTIMISTIC_LOCK_MSG),
        "{again:?}"
    );
    let got = timed(cms.get(&ctx("default"), "x")).await.unwrap();
    assert_eq!(got["data"]["a"], "2");
    let gone = timed(cms.delete(&ctx("default"), "x", &DeleteOptions::default()))
        .await
        .unwrap();
    assert!(gone.created_or_gone);
    assert!(matches!(
        timed(cms.get(&ctx("default"), "x")).await,
        Err(Error::NotFound { .. })
    ));
}

#[tokio::test]
async fn strict_validation_and_invalid_keys() {
    let (_d, r) = registry().await;
    timed(make_ns(&r, "default")).await;
    let cms = store(&r, "", "v1", "configmaps");
    let strict = cms.decode_request(
        &ctx("default"),
        json!({"metadata": {"name": "x"}, "spec": {"x": 1}}),
    );
    assert!(
        matches!(&strict, Err(Error::BadRequest(m)) if m.contains("strict decoding error: unknown field \"spec\"")),
        "{strict:?}"
    );
    let mut warn = ctx("default");
    warn.field_validation = FieldValidation::Warn;
    let (_, warnings) = cms
        .decode_request(&warn, json!({"metadata": {"name": "x"}, "spec": {"x": 1}}))
        .unwrap();
    assert_eq!(warnings, vec!["unknown field \"spec\"".to_string()]);
    let kind = cms.decode_request(
        &ctx("default"),
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x"}}),
    );
    assert!(matches!(kind, Err(Error::BadRequest(_))));
    let bad = timed(create(
        cms,
        &ctx("default"),
        json!({"metadata": {"name": "x"}, "data": {"a b": "1"}}),
    ))
    .await;
    assert!(
        matches!(&bad, Err(Error::Invalid { errors, .. }) if errors[0].field == "data[a b]"),
        "{bad:?}"
    );
    let leases = store(&r, "coordination.k8s.io", "v1", "leases");
    let bad = timed(create(
        leases,
        &ctx("default"),
        json!({"metadata": {"name": "l"}, "spec": {"leaseDurationSeconds": 0}}),
    ))
    .await;
    assert!(
        matches!(&bad, Err(Error::Invalid { errors, .. }) if errors[0].to_string() == "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0"),
        "{bad:?}"
    );
    let cands = store(&r, "coordination.k8s.io", "v1beta1", "leasecandidates");
    let bad = timed(create(
        cands,
        &ctx("default"),
        json!({"metadata": {"name": "c"}, "spec": {}}),
    ))
    .await;
    let Err(Error::Invalid { errors, .. }) = bad else {
        panic!("{bad:?}")
    };
    let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
    assert_eq!(
        fields,
        vec!["spec.leaseName", "spec.binaryVersion", "spec.strategy"]
    );
}

#[tokio::test]
async fn list_paging_selectors_and_continue() {
    let (_d, r) = registry().await;
    timed(make_ns(&r, "default")).await;
    let cms = store(&r, "", "v1", "configmaps");
    for i in 0..5 {
        let tier = if i % 2 == 0 { "web" } else { "db" };
        timed(create(
            cms,
            &ctx("default"),
            json!({"metadata": {"name": format!("cm{i}"), "labels": {"tier": tier}}}),
        ))
        .await
        .unwrap();
    }
    let mut opts = ListOptions {
        limit: 2,
        ..Default::default()
    };
    let p1 = timed(cms.list(&ctx("default"), &opts)).await.unwrap();
    assert_eq!(p1.items.len(), 2);
    assert_eq!(p1.remaining, Some(3));
    opts.continue_token = p1.continue_token.clone();
    let p2 = timed(cms.list(&ctx("default"), &opts)).await.unwrap();
    assert_eq!(p2.items[0].obj["metadata"]["name"], "cm2");
    assert_eq!(p2.resource_version, p1.resource_version);
    let sel = ListOptions {
        label: crate::api::selectors::LabelSelector::parse("tier in (web)").unwrap(),
        ..Default::default()
    };
    assert_eq!(
        timed(cms.list(&ctx(""), &sel)).await.unwrap().items.len(),
        3
    );
    let f = ListOptions {
        field: crate::api::selectors::FieldSelector::parse("metadata.name=cm1").unwrap(),
        ..Default::default()
    };
    assert_eq!(
        timed(cms.list(&ctx("default"), &f))
            .await
            .unwrap()
            .items
            .len(),
        1
    );
    let bad = ListOptions {
        field: crate::api::selectors::FieldSelector::parse("spec.x=1").unwrap(),
        ..Default::default()
    };
    assert!(
        matches!(timed(cms.list(&ctx("default"), &bad)).await, Err(Error::BadRequest(m)) if m == "field label not supported: spec.x")
    );
    let bad_token = ListOptions {
        continue_token: Some("!!".into()),
        ..Default::default()
    };
    assert!(matches!(
        timed(cms.list(&ctx("default"), &bad_token)).await,
        Err(Error::BadRequest(_))
    ));
    let empty = timed(cms.list(&ctx("other"), &ListOptions::default()))
        .await
        .unwrap();
    assert!(empty.items.is_empty());
}

#[tokio::test]
async fn watch_list_sends_initial_events_then_bookmark_then_changes() {
    let (_d, r) = registry().await;
    timed(make_ns(&r, "default")).await;
    let leases = store(&r, "coordination.k8s.io", "v1", "leases");
    timed(create(
        leases,
        &ctx("default"),
        json!({"metadata": {"name": "a"}, "spec": {"holderIdentity": "me"}}),
    ))
    .await
    .unwrap();
    let opts = ListOptions {
        send_initial_events: Some(true),
        resource_version_match: Some("NotOlderThan".into()),
        allow_bookmarks: true,
        ..Default::default()
    };
    let mut w = timed(leases.watch(&ctx("default"), &opts)).await.unwrap();
    assert!(
        matches!(timed(w.next()).await, Some(WatchEvent::Added(o)) if o.obj["metadata"]["name"] == "a")
    );
    assert!(matches!(
        timed(w.next()).await,
        Some(WatchEvent::Bookmark {
            initial_events_end: true,
            ..
        })
    ));
    let b = timed(create(
        leases,
        &ctx("default"),
        json!({"metadata": {"name": "b"}}),
    ))
    .await
    .unwrap();
    assert!(
        matches!(timed(w.next()).await, Some(WatchEvent::Added(o)) if o.obj["metadata"]["name"] == "b")
    );
    timed(leases.delete(&ctx("default"), "b", &DeleteOptions::default()))
        .await
        .unwrap();
    match timed(w.next()).await {
        Some(WatchEvent::Deleted(o)) => {
            let rv: i64 = o.obj["metadata"]["resourceVersion"]
                .as_str()
                .unwrap()
                .parse()
                .unwrap();
            assert!(
                rv > b["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap()
                    .parse::<i64>()
                    .unwrap()
            );
        }
        other => panic!("{other:?}"),
    }
    let invalid = ListOptions {
        send_initial_events: Some(true),
        ..Default::default()
    };
    assert!(matches!(
        timed(leases.watch(&ctx("default"), &invalid)).await,
        Err(Error::Invalid { .. })
    ));
}

#[tokio::test]
async fn finalizers_and_namespace_termination() {
    let (_d, r) = registry().await;
    timed(make_ns(&r, "default")).await;
    timed(make_ns(&r, "doomed")).await;
    let nss = store(&r, "", "v1", "namespaces");
    let immortal = timed(nss.delete(&ctx(""), "default", &DeleteOptions::default())).await;
    assert!(matches!(immortal, Err(Error::Forbidden { .. })));
    let pending = timed(nss.delete(&ctx(""), "doomed", &DeleteOptions::default()))
        .await
        .unwrap();
    assert!(!pending.created_or_gone);
    assert_eq!(pending.object.obj["status"]["phase"], "Terminating");
    assert!(pending.object.obj["metadata"]["deletionTimestamp"].is_string());
    let cms = store(&r, "", "v1", "configmaps");
    let refused = timed(create(
        cms,
        &ctx("doomed"),
        json!({"metadata": {"name": "x"}}),
    ))
    .await;
    assert!(
        matches!(&refused, Err(Error::Forbidden { causes, .. }) if causes[0].0 == "NamespaceTerminating"),
        "{refused:?}"
    );
    // finalize removes the kubernetes finalizer and the namespace goes away.
    let fin = |cur: Option<&Value>| {
        let mut v = cur.unwrap().clone();
        v["spec"]["finalizers"] = json!([]);
        Ok(v)
    };
    timed(nss.update(&ctx(""), "doomed", "finalize", false, &fin))
        .await
        .unwrap();
    assert!(matches!(
        timed(nss.get(&ctx(""), "doomed")).await,
        Err(Error::NotFound { .. })
    ));
    // A configmap with a finalizer gets a deletionTimestamp and stays until it is removed.
    timed(create(
        cms,
        &ctx("default"),
        json!({"metadata": {"name": "f", "finalizers": ["example.com/hold"]}}),
    ))
    .await
    .unwrap();
    let held = timed(cms.delete(&ctx("default"), "f", &DeleteOptions::default()))
        .await
        .unwrap();
    assert!(!held.created_or_gone && held.object.obj["metadata"]["deletionTimestamp"].is_string());
    let drop_fin = |cur: Option<&Value>| {
        let mut v = cur.unwrap().clone();
        v["metadata"]["finalizers"] = json!([]);
        Ok(v)
    };
    timed(cms.update(&ctx("default"), "f", "", false, &drop_fin))
        .await
        .unwrap();
    assert!(matches!(
        timed(cms.get(&ctx("default"), "f")).await,
        Err(Error::NotFound { .. })
    ));
}

#[tokio::test]
async fn events_are_shared_between_versions() {
    let (_d, r) = registry().await;
    timed(make_ns(&r, "default")).await;
    let core = store(&r, "", "v1", "events");
    let ev = store(&r, "events.k8s.io", "v1", "events");
    timed(create(core, &ctx("default"), json!({"metadata": {"name": "e"}, "involvedObject": {"kind": "Lease", "name": "l", "namespace": "default"}, "reason": "Hi", "message": "hello"}))).await.unwrap();
    let got = timed(ev.get(&ctx("default"), "e")).await.unwrap();
    assert_eq!(got["apiVersion"], "events.k8s.io/v1");
    assert_eq!(got["note"], "hello");
    assert_eq!(got["regarding"]["name"], "l");
    let sel = ListOptions {
        field: crate::api::selectors::FieldSelector::parse("involvedObject.name=l").unwrap(),
        ..Default::default()
    };
    assert_eq!(
        timed(core.list(&ctx("default"), &sel))
            .await
            .unwrap()
            .items
            .len(),
        1
    );
    // Each version selects by its own field names, as kube's field label conversions do.
    async fn count(store: &GenericStore, selector: &str) -> crate::registry::Result<usize> {
        let opts = ListOptions {
            field: crate::api::selectors::FieldSelector::parse(selector).unwrap(),
            ..Default::default()
        };
        store
            .list(&ctx("default"), &opts)
            .await
            .map(|l| l.items.len())
    }
    assert_eq!(timed(count(ev, "regarding.name=l")).await.unwrap(), 1);
    assert_eq!(timed(count(ev, "regarding.name=other")).await.unwrap(), 0);
    assert_eq!(
        timed(count(ev, "reason=Hi,regarding.kind=Lease"))
            .await
            .unwrap(),
        1
    );
    for (store, label) in [(ev, "involvedObject.name"), (core, "regarding.name")] {
        let e = timed(count(store, &format!("{label}=l")))
            .await
            .unwrap_err();
        assert!(
            e.to_string()
                .contains(&format!("field label not supported: {label}")),
            "{e}"
        );
    }
}

/// Namespaces select by status.phase (and metadata.name), as v1's field label conversion
/// allows; the bare `name` is refused.
#[tokio::test]
async fn namespaces_select_by_phase() {
    let (_d, r) = registry().await;
    timed(make_ns(&r, "a")).await;
    let nss = store(&r, "", "v1", "namespaces");
    let list = |selector: &str| ListOptions {
        field: crate::api::selectors::FieldSelector::parse(selector).unwrap(),
        ..Default::default()
    };
    let active = timed(nss.list(&ctx(""), &list("status.phase=Active")))
        .await
        .unwrap();
    assert_eq!(active.items.len(), 1);
    let none = timed(nss.list(&ctx(""), &list("status.phase=Terminating")))
        .await
        .unwrap();
    assert!(none.items.is_empty());
    let e = timed(nss.list(&ctx(""), &list("name=a")))
        .await
        .unwrap_err();
    assert!(
        e.to_string().contains("field label not supported: name"),
        "{e}"
    );
}

#[tokio::test]
async fn a_change_of_the_served_set_leaves_requests_under_way_with_the_old_set() {
    let (_dir, r) = registry().await;
    let before = r.resources();
    assert!(before
        .lookup("coordination.k8s.io", "v1beta1", "leasecandidates")
        .is_some());
    r.remove("coordination.k8s.io", "v1beta1", "leasecandidates");
    let after = r.resources();
    assert!(after.generation() > before.generation());
    assert!(after
        .lookup("coordination.k8s.io", "v1beta1", "leasecandidates")
        .is_none());
    // A request that took the set before the change still has all of it.
    let kept = before
        .lookup("coordination.k8s.io", "v1beta1", "leasecandidates")
        .expect("the old set is unchanged")
        .clone();
    assert_eq!(before.iter().count(), after.iter().count() + 1);
    // Installed again: served at the end of the list, under a newer generation.
    r.install(kept);
    let again = r.resources();
    assert!(again.generation() > after.generation());
    let last = again.iter().last().unwrap().info();
    assert_eq!(
        (&*last.group, &*last.resource),
        ("coordination.k8s.io", "leasecandidates")
    );
}

#[tokio::test]
async fn metadata_only_lists_decode_only_metadata() {
    let (_d, r, storage) = registry_on(false).await;
    timed(make_ns(&r, "default")).await;
    let cms = store(&r, "", "v1", "configmaps");
    for i in 0..3 {
        let tier = if i == 1 { "db" } else { "web" };
        let cm = json!({"metadata": {"name": format!("cm{i}"), "labels": {"tier": tier}}, "data": {"k": "v"}});
        timed(create(cms, &ctx("default"), cm)).await.unwrap();
    }
    let full = timed(cms.list(&ctx("default"), &ListOptions::default()))
        .await
        .unwrap();
    // A registry that has decoded none of these revisions yet, so nothing comes from its memo.
    let fresh = Registry::new(storage);
    let cms = store(&fresh, "", "v1", "configmaps");
    let mut opts = ListOptions {
        metadata_only: true,
        limit: 1,
        label: crate::api::selectors::LabelSelector::parse("tier=web").unwrap(),
        ..Default::default()
    };
    let mut names = Vec::new();
    loop {
        let page = timed(cms.list(&ctx("default"), &opts)).await.unwrap();
        for d in &page.items {
            let name = d.obj["metadata"]["name"].as_str().unwrap().to_string();
            let whole = full
                .items
                .iter()
                .find(|f| f.obj["metadata"]["name"] == name);
            assert_eq!(d.obj["metadata"], whole.unwrap().obj["metadata"]);
            assert_eq!(d.obj["kind"], "ConfigMap");
            assert!(d.obj.get("data").is_none(), "{}", d.obj);
            names.push(name);
        }
        match page.continue_token {
            Some(t) => opts.continue_token = Some(t),
            None => break,
        }
    }
    assert_eq!(names, ["cm0", "cm2"]);
    // A field selector may name any field: the objects are decoded whole.
    let by_field = ListOptions {
        metadata_only: true,
        field: crate::api::selectors::FieldSelector::parse("metadata.name=cm1").unwrap(),
        ..Default::default()
    };
    let page = timed(cms.list(&ctx("default"), &by_field)).await.unwrap();
    assert_eq!(page.items[0].obj["data"]["k"], "v");
}
