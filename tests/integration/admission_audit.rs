//! Admission in the audit log: webhooks' `auditAnnotations` under `<webhook>/<key>`, the
//! mutation record of each mutating call (`mutation.webhook.admission.k8s.io/round_0_index_0`)
//! and the record of a webhook that failed open, as kube-apiserver's dispatchers write them.

use crate::admission::{apply, closed_port, eventually, webhook, Webhook};
use crate::support::audited_server;
use serde_json::{json, Value};

#[tokio::test]
async fn webhooks_annotate_the_audit_event() {
    let (server, log, _dir) = audited_server().await;
    let hook = Webhook::start().await;
    let ca = hook.ca_bundle();
    let closed = closed_port();
    let down = format!("https://127.0.0.1:{closed}/down");
    let ignore = json!({"failurePolicy": "Ignore", "timeoutSeconds": 1});
    apply(
        &server,
        "MutatingWebhookConfiguration",
        "labeller",
        vec![webhook(
            "mutate.example.com",
            &hook.url("/mutate"),
            &ca,
            "configmaps",
            json!({}),
        )],
    )
    .await;
    apply(
        &server,
        "ValidatingWebhookConfiguration",
        "checks",
        vec![
            webhook(
                "annotate.example.com",
                &hook.url("/annotate"),
                &ca,
                "configmaps",
                json!({}),
            ),
            webhook("down.example.com", &down, &ca, "configmaps", ignore),
        ],
    )
    .await;

    // Once both configurations are in force, a create goes through all three webhooks.
    let mut n = 0;
    let name = eventually("the webhooks to be called", || {
        n += 1;
        let name = format!("audited-{n}");
        let server = &server;
        let hook = &hook;
        async move {
            server
                .kubectl_ok(&["create", "configmap", &name, "--from-literal=a=b"])
                .await;
            let labels = server
                .kubectl_ok(&[
                    "get",
                    "configmap",
                    &name,
                    "-o",
                    "jsonpath={.metadata.labels}",
                ])
                .await;
            let validated = hook
                .sent_to("/annotate")
                .iter()
                .any(|r| r["request"]["name"] == name.as_str());
            (labels.contains("mutated") && validated).then_some(name)
        }
    })
    .await;

    let event = eventually("the create's ResponseComplete event", || async {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .find(|e| {
                e["stage"] == "ResponseComplete"
                    && e["verb"] == "create"
                    && e["objectRef"]["name"] == name.as_str()
            })
    })
    .await;
    let annotations = &event["annotations"];
    assert_eq!(
        annotations["annotate.example.com/checked-by"], "annotate",
        "{event}"
    );
    assert!(
        annotations.get("annotate.example.com/not a key!").is_none(),
        "{event}"
    );
    let mutation: Value = serde_json::from_str(
        annotations["mutation.webhook.admission.k8s.io/round_0_index_0"]
            .as_str()
            .unwrap_or_else(|| panic!("no mutation annotation: {event}")),
    )
    .unwrap();
    assert_eq!(
        mutation,
        json!({"configuration": "labeller", "webhook": "mutate.example.com", "mutated": true})
    );
    // The down webhook is the second of the validating webhooks called.
    assert_eq!(
        annotations["failed-open.validating.webhook.admission.k8s.io/round_0_index_1"],
        "down.example.com",
        "{event}"
    );
    assert_eq!(annotations["authorization.k8s.io/decision"], "allow");
}
