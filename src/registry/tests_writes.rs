//! Registry tests of what a write stores and serves: the stored bytes decode to the object
//! served, a JSON body's direct decode matches the tree's, an unchanged update writes nothing,
//! dry runs store nothing and generateName collisions are retried with fresh names.

use super::tests::{create, ctx, make_ns, registry, registry_on, store, timed};
use super::*;
use serde_json::{json, Value};

/// The leases store and a lease `l` created in `default` (which must exist).
async fn lease_l(r: &Registry) -> (&Arc<GenericStore>, Value) {
    let leases = store(r, "coordination.k8s.io", "v1", "leases");
    let created = timed(create(
        leases,
        &ctx("default"),
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "l", "labels": {"a": "1"}}, "spec": {"holderIdentity": "h"}}),
    ))
    .await
    .unwrap();
    (leases, created)
}

#[tokio::test]
async fn an_update_that_changes_nothing_writes_nothing() {
    let (_d, r) = registry().await;
    timed(make_ns(&r, "default")).await;
    let (leases, created) = lease_l(&r).await;
    let rv = |v: &Value| v["metadata"]["resourceVersion"].clone();
    let put = |next: Value| async move {
        let t = move |_: Option<&Value>| Ok(next.clone());
        timed(leases.update(&ctx("default"), "l", "", false, &t))
            .await
            .unwrap()
            .object
            .obj
            .clone()
    };
    // The same object again: no write, the resourceVersion stays.
    let same = put(created.clone()).await;
    assert_eq!(rv(&same), rv(&created));
    assert_eq!(
        rv(&timed(leases.get(&ctx("default"), "l")).await.unwrap()),
        rv(&created)
    );
    // A change in metadata only, then in spec only: each is written.
    let mut labelled = same.clone();
    labelled["metadata"]["labels"]["a"] = json!("2");
    let labelled = put(labelled).await;
    assert_ne!(rv(&labelled), rv(&created));
    assert_eq!(labelled["metadata"]["labels"]["a"], "2");
    let mut renewed = labelled.clone();
    renewed["spec"]["holderIdentity"] = json!("other");
    let renewed = put(renewed).await;
    assert_ne!(rv(&renewed), rv(&labelled));
    assert_eq!(renewed["spec"]["holderIdentity"], "other");
}

/// A write serves (and memoizes) the object it encoded instead of decoding the stored bytes
/// again: it must be exactly what decoding them gives, byte for byte once encoded, for
/// creates and updates, including a resourceVersion sent in the middle of metadata and a
/// kind whose stored form differs from the served one.
#[tokio::test]
async fn written_objects_are_served_as_decoding_the_stored_bytes_would() {
    let (_d, r) = registry().await;
    timed(make_ns(&r, "default")).await;
    let check = |s: &Arc<GenericStore>, obj: &Decoded, name: &str| {
        let s = s.clone();
        let key = s.key("default", name);
        let want = obj.json().clone();
        async move {
            let kv = s.storage.get(&key).await.unwrap();
            let fresh = serde_json::to_vec(&s.decode_fresh(&kv).unwrap()).unwrap();
            assert_eq!(
                String::from_utf8_lossy(&want),
                String::from_utf8_lossy(&fresh)
            );
        }
    };
    let (leases, created) = lease_l(&r).await;
    let mut next = created.clone();
    next["spec"]["renewTime"] = json!("2026-11-30T10:00:00.000000Z");
    let t = |_: Option<&Value>| Ok(next.clone());
    let updated = timed(leases.update(&ctx("default"), "l", "", false, &t))
        .await
        .unwrap();
    assert_ne!(
        updated.object.obj["metadata"]["resourceVersion"],
        created["metadata"]["resourceVersion"]
    );
    timed(check(leases, &updated.object, "l")).await;
    let events = store(&r, "events.k8s.io", "v1", "events");
    let ev = timed(create(events, &ctx("default"), json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": "e"}, "eventTime": "2026-11-30T10:00:00.000000Z", "reportingController": "c",
        "reportingInstance": "i", "action": "a", "reason": "r", "type": "Normal",
        "regarding": {"kind": "Pod", "name": "p"}})))
    .await
    .unwrap();
    let mut next = ev.clone();
    next["note"] = json!("n");
    let t = |_: Option<&Value>| Ok(next.clone());
    let updated = timed(events.update(&ctx("default"), "e", "", false, &t))
        .await
        .unwrap();
    timed(check(events, &updated.object, "e")).await;
}

#[tokio::test]
async fn json_bodies_decode_straight_into_the_type_as_through_the_tree() {
    let (_d, r) = registry().await;
    let leases = store(&r, "coordination.k8s.io", "v1", "leases");
    let cms = store(&r, "", "v1", "configmaps");
    // (store, body, whether the direct path takes it)
    let cases: [(&GenericStore, &str, bool); 11] = [
        (
            leases,
            r#"{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"x","namespace":"default","resourceVersion":"5","managedFields":[{"manager":"m","operation":"Update","apiVersion":"coordination.k8s.io/v1","time":"2026-11-30T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:holderIdentity":{}}}}]},"spec":{"holderIdentity":"a","leaseDurationSeconds":15,"renewTime":"2026-11-30T10:00:00.123456Z"}}"#,
            true,
        ),
        // No apiVersion or kind: both paths fill them in.
        (
            leases,
            r#"{"metadata":{"name":"x"},"spec":{"holderIdentity":"a"}}"#,
            true,
        ),
        // Unknown fields at the top and nested.
        (
            leases,
            r#"{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"x","bogus":1},"spec":{"holderIdentity":"a","extra":true},"status":{}}"#,
            true,
        ),
        (
            cms,
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","labels":{"a":"b"}},"data":{"k":"v"},"binaryData":{"b":"aGk="}}"#,
            true,
        ),
        // The tree path decides (and names the cause): another kind, a wrong field type, no
        // name or another name than the URL's, broken JSON, not an object, trailing data.
        (
            leases,
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}"#,
            false,
        ),
        (
            leases,
            r#"{"metadata":{"name":"x"},"spec":{"leaseDurationSeconds":"15"}}"#,
            false,
        ),
        (leases, r#"{"spec":{"holderIdentity":"a"}}"#, false),
        (leases, r#"{"metadata":{"name":"y"}}"#, false),
        (leases, r#"{"metadata":{"name":"x"}"#, false),
        (leases, r#"[]"#, false),
        (leases, r#"{"metadata":{"name":"x"}} {}"#, false),
    ];
    let with = |v: FieldValidation| Context {
        field_validation: v,
        ..ctx("default")
    };
    for c in [
        with(FieldValidation::Strict),
        with(FieldValidation::Warn),
        with(FieldValidation::Ignore),
    ] {
        // Named as an update's URL names it, and unnamed as a create: without a URL name the
        // body's own name (or none) is taken, so only the name cases may differ.
        for ((s, body, fast), name) in cases
            .iter()
            .flat_map(|case| [(case, Some("x")), (case, None)])
        {
            let direct = s.decode_json_request(&c, body.as_bytes(), name);
            if name.is_some() || *fast {
                assert_eq!(direct.is_some(), *fast, "{body} {name:?}");
            }
            let Some(direct) = direct else { continue };
            let tree: Value = serde_json::from_str(body).unwrap();
            match (direct, s.decode_request(&c, tree)) {
                (Ok((a, warn_a)), Ok((b, warn_b))) => {
                    // Compared as bytes: key order is part of what clients get back.
                    assert_eq!(
                        serde_json::to_string(&a).unwrap(),
                        serde_json::to_string(&b).unwrap(),
                        "{body}"
                    );
                    assert_eq!(warn_a, warn_b, "{body}");
                }
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{body}"),
                (a, b) => panic!("{body}: {a:?} against {b:?}"),
            }
        }
    }
}

/// Updates lease `l` in `default` with `change` applied to what is stored.
async fn change_l(leases: &GenericStore, change: impl Fn(&mut Value)) -> Value {
    let mut obj = timed(leases.get(&ctx("default"), "l")).await.unwrap();
    change(&mut obj);
    let t = move |_: Option<&Value>| Ok(obj.clone());
    let done = timed(leases.update(&ctx("default"), "l", "", false, &t)).await;
    done.unwrap().object.obj["metadata"]["resourceVersion"].clone()
}

/// A watch from `created`'s resourceVersion on.
fn since(created: &Value) -> ListOptions {
    ListOptions {
        resource_version: created["metadata"]["resourceVersion"]
            .as_str()
            .map(String::from),
        ..Default::default()
    }
}

/// The resourceVersion of the next event of `w`, which must be MODIFIED.
async fn modified_rv(w: &mut futures::stream::BoxStream<'static, WatchEvent>) -> Value {
    match timed(futures::StreamExt::next(w)).await {
        Some(WatchEvent::Modified(o)) => o.obj["metadata"]["resourceVersion"].clone(),
        other => panic!("{other:?}"),
    }
}

/// Changes lease `l`'s holder, then renews it; their resourceVersions.
async fn hold_then_renew(leases: &GenericStore) -> (Value, Value) {
    let held = change_l(leases, |o| o["spec"]["holderIdentity"] = json!("h2")).await;
    let renewed = change_l(leases, |o| {
        o["spec"]["renewTime"] = json!("2026-12-01T10:00:00.000000Z");
    })
    .await;
    (held, renewed)
}

/// With the watch cache the store leaves the marked renewals out; without it the watch's own
/// filter does.
#[tokio::test]
async fn a_watch_that_omits_renewals_skips_only_the_renewals() {
    for watch_cache in [false, true] {
        a_watch_omits_renewals(watch_cache).await;
    }
}

async fn a_watch_omits_renewals(watch_cache: bool) {
    let (_d, r, _) = registry_on(watch_cache).await;
    timed(make_ns(&r, "default")).await;
    let (leases, created) = lease_l(&r).await;
    let from = |omit_renewals| ListOptions {
        omit_renewals,
        ..since(&created)
    };
    let mut every = timed(leases.watch(&ctx("default"), &from(false)))
        .await
        .unwrap();
    let mut quiet = timed(leases.watch(&ctx("default"), &from(true)))
        .await
        .unwrap();
    let (held, renewed) = hold_then_renew(leases).await;
    let labelled = change_l(leases, |o| o["metadata"]["labels"]["a"] = json!("2")).await;
    for rv in [&held, &renewed, &labelled] {
        assert_eq!(&modified_rv(&mut every).await, rv);
    }
    // The holder's change and the label's come; the renewal between them does not.
    assert_eq!(modified_rv(&mut quiet).await, held);
    assert_eq!(modified_rv(&mut quiet).await, labelled);
}

/// The garbage collector's watch gets owned objects and deletions, and its list owned objects,
/// not the objects nothing owns; with the watch cache or without it.
#[tokio::test]
async fn a_collector_watch_and_list_skip_objects_nothing_owns() {
    for watch_cache in [false, true] {
        let (_d, r, _) = registry_on(watch_cache).await;
        timed(make_ns(&r, "default")).await;
        let (leases, created) = lease_l(&r).await;
        let opts = ListOptions {
            collector_events: true,
            ..since(&created)
        };
        let mut w = timed(leases.watch(&ctx("default"), &opts)).await.unwrap();
        let lease = |name: &str, owners: Value| {
            json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": name, "ownerReferences": owners}, "spec": {}})
        };
        let owner = json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "u1"}]);
        timed(create(leases, &ctx("default"), lease("plain", json!([]))))
            .await
            .unwrap();
        change_l(leases, |o| o["metadata"]["labels"]["a"] = json!("2")).await;
        timed(create(leases, &ctx("default"), lease("owned", owner)))
            .await
            .unwrap();
        timed(leases.delete(&ctx("default"), "plain", &DeleteOptions::default()))
            .await
            .unwrap();
        let mut got = Vec::new();
        while got.len() < 2 {
            match timed(futures::StreamExt::next(&mut w)).await {
                Some(WatchEvent::Added(o)) => {
                    got.push(format!("ADDED {}", o.obj["metadata"]["name"]))
                }
                Some(WatchEvent::Deleted(o)) => {
                    got.push(format!("DELETED {}", o.obj["metadata"]["name"]))
                }
                Some(WatchEvent::Bookmark { .. }) => {}
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(
            got,
            [r#"ADDED "owned""#, r#"DELETED "plain""#],
            "watch cache: {watch_cache}"
        );
        // Its lists, page by page, hold only the owned objects.
        timed(create(leases, &ctx("default"), lease("zplain", json!([]))))
            .await
            .unwrap();
        let names = |page: &store::list::ListResult| -> Vec<String> {
            let name = |d: &Arc<Decoded>| d.obj["metadata"]["name"].as_str().unwrap().to_string();
            page.items.iter().map(name).collect()
        };
        let mut opts = ListOptions {
            collector_events: true,
            limit: 1,
            ..Default::default()
        };
        let page = timed(leases.list(&ctx("default"), &opts)).await.unwrap();
        assert_eq!(names(&page), ["owned"], "watch cache: {watch_cache}");
        assert_eq!(page.remaining, None);
        opts.continue_token = page.continue_token;
        assert!(opts.continue_token.is_some(), "\"zplain\" follows");
        let page = timed(leases.list(&ctx("default"), &opts)).await.unwrap();
        assert!(page.items.is_empty() && page.continue_token.is_none());
    }
}

/// Every watcher of a deletion gets the same object (stamped with the deletion's
/// resourceVersion), decoded and encoded once, not a copy per watcher.
#[tokio::test]
async fn watchers_of_a_deletion_share_one_object() {
    for watch_cache in [false, true] {
        let (_d, r, _) = registry_on(watch_cache).await;
        timed(make_ns(&r, "default")).await;
        let (leases, created) = lease_l(&r).await;
        let opts = since(&created);
        let mut a = timed(leases.watch(&ctx("default"), &opts)).await.unwrap();
        let mut b = timed(leases.watch(&ctx("default"), &opts)).await.unwrap();
        let gone = timed(leases.delete(&ctx("default"), "l", &DeleteOptions::default()))
            .await
            .unwrap();
        let mut deleted = Vec::new();
        for w in [&mut a, &mut b] {
            match timed(futures::StreamExt::next(w)).await {
                Some(WatchEvent::Deleted(o)) => deleted.push(o),
                other => panic!("{other:?}"),
            }
        }
        let rv = &deleted[0].obj["metadata"]["resourceVersion"];
        assert_ne!(
            rv, &created["metadata"]["resourceVersion"],
            "the deletion's revision"
        );
        assert!(
            rv.as_str().is_some_and(|v| v.parse::<i64>().is_ok()),
            "{gone:?}"
        );
        assert!(
            Arc::ptr_eq(&deleted[0], &deleted[1]),
            "watch cache: {watch_cache}"
        );
    }
}

/// A lease update that only renews it is written as a heartbeat, which the watch cache leaves
/// out of the watches that ask; any other update is a plain write.
#[tokio::test]
async fn only_renewals_are_written_as_heartbeats() {
    let (_d, r, cached) = registry_on(true).await;
    timed(make_ns(&r, "default")).await;
    let (leases, l) = lease_l(&r).await;
    // From the create on (a watch from "now" may still see it: the cache can lag the write).
    let created = l["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .ok();
    let mut w = timed(cached.watch("/registry/leases/", created))
        .await
        .unwrap();
    let (held, renewed) = hold_then_renew(leases).await;
    for (rv, marked) in [(held, false), (renewed, true)] {
        loop {
            match timed(futures::StreamExt::next(&mut w)).await {
                Some(Ok(crate::storage::WatchEvent::Progress(_))) => continue,
                Some(Ok(crate::storage::WatchEvent::Updated { kv, heartbeat, .. })) => {
                    let got = (kv.mod_revision.to_string(), heartbeat);
                    assert_eq!(got, (rv.as_str().unwrap().to_string(), marked));
                    break;
                }
                other => panic!("{other:?}"),
            }
        }
    }
}

/// A backend failure reaches the client with its cause: an unreachable store is a 503 naming
/// what failed and why, anything else a 500 carrying the whole chain.
#[tokio::test]
async fn backend_failures_keep_their_cause_in_the_message() {
    let (_d, r) = registry().await;
    let leases = store(&r, "coordination.k8s.io", "v1", "leases");
    let refused = std::io::Error::other("connection refused");
    let down = crate::storage::Error::unavailable("etcd request failed").caused_by(refused);
    match leases.storage_error("l", down) {
        Error::Unavailable(m) => assert_eq!(m, "etcd request failed: connection refused"),
        other => panic!("{other:?}"),
    }
    let full = std::io::Error::other("no space left on device");
    let failed =
        crate::storage::Error::io("the write transaction was not committed").caused_by(full);
    match leases.storage_error("l", failed) {
        Error::Internal(m) => assert_eq!(
            m,
            "storage write failed: the write transaction was not committed: no space left on device"
        ),
        other => panic!("{other:?}"),
    }
}

/// A registry error raised inside a storage update (validation, the caller's own transform,
/// the size limit of a delete's finalizer write) comes back as itself, never as an internal
/// error made from its text.
#[tokio::test]
async fn errors_raised_inside_a_storage_update_come_back_typed() {
    let (_d, r) = registry().await;
    timed(make_ns(&r, "default")).await;
    let (leases, created) = lease_l(&r).await;
    let mut bad = created.clone();
    bad["spec"]["leaseDurationSeconds"] = json!(0);
    let invalid = move |_: Option<&Value>| Ok(bad.clone());
    let got = timed(leases.update(&ctx("default"), "l", "", false, &invalid)).await;
    let Err(Error::Invalid {
        kind, name, errors, ..
    }) = got
    else {
        panic!("{got:?}")
    };
    assert_eq!((kind.as_str(), name.as_str()), ("Lease", "l"));
    let texts: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        texts,
        ["spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0"]
    );
    let refuse = |_: Option<&Value>| Err(Error::BadRequest("refused by the caller".into()));
    let got = timed(leases.update(&ctx("default"), "l", "", false, &refuse)).await;
    assert!(
        matches!(&got, Err(Error::BadRequest(m)) if m == "refused by the caller"),
        "{got:?}"
    );
    // A caller's error of its own type comes back as that type.
    #[derive(Debug, thiserror::Error)]
    #[error("the patch does not apply")]
    struct NotApplicable;
    let own = |_: Option<&Value>| Err(Error::transform(NotApplicable));
    let got = timed(leases.update(&ctx("default"), "l", "", false, &own)).await;
    let Err(Error::Transform(e)) = got else {
        panic!("{got:?}")
    };
    assert!(e.downcast_ref::<NotApplicable>().is_some(), "{e:?}");

    // An object just under the size limit, kept by a finalizer: marking it deleted makes it
    // too large, which is a 413 like any other write over the limit.
    let sas = store(&r, "", "v1", "serviceaccounts");
    let sa = |name: &str, pad: usize| {
        json!({"metadata": {"name": name, "finalizers": ["example.com/keep"]},
               "secrets": [{"name": "x".repeat(pad)}]})
    };
    let probe = timed(create(sas, &ctx("default"), sa("probe", 0)))
        .await
        .unwrap();
    let base = sas.encode(probe).unwrap().len();
    let pad = store::MAX_OBJECT_BYTES - base - 16;
    timed(create(sas, &ctx("default"), sa("large", pad)))
        .await
        .unwrap();
    let got = timed(sas.delete(&ctx("default"), "large", &DeleteOptions::default())).await;
    assert!(matches!(&got, Err(Error::TooLarge(_))), "{got:?}");
}

#[tokio::test]
async fn dry_run_and_generate_name_store_nothing_extra() {
    let (_d, r) = registry().await;
    timed(make_ns(&r, "default")).await;
    let cms = store(&r, "", "v1", "configmaps");
    let mut dry = ctx("default");
    dry.dry_run = true;
    let o = timed(create(cms, &dry, json!({"metadata": {"name": "d"}})))
        .await
        .unwrap();
    assert_eq!(o["metadata"]["name"], "d");
    assert!(matches!(
        timed(cms.get(&ctx("default"), "d")).await,
        Err(Error::NotFound { .. })
    ));
    let g = timed(create(
        cms,
        &ctx("default"),
        json!({"metadata": {"generateName": "gen-"}}),
    ))
    .await
    .unwrap();
    let name = g["metadata"]["name"].as_str().unwrap();
    assert!(name.starts_with("gen-") && name.len() == 9, "{name}");
}

/// A name generator that collides: the first names it makes are all `gen-taken`, then
/// `gen-free`, as a busy prefix would with five random characters.
fn colliding(prefix: &str) -> String {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let n = CALLS.fetch_add(1, Ordering::SeqCst);
    // Three collisions for the first create, then every name is taken for the second.
    match n {
        0..=2 => format!("{prefix}taken"),
        3 => format!("{prefix}free"),
        _ => format!("{prefix}taken"),
    }
}

#[tokio::test]
async fn generate_name_collisions_are_retried_with_fresh_names() {
    let (_d, r, storage) = registry_on(false).await;
    timed(make_ns(&r, "default")).await;
    let prototype = store(&r, "", "v1", "configmaps");
    let mut cms = GenericStore::new(
        storage,
        "/registry",
        prototype.strategy().clone(),
        "configmaps",
    );
    cms.name_generator = colliding;
    timed(create(
        &cms,
        &ctx("default"),
        json!({"metadata": {"name": "gen-taken"}}),
    ))
    .await
    .unwrap();
    let gen = || json!({"metadata": {"generateName": "gen-"}});
    let made = timed(create(&cms, &ctx("default"), gen())).await.unwrap();
    assert_eq!(made["metadata"]["name"], "gen-free");
    // Every attempt collides: after the last one the client gets kube's 409, naming the name.
    match timed(create(&cms, &ctx("default"), gen())).await {
        Err(Error::AlreadyExists {
            name, generated, ..
        }) => {
            assert_eq!((name.as_str(), generated), ("gen-taken", true));
        }
        other => panic!("{other:?}"),
    }
    // An explicit name is never replaced.
    assert!(matches!(
        timed(create(
            &cms,
            &ctx("default"),
            json!({"metadata": {"name": "gen-taken"}})
        ))
        .await,
        Err(Error::AlreadyExists {
            generated: false,
            ..
        })
    ));
}
