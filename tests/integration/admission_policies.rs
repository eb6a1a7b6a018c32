//! ValidatingAdmissionPolicy with kubectl (params, variables, messageExpression, reason, Deny,
//! Warn and Audit bindings, auditAnnotations in the audit log), admission on a custom resource,
//! and two replicas on one etcd that both apply a webhook configured through either.

use crate::admission::{apply, eventually, webhook, Webhook};
use crate::support::etcd::start_etcd;
use crate::support::{audited_server, output_text as text, TestServer};
use serde_json::{json, Value};

pub(crate) async fn apply_yaml(server: &TestServer, yaml: &str) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("manifest.yaml");
    std::fs::write(&path, yaml).unwrap();
    server
        .kubectl_ok(&["apply", "-f", path.to_str().unwrap()])
        .await;
}

const POLICIES: &str = r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: max-keys
spec:
  failurePolicy: Fail
  paramKind:
    apiVersion: v1
    kind: ConfigMap
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE", "UPDATE"]
      resources: ["configmaps"]
  variables:
  - name: keys
    expression: "has(object.data) ? size(object.data) : 0"
  validations:
  - expression: "variables.keys <= int(params.data.max)"
    messageExpression: "'too many keys: ' + string(variables.keys)"
    reason: Forbidden
  - expression: "!object.metadata.name.startsWith('tmp-')"
    message: "no temporary names"
  - expression: "request.userInfo.username != 'nobody'"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: max-keys-in-pol
spec:
  policyName: max-keys
  validationActions: [Deny]
  paramRef:
    name: limits
    namespace: default
    parameterNotFoundAction: Deny
  matchResources:
    namespaceSelector:
      matchLabels:
        policy: "on"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: labelled
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["configmaps"]
  validations:
  - expression: "has(object.metadata.labels) && 'team' in object.metadata.labels"
    message: "configmaps should name their team"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: labelled-warn
spec:
  policyName: labelled
  validationActions: [Warn]
"#;

/// `kubectl create -f` of a ConfigMap with `labels` and `data`.
async fn create_cm(
    server: &TestServer,
    namespace: &str,
    name: &str,
    labels: Value,
    data: Value,
) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cm.json");
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": labels}, "data": data});
    std::fs::write(&path, cm.to_string()).unwrap();
    server
        .kubectl(&["create", "-f", path.to_str().unwrap()])
        .await
}

#[tokio::test]
async fn validating_admission_policies_deny_and_warn() {
    let server = TestServer::start().await;
    let team = json!({"team": "a"});
    let o = create_cm(
        &server,
        "default",
        "limits",
        json!({"team": "ops"}),
        json!({"max": "2"}),
    )
    .await;
    assert!(o.status.success(), "{}", text(&o));
    server.kubectl_ok(&["create", "namespace", "pol"]).await;
    server
        .kubectl_ok(&["label", "namespace", "pol", "policy=on"])
        .await;
    apply_yaml(&server, POLICIES).await;
    let denied = eventually("the policy to apply", || async {
        let data = json!({"a": "1", "b": "2", "c": "3"});
        let o = create_cm(&server, "pol", "big", team.clone(), data).await;
        if o.status.success() {
            // Made before the policy applied: try again.
            server
                .kubectl_ok(&["delete", "configmap", "big", "-n", "pol"])
                .await;
            return None;
        }
        Some(text(&o))
    })
    .await;
    assert!(
        denied.contains(
            r#"configmaps "big" is forbidden: ValidatingAdmissionPolicy 'max-keys' with binding 'max-keys-in-pol' denied request: too many keys: 3"#
        ),
        "{denied}"
    );
    let o = create_cm(&server, "pol", "tmp-x", team.clone(), json!({})).await;
    assert!(
        text(&o).contains("denied request: no temporary names"),
        "{}",
        text(&o)
    );
    // Within the limit: stored. Outside the bound namespaces: not checked.
    let o = create_cm(&server, "pol", "small", team.clone(), json!({"a": "1"})).await;
    assert!(o.status.success(), "{}", text(&o));
    let o = create_cm(&server, "default", "tmp-ok", team.clone(), json!({})).await;
    assert!(o.status.success(), "{}", text(&o));
    // The Warn binding warns and lets the write through.
    let o = server
        .kubectl(&["create", "configmap", "anonymous-team"])
        .await;
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("Warning: Validation failed for ValidatingAdmissionPolicy 'labelled' with binding 'labelled-warn': configmaps should name their team"),
        "{}",
        text(&o)
    );
    // Each failed check is in the metrics, by policy, binding and the action taken, with
    // upstream's error type for a failed validation (invalid_error); passing checks are not
    // counted, as upstream's dispatcher.
    let (_, samples) = crate::metrics::scrape(&server).await;
    let checks = |binding: &str, action: &str| {
        let policy = if binding == "labelled-warn" {
            "labelled"
        } else {
            "max-keys"
        };
        let labels = [
            ("policy", policy),
            ("policy_binding", binding),
            ("error_type", "invalid_error"),
            ("enforcement_action", action),
        ];
        crate::metrics::sample(
            &samples,
            "apiserver_validating_admission_policy_check_total",
            &labels,
        )
        .unwrap_or(0.0)
    };
    assert!(checks("max-keys-in-pol", "deny") >= 2.0);
    assert_eq!(checks("max-keys-in-pol", "allow"), 0.0);
    assert!(checks("labelled-warn", "warn") >= 1.0);

    // Without its params, a Deny binding refuses.
    server.kubectl_ok(&["delete", "configmap", "limits"]).await;
    let o = create_cm(&server, "pol", "after", team, json!({})).await;
    assert!(text(&o).contains("no params found"), "{}", text(&o));
}

const AUDITED: &str = r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: audited
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["configmaps"]
  matchConditions:
  - name: audited-only
    expression: "object.metadata.name.startsWith('audit-')"
  validations:
  - expression: "true"
  - expression: "!object.metadata.name.startsWith('audit-bad')"
    message: "not that name"
  auditAnnotations:
  - key: team
    valueExpression: "has(object.metadata.labels) && 'team' in object.metadata.labels ? object.metadata.labels['team'] : null"
  - key: keys
    valueExpression: "object.?data.?typed.hasValue() ? size(object.data) : null"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: audited-binding
spec:
  policyName: audited
  validationActions: [Audit, Warn]
"#;

/// The audit log's events of requests on the ConfigMap `name` at stage ResponseComplete.
fn audit_events(log: &std::path::Path, name: &str) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["objectRef"]["name"] == name && e["stage"] == "ResponseComplete")
        .collect()
}

#[tokio::test]
async fn policy_failures_and_annotations_reach_the_audit_log() {
    let (server, log, _dir) = audited_server().await;
    apply_yaml(&server, AUDITED).await;
    eventually("the policy to apply", || async {
        let n = format!("audit-bad-{}", rand_suffix());
        let o = create_cm(&server, "default", &n, json!({}), json!({})).await;
        assert!(o.status.success(), "{}", text(&o));
        text(&o)
            .contains("Warning: Validation failed")
            .then_some(())
    })
    .await;
    // Audit and Warn: stored, warned, and the failure recorded with its expression's index.
    let o = create_cm(
        &server,
        "default",
        "audit-bad",
        json!({"team": "blue"}),
        json!({}),
    )
    .await;
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("Warning: Validation failed for ValidatingAdmissionPolicy 'audited' with binding 'audited-binding': not that name"),
        "{}",
        text(&o)
    );
    let o = create_cm(
        &server,
        "default",
        "audit-good",
        json!({"team": "red"}),
        json!({}),
    )
    .await;
    assert!(o.status.success(), "{}", text(&o));
    // A valueExpression that gives neither a string nor null refuses the write (Fail).
    let o = create_cm(
        &server,
        "default",
        "audit-typed",
        json!({}),
        json!({"typed": "1"}),
    )
    .await;
    assert!(!o.status.success());
    assert!(
        text(&o).contains("ValidatingAdmissionPolicy 'audited' with binding 'audited-binding' denied request: valueExpression 'object.?data.?typed.hasValue() ? size(object.data) : null' resulted in unsupported return type: int. Return type must be either string or null."),
        "{}",
        text(&o)
    );
    let annotations = |name: &str| {
        let events = audit_events(&log, name);
        assert_eq!(events.len(), 1, "{events:?}");
        events[0]["annotations"].clone()
    };
    let bad = annotations("audit-bad");
    assert_eq!(bad["audited/team"], "blue", "{bad}");
    let failure: Value = serde_json::from_str(
        bad["validation.policy.admission.k8s.io/validation_failure"]
            .as_str()
            .unwrap_or_else(|| panic!("no validation_failure in {bad}")),
    )
    .unwrap();
    assert_eq!(
        failure,
        json!([{"message": "not that name", "policy": "audited", "binding": "audited-binding",
                "expressionIndex": 1, "validationActions": ["Audit", "Warn"]}])
    );
    let good = annotations("audit-good");
    assert_eq!(good["audited/team"], "red", "{good}");
    assert!(
        good.get("validation.policy.admission.k8s.io/validation_failure")
            .is_none(),
        "{good}"
    );
}

/// A short random suffix for object names.
fn rand_suffix() -> String {
    format!(
        "{:x}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos()
    )
}

/// `kubectl create -f` of `obj`; the output.
pub(crate) async fn create_json(server: &TestServer, obj: &Value) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("obj.json");
    std::fs::write(&path, obj.to_string()).unwrap();
    server
        .kubectl(&["create", "-f", path.to_str().unwrap()])
        .await
}

#[tokio::test]
async fn admission_applies_to_custom_resources() {
    let server = TestServer::start().await;
    apply_yaml(&server, crate::crds::CRD).await;
    server
        .kubectl_ok(&[
            "wait",
            "--for=condition=Established",
            "crd/crontabs.stable.example.com",
        ])
        .await;
    let hook = Webhook::start().await;
    let mut w = webhook(
        "crontabs.example.com",
        &hook.url("/deny"),
        &hook.ca_bundle(),
        "crontabs",
        json!({}),
    );
    w["rules"][0]["apiGroups"] = json!(["stable.example.com"]);
    apply(
        &server,
        "ValidatingWebhookConfiguration",
        "crontabs",
        vec![w],
    )
    .await;
    let crontab = json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab",
        "metadata": {"name": "nightly", "namespace": "default"},
        "spec": {"cronSpec": "0 3 * * *", "image": "backup"}});
    let refused = eventually("the webhook to apply to crontabs", || async {
        let o = create_json(&server, &crontab).await;
        if o.status.success() {
            server.kubectl_ok(&["delete", "crontab", "nightly"]).await;
            return None;
        }
        Some(text(&o))
    })
    .await;
    assert!(
        refused.contains(
            r#"admission webhook "crontabs.example.com" denied the request: no bad things"#
        ),
        "{refused}"
    );
    let review = hook.sent_to("/deny").last().unwrap()["request"].clone();
    assert_eq!(
        review["resource"],
        json!({"group": "stable.example.com", "version": "v1", "resource": "crontabs"})
    );
    assert_eq!(review["kind"]["kind"], "CronTab");
    // The custom object the webhook saw was already defaulted by its schema.
    assert_eq!(review["object"]["spec"]["replicas"], 1);
}

#[tokio::test]
async fn replicas_on_etcd_apply_each_others_webhooks() {
    let etcd = start_etcd().await;
    let certs = tempfile::tempdir().unwrap();
    let (a, b) = crate::ha::two_replicas(&etcd.url, certs.path()).await;
    let hook = Webhook::start().await;
    let deny = webhook(
        "deny.example.com",
        &hook.url("/deny"),
        &hook.ca_bundle(),
        "configmaps",
        json!({}),
    );
    apply(&a, "ValidatingWebhookConfiguration", "deny", vec![deny]).await;
    for (replica, name) in [(&b, "on-b"), (&a, "on-a")] {
        let refused = eventually("both replicas to apply the webhook", || async {
            let o = replica.kubectl(&["create", "configmap", name]).await;
            if o.status.success() {
                replica.kubectl_ok(&["delete", "configmap", name]).await;
                return None;
            }
            Some(text(&o))
        })
        .await;
        assert!(refused.contains("denied the request"), "{refused}");
    }
}

const AUTHORIZED: &str = r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: secret-readers
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["configmaps"]
  matchConditions:
  - name: guarded
    expression: "object.metadata.name.startsWith('guarded-')"
  validations:
  - expression: "authorizer.group('').resource('secrets').namespace(object.metadata.namespace).check('get').allowed()"
    messageExpression: "'user ' + request.userInfo.username + ' may not read secrets'"
  - expression: "authorizer.requestResource.check('create').allowed()"
    message: "the request's own resource check is allowed"
  - expression: "!authorizer.serviceAccount('default', 'nobody').group('').resource('configmaps').check('create').allowed()"
    message: "a service account with no role may not create configmaps"
  - expression: "authorizer.path('/healthz').check('get').allowed()"
    message: "everyone may read /healthz"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: secret-readers
spec:
  policyName: secret-readers
  validationActions: [Deny]
"#;

#[tokio::test]
async fn policies_ask_the_authorizer_about_the_requesting_user() {
    let server = TestServer::start().await;
    apply_yaml(&server, AUTHORIZED).await;
    server
        .kubectl_ok(&[
            "create",
            "role",
            "cm-writer",
            "--verb=create",
            "--resource=configmaps",
        ])
        .await;
    server
        .kubectl_ok(&[
            "create",
            "rolebinding",
            "bob-writes",
            "--role=cm-writer",
            "--user=bob",
        ])
        .await;
    // bob may create configmaps but not read secrets: denied with the policy's message (once
    // the policy and his RoleBinding are in force: until then RBAC may refuse him first).
    let denied = eventually("the policy to deny bob", || async {
        let n = format!("guarded-{}", rand_suffix());
        let o = server
            .kubectl(&["create", "configmap", &n, "--as", "bob"])
            .await;
        let out = text(&o);
        (!o.status.success() && out.contains("denied request")).then_some(out)
    })
    .await;
    assert!(
        denied.contains("ValidatingAdmissionPolicy 'secret-readers' with binding 'secret-readers' denied request: user bob may not read secrets"),
        "{denied}"
    );
    // The admin passes every check; so does bob once he may read secrets.
    server
        .kubectl_ok(&["create", "configmap", "guarded-admin"])
        .await;
    server
        .kubectl_ok(&[
            "create",
            "role",
            "secret-reader",
            "--verb=get",
            "--resource=secrets",
        ])
        .await;
    server
        .kubectl_ok(&[
            "create",
            "rolebinding",
            "bob-reads",
            "--role=secret-reader",
            "--user=bob",
        ])
        .await;
    eventually("bob's new role to count", || async {
        let o = server
            .kubectl(&["create", "configmap", "guarded-bob", "--as", "bob"])
            .await;
        o.status.success().then_some(())
    })
    .await;
}

#[tokio::test]
async fn policies_are_type_checked_against_the_kinds_they_match() {
    let server = TestServer::start().await;
    let policy = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "typo"},
        "spec": {
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["configmaps"]}]},
            "validations": [
                {"expression": "object.metadata.name != '' && has(object.data)"},
                {"expression": "object.dat.size() < 10", "messageExpression": "'x' + object.metadata.nam"},
                {"expression": "object.metadata.name.startsWith(1)"},
            ],
        },
    });
    let o = create_json(&server, &policy).await;
    assert!(o.status.success(), "{}", text(&o));
    let status = eventually("the policy's status", || async {
        let out = server
            .kubectl_ok(&["get", "validatingadmissionpolicy", "typo", "-o", "json"])
            .await;
        let v: Value = serde_json::from_str(&out).unwrap();
        (v["status"]["observedGeneration"] == 1).then(|| v["status"].clone())
    })
    .await;
    assert_eq!(
        status["typeChecking"]["expressionWarnings"],
        json!([
            {"fieldRef": "spec.validations[1].expression",
             "warning": "/v1, Kind=ConfigMap: ERROR: <input>:1:7: undefined field 'dat'\n | object.dat.size() < 10\n | ......^\n"},
            {"fieldRef": "spec.validations[1].messageExpression",
             "warning": "/v1, Kind=ConfigMap: ERROR: <input>:1:22: undefined field 'nam'\n | 'x' + object.metadata.nam\n | .....................^\n"},
            {"fieldRef": "spec.validations[2].expression",
             "warning": "/v1, Kind=ConfigMap: ERROR: <input>:1:32: found no matching overload for 'startsWith' applied to 'string.(int)'\n | object.metadata.name.startsWith(1)\n | ...............................^\n"},
        ]),
        "{status}"
    );
    // Fixed: checked again, no warnings.
    let mut fixed = policy.clone();
    fixed["spec"]["validations"] = json!([{"expression": "object.data.size() < 10"}]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fixed.json");
    std::fs::write(&path, fixed.to_string()).unwrap();
    server
        .kubectl_ok(&["replace", "-f", path.to_str().unwrap()])
        .await;
    let status = eventually("the fixed policy's status", || async {
        let out = server
            .kubectl_ok(&["get", "validatingadmissionpolicy", "typo", "-o", "json"])
            .await;
        let v: Value = serde_json::from_str(&out).unwrap();
        (v["status"]["observedGeneration"] == 2).then(|| v["status"].clone())
    })
    .await;
    assert!(
        status["typeChecking"]
            .get("expressionWarnings")
            .is_none_or(|w| w.as_array().is_some_and(Vec::is_empty)),
        "{status}"
    );
}
