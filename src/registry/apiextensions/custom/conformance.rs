//! A custom resource through the registry on every storage backend (the embedded store and a
//! real etcd, each with and without the watch cache): stored at upstream's key
//! (`/registry/<group>/<plural>/<namespace>/<name>`) in the storage version, read back as
//! written, listed in pages at one revision with label and field selectors (selectableFields
//! included), watched from a past revision in order, and refused on a stale update.

use crate::api::selectors::{FieldSelector, LabelSelector};
use crate::registry::apiextensions::serving::Installer;
use crate::registry::error::Error;
use crate::registry::{Context, FieldValidation, Registry, Resource};
use crate::registry::{DeleteOptions, GenericStore, ListOptions, WatchEvent};
use crate::storage::conformance::{self, Fixture};
use futures::StreamExt;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

/// The CronTab CRD with its names accepted (what the naming controller writes), so the
/// installer serves it.
fn crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "crontabs.stable.example.com", "uid": "u1"},
        "spec": {
            "group": "stable.example.com",
            "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab", "listKind": "CronTabList"},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "selectableFields": [{"jsonPath": ".spec.image"}],
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "cronSpec": {"type": "string"},
                        "image": {"type": "string"},
                        "replicas": {"type": "integer", "minimum": 1, "default": 1}
                    }}
                }}}
            }]
        },
        "status": {
            "acceptedNames": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab", "listKind": "CronTabList"},
            "conditions": [{"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
            "storedVersions": ["v1"]
        }
    })
}

fn ctx(ns: &str) -> Context {
    Context {
        namespace: ns.into(),
        field_validation: FieldValidation::Strict,
        ..Default::default()
    }
}

fn stored(r: &Registry, group: &str, resource: &str) -> Arc<GenericStore> {
    match r.resources().lookup(group, "v1", resource).map(|r| &**r) {
        Some(Resource::Stored(s)) => s.clone(),
        _ => panic!("{group}/{resource} is served"),
    }
}

async fn create(s: &GenericStore, ns: &str, obj: Value) -> Value {
    let (obj, _) = s.decode_request(&ctx(ns), obj).expect("decodes");
    s.create(&ctx(ns), obj).await.expect("created").obj.clone()
}

/// A registry on the fixture's store serving CronTabs, with namespace `default`.
async fn crontabs(f: &Fixture) -> Arc<GenericStore> {
    let registry = Arc::new(Registry::with_prefix(f.store.clone(), "/registry"));
    let namespaces = stored(&registry, "", "namespaces");
    create(&namespaces, "", json!({"metadata": {"name": "default"}})).await;
    Installer::new(registry.clone()).apply(&crd());
    stored(&registry, "stable.example.com", "crontabs")
}

fn crontab(name: &str, image: &str, labels: Value) -> Value {
    json!({
        "apiVersion": "stable.example.com/v1", "kind": "CronTab",
        "metadata": {"name": name, "labels": labels},
        "spec": {"cronSpec": "* * * * *", "image": image}
    })
}

fn rv(obj: &Value) -> String {
    obj["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

async fn crud_at_upstream_key(f: &Fixture) {
    let s = crontabs(f).await;
    let made = create(&s, "default", crontab("a", "x", json!({}))).await;
    assert_eq!(made["spec"]["replicas"], 1, "defaulted on create");
    assert_eq!(made["metadata"]["generation"], 1);
    let raw = f
        .backend
        .get("/registry/stable.example.com/crontabs/default/a")
        .await
        .expect("stored at upstream's key");
    let on_disk: Value = serde_json::from_slice(&raw.value).expect("stored as JSON");
    assert_eq!(on_disk["apiVersion"], "stable.example.com/v1");
    assert_eq!(on_disk["kind"], "CronTab");
    assert_eq!(on_disk["spec"], made["spec"]);
    assert_eq!(raw.mod_revision.to_string(), rv(&made));
    assert_eq!(s.get(&ctx("default"), "a").await.expect("get"), made);

    let mut changed = made.clone();
    changed["spec"]["image"] = json!("y");
    let t = |_: Option<&Value>| Ok(changed.clone());
    let updated = s.update(&ctx("default"), "a", "", false, &t).await;
    let updated = updated.expect("updated").object.obj.clone();
    assert_eq!(updated["metadata"]["generation"], 2, "a spec change");
    let stale = s.update(&ctx("default"), "a", "", false, &t).await;
    assert!(matches!(stale, Err(Error::Conflict { .. })), "{stale:?}");

    s.delete(&ctx("default"), "a", &DeleteOptions::default())
        .await
        .expect("deleted");
    let gone = s.get(&ctx("default"), "a").await;
    assert!(matches!(gone, Err(Error::NotFound { .. })), "{gone:?}");
    let raw = f
        .backend
        .get("/registry/stable.example.com/crontabs/default/a")
        .await;
    assert!(raw.is_err(), "the key is gone");
}

async fn list_pages_and_selectors(f: &Fixture) {
    let s = crontabs(f).await;
    for i in 0..25 {
        let parity = if i % 2 == 0 { "even" } else { "odd" };
        let obj = crontab(
            &format!("ct-{i:02}"),
            &format!("img-{}", i % 3),
            json!({"parity": parity}),
        );
        create(&s, "default", obj).await;
    }
    let mut opts = ListOptions {
        limit: 10,
        ..Default::default()
    };
    let mut names = Vec::new();
    let mut revisions = Vec::new();
    loop {
        let page = s.list(&ctx("default"), &opts).await.expect("page");
        names.extend(
            page.items
                .iter()
                .map(|o| o.obj["metadata"]["name"].as_str().unwrap().to_string()),
        );
        revisions.push(page.resource_version.clone());
        match page.continue_token {
            Some(token) => opts.continue_token = Some(token),
            None => break,
        }
    }
    let expected: Vec<String> = (0..25).map(|i| format!("ct-{i:02}")).collect();
    assert_eq!(names, expected, "three pages, in key order, nothing lost");
    assert_eq!(revisions.len(), 3);
    assert!(revisions.windows(2).all(|w| w[0] == w[1]), "{revisions:?}");

    let count = |label: &str, field: &str| {
        let opts = ListOptions {
            label: LabelSelector::parse(label).unwrap(),
            field: FieldSelector::parse(field).unwrap(),
            ..Default::default()
        };
        let s = s.clone();
        async move {
            s.list(&ctx("default"), &opts)
                .await
                .expect("list")
                .items
                .len()
        }
    };
    assert_eq!(count("parity=even", "").await, 13);
    assert_eq!(count("", "spec.image=img-0").await, 9);
    assert_eq!(count("parity=odd", "spec.image=img-0").await, 4);
    assert_eq!(count("", "metadata.name=ct-07").await, 1);
    assert_eq!(count("", "metadata.namespace=other").await, 0);
}

async fn watch_from_a_past_revision(f: &Fixture) {
    let s = crontabs(f).await;
    let made = create(&s, "default", crontab("w", "x", json!({}))).await;
    let mut changed = made.clone();
    changed["spec"]["image"] = json!("y");
    let t = |_: Option<&Value>| Ok(changed.clone());
    s.update(&ctx("default"), "w", "", false, &t)
        .await
        .expect("updated");
    s.delete(&ctx("default"), "w", &DeleteOptions::default())
        .await
        .expect("deleted");
    let opts = ListOptions {
        resource_version: Some(rv(&made)),
        ..Default::default()
    };
    let mut w = s.watch(&ctx("default"), &opts).await.expect("watch");
    match next(&mut w).await {
        Some(WatchEvent::Modified(o)) => {
            assert_eq!(o.obj["spec"]["image"], "y");
            assert_eq!(o.obj["apiVersion"], "stable.example.com/v1");
        }
        other => panic!("expected MODIFIED, got {other:?}"),
    }
    match next(&mut w).await {
        Some(WatchEvent::Deleted(o)) => assert_eq!(o.obj["metadata"]["name"], "w"),
        other => panic!("expected DELETED, got {other:?}"),
    }
}

/// The next event, within 10 s.
async fn next(w: &mut futures::stream::BoxStream<'static, WatchEvent>) -> Option<WatchEvent> {
    tokio::time::timeout(Duration::from_secs(10), w.next())
        .await
        .expect("an event within 10 s")
}

macro_rules! custom_resource_conformance {
    ($name:ident, $fixture:ident) => {
        mod $name {
            macro_rules! case {
                ($case:ident) => {
                    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                    async fn $case() {
                        let f = super::conformance::$fixture().await;
                        tokio::time::timeout(std::time::Duration::from_secs(60), super::$case(&f))
                            .await
                            .expect("case timed out");
                    }
                };
            }
            case!(crud_at_upstream_key);
            case!(list_pages_and_selectors);
            case!(watch_from_a_past_revision);
        }
    };
}

custom_resource_conformance!(embedded_store, embedded);
custom_resource_conformance!(embedded_with_cache, embedded_cached);
custom_resource_conformance!(etcd_store, etcd);
custom_resource_conformance!(etcd_with_cache, etcd_cached);
