//! Periodic watch bookmarks: a watch with allowWatchBookmarks gets a BOOKMARK at a current
//! resourceVersion before its timeoutSeconds deadline (kube's cacher sends one 2 s before
//! it), even when nothing it selects changes; without allowWatchBookmarks it gets none.

use crate::crud::{call, js, wait_default};
use crate::support::{within, Options, TestServer};
use reqwest::Method;
use serde_json::{json, Value};
use std::time::Duration;

/// Every line of a watch stream with the time it arrived, until it ends (or 20 s pass).
async fn all_lines(mut resp: reqwest::Response) -> Vec<(Duration, Value)> {
    let start = tokio::time::Instant::now();
    let mut buf = Vec::new();
    let mut lines = Vec::new();
    within(Duration::from_secs(20), "watch stream to end", async {
        while let Some(chunk) = resp.chunk().await.expect("watch chunk") {
            buf.extend_from_slice(&chunk);
            while let Some(pos) = buf.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = buf.drain(..=pos).collect();
                let v = serde_json::from_slice(&line).expect("one JSON object per line");
                lines.push((start.elapsed(), v));
            }
        }
    })
    .await;
    lines.push((start.elapsed(), json!({"type": "END"})));
    lines
}

async fn create(server: &TestServer, ns: &str, name: &str) -> i64 {
    let body = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}});
    let url = server.url(&format!("/api/v1/namespaces/{ns}/secrets"));
    let (code, obj, _) = call(&server.admin_http(), Method::POST, &url, js(body)).await;
    assert_eq!(code, 201, "{obj}");
    obj["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap()
}

/// A 4 s watch of default's secrets (nothing in kapi writes secrets by itself) from `rv`;
/// with `write_elsewhere`, a secret is
/// created in kube-system meanwhile. Returns the lines (the last is END) and the last write.
async fn watch(
    server: &TestServer,
    rv: i64,
    bookmarks: bool,
    write_elsewhere: Option<&str>,
) -> (Vec<(Duration, Value)>, i64) {
    let url = server.url(&format!(
        "/api/v1/namespaces/default/secrets?watch=1&timeoutSeconds=4&resourceVersion={rv}{}",
        if bookmarks {
            "&allowWatchBookmarks=true"
        } else {
            ""
        }
    ));
    let resp = within(
        Duration::from_secs(10),
        "watch",
        server.admin_http().get(&url).send(),
    )
    .await
    .expect("watch request");
    assert_eq!(resp.status(), 200);
    let lines = tokio::spawn(all_lines(resp));
    let mut last = rv;
    if let Some(name) = write_elsewhere {
        tokio::time::sleep(Duration::from_millis(300)).await;
        last = create(server, "kube-system", name).await;
    }
    let lines = within(Duration::from_secs(30), "watch lines", lines)
        .await
        .unwrap();
    (lines, last)
}

/// The resourceVersion of the last BOOKMARK and when it came; checks its shape.
fn last_bookmark(lines: &[(Duration, Value)]) -> (Duration, i64) {
    let (at, ev) = lines
        .iter()
        .rfind(|(_, e)| e["type"] == "BOOKMARK")
        .unwrap_or_else(|| panic!("no bookmark: {lines:?}"));
    assert_eq!(ev["object"]["kind"], "Secret");
    assert_eq!(ev["object"]["apiVersion"], "v1");
    assert!(
        ev["object"]["metadata"].get("annotations").is_none(),
        "{ev}"
    );
    let rv = ev["object"]["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    (*at, rv)
}

#[tokio::test]
async fn watch_gets_a_bookmark_before_its_timeout_only_when_allowed() {
    // No identity lease or leader election renewing: nothing moves the store's revision.
    let quiet = Options::default()
        .args(["--feature-gates=APIServerIdentity=false,CoordinatedLeaderElection=false"]);
    let server = TestServer::start_with(quiet).await;
    wait_default(&server).await;
    let rv = create(&server, "default", "seen").await;

    // Idle: nothing changes anywhere, still a bookmark ~2 s before the 4 s deadline (the
    // store's own progress notifications only come when its revision moves).
    let (lines, _) = watch(&server, rv, true, None).await;
    assert!(
        lines
            .iter()
            .all(|(_, e)| e["type"] == "BOOKMARK" || e["type"] == "END"),
        "{lines:?}"
    );
    let (at, bookmark_rv) = last_bookmark(&lines);
    assert!(bookmark_rv >= rv, "bookmark {bookmark_rv} < {rv}");
    assert!(
        at >= Duration::from_millis(1500) && at < Duration::from_millis(3900),
        "bookmark at {at:?}"
    );
    let (ended, _) = lines.last().unwrap();
    assert!(*ended >= Duration::from_millis(3500), "ended at {ended:?}");

    // A write the watch does not select: the last bookmark covers it.
    let (lines, last_write) = watch(&server, rv, true, Some("elsewhere")).await;
    let (_, bookmark_rv) = last_bookmark(&lines);
    assert!(
        bookmark_rv >= last_write,
        "bookmark {bookmark_rv} older than the last write {last_write}"
    );

    // Without allowWatchBookmarks: nothing at all.
    let (lines, _) = watch(&server, rv, false, Some("elsewhere-too")).await;
    assert_eq!(lines.len(), 1, "only the end: {lines:?}");
}
