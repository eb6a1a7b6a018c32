//! Patches, server-side apply, OpenAPI and protobuf bodies with real kubectl against the real
//! server: client-side apply (created → unchanged → configured), `apply --server-side` with a
//! conflict and `--force-conflicts`, `patch --type merge|json|strategic`, `explain lease.spec`
//! (OpenAPI v2 protobuf + v3), and `create configmap --from-literal` (a protobuf body).

use crate::support::{within, TestServer};
use serde_json::{json, Value};
use std::time::Duration;

fn out(o: &std::process::Output) -> String {
    format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

async fn ok(server: &TestServer, args: &[&str]) -> String {
    let o = server.kubectl(args).await;
    assert!(o.status.success(), "kubectl {args:?} failed\n{}", out(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `kubectl apply --server-side --field-manager other [--force-conflicts] -f <file>`, which
/// must succeed.
async fn apply_as_other(server: &TestServer, file: &str, force: bool) -> String {
    let mut args = vec!["apply", "--server-side", "--field-manager", "other"];
    if force {
        args.push("--force-conflicts");
    }
    args.extend(["-f", file]);
    ok(server, &args).await
}

/// `kubectl apply --server-side -f <file>` (field manager `kubectl`) of the demo ConfigMap,
/// which must succeed.
async fn apply_server_side(server: &TestServer, file: &str) {
    assert_eq!(
        ok(server, &["apply", "--server-side", "-f", file])
            .await
            .trim(),
        "configmap/demo serverside-applied"
    );
}

/// `kubectl apply --server-side --field-manager other -f <file>`, which must fail (a conflict);
/// its stderr.
async fn apply_as_other_conflicts(server: &TestServer, file: &str) -> String {
    let args = [
        "apply",
        "--server-side",
        "--field-manager",
        "other",
        "-f",
        file,
    ];
    let o = server.kubectl(&args).await;
    assert!(!o.status.success(), "{}", out(&o));
    String::from_utf8_lossy(&o.stderr).into_owned()
}

async fn get_json(server: &TestServer, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["-o", "json", "--show-managed-fields"]);
    serde_json::from_str(&ok(server, &all).await).expect("kubectl -o json")
}

fn manifest(dir: &std::path::Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

fn configmap(data: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\n  namespace: default\n  labels:\n    app: demo\ndata:\n{data}"
    )
}

fn managers(obj: &Value) -> Vec<(String, String)> {
    obj["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            (
                e["manager"].as_str().unwrap_or("").into(),
                e["operation"].as_str().unwrap_or("").into(),
            )
        })
        .collect()
}

#[tokio::test]
async fn kubectl_client_side_apply_unchanged_then_configured() {
    let server = TestServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let f = manifest(dir.path(), "cm.yaml", &configmap("  a: \"1\"\n"));
    assert_eq!(
        ok(&server, &["apply", "-f", &f]).await.trim(),
        "configmap/demo created"
    );
    assert_eq!(
        ok(&server, &["apply", "-f", &f]).await.trim(),
        "configmap/demo unchanged"
    );
    let f = manifest(dir.path(), "cm.yaml", &configmap("  b: \"2\"\n"));
    assert_eq!(
        ok(&server, &["apply", "-f", &f]).await.trim(),
        "configmap/demo configured"
    );
    let cm = get_json(&server, &["get", "cm", "demo"]).await;
    assert_eq!(
        cm["data"],
        json!({"b": "2"}),
        "a was removed through the last-applied annotation"
    );
    assert!(
        cm["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
            .is_string()
    );
    assert!(
        managers(&cm).contains(&("kubectl-client-side-apply".into(), "Update".into())),
        "{cm}"
    );
}

#[tokio::test]
async fn kubectl_server_side_apply_conflict_and_force() {
    let server = TestServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let f = manifest(dir.path(), "cm.yaml", &configmap("  a: \"1\"\n"));
    apply_server_side(&server, &f).await;
    let cm = get_json(&server, &["get", "cm", "demo"]).await;
    assert_eq!(
        managers(&cm),
        vec![("kubectl".to_string(), "Apply".to_string())]
    );
    assert_eq!(
        cm["metadata"]["managedFields"][0]["fieldsV1"]["f:data"],
        json!({"f:a": {}})
    );

    // Another manager changing a.
    let f2 = manifest(dir.path(), "cm2.yaml", &configmap("  a: \"2\"\n"));
    let stderr = apply_as_other_conflicts(&server, &f2).await;
    assert!(
        stderr.contains("Apply failed with 1 conflict: conflict with \"kubectl\": .data.a"),
        "{stderr}"
    );
    apply_as_other(&server, &f2, true).await;
    let cm = get_json(&server, &["get", "cm", "demo"]).await;
    assert_eq!(cm["data"]["a"], "2");
    let other = cm["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["manager"] == "other")
        .unwrap();
    assert!(other["fieldsV1"]["f:data"].get("f:a").is_some(), "{cm}");

    // Dropping a field from the applied configuration removes it when nobody else owns it.
    let f3 = manifest(
        dir.path(),
        "cm3.yaml",
        &configmap("  a: \"2\"\n  z: \"9\"\n"),
    );
    apply_as_other(&server, &f3, false).await;
    apply_as_other(&server, &f2, false).await;
    let cm = get_json(&server, &["get", "cm", "demo"]).await;
    assert!(cm["data"].get("z").is_none(), "{cm}");

    // Raw apply over HTTP creates, with 201.
    let http = server.admin_http();
    let url = server.url("/api/v1/namespaces/default/configmaps/raw?fieldManager=tester");
    let resp = within(
        Duration::from_secs(30),
        "apply",
        http.patch(&url)
            .header("content-type", "application/apply-patch+yaml")
            .body("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: raw\ndata:\n  k: v\n")
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(resp.status().as_u16(), 201);
}

#[tokio::test]
async fn kubectl_patch_types() {
    let server = TestServer::start().await;
    ok(&server, &["create", "configmap", "p", "--from-literal=a=1"]).await;
    ok(
        &server,
        &[
            "patch",
            "cm",
            "p",
            "--type",
            "merge",
            "-p",
            r#"{"data":{"m":"1","a":null}}"#,
        ],
    )
    .await;
    ok(
        &server,
        &[
            "patch",
            "cm",
            "p",
            "--type",
            "json",
            "-p",
            r#"[{"op":"add","path":"/data/j","value":"2"}]"#,
        ],
    )
    .await;
    ok(
        &server,
        &[
            "patch",
            "cm",
            "p",
            "--type",
            "strategic",
            "-p",
            r#"{"metadata":{"finalizers":["x/y"]},"data":{"s":"3"}}"#,
        ],
    )
    .await;
    ok(
        &server,
        &[
            "patch",
            "cm",
            "p",
            "--type",
            "strategic",
            "-p",
            r#"{"metadata":{"finalizers":["x/z"]}}"#,
        ],
    )
    .await;
    let cm = get_json(&server, &["get", "cm", "p"]).await;
    assert_eq!(cm["data"], json!({"m": "1", "j": "2", "s": "3"}));
    let mut fins: Vec<&str> = cm["metadata"]["finalizers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    fins.sort();
    assert_eq!(fins, ["x/y", "x/z"], "finalizers merge as a set");
    let o = server
        .kubectl(&[
            "patch",
            "cm",
            "p",
            "--type",
            "json",
            "-p",
            r#"[{"op":"test","path":"/data/j","value":"no"}]"#,
        ])
        .await;
    assert!(!o.status.success());
    ok(
        &server,
        &[
            "patch",
            "cm",
            "p",
            "--type",
            "merge",
            "-p",
            r#"{"metadata":{"finalizers":null}}"#,
        ],
    )
    .await;
    assert!(managers(&get_json(&server, &["get", "cm", "p"]).await)
        .contains(&("kubectl-patch".into(), "Update".into())));
}

#[tokio::test]
async fn kubectl_explain_and_protobuf_create() {
    let server = TestServer::start().await;
    let text = ok(&server, &["explain", "lease.spec"]).await;
    assert!(text.contains("KIND:       Lease"), "{text}");
    assert!(text.contains("holderIdentity"), "{text}");
    assert!(
        text.contains("LeaseSpec is a specification of a Lease"),
        "{text}"
    );

    // client-go sends this body as protobuf.
    assert_eq!(
        ok(
            &server,
            &["create", "configmap", "lit", "--from-literal=k=v"]
        )
        .await
        .trim(),
        "configmap/lit created"
    );
    let cm = get_json(&server, &["get", "cm", "lit"]).await;
    assert_eq!(cm["data"], json!({"k": "v"}));

    // The protobuf OpenAPI v2 document as kubectl fetches it.
    let http = server.admin_http();
    let resp = within(
        Duration::from_secs(30),
        "openapi v2",
        http.get(server.url("/openapi/v2"))
            .header(
                "accept",
                "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
            )
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    // Answered with the `.` form, the one Go's mime parser accepts.
    assert_eq!(
        resp.headers()["content-type"],
        "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
    );
}

/// Moving from `kubectl apply` to `kubectl apply --server-side`, as the Kubernetes docs
/// describe it: the fields the client-side apply recorded change hands without a conflict
/// (kube's lastAppliedManager), while another field manager still gets the conflict.
#[tokio::test]
async fn kubectl_server_side_apply_takes_over_from_client_side_apply() {
    let server = TestServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let f = manifest(dir.path(), "cm.yaml", &configmap("  a: \"1\"\n"));
    ok(&server, &["apply", "-f", &f]).await;
    let f = manifest(dir.path(), "cm.yaml", &configmap("  a: \"2\"\n"));
    let stderr = apply_as_other_conflicts(&server, &f).await;
    assert!(
        stderr.contains("conflict with \"kubectl-client-side-apply\" using v1: .data.a"),
        "{stderr}"
    );
    apply_server_side(&server, &f).await;
    let cm = get_json(&server, &["get", "cm", "demo"]).await;
    assert_eq!(cm["data"], json!({"a": "2"}));
    let last = cm["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
        .as_str()
        .map(|t| serde_json::from_str::<Value>(t).unwrap());
    assert_eq!(
        last.map(|l| l["data"].clone()),
        Some(json!({"a": "2"})),
        "the annotation follows the server-side apply: {cm}"
    );
    // kubectl then folds the client-side entry into its own (a JSON patch of managedFields
    // under the resourceVersion it read), so kubectl's Apply entry owns everything.
    let entries = cm["metadata"]["managedFields"].as_array().unwrap();
    let kubectl = entries
        .iter()
        .find(|e| e["manager"] == "kubectl" && e["operation"] == "Apply")
        .unwrap_or_else(|| panic!("{cm}"));
    assert!(kubectl["fieldsV1"].pointer("/f:data/f:a").is_some(), "{cm}");
    assert!(
        !entries
            .iter()
            .any(|e| e["manager"] == "kubectl-client-side-apply"),
        "{cm}"
    );
}
