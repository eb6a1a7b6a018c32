//! Updates whose admission waits on a webhook: computed on a read of the object, admitted
//! while nothing is held, then written only if the object has not changed since; a write in
//! between makes the update start again from the new state, so no update is lost and every
//! stored version was admitted.

use crate::admission::{apply, eventually, webhook, Webhook};
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
