//! MutatingAdmissionPolicy with kubectl (the MutatingAdmissionPolicy gate on): an
//! ApplyConfiguration and a JSONPatch mutation stored with the object, reinvocation (after a
//! later policy and after a mutating webhook, which runs after the policies), the
//! failurePolicy of a mutation that fails, a policy on a custom resource; and struct literals
//! refused where no object types are declared (a CRD rule, a ValidatingAdmissionPolicy).

use crate::admission::{apply, eventually, webhook, Webhook};
use crate::crds::{apply_crd, fails, ok, write};
use crate::support::{output_text as text, Options, TestServer};
use serde_json::{json, Value};

async fn start() -> TestServer {
    TestServer::start_with(
        Options::default().args(["--feature-gates", "MutatingAdmissionPolicy=true"]),
    )
    .await
}

/// A MutatingAdmissionPolicy (v1beta1) `name` on configmaps with these mutations, and its
/// binding `name` to the namespaces labelled `mutate: <label>`.
fn policy(
    (name, label): (&str, &str),
    failure_policy: &str,
    reinvocation: &str,
    mutations: Value,
) -> String {
    let policy = json!({
        "apiVersion": "admissionregistration.k8s.io/v1beta1",
        "kind": "MutatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": failure_policy,
            "reinvocationPolicy": reinvocation,
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"], "resources": ["configmaps"]}]},
            "mutations": mutations,
        },
    });
    let binding = json!({
        "apiVersion": "admissionregistration.k8s.io/v1beta1",
        "kind": "MutatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {
            "policyName": name,
            "matchResources": {"namespaceSelector": {"matchLabels": {"mutate": label}}},
        },
    });
    format!("{policy}\n---\n{binding}\n")
}

fn apply_config(expression: &str) -> Value {
    json!({"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": expression}})
}

fn json_patch(expression: &str) -> Value {
    json!({"patchType": "JSONPatch", "jsonPatch": {"expression": expression}})
}

/// Creates namespace `ns` labelled `mutate: <policy>`.
async fn namespace(server: &TestServer, ns: &str, policy: &str) {
    server.kubectl_ok(&["create", "namespace", ns]).await;
    let label = format!("mutate={policy}");
    server.kubectl_ok(&["label", "namespace", ns, &label]).await;
}

/// `kubectl create` of ConfigMap `name` in `ns` with `data`.
async fn create_cm(server: &TestServer, ns: &str, name: &str) -> std::process::Output {
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns}, "data": {"k": "v"}});
    let f = write(server, &format!("{ns}-{name}.json"), &cm.to_string());
    server.kubectl(&["create", "-f", &f]).await
}

/// ConfigMap `name` in `ns` as stored.
async fn get_cm(server: &TestServer, ns: &str, name: &str) -> Value {
    let out = server
        .kubectl_ok(&["get", "configmap", name, "-n", ns, "-o", "json"])
        .await;
    serde_json::from_str(&out).unwrap()
}

/// Creates ConfigMaps in `ns` until one is created after the policies apply (`applied` says
/// when); returns it.
async fn create_mutated(
    server: &TestServer,
    ns: &str,
    name: &str,
    applied: impl Fn(&Value) -> bool,
) -> Value {
    eventually("the policy to apply", || async {
        let o = create_cm(server, ns, name).await;
        assert!(o.status.success(), "{}", text(&o));
        let cm = get_cm(server, ns, name).await;
        if applied(&cm) {
            return Some(cm);
        }
        // Made before the policy applied: try again.
        server
            .kubectl_ok(&["delete", "configmap", name, "-n", ns])
            .await;
        None
    })
    .await
}

#[tokio::test]
async fn mutating_admission_policies_mutate_what_is_stored() {
    let server = start().await;
    namespace(&server, "mut", "stamp").await;
    let yaml = policy(
        ("stamp", "stamp"),
        "Fail",
        "Never",
        json!([
            apply_config(r#"Object{metadata: Object.metadata{labels: {"stamped-by": "policy"}}}"#),
            json_patch(
                r#"(has(object.metadata.annotations) ? [] :
                     [JSONPatch{op: "add", path: "/metadata/annotations", value: {}}]) +
                   [JSONPatch{op: "add",
                              path: "/metadata/annotations/" + jsonpatch.escapeKey("example.com/user"),
                              value: request.userInfo.username},
                    JSONPatch{op: "add", path: "/data/greeting", value: "hello " + object.metadata.name}]"#
            ),
        ]),
    );
    let f = write(&server, "stamp.yaml", &yaml);
    server.kubectl_ok(&["apply", "-f", &f]).await;
    let cm = create_mutated(&server, "mut", "a", |cm| {
        cm["metadata"]["labels"]["stamped-by"] == "policy"
    })
    .await;
    assert_eq!(cm["data"], json!({"k": "v", "greeting": "hello a"}), "{cm}");
    let user = &cm["metadata"]["annotations"]["example.com/user"];
    assert!(user.as_str().is_some_and(|u| !u.is_empty()), "{cm}");
    // An update is mutated too: the label put back.
    server
        .kubectl_ok(&["label", "configmap", "a", "-n", "mut", "stamped-by-"])
        .await;
    let cm = get_cm(&server, "mut", "a").await;
    assert_eq!(cm["metadata"]["labels"]["stamped-by"], "policy", "{cm}");
    // Outside the bound namespaces, nothing changes.
    let o = create_cm(&server, "default", "plain").await;
    assert!(o.status.success(), "{}", text(&o));
    let cm = get_cm(&server, "default", "plain").await;
    assert_eq!(cm["metadata"].get("labels"), None, "{cm}");
    assert_eq!(cm["data"], json!({"k": "v"}));
}

#[tokio::test]
async fn an_if_needed_policy_runs_again_after_a_later_change() {
    let server = start().await;
    namespace(&server, "re", "re").await;
    let label = |key: &str, value: &str| {
        apply_config(&format!(
            r#"Object{{metadata: Object.metadata{{labels: {{"{key}": {value}}}}}}}"#
        ))
    };
    // "a-copy" runs first (binding name order) and copies label b, which "b-set" sets after.
    let copy = policy(
        ("a-copy", "re"),
        "Fail",
        "IfNeeded",
        json!([label(
            "a",
            r#"has(object.metadata.labels) && "b" in object.metadata.labels ? object.metadata.labels.b : "none""#
        )]),
    );
    let set = policy(
        ("b-set", "re"),
        "Fail",
        "Never",
        json!([label("b", r#""set""#)]),
    );
    let f = write(&server, "re.yaml", &format!("{copy}---\n{set}"));
    server.kubectl_ok(&["apply", "-f", &f]).await;
    let cm = create_mutated(&server, "re", "r", |cm| {
        cm["metadata"]["labels"]["b"] == "set" && cm["metadata"]["labels"].get("a").is_some()
    })
    .await;
    assert_eq!(cm["metadata"]["labels"]["a"], "set", "{cm}");
}

#[tokio::test]
async fn policies_run_before_webhooks_and_again_after_them() {
    let server = start().await;
    namespace(&server, "both", "both").await;
    let hook = Webhook::start().await;
    let only_both = json!({"namespaceSelector": {"matchLabels": {"mutate": "both"}}});
    let w = webhook(
        "mutate.example.com",
        &hook.url("/mutate"),
        &hook.ca_bundle(),
        "configmaps",
        only_both,
    );
    apply(&server, "MutatingWebhookConfiguration", "mutate", vec![w]).await;
    // Copies the label the webhook sets, "none" before it did.
    let copy = apply_config(
        r#"Object{metadata: Object.metadata{labels: {"copied":
            has(object.metadata.labels) && "mutated" in object.metadata.labels
              ? object.metadata.labels.mutated : "none"}}}"#,
    );
    let yaml = policy(("copy", "both"), "Fail", "IfNeeded", json!([copy]));
    let f = write(&server, "copy.yaml", &yaml);
    server.kubectl_ok(&["apply", "-f", &f]).await;
    let cm = create_mutated(&server, "both", "c", |cm| {
        let labels = &cm["metadata"]["labels"];
        labels["mutated"] == "true" && labels.get("copied").is_some()
    })
    .await;
    // Reinvoked after the webhook's change.
    assert_eq!(cm["metadata"]["labels"]["copied"], "true", "{cm}");
    // The webhook saw what the policy had done.
    let reviews = hook.sent_to("/mutate");
    let seen = &reviews.last().unwrap()["request"]["object"]["metadata"]["labels"];
    assert_eq!(seen, &json!({"copied": "none"}));
}

#[tokio::test]
async fn a_failing_mutation_follows_its_failure_policy() {
    let server = start().await;
    namespace(&server, "strict", "strict").await;
    namespace(&server, "lenient", "lenient").await;
    let broken = json_patch(r#"[JSONPatch{op: "remove", path: "/data/missing"}]"#);
    let labelled = apply_config(r#"Object{metadata: Object.metadata{labels: {"seen": "yes"}}}"#);
    let yaml = format!(
        "{}---\n{}",
        policy(("strict", "strict"), "Fail", "Never", json!([broken])),
        policy(
            ("lenient", "lenient"),
            "Ignore",
            "Never",
            json!([broken, labelled])
        ),
    );
    let f = write(&server, "fail.yaml", &yaml);
    server.kubectl_ok(&["apply", "-f", &f]).await;
    // Ignore: the failed mutation is skipped, the next one applies.
    create_mutated(&server, "lenient", "ok", |cm| {
        cm["metadata"]["labels"]["seen"] == "yes"
    })
    .await;
    // Fail: the write is refused and nothing is stored.
    let refused = eventually("the failing policy to apply", || async {
        let o = create_cm(&server, "strict", "no").await;
        if o.status.success() {
            server
                .kubectl_ok(&["delete", "configmap", "no", "-n", "strict"])
                .await;
            return None;
        }
        Some(text(&o))
    })
    .await;
    // A 403 with reason Invalid and the message as its one cause, which kubectl prints so.
    assert!(
        refused.contains(
            "The configmaps \"no\" is invalid: : policy 'strict' with binding 'strict' denied request: JSON Patch: operation '/0' failed at path '/data/missing': path is invalid"
        ),
        "{refused}"
    );
    let resp = server
        .admin_http()
        .post(server.url("/api/v1/namespaces/strict/configmaps"))
        .json(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "no"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 403);
    let status: Value = resp.json().await.unwrap();
    let message = "policy 'strict' with binding 'strict' denied request: JSON Patch: operation '/0' failed at path '/data/missing': path is invalid";
    assert_eq!(
        (&status["reason"], &status["message"], &status["details"]),
        (
            &json!("Invalid"),
            &json!(message),
            &json!({"name": "no", "kind": "configmaps", "causes": [{"message": message}]})
        ),
        "{status}"
    );
    let o = server
        .kubectl(&["get", "configmap", "no", "-n", "strict"])
        .await;
    assert!(text(&o).contains("NotFound"), "{}", text(&o));

    // Each mutation is counted by policy, binding and error type.
    let (_, samples) = crate::metrics::scrape(&server).await;
    let checks = |policy: &str, error_type: &str| {
        let labels = [
            ("policy", policy),
            ("policy_binding", policy),
            ("error_type", error_type),
        ];
        crate::metrics::sample(
            &samples,
            "apiserver_mutating_admission_policy_check_total",
            &labels,
        )
        .unwrap_or(0.0)
    };
    assert!(checks("strict", "invalid_error") >= 2.0);
    assert_eq!(checks("strict", "no_error"), 0.0);
    assert!(checks("lenient", "invalid_error") >= 1.0);
    assert!(checks("lenient", "no_error") >= 1.0);
}

#[tokio::test]
async fn a_policy_mutates_custom_resources() {
    let server = start().await;
    apply_crd(
        &server,
        "crd.yaml",
        crate::crds::CRD,
        "crontabs.stable.example.com",
    )
    .await;
    let policy = json!({
        "apiVersion": "admissionregistration.k8s.io/v1beta1",
        "kind": "MutatingAdmissionPolicy",
        "metadata": {"name": "mirror"},
        "spec": {
            "failurePolicy": "Fail",
            "reinvocationPolicy": "Never",
            "matchConstraints": {"resourceRules": [{"apiGroups": ["stable.example.com"],
                "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["crontabs"]}]},
            "matchConditions": [{"name": "unmirrored",
                "expression": "!object.spec.image.startsWith('mirror.example/')"}],
            "mutations": [apply_config(
                "Object{spec: Object.spec{image: 'mirror.example/' + object.spec.image}}"
            )],
        },
    });
    let binding = json!({
        "apiVersion": "admissionregistration.k8s.io/v1beta1",
        "kind": "MutatingAdmissionPolicyBinding",
        "metadata": {"name": "mirror"},
        "spec": {"policyName": "mirror"},
    });
    let f = write(
        &server,
        "mirror.yaml",
        &format!("{policy}\n---\n{binding}\n"),
    );
    server.kubectl_ok(&["apply", "-f", &f]).await;
    let crontab = json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab",
        "metadata": {"name": "nightly", "namespace": "default"},
        "spec": {"cronSpec": "0 3 * * *", "image": "backup"}});
    let f = write(&server, "crontab.json", &crontab.to_string());
    let stored = eventually("the policy to apply to crontabs", || async {
        ok(&server, &["create", "-f", &f]).await;
        let out = ok(&server, &["get", "crontab", "nightly", "-o", "json"]).await;
        let stored: Value = serde_json::from_str(&out).unwrap();
        if stored["spec"]["image"] == "mirror.example/backup" {
            return Some(stored);
        }
        ok(&server, &["delete", "crontab", "nightly"]).await;
        None
    })
    .await;
    // The rest of the spec is kept, and the schema's default still applies.
    assert_eq!(stored["spec"]["cronSpec"], "0 3 * * *", "{stored}");
    assert_eq!(stored["spec"]["replicas"], 1, "{stored}");
}

#[tokio::test]
async fn struct_literals_are_refused_where_no_object_types_are_declared() {
    let server = TestServer::start().await;
    let crd = crate::crds::CRD.replace(
        "            required: [cronSpec]\n",
        "            required: [cronSpec]\n            x-kubernetes-validations:\n            - rule: \"self != Object{}\"\n",
    );
    assert_ne!(crd, crate::crds::CRD);
    let f = write(&server, "crd.yaml", &crd);
    let err = fails(&server, &["apply", "-f", &f]).await;
    assert!(
        err.contains("compilation failed: ERROR: <input>: undeclared reference to 'Object' (in container '')"),
        "{err}"
    );
    let vap = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "builds-objects"},
        "spec": {
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["configmaps"]}]},
            "validations": [{"expression": "object.data != JSONPatch{op: 'add'}"}],
        },
    });
    let f = write(&server, "vap.json", &vap.to_string());
    let err = fails(&server, &["apply", "-f", &f]).await;
    assert!(
        err.contains("spec.validations[0].expression: Invalid value: \"object.data != JSONPatch{op: 'add'}\": compilation failed: ERROR: <input>: undeclared reference to 'JSONPatch' (in container '')"),
        "{err}"
    );
}
