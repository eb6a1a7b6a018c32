//! Cascading deletion against the real server: propagationPolicy on DELETE (the GC
//! finalizers, 422 for bad options) and the in-process garbage collector driven by real
//! kubectl 1.37 (`--cascade=foreground|orphan|background`).

use crate::crud::{call, js, wait_default};
use crate::support::{within, TestServer};
use reqwest::Method;
use serde_json::{json, Value};
use std::time::Duration;

const CMS: &str = "/api/v1/namespaces/default/configmaps";

/// Creates configmap `name` in default, owned by `owners` (`(name, uid)` of configmaps);
/// returns its uid.
async fn configmap(server: &TestServer, name: &str, owners: &[(&str, &str)]) -> String {
    let refs: Vec<Value> = owners
        .iter()
        .map(|(n, uid)| {
            json!({"apiVersion": "v1", "kind": "ConfigMap", "name": n, "uid": uid,
                   "blockOwnerDeletion": true})
        })
        .collect();
    let mut body = json!({"apiVersion": "v1", "kind": "ConfigMap",
                          "metadata": {"name": name}, "data": {"k": "v"}});
    if !refs.is_empty() {
        body["metadata"]["ownerReferences"] = json!(refs);
    }
    let (code, obj, _) = call(
        &server.admin_http(),
        Method::POST,
        &server.url(CMS),
        js(body),
    )
    .await;
    assert_eq!(code, 201, "create {name}: {obj}");
    obj["metadata"]["uid"].as_str().unwrap().to_string()
}

async fn get(server: &TestServer, path: &str) -> (u16, Value) {
    let (code, obj, _) = call(&server.admin_http(), Method::GET, &server.url(path), None).await;
    (code, obj)
}

/// Waits until GET `path` answers 404.
async fn gone(server: &TestServer, path: &str) {
    within(Duration::from_secs(20), path, async {
        while get(server, path).await.0 != 404 {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
}

fn check(o: &std::process::Output) {
    assert!(
        o.status.success(),
        "kubectl failed:\n{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// `kubectl delete configmap <name> --cascade=<mode>` in default, which must succeed.
async fn delete_cascading(server: &TestServer, name: &str, mode: &str) {
    let cascade = format!("--cascade={mode}");
    let out = server
        .kubectl(&["delete", "configmap", name, "-n", "default", &cascade])
        .await;
    check(&out);
}

/// `kubectl delete --cascade=foreground` of an owner with a blocking dependent: kubectl waits
/// until the owner is gone, which the dependent holds back, so both are gone when it returns.
async fn foreground_cascade(server: &TestServer, owner: &str, child: &str) {
    let uid = configmap(server, owner, &[]).await;
    configmap(server, child, &[(owner, &uid)]).await;
    delete_cascading(server, owner, "foreground").await;
    assert_eq!(get(server, &format!("{CMS}/{owner}")).await.0, 404);
    assert_eq!(
        get(server, &format!("{CMS}/{child}")).await.0,
        404,
        "the blocking dependent went first"
    );
}

#[tokio::test]
async fn kubectl_cascade_foreground_deletes_dependents_before_the_owner() {
    let server = TestServer::start().await;
    wait_default(&server).await;
    foreground_cascade(&server, "owner", "child").await;
}

#[tokio::test]
async fn kubectl_cascade_orphan_keeps_dependents_without_the_owner_reference() {
    let server = TestServer::start().await;
    wait_default(&server).await;
    let owner = configmap(&server, "owner", &[]).await;
    let other = configmap(&server, "other", &[]).await;
    configmap(&server, "child", &[("owner", &owner)]).await;
    configmap(&server, "shared", &[("owner", &owner), ("other", &other)]).await;
    delete_cascading(&server, "owner", "orphan").await;
    assert_eq!(get(&server, &format!("{CMS}/owner")).await.0, 404);
    let (code, child) = get(&server, &format!("{CMS}/child")).await;
    assert_eq!(code, 200, "{child}");
    assert!(
        child["metadata"].get("ownerReferences").is_none(),
        "{child}"
    );
    let (code, shared) = get(&server, &format!("{CMS}/shared")).await;
    assert_eq!(code, 200, "{shared}");
    let refs = shared["metadata"]["ownerReferences"].as_array().unwrap();
    assert_eq!(refs.len(), 1, "{shared}");
    assert_eq!(refs[0]["uid"], json!(other));
    // Orphans stay orphans: the collector leaves them alone.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(get(&server, &format!("{CMS}/child")).await.0, 200);
}

#[tokio::test]
async fn kubectl_cascade_background_collects_dependents_after_the_owner() {
    let server = TestServer::start().await;
    wait_default(&server).await;
    let owner = configmap(&server, "owner", &[]).await;
    let keeper = configmap(&server, "keeper", &[]).await;
    configmap(&server, "child", &[("owner", &owner)]).await;
    configmap(&server, "shared", &[("owner", &owner), ("keeper", &keeper)]).await;
    // A dependent of another kind, owned through events.k8s.io-independent core refs.
    let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "owned-lease", "ownerReferences": [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner}]},
        "spec": {"holderIdentity": "x"}});
    let leases = "/apis/coordination.k8s.io/v1/namespaces/default/leases";
    let (code, body, _) = call(
        &server.admin_http(),
        Method::POST,
        &server.url(leases),
        js(lease),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    delete_cascading(&server, "owner", "background").await;
    assert_eq!(get(&server, &format!("{CMS}/owner")).await.0, 404);
    gone(&server, &format!("{CMS}/child")).await;
    gone(&server, &format!("{leases}/owned-lease")).await;
    // Born dangling (the owner uid never existed): collected too. An owner of a kind kapi does
    // not serve cannot be checked, so its dependent stays.
    configmap(
        &server,
        "stray",
        &[("never-was", "00000000-0000-0000-0000-000000000000")],
    )
    .await;
    let foreign = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "foreign", "ownerReferences": [{"apiVersion": "apps/v1",
            "kind": "Deployment", "name": "web", "uid": "11111111-1111-1111-1111-111111111111"}]}});
    let (code, body, _) = call(
        &server.admin_http(),
        Method::POST,
        &server.url(CMS),
        js(foreign),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    gone(&server, &format!("{CMS}/stray")).await;
    // An owner of that name exists, with another uid: a different object, so dangling too.
    configmap(
        &server,
        "impostor",
        &[("keeper", "22222222-2222-2222-2222-222222222222")],
    )
    .await;
    gone(&server, &format!("{CMS}/impostor")).await;
    // A dependent with a surviving owner stays and only loses the dangling reference.
    within(
        Duration::from_secs(20),
        "shared loses its dangling ref",
        async {
            loop {
                let (code, shared) = get(&server, &format!("{CMS}/shared")).await;
                assert_eq!(code, 200, "{shared}");
                let refs = shared["metadata"]["ownerReferences"].as_array().cloned();
                if refs.as_ref().map(Vec::len) == Some(1) {
                    assert_eq!(refs.unwrap()[0]["uid"], json!(keeper));
                    return;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        },
    )
    .await;
    assert_eq!(get(&server, &format!("{CMS}/foreign")).await.0, 200);
}

#[tokio::test]
async fn delete_options_over_the_raw_api() {
    let server = TestServer::start().await;
    wait_default(&server).await;
    let c = server.admin_http();
    configmap(&server, "target", &[]).await;
    let url = server.url(&format!("{CMS}/target"));
    let expect_invalid = |code: u16, body: &Value, message: &str| {
        assert_eq!(code, 422, "{body}");
        assert_eq!(body["reason"], "Invalid");
        assert_eq!(body["details"]["kind"], "DeleteOptions");
        assert_eq!(body["details"]["group"], "meta.k8s.io");
        assert_eq!(
            body["details"]["causes"][0]["field"], "propagationPolicy",
            "{body}"
        );
        assert_eq!(body["message"], message, "{body}");
    };
    let (code, body, _) = call(
        &c,
        Method::DELETE,
        &url,
        js(json!({"propagationPolicy": "Sideways"})),
    )
    .await;
    expect_invalid(
        code,
        &body,
        r#"DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "Sideways": supported values: "Foreground", "Background", "Orphan", "nil""#,
    );
    let both = json!({"kind": "DeleteOptions", "apiVersion": "v1",
                      "propagationPolicy": "Orphan", "orphanDependents": false});
    let (code, body, _) = call(&c, Method::DELETE, &url, js(both)).await;
    expect_invalid(
        code,
        &body,
        r#"DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Invalid value: "Orphan": orphanDependents and deletionPropagation cannot be both set"#,
    );
    // Without a body the query carries the options.
    let (code, body, _) = call(
        &c,
        Method::DELETE,
        &format!("{url}?propagationPolicy=Nope"),
        None,
    )
    .await;
    assert_eq!(code, 422, "{body}");
    let (code, body, _) = call(
        &c,
        Method::DELETE,
        &server.url(CMS),
        js(json!({"propagationPolicy": "Nope"})),
    )
    .await;
    assert_eq!(code, 422, "deletecollection validates too: {body}");
    assert_eq!(
        get(&server, &format!("{CMS}/target")).await.0,
        200,
        "nothing deleted"
    );

    // Foreground: 200 with the object, marked for deletion, until the collector finishes.
    let (code, body, _) = call(
        &c,
        Method::DELETE,
        &url,
        js(json!({"propagationPolicy": "Foreground"})),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["kind"], "ConfigMap");
    assert_eq!(
        body["metadata"]["finalizers"],
        json!(["foregroundDeletion"])
    );
    assert!(body["metadata"]["deletionTimestamp"].is_string(), "{body}");
    assert_eq!(body["metadata"]["deletionGracePeriodSeconds"], 0);
    gone(&server, &format!("{CMS}/target")).await;

    // client-go's typed clients send DeleteOptions as protobuf.
    configmap(&server, "proto", &[]).await;
    let (code, body, _) = call(
        &c,
        Method::DELETE,
        &server.url(&format!("{CMS}/proto")),
        Some(("application/vnd.kubernetes.protobuf", protobuf_orphan())),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["metadata"]["finalizers"], json!(["orphan"]));
    gone(&server, &format!("{CMS}/proto")).await;

    // Legacy orphanDependents=true adds the orphan finalizer; =false answers 202 while pending.
    configmap(&server, "legacy", &[]).await;
    let legacy = server.url(&format!("{CMS}/legacy"));
    let (code, body, _) = call(
        &c,
        Method::DELETE,
        &format!("{legacy}?orphanDependents=true"),
        None,
    )
    .await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["metadata"]["finalizers"], json!(["orphan"]));
    gone(&server, &format!("{CMS}/legacy")).await;
    let held = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "held", "finalizers": ["example.com/hold"]}});
    let (code, _, _) = call(&c, Method::POST, &server.url(CMS), js(held)).await;
    assert_eq!(code, 201);
    let (code, body, _) = call(
        &c,
        Method::DELETE,
        &server.url(&format!("{CMS}/held")),
        js(json!({"orphanDependents": false})),
    )
    .await;
    assert_eq!(code, 202, "{body}");
    assert_eq!(body["metadata"]["finalizers"], json!(["example.com/hold"]));
}

/// `DeleteOptions{propagationPolicy: Orphan}` in the protobuf envelope client-go sends.
fn protobuf_orphan() -> Vec<u8> {
    use k8s_pb::apimachinery::pkg::apis::meta::v1::DeleteOptions;
    use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
    use prost::Message;
    let opts = DeleteOptions {
        propagation_policy: Some("Orphan".into()),
        ..Default::default()
    };
    let envelope = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some("meta.k8s.io/v1".into()),
            kind: Some("DeleteOptions".into()),
        }),
        raw: Some(opts.encode_to_vec()),
        ..Default::default()
    };
    let mut body = b"k8s\0".to_vec();
    body.extend(envelope.encode_to_vec());
    body
}

#[tokio::test]
async fn cascading_deletion_on_real_etcd() {
    let etcd = crate::support::etcd::start_etcd().await;
    let server = TestServer::start_with(
        crate::support::Options::default().args(["--etcd-servers".to_string(), etcd.url.clone()]),
    )
    .await;
    wait_default(&server).await;
    foreground_cascade(&server, "owner", "child").await;
    let owner = configmap(&server, "owner2", &[]).await;
    configmap(&server, "child2", &[("owner2", &owner)]).await;
    check(
        &server
            .kubectl(&["delete", "configmap", "owner2", "-n", "default"])
            .await,
    );
    gone(&server, &format!("{CMS}/child2")).await;
}
