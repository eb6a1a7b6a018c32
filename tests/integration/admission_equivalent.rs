//! matchPolicy with kubectl: under Equivalent (the default) a webhook, a
//! ValidatingAdmissionPolicy or a MutatingAdmissionPolicy whose rules name v1 of a custom
//! resource also sees writes made at v2, converted to v1, and a webhook's patch or a policy's
//! mutation comes back to v2; under Exact a webhook or policy sees only v1 writes.

use crate::admission::{apply, eventually, webhook, Webhook};
use crate::crds::{apply_crd, fails, ok, write};
use crate::support::{Options, TestServer};
use serde_json::{json, Value};

const CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.equiv.example.com
spec:
  group: equiv.example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, x-kubernetes-preserve-unknown-fields: true}}}}
  - name: v2
    served: true
    storage: false
    schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, x-kubernetes-preserve-unknown-fields: true}}}}
"#;

/// A webhook on v1 gadgets.
fn on_v1(name: &str, hook: &Webhook, path: &str, match_policy: &str) -> Value {
    let mut w = webhook(
        name,
        &hook.url(path),
        &hook.ca_bundle(),
        "gadgets",
        json!({"matchPolicy": match_policy}),
    );
    w["rules"][0]["apiGroups"] = json!(["equiv.example.com"]);
    w
}

fn gadget(name: &str, version: &str) -> String {
    json!({"apiVersion": format!("equiv.example.com/{version}"), "kind": "Gadget",
           "metadata": {"name": name, "namespace": "default"}, "spec": {"size": 3}})
    .to_string()
}

/// kubectl's error once creating the gadget `name` from `file` is refused (created ones are
/// deleted while `what` is not in force yet).
async fn refused(server: &TestServer, file: &str, name: &str, what: &str) -> String {
    eventually(&format!("{what} to take effect"), || async {
        let o = server.kubectl(&["create", "-f", file]).await;
        if o.status.success() {
            ok(server, &["delete", "gadgets", name]).await;
            return None;
        }
        Some(String::from_utf8_lossy(&o.stderr).into_owned())
    })
    .await
}

#[tokio::test]
async fn equivalent_webhooks_see_other_versions_converted_and_exact_ones_do_not() {
    let server = TestServer::start().await;
    apply_crd(&server, "crd.yaml", CRD, "gadgets.equiv.example.com").await;
    let hook = Webhook::start().await;
    apply(
        &server,
        "MutatingWebhookConfiguration",
        "gadgets",
        vec![
            on_v1("a-equivalent.example.com", &hook, "/mutate", "Equivalent"),
            on_v1("b-exact.example.com", &hook, "/count", "Exact"),
        ],
    )
    .await;
    // Written at v2: only the Equivalent webhook sees it, at v1, and its label is kept.
    let file = write(&server, "v2.json", &gadget("at-v2", "v2"));
    let labels = eventually("the webhooks to take effect", || async {
        ok(&server, &["create", "-f", &file]).await;
        let got: Value = serde_json::from_str(
            &ok(
                &server,
                &["get", "gadgets.v2.equiv.example.com", "at-v2", "-o", "json"],
            )
            .await,
        )
        .unwrap();
        ok(&server, &["delete", "gadgets", "at-v2"]).await;
        Some(got["metadata"]["labels"].clone()).filter(|l| l.is_object())
    })
    .await;
    assert_eq!(labels, json!({"mutated": "true"}));
    let review = hook.sent_to("/mutate").last().unwrap()["request"].clone();
    assert_eq!(review["kind"]["version"], "v1", "{review}");
    assert_eq!(review["resource"]["version"], "v1");
    assert_eq!(review["requestKind"]["version"], "v2");
    assert_eq!(review["requestResource"]["version"], "v2");
    assert_eq!(review["object"]["apiVersion"], "equiv.example.com/v1");
    assert!(
        hook.sent_to("/count").is_empty(),
        "the Exact webhook saw a v2 write"
    );
    // Written at v1: both see it as written.
    let file = write(&server, "v1.json", &gadget("at-v1", "v1"));
    ok(&server, &["create", "-f", &file]).await;
    let review = hook.sent_to("/count").last().unwrap()["request"].clone();
    assert_eq!(review["requestKind"]["version"], "v1");
    assert_eq!(review["object"]["apiVersion"], "equiv.example.com/v1");

    // A validating webhook on v1 refuses v2 writes too.
    apply(
        &server,
        "ValidatingWebhookConfiguration",
        "gadgets",
        vec![on_v1("deny.example.com", &hook, "/deny", "Equivalent")],
    )
    .await;
    let file = write(&server, "v2-denied.json", &gadget("denied", "v2"));
    let refused = refused(&server, &file, "denied", "the validating webhook").await;
    assert!(
        refused.contains(r#"admission webhook "deny.example.com" denied the request"#),
        "{refused}"
    );
    fails(&server, &["get", "gadgets", "denied"]).await;
}

const POLICY: &str = r#"apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: small-gadgets
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [equiv.example.com]
      apiVersions: [v1]
      operations: [CREATE, UPDATE]
      resources: [gadgets]
  validations:
  - expression: "object.apiVersion == 'equiv.example.com/v1'"
    message: saw another version
  - expression: "object.spec.size <= 2"
    message: too big
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: small-gadgets
spec:
  policyName: small-gadgets
  validationActions: [Deny]
"#;

#[tokio::test]
async fn an_equivalent_policy_sees_other_versions_converted() {
    let server = TestServer::start().await;
    apply_crd(&server, "crd.yaml", CRD, "gadgets.equiv.example.com").await;
    let policy = write(&server, "policy.yaml", POLICY);
    ok(&server, &["apply", "-f", &policy]).await;
    let big = json!({"apiVersion": "equiv.example.com/v2", "kind": "Gadget",
                     "metadata": {"name": "big", "namespace": "default"}, "spec": {"size": 3}});
    let big = write(&server, "big.json", &big.to_string());
    let refused = refused(&server, &big, "big", "the policy").await;
    assert!(refused.contains("too big"), "{refused}");
    assert!(!refused.contains("saw another version"), "{refused}");
    // A small one written at v2 passes: the policy saw it at v1.
    let small = json!({"apiVersion": "equiv.example.com/v2", "kind": "Gadget",
                       "metadata": {"name": "small", "namespace": "default"}, "spec": {"size": 1}});
    let small = write(&server, "small.json", &small.to_string());
    ok(&server, &["create", "-f", &small]).await;
}

/// Two MutatingAdmissionPolicies on v1 gadgets: `seen` (Equivalent, the default) records the
/// apiVersion it saw, `exact` (matchPolicy Exact) marks the gadgets it saw.
const MUTATING: &str = r#"apiVersion: admissionregistration.k8s.io/v1beta1
kind: MutatingAdmissionPolicy
metadata:
  name: seen
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [equiv.example.com]
      apiVersions: [v1]
      operations: [CREATE]
      resources: [gadgets]
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'Object{spec: Object.spec{seenAt: object.apiVersion}}'
---
apiVersion: admissionregistration.k8s.io/v1beta1
kind: MutatingAdmissionPolicyBinding
metadata:
  name: seen
spec:
  policyName: seen
---
apiVersion: admissionregistration.k8s.io/v1beta1
kind: MutatingAdmissionPolicy
metadata:
  name: exact
spec:
  matchConstraints:
    matchPolicy: Exact
    resourceRules:
    - apiGroups: [equiv.example.com]
      apiVersions: [v1]
      operations: [CREATE]
      resources: [gadgets]
  reinvocationPolicy: Never
  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: '[JSONPatch{op: "add", path: "/spec/exact", value: true}]'
---
apiVersion: admissionregistration.k8s.io/v1beta1
kind: MutatingAdmissionPolicyBinding
metadata:
  name: exact
spec:
  policyName: exact
"#;

#[tokio::test]
async fn an_equivalent_mutating_policy_mutates_other_versions_converted() {
    let server = TestServer::start_with(
        Options::default().args(["--feature-gates", "MutatingAdmissionPolicy=true"]),
    )
    .await;
    apply_crd(&server, "crd.yaml", CRD, "gadgets.equiv.example.com").await;
    let policies = write(&server, "mutating.yaml", MUTATING);
    ok(&server, &["apply", "-f", &policies]).await;
    // A v1 write is seen by both, as written.
    let v1 = write(&server, "v1.json", &gadget("one", "v1"));
    let spec = eventually("the mutating policies to take effect", || async {
        ok(&server, &["create", "-f", &v1]).await;
        let got = ok(
            &server,
            &["get", "gadgets.v1.equiv.example.com", "one", "-o", "json"],
        )
        .await;
        let got: Value = serde_json::from_str(&got).unwrap();
        if got["spec"].get("seenAt").is_some() && got["spec"].get("exact").is_some() {
            return Some(got["spec"].clone());
        }
        ok(&server, &["delete", "gadgets", "one"]).await;
        None
    })
    .await;
    assert_eq!(
        spec,
        json!({"size": 3, "seenAt": "equiv.example.com/v1", "exact": true})
    );
    // A v2 write: the Equivalent policy saw it at v1 and its change came back to v2; the
    // Exact one did not see it.
    let v2 = write(&server, "v2.json", &gadget("two", "v2"));
    let created = ok(&server, &["create", "-f", &v2, "-o", "json"]).await;
    let created: Value = serde_json::from_str(&created).unwrap();
    assert_eq!(created["apiVersion"], "equiv.example.com/v2", "{created}");
    assert_eq!(
        created["spec"],
        json!({"size": 3, "seenAt": "equiv.example.com/v1"})
    );
}
