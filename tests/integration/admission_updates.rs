//! Updates whose admission waits on a webhook: computed on a read of the object, admitted
//! while nothing is held, then written only if the object has not changed since; a write in
//! between makes the update start again from the new state, so no update is lost and every
//! stored version was admitted.

use crate::admission::{apply, eventually, webhook, Webhook};
use crate::support::etcd::start_etcd;
use crate::support::TestServer;
use serde_json::json;

#[tokio::test]
async fn concurrent_updates_through_a_slow_webhook_lose_nothing() {
    let server = TestServer::start().await;
    let hook = Webhook::start().await;
    let ca = hook.ca_bundle();
    apply(
        &server,
        "ValidatingWebhookConfiguration",
        "pause",
        vec![webhook(
            "pause.example.com",
            &hook.url("/pause"),
            &ca,
            "configmaps",
            json!({}),
        )],
    )
    .await;
    server
        .kubectl_ok(&["create", "configmap", "shared", "--from-literal=start=0"])
        .await;
    eventually("the webhook to be in force", || async {
        server
            .kubectl_ok(&["label", "configmap", "shared", "--overwrite", "ready=yes"])
            .await;
        hook.sent_to("/pause")
            .iter()
            .any(|r| r["request"]["operation"] == "UPDATE")
            .then_some(())
    })
    .await;
    let calls_before = hook.sent_to("/pause").len();

    // Eight merge patches at once, each adding its own key: each waits 400 ms in the webhook
    // while the others write, so most are admitted again on the state the others left.
    let patches = (0..8).map(|i| {
        let server = &server;
        async move {
            let patch = json!({"data": {format!("k{i}"): i.to_string()}}).to_string();
            server
                .kubectl_ok(&["patch", "configmap", "shared", "--type=merge", "-p", &patch])
                .await
        }
    });
    futures::future::join_all(patches).await;
    let data = server
        .kubectl_ok(&["get", "configmap", "shared", "-o", "jsonpath={.data}"])
        .await;
    let data: serde_json::Value = serde_json::from_str(&data).unwrap();
    for i in 0..8 {
        assert_eq!(data[format!("k{i}")], i.to_string(), "{data}");
    }
    // Some were computed again after another patch landed first: more calls than patches.
    let calls = hook.sent_to("/pause").len() - calls_before;
    assert!(calls > 8, "{calls} webhook calls for 8 patches");
}

/// An update through a webhook starts from the value its replica last wrote, without a read;
/// when another replica has written since, that guess is stale and the update is computed
/// again on a read: the other replica's change is kept, and a PUT carrying the current
/// resourceVersion is not refused for not matching the stale guess.
#[tokio::test]
async fn an_update_begun_on_a_stale_guess_is_computed_again() {
    let etcd = start_etcd().await;
    let certs = tempfile::tempdir().unwrap();
    let (a, b) = crate::ha::two_replicas(&etcd.url, certs.path()).await;
    let hook = Webhook::start().await;
    let allow = webhook(
        "allow.example.com",
        &hook.url("/allow"),
        &hook.ca_bundle(),
        "configmaps",
        json!({}),
    );
    apply(&a, "ValidatingWebhookConfiguration", "allow", vec![allow]).await;
    a.kubectl_ok(&["create", "configmap", "shared", "--from-literal=start=0"])
        .await;
    // A writes through the webhook, so it remembers the value it wrote.
    eventually("the webhook to be in force on a", || async {
        a.kubectl_ok(&["label", "configmap", "shared", "--overwrite", "by-a=yes"])
            .await;
        hook.sent_to("/allow")
            .iter()
            .any(|r| r["request"]["operation"] == "UPDATE")
            .then_some(())
    })
    .await;
    // B writes: A's remembered value is now stale.
    b.kubectl_ok(&["label", "configmap", "shared", "by-b=yes"])
        .await;
    // A PUT to A of the current object (B's resourceVersion) with one more key.
    let mut current: serde_json::Value = serde_json::from_str(
        &b.kubectl_ok(&["get", "configmap", "shared", "-o", "json"])
            .await,
    )
    .unwrap();
    current["data"]["from-a"] = json!("1");
    let calls = hook.sent_to("/allow").len();
    let response = a
        .admin_http()
        .put(a.url("/api/v1/namespaces/default/configmaps/shared"))
        .json(&current)
        .send()
        .await
        .unwrap();
    let status = response.status();
    let stored: serde_json::Value = response.json().await.unwrap();
    assert_eq!(status, 200, "{stored}");
    assert_eq!(stored["data"]["from-a"], "1", "{stored}");
    assert_eq!(stored["metadata"]["labels"]["by-b"], "yes", "{stored}");
    // The stale guess failed the precondition before admission: admitted once, on the
    // stored object.
    assert_eq!(hook.sent_to("/allow").len() - calls, 1);
    // A merge patch to A, after B wrote again: admitted on the stale guess, then again on
    // the stored object, and B's label is kept.
    b.kubectl_ok(&["label", "configmap", "shared", "--overwrite", "by-b=again"])
        .await;
    let calls = hook.sent_to("/allow").len();
    a.kubectl_ok(&["label", "configmap", "shared", "by-a-again=yes"])
        .await;
    assert_eq!(hook.sent_to("/allow").len() - calls, 2);
    let labels = b
        .kubectl_ok(&[
            "get",
            "configmap",
            "shared",
            "-o",
            "jsonpath={.metadata.labels}",
        ])
        .await;
    let labels: serde_json::Value = serde_json::from_str(&labels).unwrap();
    assert_eq!(labels["by-b"], "again", "{labels}");
    assert_eq!(labels["by-a-again"], "yes", "{labels}");
}
