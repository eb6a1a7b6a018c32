//! The runtime cost limit of admission policies' CEL: an expression whose work grows with
//! the object it reads is cancelled past upstream's per-call limit, and the failurePolicy
//! decides, instead of holding a request (and a core) for as long as it runs.

use crate::admission::eventually;
use crate::admission_policies::{apply_yaml, create_json};
use crate::support::{output_text as text, TestServer};
use serde_json::{json, Map, Value};

/// Compares every pair of a ConfigMap's keys: quadratic in its size.
const POLICY: &str = r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: pairs
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["configmaps"]
  matchConditions:
  - name: paired
    expression: "object.metadata.name.startsWith('paired-')"
  validations:
  - expression: "object.data.all(k, object.data.all(j, k == j || object.data[k] != object.data[j]))"
    message: "values must differ"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: pairs
spec:
  policyName: pairs
  validationActions: [Deny]
"#;

/// Creates ConfigMap `name` with `keys` keys, each of its own value.
async fn create(server: &TestServer, name: &str, keys: usize) -> std::process::Output {
    let data: Map<String, Value> = (0..keys)
        .map(|i| (format!("k{i}"), Value::String(format!("v{i}"))))
        .collect();
    create_cm(server, name, Value::Object(data)).await
}

async fn create_cm(server: &TestServer, name: &str, data: Value) -> std::process::Output {
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name}, "data": data});
    create_json(server, &cm).await
}

#[tokio::test]
async fn an_expression_past_the_cost_limit_is_cancelled_and_the_failure_policy_decides() {
    let server = TestServer::start().await;
    apply_yaml(&server, POLICY).await;
    // A small object is evaluated in full: equal values are denied by the rule itself.
    let denied = eventually("the policy to apply", || async {
        let o = create_cm(&server, "paired-equal", json!({"a": "x", "b": "x"})).await;
        if o.status.success() {
            server
                .kubectl_ok(&["delete", "configmap", "paired-equal"])
                .await;
            return None;
        }
        Some(text(&o))
    })
    .await;
    assert!(denied.contains("values must differ"), "{denied}");
    let o = create(&server, "paired-small", 50).await;
    assert!(o.status.success(), "{}", text(&o));

    // 3,000 keys are 9 million comparisons: cancelled at the per-call limit, refused under
    // Fail with cel-go's words, and nothing stored.
    let started = std::time::Instant::now();
    let o = create(&server, "paired-large", 3000).await;
    let took = started.elapsed();
    let out = text(&o);
    assert!(!o.status.success(), "{out}");
    assert!(
        out.contains("ValidatingAdmissionPolicy 'pairs' with binding 'pairs' denied request: expression 'object.data.all(k, object.data.all(j, k == j || object.data[k] != object.data[j]))' resulted in error: operation cancelled: actual cost limit exceeded"),
        "{out}"
    );
    assert!(
        took < std::time::Duration::from_secs(10),
        "the evaluation ran for {took:?}"
    );
    let o = server.kubectl(&["get", "configmap", "paired-large"]).await;
    assert!(text(&o).contains("NotFound"), "{}", text(&o));
}
