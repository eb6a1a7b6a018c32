//! kube-rs against kapi's CRD support, as an operator author uses it: a CRD from
//! `#[derive(CustomResource)]` and `CustomResourceExt::crd()`, `Api<T>` create / get / patch
//! (merge and server-side apply) / status, and a watcher that sees the changes.

use crate::crud::wait_default;
use crate::support::{within, TestServer};
use futures::TryStreamExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Patch, PatchParams, PostParams};
use kube::runtime::{conditions, wait::await_condition, watcher, WatchStreamExt};
use kube::{Api, CustomResource, CustomResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// A Document's spec.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(group = "kube.rs", version = "v1", kind = "Document", namespaced)]
#[kube(status = "DocumentStatus", shortname = "doc")]
pub(crate) struct DocumentSpec {
    title: String,
    hidden: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    content: Option<String>,
}

/// A Document's status.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub(crate) struct DocumentStatus {
    views: i64,
}

#[tokio::test]
async fn kube_rs_derived_crd_and_api() {
    let server = TestServer::start().await;
    wait_default(&server).await;
    let client = server.client().await;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &Document::crd())
        .await
        .expect("create the derived CRD");
    within(
        Duration::from_secs(10),
        "the CRD to be established",
        await_condition(crds, "documents.kube.rs", conditions::is_crd_established()),
    )
    .await
    .expect("watch the CRD");

    let docs: Api<Document> = Api::namespaced(client.clone(), "default");
    let events = watcher(docs.clone(), watcher::Config::default()).applied_objects();
    let mut events = Box::pin(events);

    let doc = Document::new(
        "intro",
        DocumentSpec {
            title: "Intro".into(),
            hidden: false,
            content: None,
        },
    );
    let made = docs
        .create(&PostParams::default(), &doc)
        .await
        .expect("create");
    assert_eq!(made.spec, doc.spec);
    assert_eq!(made.metadata.generation, Some(1));

    let patched = docs
        .patch(
            "intro",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"hidden": true}})),
        )
        .await
        .expect("merge patch");
    assert!(patched.spec.hidden);
    assert_eq!(patched.metadata.generation, Some(2));

    let applied = docs
        .patch(
            "intro",
            &PatchParams::apply("docs-controller"),
            &Patch::Apply(serde_json::json!({
                "apiVersion": "kube.rs/v1", "kind": "Document",
                "spec": {"title": "Intro", "hidden": true, "content": "hello"}
            })),
        )
        .await
        .expect("server-side apply");
    assert_eq!(applied.spec.content.as_deref(), Some("hello"));

    let status = docs
        .patch_status(
            "intro",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"status": {"views": 3}})),
        )
        .await
        .expect("status patch");
    assert_eq!(status.status, Some(DocumentStatus { views: 3 }));
    assert_eq!(status.metadata.generation, Some(3));

    // The watcher saw the object reach its last state.
    within(
        Duration::from_secs(10),
        "the watcher to see the status",
        async {
            while let Some(d) = events.try_next().await.expect("watch") {
                if d.status == Some(DocumentStatus { views: 3 }) {
                    return;
                }
            }
            panic!("the watch ended");
        },
    )
    .await;

    let list = docs.list(&Default::default()).await.expect("list");
    assert_eq!(list.items.len(), 1);
}
