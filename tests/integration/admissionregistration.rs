//! admissionregistration.k8s.io through the real server: kubectl creates and prints a webhook
//! configuration and a policy, and the v1beta1 MutatingAdmissionPolicy API is served only with
//! its feature gate.

use crate::support::{get_text, Options, TestServer};

/// Writes `manifest` to a file in a temp dir and returns the dir and the file's path.
fn manifest(text: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.yaml");
    std::fs::write(&path, text).unwrap();
    (dir, path.to_string_lossy().into_owned())
}

#[tokio::test]
async fn kubectl_creates_and_prints_webhooks_and_policies() {
    let server = TestServer::start().await;
    let (_d, path) = manifest(
        r#"apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: demo}
webhooks:
- name: demo.example.com
  sideEffects: None
  admissionReviewVersions: [v1]
  clientConfig: {url: "https://example.com/validate"}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: demo}
spec:
  matchConstraints:
    resourceRules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}]
  validations: [{expression: "object.metadata.name != 'x'"}]
"#,
    );
    server.kubectl_ok(&["create", "-f", &path]).await;
    let out = server
        .kubectl_ok(&["get", "validatingwebhookconfigurations"])
        .await;
    let header: Vec<&str> = out.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "WEBHOOKS", "AGE"], "{out}");
    assert!(out.lines().nth(1).unwrap().starts_with("demo"), "{out}");
    let out = server
        .kubectl_ok(&[
            "get",
            "validatingwebhookconfiguration",
            "demo",
            "-o",
            "jsonpath={.webhooks[0].failurePolicy} {.webhooks[0].timeoutSeconds} {.metadata.generation}",
        ])
        .await;
    assert_eq!(out, "Fail 10 1");
    let out = server
        .kubectl_ok(&["get", "validatingadmissionpolicies"])
        .await;
    assert!(out.starts_with("NAME"), "{out}");
    assert!(out.contains("<unset>"), "{out}");
    // Upstream's messages come back through kubectl.
    let (_d2, bad) = manifest(
        r#"apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: bad}
webhooks:
- name: bad.example.com
  sideEffects: Some
  admissionReviewVersions: [v1]
  clientConfig: {url: "https://example.com/mutate"}
"#,
    );
    let o = server.kubectl(&["create", "-f", &bad]).await;
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(r#"webhooks[0].sideEffects: Unsupported value: "Some": supported values: "None", "NoneOnDryRun""#),
        "{err}"
    );
}

#[tokio::test]
async fn mutating_policies_are_served_only_with_their_gate() {
    let path = "/apis/admissionregistration.k8s.io/v1beta1";
    let off = TestServer::start().await;
    let (code, _) = get_text(&off.admin_http(), &off.url(path)).await;
    assert_eq!(code, 404);
    let on = TestServer::start_with(
        Options::default().args(["--feature-gates", "MutatingAdmissionPolicy=true"]),
    )
    .await;
    let (code, list) = get_text(&on.admin_http(), &on.url(path)).await;
    assert_eq!(code, 200, "{list}");
    assert!(list.contains("\"mutatingadmissionpolicies\""), "{list}");
    assert!(
        list.contains("\"mutatingadmissionpolicybindings\""),
        "{list}"
    );
}
