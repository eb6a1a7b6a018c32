//! Watch semantics against the real server: kubectl get -w, watch-list with the
//! initial-events-end bookmark, a too-old resourceVersion as an ERROR event in a 200 stream,
//! and a kube-runtime watcher over leases through 1,000 updates and a server restart.

use crate::crud::{call, js, wait_default};
use crate::support::etcd::free_port;
use crate::support::{within, Options, TestServer};
use futures::StreamExt;
use serde_json::{json, Value};
use std::time::Duration;

/// Reads watch lines from a streaming response until `stop` says so (or 20 s pass).
async fn read_lines(
    mut resp: reqwest::Response,
    mut stop: impl FnMut(&Value) -> bool,
) -> Vec<Value> {
    let mut buf = Vec::new();
    let mut events = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let chunk = match tokio::time::timeout_at(deadline, resp.chunk()).await {
            Ok(Ok(Some(c))) => c,
            _ => return events,
        };
        buf.extend_from_slice(&chunk);
        while let Some(pos) = buf.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buf.drain(..=pos).collect();
            let ev: Value =
                serde_json::from_slice(&line).expect("one compact JSON object per line");
            let done = stop(&ev);
            events.push(ev);
            if done {
                return events;
            }
        }
    }
}

#[tokio::test]
async fn kubectl_get_watch_sees_added_modified_deleted() {
    let server = TestServer::start().await;
    wait_default(&server).await;
    let mut child = tokio::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(server.kubeconfig())
        .args([
            "get",
            "configmaps",
            "-n",
            "default",
            "-w",
            "--output-watch-events",
        ])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("kubectl on PATH");
    tokio::time::sleep(Duration::from_secs(2)).await;
    for args in [
        vec![
            "create",
            "configmap",
            "w1",
            "-n",
            "default",
            "--from-literal=a=1",
        ],
        vec!["label", "configmap", "w1", "-n", "default", "x=y"],
        vec!["delete", "configmap", "w1", "-n", "default"],
    ] {
        let o = server.kubectl(&args).await;
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    child.start_kill().unwrap();
    let output = within(
        Duration::from_secs(10),
        "kubectl -w output",
        child.wait_with_output(),
    )
    .await
    .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    for ev in ["ADDED", "MODIFIED", "DELETED"] {
        assert!(
            text.lines().any(|l| l.starts_with(ev) && l.contains("w1")),
            "{ev} missing:\n{text}"
        );
    }
}

#[tokio::test]
async fn only_the_controllers_lease_watch_leaves_out_renewals() {
    // The in-process controllers' shared lease watch asks to be spared renewals (a request
    // extension, which nothing from the network can carry); a client's watch gets them all.
    let server = TestServer::start_with(Options::default().args(["-v"])).await;
    wait_default(&server).await;
    let asked = within(
        Duration::from_secs(20),
        "the controllers' lease watch",
        async {
            loop {
                let log = server.stderr();
                if let Some(line) = log
                    .lines()
                    .find(|l| l.contains("watch leaves out renewals"))
                {
                    break line.to_string();
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        },
    )
    .await;
    assert!(asked.contains("resource=leases"), "{asked}");
    assert!(asked.contains("user=system:apiserver"), "{asked}");
    let c = server.admin_http();
    let base = server.url("/apis/coordination.k8s.io/v1/namespaces/default/leases");
    let (code, mut lease, _) = call(
        &c,
        reqwest::Method::POST,
        &base,
        js(json!({"metadata": {"name": "hb"}, "spec": {"holderIdentity": "h"}})),
    )
    .await;
    assert_eq!(code, 201);
    let url = format!(
        "{base}?watch=true&timeoutSeconds=20&resourceVersion={}",
        lease["metadata"]["resourceVersion"].as_str().unwrap()
    );
    let watch = c.get(&url).send();
    let resp = within(Duration::from_secs(10), "watch", watch)
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let mut rvs = Vec::new();
    for renew in ["2026-12-01T10:00:00.000000Z", "2026-12-01T10:00:10.000000Z"] {
        lease["spec"]["renewTime"] = json!(renew);
        let (code, updated, _) = call(
            &c,
            reqwest::Method::PUT,
            &format!("{base}/hb"),
            js(lease.clone()),
        )
        .await;
        assert_eq!(code, 200, "{updated}");
        rvs.push(updated["metadata"]["resourceVersion"].clone());
        lease = updated;
    }
    let events = read_lines(resp, |e| {
        e["object"]["metadata"]["resourceVersion"] == rvs[1]
    })
    .await;
    let seen: Vec<(&Value, &Value)> = events
        .iter()
        .map(|e| (&e["type"], &e["object"]["metadata"]["resourceVersion"]))
        .collect();
    let modified = json!("MODIFIED");
    assert_eq!(seen, vec![(&modified, &rvs[0]), (&modified, &rvs[1])]);
}

#[tokio::test]
async fn watch_list_ends_initial_events_with_annotated_bookmark() {
    let server = TestServer::start().await;
    wait_default(&server).await;
    let c = server.admin_http();
    let base = server.url("/apis/coordination.k8s.io/v1/namespaces/default/leases");
    for n in ["a", "b"] {
        let (code, _, _) = call(
            &c,
            reqwest::Method::POST,
            &base,
            js(json!({"metadata": {"name": n}})),
        )
        .await;
        assert_eq!(code, 201);
    }
    let url = format!("{base}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=20");
    let resp = within(Duration::from_secs(10), "watch", c.get(&url).send())
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "application/json");
    let events = read_lines(resp, |e| e["type"] == "BOOKMARK").await;
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types, vec!["ADDED", "ADDED", "BOOKMARK"]);
    let bm = &events[2]["object"];
    assert_eq!(bm["kind"], "Lease");
    assert_eq!(bm["apiVersion"], "coordination.k8s.io/v1");
    assert_eq!(
        bm["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
    // Invalid combination is rejected before streaming.
    let (code, st, _) = call(
        &c,
        reqwest::Method::GET,
        &format!("{base}?watch=true&sendInitialEvents=true"),
        None,
    )
    .await;
    assert_eq!(code, 422, "{st}");
}

#[tokio::test]
async fn expired_resource_version_is_an_error_event() {
    let dir = std::sync::Arc::new(tempfile::tempdir().unwrap());
    let opts = Options::default()
        .data_dir(dir.clone())
        .args(["--compaction-interval", "1s"]);
    let server = TestServer::start_with(opts.clone()).await;
    wait_default(&server).await;
    let c = server.admin_http();
    let base = server.url("/api/v1/namespaces/default/configmaps");
    for i in 0..5 {
        call(
            &c,
            reqwest::Method::POST,
            &base,
            js(json!({"metadata": {"name": format!("c{i}")}})),
        )
        .await;
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    for i in 5..8 {
        call(
            &c,
            reqwest::Method::POST,
            &base,
            js(json!({"metadata": {"name": format!("c{i}")}})),
        )
        .await;
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    // Restart, so that revision 2 is older than the watch cache's window too (the cache of a
    // resource starts with its first watcher, e.g. the garbage collector's at startup, and
    // may otherwise still hold it) and only the compacted store could serve it.
    drop(server);
    let server = TestServer::start_with(opts).await;
    let c = server.admin_http();
    let base = server.url("/api/v1/namespaces/default/configmaps");
    let resp = within(
        Duration::from_secs(10),
        "watch",
        c.get(format!("{base}?watch=true&resourceVersion=2")).send(),
    )
    .await
    .unwrap();
    assert_eq!(resp.status(), 200);
    let events = read_lines(resp, |e| e["type"] == "ERROR").await;
    let last = events.last().expect("an event");
    assert_eq!(last["type"], "ERROR", "{events:?}");
    assert_eq!(last["object"]["code"], 410);
    assert_eq!(last["object"]["reason"], "Expired");
}

#[tokio::test]
async fn kube_watcher_follows_1000_updates_and_a_restart() {
    use k8s_openapi::api::coordination::v1::Lease;
    use kube::api::{Api, PostParams};
    use kube::runtime::{reflector, watcher, WatchStreamExt};
    let dir = std::sync::Arc::new(tempfile::tempdir().unwrap());
    let port = free_port().to_string();
    let opts = Options::default()
        .data_dir(dir.clone())
        .args(["--secure-port".to_string(), port.clone()]);
    let mut server = TestServer::start_with(opts.clone()).await;
    wait_default(&server).await;
    let client = server.client().await;
    let leases: Api<Lease> = Api::namespaced(client.clone(), "default");
    let mut lease: Lease = serde_json::from_value(
        json!({"metadata": {"name": "counter"}, "spec": {"holderIdentity": "0"}}),
    )
    .unwrap();
    lease = within(
        Duration::from_secs(10),
        "create",
        leases.create(&PostParams::default(), &lease),
    )
    .await
    .unwrap();
    let (reader, writer) = reflector::store::<Lease>();
    let stream = reflector(
        writer,
        watcher(leases.clone(), watcher::Config::default()).default_backoff(),
    );
    let task = tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        // Errors (the server restarting) are retried by the watcher with backoff.
        while stream.next().await.is_some() {}
    });
    let holder = |r: &reflector::Store<Lease>| {
        r.get(&reflector::ObjectRef::new("counter").within("default"))
            .and_then(|l| l.spec.clone().and_then(|s| s.holder_identity))
    };
    let wait_for = |want: String| {
        let reader = reader.clone();
        async move {
            within(Duration::from_secs(60), "reflector to catch up", async {
                while holder(&reader).as_deref() != Some(want.as_str()) {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            })
            .await
        }
    };
    for i in 1..=1000 {
        lease.spec.as_mut().unwrap().holder_identity = Some(i.to_string());
        lease = within(
            Duration::from_secs(10),
            "replace",
            leases.replace("counter", &PostParams::default(), &lease),
        )
        .await
        .unwrap();
    }
    wait_for("1000".into()).await;
    // Restart on the same port and data dir; the watcher reconnects and keeps following.
    server.signal(15);
    server.wait_exit(Duration::from_secs(30)).await;
    drop(server);
    let server = TestServer::start_with(opts).await;
    let fresh: Api<Lease> = Api::namespaced(server.client().await, "default");
    let mut current = within(Duration::from_secs(10), "get", fresh.get("counter"))
        .await
        .unwrap();
    assert_eq!(
        current.spec.as_ref().unwrap().holder_identity.as_deref(),
        Some("1000")
    );
    current.spec.as_mut().unwrap().holder_identity = Some("after-restart".into());
    within(
        Duration::from_secs(10),
        "replace",
        fresh.replace("counter", &PostParams::default(), &current),
    )
    .await
    .unwrap();
    wait_for("after-restart".into()).await;
    task.abort();
}
