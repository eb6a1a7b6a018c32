//! REST CRUD against the real server: kubectl (create ns / configmap, get, auth, delete ns +
//! wait) and raw HTTPS (create/get/update/conflict/delete, dryRun, generateName, paging,
//! Tables, finalizers, NamespaceLifecycle).

use crate::support::{within, TestServer};
use serde_json::{json, Value};
use std::time::Duration;

/// Sends one request and returns (status, JSON body or Null, headers).
pub(crate) async fn call(
    client: &reqwest::Client,
    method: reqwest::Method,
    url: &str,
    body: Option<(&str, Vec<u8>)>,
) -> (u16, Value, reqwest::header::HeaderMap) {
    let mut rb = client.request(method, url);
    if let Some((ct, bytes)) = body {
        rb = rb.header("content-type", ct).body(bytes);
    }
    let resp = within(Duration::from_secs(30), url, rb.send())
        .await
        .expect("request");
    let code = resp.status().as_u16();
    let headers = resp.headers().clone();
    let text = within(Duration::from_secs(30), url, resp.text())
        .await
        .unwrap();
    (
        code,
        serde_json::from_str(&text).unwrap_or(Value::Null),
        headers,
    )
}

/// Waits until the system namespaces controller created `default` (it runs after /readyz).
pub(crate) async fn wait_default(server: &TestServer) {
    let c = server.admin_http();
    let url = server.url("/api/v1/namespaces/default");
    within(Duration::from_secs(30), "namespace default", async {
        while call(&c, reqwest::Method::GET, &url, None).await.0 != 200 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
}

/// JSON body shorthand.
pub(crate) fn js(v: Value) -> Option<(&'static str, Vec<u8>)> {
    Some(("application/json", serde_json::to_vec(&v).unwrap()))
}

fn out(o: &std::process::Output) -> String {
    format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[tokio::test]
async fn kubectl_basic_commands() {
    let server = TestServer::start().await;
    let o = server.kubectl(&["api-resources"]).await;
    assert!(o.status.success(), "{}", out(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    for line in [
        "configmaps",
        "leases",
        "leasecandidates",
        "selfsubjectreviews",
        "namespaces",
    ] {
        assert!(text.contains(line), "{line} missing:\n{text}");
    }
    assert!(
        text.lines()
            .any(|l| l.starts_with("configmaps") && l.contains(" cm ")),
        "{text}"
    );
    let o = server.kubectl(&["create", "ns", "team-a"]).await;
    assert!(o.status.success(), "{}", out(&o));
    let o = server
        .kubectl(&[
            "create",
            "configmap",
            "settings",
            "-n",
            "team-a",
            "--from-literal=mode=fast",
        ])
        .await;
    assert!(o.status.success(), "{}", out(&o));
    let o = server
        .kubectl(&[
            "get",
            "configmap",
            "settings",
            "-n",
            "team-a",
            "-o",
            "jsonpath={.data.mode}",
        ])
        .await;
    assert_eq!(String::from_utf8_lossy(&o.stdout), "fast", "{}", out(&o));
    let o = server.kubectl(&["get", "cm", "-n", "team-a"]).await;
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.starts_with("NAME") && text.contains("DATA") && text.contains("settings"),
        "{}",
        out(&o)
    );
    let o = server.kubectl(&["get", "leases", "-A"]).await;
    assert!(o.status.success(), "{}", out(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("HOLDER"),
        "{}",
        out(&o)
    );
    let o = server.kubectl(&["get", "leasecandidates", "-A"]).await;
    assert!(o.status.success(), "{}", out(&o));
    let o = server.kubectl(&["auth", "whoami"]).await;
    assert!(
        o.status.success() && String::from_utf8_lossy(&o.stdout).contains("Username"),
        "{}",
        out(&o)
    );
    let o = server
        .kubectl(&["auth", "can-i", "create", "configmaps"])
        .await;
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        "yes",
        "{}",
        out(&o)
    );
    // `can-i --list` sends a SelfSubjectRulesReview (protobuf) and prints its rules.
    let o = server
        .kubectl(&["auth", "can-i", "--list", "-n", "team-a"])
        .await;
    let listed = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", out(&o));
    let star = listed
        .lines()
        .find(|l| l.starts_with("*.*"))
        .unwrap_or_else(|| panic!("no *.* rule:\n{listed}"));
    assert!(star.ends_with("[*]"), "{listed}");
    let o = server.kubectl(&["get", "cm", "nope", "-n", "team-a"]).await;
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("Error from server (NotFound): configmaps \"nope\" not found"),
        "{}",
        out(&o)
    );
    let o = server
        .kubectl(&["delete", "ns", "team-a", "--timeout=60s"])
        .await;
    assert!(o.status.success(), "{}", out(&o));
    let o = server
        .kubectl(&["wait", "--for=delete", "ns/team-a", "--timeout=60s"])
        .await;
    assert!(o.status.success(), "{}", out(&o));
    let o = server.kubectl(&["delete", "ns", "kube-system"]).await;
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("this namespace may not be deleted"),
        "{}",
        out(&o)
    );
}

#[tokio::test]
async fn http_crud_conflict_dry_run_and_paging() {
    let server = TestServer::start().await;
    wait_default(&server).await;
    let c = server.admin_http();
    let base = server.url("/apis/coordination.k8s.io/v1/namespaces/default/leases");
    use reqwest::Method as M;
    let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l1"}, "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}});
    let (code, created, _) = call(&c, M::POST, &base, js(lease.clone())).await;
    assert_eq!(code, 201, "{created}");
    let rv = created["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    let (code, dup, _) = call(&c, M::POST, &base, js(lease.clone())).await;
    assert_eq!((code, dup["reason"].as_str()), (409, Some("AlreadyExists")));
    let mut upd = created.clone();
    upd["spec"]["holderIdentity"] = json!("b");
    let (code, updated, _) = call(&c, M::PUT, &format!("{base}/l1"), js(upd.clone())).await;
    assert_eq!(code, 200, "{updated}");
    assert_ne!(updated["metadata"]["resourceVersion"].as_str().unwrap(), rv);
    let (code, conflict, _) = call(&c, M::PUT, &format!("{base}/l1"), js(upd)).await;
    assert_eq!(code, 409);
    assert_eq!(conflict["message"], "Operation cannot be fulfilled on leases.coordination.k8s.io \"l1\": the object has been modified; please apply your changes to the latest version and try again");
    // Merge patch.
    let (code, patched, _) = call(
        &c,
        M::PATCH,
        &format!("{base}/l1"),
        Some((
            "application/merge-patch+json",
            br#"{"spec":{"holderIdentity":"c"}}"#.to_vec(),
        )),
    )
    .await;
    assert_eq!(
        (code, patched["spec"]["holderIdentity"].as_str()),
        (200, Some("c")),
        "{patched}"
    );
    // dryRun stores nothing.
    let dry = json!({"metadata": {"name": "dry"}, "spec": {}});
    let (code, _, _) = call(&c, M::POST, &format!("{base}?dryRun=All"), js(dry)).await;
    assert_eq!(code, 201);
    let (code, _, _) = call(&c, M::GET, &format!("{base}/dry"), None).await;
    assert_eq!(code, 404);
    // generateName.
    for _ in 0..4 {
        let (code, g, _) = call(
            &c,
            M::POST,
            &base,
            js(json!({"metadata": {"generateName": "gen-"}})),
        )
        .await;
        assert_eq!(code, 201, "{g}");
        assert!(g["metadata"]["name"].as_str().unwrap().starts_with("gen-"));
    }
    // Paging with continue and remainingItemCount.
    let (code, p1, _) = call(&c, M::GET, &format!("{base}?limit=2"), None).await;
    assert_eq!(code, 200);
    assert_eq!(p1["kind"], "LeaseList");
    assert_eq!(p1["items"].as_array().unwrap().len(), 2);
    assert_eq!(p1["metadata"]["remainingItemCount"], 3);
    let token = p1["metadata"]["continue"].as_str().unwrap();
    let (_, p2, _) = call(
        &c,
        M::GET,
        &format!("{base}?limit=10&continue={token}"),
        None,
    )
    .await;
    assert_eq!(p2["items"].as_array().unwrap().len(), 3);
    assert!(p2["metadata"].get("continue").is_none());
    // Empty lists carry "items": [].
    let (_, empty, _) = call(
        &c,
        M::GET,
        &server.url("/api/v1/namespaces/default/secrets"),
        None,
    )
    .await;
    assert_eq!(empty["items"], json!([]));
    // Table.
    let resp = within(
        Duration::from_secs(30),
        "table",
        c.get(&base)
            .header(
                "accept",
                "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
            )
            .send(),
    )
    .await
    .unwrap();
    let table: Value = resp.json().await.unwrap();
    assert_eq!(table["kind"], "Table");
    let cols: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(cols, vec!["Name", "Holder", "Age"]);
    assert_eq!(table["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    // Delete → Success Status; the lease is gone.
    let (code, st, _) = call(&c, M::DELETE, &format!("{base}/l1"), None).await;
    assert_eq!(
        (code, st["status"].as_str(), st["details"]["kind"].as_str()),
        (200, Some("Success"), Some("leases")),
        "{st}"
    );
    // deletecollection.
    let (code, dl, _) = call(&c, M::DELETE, &base, None).await;
    assert_eq!(code, 200, "{dl}");
    let (_, after, _) = call(&c, M::GET, &base, None).await;
    assert_eq!(after["items"], json!([]));
}

#[tokio::test]
async fn namespace_lifecycle_admission() {
    let server = TestServer::start().await;
    let c = server.admin_http();
    use reqwest::Method as M;
    let (code, st, _) = call(
        &c,
        M::POST,
        &server.url("/api/v1/namespaces/missing/configmaps"),
        js(json!({"metadata": {"name": "x"}})),
    )
    .await;
    assert_eq!(
        (code, st["message"].as_str()),
        (404, Some("namespaces \"missing\" not found"))
    );
    let (code, _, _) = call(
        &c,
        M::POST,
        &server.url("/api/v1/namespaces"),
        js(json!({"metadata": {"name": "held"}})),
    )
    .await;
    assert_eq!(code, 201);
    // A configmap with a finalizer keeps the namespace terminating.
    let (code, _, _) = call(
        &c,
        M::POST,
        &server.url("/api/v1/namespaces/held/configmaps"),
        js(json!({"metadata": {"name": "f", "finalizers": ["example.com/hold"]}})),
    )
    .await;
    assert_eq!(code, 201);
    let (code, ns, _) = call(&c, M::DELETE, &server.url("/api/v1/namespaces/held"), None).await;
    assert_eq!(
        (code, ns["status"]["phase"].as_str()),
        (200, Some("Terminating")),
        "{ns}"
    );
    let (code, st, _) = call(
        &c,
        M::POST,
        &server.url("/api/v1/namespaces/held/configmaps"),
        js(json!({"metadata": {"name": "y"}})),
    )
    .await;
    assert_eq!(code, 403, "{st}");
    assert_eq!(st["details"]["causes"][0]["reason"], "NamespaceTerminating");
    assert_eq!(st["message"], "configmaps \"y\" is forbidden: unable to create new content in namespace held because it is being terminated");
}

#[tokio::test]
async fn server_side_apply_and_managed_fields() {
    let server = TestServer::start().await;
    wait_default(&server).await;
    let c = server.admin_http();
    use reqwest::Method as M;
    let url = server.url("/api/v1/namespaces/default/configmaps/ssa");
    let apply = |mgr: &str, force: bool, data: Value| {
        let body = serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa"}, "data": data})).unwrap();
        (
            format!("{url}?fieldManager={mgr}&force={force}"),
            Some(("application/apply-patch+yaml", body)),
        )
    };
    let (u, b) = apply("alice", false, json!({"a": "1"}));
    let (code, created, _) = call(&c, M::PATCH, &u, b).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["metadata"]["managedFields"][0]["manager"], "alice");
    assert_eq!(
        created["metadata"]["managedFields"][0]["operation"],
        "Apply"
    );
    let (u, b) = apply("bob", false, json!({"a": "2"}));
    let (code, conflict, _) = call(&c, M::PATCH, &u, b).await;
    assert_eq!(code, 409, "{conflict}");
    assert_eq!(
        conflict["details"]["causes"][0]["reason"],
        "FieldManagerConflict"
    );
    let (u, b) = apply("bob", true, json!({"a": "2"}));
    let (code, forced, _) = call(&c, M::PATCH, &u, b).await;
    assert_eq!(
        (code, forced["data"]["a"].as_str()),
        (200, Some("2")),
        "{forced}"
    );
    // A plain update records an Update entry for its manager.
    let mut cm = forced.clone();
    cm["data"]["b"] = json!("3");
    let (code, updated, _) = call(&c, M::PUT, &format!("{url}?fieldManager=carol"), js(cm)).await;
    assert_eq!(code, 200, "{updated}");
    let managers: Vec<&str> = updated["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["manager"].as_str().unwrap())
        .collect();
    assert!(managers.contains(&"carol"), "{managers:?}");
    let (code, st, _) = call(
        &c,
        M::PATCH,
        &url,
        Some(("application/apply-patch+yaml", b"data: {}".to_vec())),
    )
    .await;
    assert_eq!(code, 422, "fieldManager is required: {st}");
}

#[tokio::test]
async fn kubectl_apply_and_patch() {
    let server = TestServer::start().await;
    wait_default(&server).await;
    let file = server.dir.path().join("cm.yaml");
    let write = |v: &str| {
        std::fs::write(&file, format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\n  namespace: default\ndata:\n  k: {v}\n")).unwrap()
    };
    let f = file.display().to_string();
    let run = |args: Vec<&'static str>| {
        let f = f.clone();
        let server = &server;
        async move {
            let mut full: Vec<&str> = args;
            full.push("-f");
            full.push(&f);
            let o = server.kubectl(&full).await;
            assert!(o.status.success(), "{full:?}: {}", out(&o));
            String::from_utf8_lossy(&o.stdout).trim().to_string()
        }
    };
    write("v");
    assert_eq!(run(vec!["apply"]).await, "configmap/applied created");
    assert_eq!(run(vec!["apply"]).await, "configmap/applied unchanged");
    write("w");
    assert_eq!(run(vec!["apply"]).await, "configmap/applied configured");
    write("x");
    assert_eq!(
        run(vec!["apply", "--server-side", "--force-conflicts"]).await,
        "configmap/applied serverside-applied"
    );
    for (kind, patch) in [
        ("merge", r#"{"data":{"m":"1"}}"#),
        ("json", r#"[{"op":"add","path":"/data/j","value":"2"}]"#),
        ("strategic", r#"{"data":{"s":"3"}}"#),
    ] {
        let o = server
            .kubectl(&[
                "patch",
                "configmap",
                "applied",
                "-n",
                "default",
                "--type",
                kind,
                "-p",
                patch,
            ])
            .await;
        assert!(o.status.success(), "{kind}: {}", out(&o));
    }
    let o = server
        .kubectl(&[
            "get",
            "configmap",
            "applied",
            "-n",
            "default",
            "-o",
            "jsonpath={.data}",
        ])
        .await;
    let data: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(data, json!({"j": "2", "k": "x", "m": "1", "s": "3"}));
}

#[tokio::test]
async fn crud_and_watch_list_on_real_etcd() {
    let etcd = crate::support::etcd::start_etcd().await;
    let server = TestServer::start_with(
        crate::support::Options::default().args(["--etcd-servers".to_string(), etcd.url.clone()]),
    )
    .await;
    wait_default(&server).await;
    let o = server
        .kubectl(&[
            "create",
            "configmap",
            "on-etcd",
            "-n",
            "default",
            "--from-literal=a=1",
        ])
        .await;
    assert!(o.status.success(), "{}", out(&o));
    let c = server.admin_http();
    use reqwest::Method as M;
    let base = server.url("/apis/coordination.k8s.io/v1/namespaces/default/leases");
    let (code, l, _) = call(
        &c,
        M::POST,
        &base,
        js(json!({"metadata": {"name": "e1"}, "spec": {"holderIdentity": "a"}})),
    )
    .await;
    assert_eq!(code, 201, "{l}");
    let mut stale = l.clone();
    stale["spec"]["holderIdentity"] = json!("b");
    assert_eq!(
        call(&c, M::PUT, &format!("{base}/e1"), js(stale.clone()))
            .await
            .0,
        200
    );
    assert_eq!(
        call(&c, M::PUT, &format!("{base}/e1"), js(stale)).await.0,
        409
    );
    let o = server
        .kubectl(&[
            "get",
            "leases",
            "-n",
            "default",
            "e1",
            "-o",
            "jsonpath={.spec.holderIdentity}",
        ])
        .await;
    assert_eq!(String::from_utf8_lossy(&o.stdout), "b", "{}", out(&o));
    let o = server
        .kubectl(&["delete", "configmap", "on-etcd", "-n", "default"])
        .await;
    assert!(o.status.success(), "{}", out(&o));
    let o = server
        .kubectl(&[
            "wait",
            "--for=delete",
            "configmap/on-etcd",
            "-n",
            "default",
            "--timeout=30s",
        ])
        .await;
    assert!(o.status.success(), "{}", out(&o));
}

/// Unconditional PUTs (no resourceVersion) racing on one object all succeed: the store
/// re-runs a PUT that lost the race on the fresh state, decoding its body again, and the
/// object ends as one of the bodies sent, with every write counted in its resourceVersion.
#[tokio::test]
async fn racing_unconditional_updates_all_land() {
    let server = TestServer::start().await;
    wait_default(&server).await;
    let c = server.admin_http();
    let url = server.url("/api/v1/namespaces/default/configmaps");
    let (code, created, _) = call(
        &c,
        reqwest::Method::POST,
        &url,
        js(json!({"metadata": {"name": "race"}, "data": {"v": "start"}})),
    )
    .await;
    assert_eq!(code, 201, "{created}");
    let start_rv: u64 = created["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let item = format!("{url}/race");
    const WRITERS: usize = 16;
    const EACH: usize = 10;
    let tasks = (0..WRITERS).map(|w| {
        let (c, item) = (c.clone(), item.clone());
        tokio::spawn(async move {
            for i in 0..EACH {
                let body = json!({"metadata": {"name": "race", "labels": {"writer": w.to_string()}},
                                  "data": {"v": format!("{w}-{i}")}});
                let (code, got, _) = call(&c, reqwest::Method::PUT, &item, js(body)).await;
                assert_eq!(code, 200, "writer {w} update {i}: {got}");
                assert_eq!(got["data"]["v"], format!("{w}-{i}"), "{got}");
                assert_eq!(got["metadata"]["labels"]["writer"], w.to_string(), "{got}");
            }
        })
    });
    for t in futures::future::join_all(tasks).await {
        t.expect("writer task");
    }
    let (code, last, _) = call(&c, reqwest::Method::GET, &item, None).await;
    assert_eq!(code, 200, "{last}");
    let v = last["data"]["v"].as_str().unwrap();
    let writer = last["metadata"]["labels"]["writer"].as_str().unwrap();
    assert!(
        v.starts_with(&format!("{writer}-")),
        "data and labels come from one body: {last}"
    );
    let rv: u64 = last["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        rv >= start_rv + (WRITERS * EACH) as u64,
        "every update was a write: {start_rv} → {rv}"
    );
}
