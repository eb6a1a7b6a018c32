//! `/metrics`: scraped and parsed with the Prometheus project's own Python parser; request
//! counters move with requests, with kube-apiserver's names and labels; process metrics;
//! OpenMetrics on request; authorized like any non-resource URL.

use crate::support::{Options, TestServer};
use serde_json::Value;
use std::time::Duration;

/// Parses a Prometheus text exposition with prometheus_client's parser: every sample as
/// `{"name", "labels", "value"}`.
pub(crate) fn parse(text: &str) -> Vec<Value> {
    let python = std::env::var("KAPI_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let script = r#"
import json, sys
from prometheus_client.parser import text_string_to_metric_families
out = []
for family in text_string_to_metric_families(sys.stdin.read()):
    for s in family.samples:
        out.append({"name": s.name, "labels": s.labels, "value": s.value})
print(json.dumps(out))
"#;
    let mut child = std::process::Command::new(&python)
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("python with prometheus_client (scripts/test.sh installs it)");
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the parser refused the exposition: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The value of the sample `name` whose labels include `want`.
pub(crate) fn sample(samples: &[Value], name: &str, want: &[(&str, &str)]) -> Option<f64> {
    samples
        .iter()
        .find(|s| {
            s["name"] == name
                && want
                    .iter()
                    .all(|(k, v)| s["labels"][*k].as_str() == Some(*v))
        })
        .and_then(|s| s["value"].as_f64())
}

/// GET /metrics as the admin: the content type and the parsed samples.
pub(crate) async fn scrape(server: &TestServer) -> (String, Vec<Value>) {
    let resp = server
        .admin_http()
        .get(server.url("/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let content_type = resp.headers()["content-type"].to_str().unwrap().to_string();
    let text = resp.text().await.unwrap();
    (content_type, parse(&text))
}

#[tokio::test]
async fn metrics_count_requests_with_kube_apiserver_names() {
    let server = TestServer::start().await;
    server.kubectl_ok(&["create", "configmap", "m"]).await;
    for _ in 0..3 {
        server.kubectl_ok(&["get", "configmap", "m"]).await;
    }
    let get = [
        ("verb", "GET"),
        ("group", ""),
        ("version", "v1"),
        ("resource", "configmaps"),
        ("scope", "resource"),
        ("component", "apiserver"),
        ("code", "200"),
    ];
    let (content_type, samples) = scrape(&server).await;
    assert_eq!(content_type, "text/plain; version=0.0.4; charset=utf-8");
    let before = sample(&samples, "apiserver_request_total", &get).unwrap();
    let missing = [("verb", "GET"), ("resource", "configmaps"), ("code", "404")];
    // The controllers look for objects they then create, so some 404s come first.
    let missing_before = sample(&samples, "apiserver_request_total", &missing).unwrap_or(0.0);
    assert!(before >= 3.0, "{before}");
    let created = [
        ("verb", "POST"),
        ("resource", "configmaps"),
        ("code", "201"),
    ];
    assert!(sample(&samples, "apiserver_request_total", &created).unwrap() >= 1.0);
    let durations = [("verb", "GET"), ("resource", "configmaps"), ("le", "0.005")];
    assert!(sample(
        &samples,
        "apiserver_request_duration_seconds_bucket",
        &durations
    )
    .is_some());
    assert!(sample(&samples, "apiserver_response_sizes_count", &get[..5]).unwrap() >= 3.0);
    assert!(sample(&samples, "process_resident_memory_bytes", &[]).unwrap() > 1e6);
    assert!(sample(&samples, "process_cpu_seconds_total", &[]).unwrap() > 0.0);
    assert!(sample(&samples, "process_open_fds", &[]).unwrap() > 0.0);
    assert!(sample(
        &samples,
        "apiserver_current_inflight_requests",
        &[("request_kind", "mutating")]
    )
    .is_some());

    // Counters move with requests, and a 404 has its own code.
    server.kubectl_ok(&["get", "configmap", "m"]).await;
    let _ = server.kubectl(&["get", "configmap", "missing"]).await;
    let (_, samples) = scrape(&server).await;
    let after = sample(&samples, "apiserver_request_total", &get).unwrap();
    assert_eq!(after, before + 1.0);
    assert!(sample(&samples, "apiserver_request_total", &missing).unwrap() > missing_before);

    // OpenMetrics when asked.
    let resp = server
        .admin_http()
        .get(server.url("/metrics"))
        .header("accept", "application/openmetrics-text;version=1.0.0")
        .send()
        .await
        .unwrap();
    assert!(resp.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("application/openmetrics-text; version=1.0.0"));
    assert!(resp.text().await.unwrap().ends_with("# EOF\n"));
}

#[tokio::test]
async fn metrics_are_authorized_like_any_path() {
    let server = TestServer::start().await;
    let resp = server
        .anonymous_http()
        .get(server.url("/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);
    // system:monitoring may read them.
    server
        .kubectl_ok(&[
            "create",
            "clusterrolebinding",
            "scraper",
            "--clusterrole=system:monitoring",
            "--user=prometheus",
        ])
        .await;
    let o = server
        .kubectl(&["get", "--raw", "/metrics", "--as", "prometheus"])
        .await;
    assert!(o.status.success(), "{}", crate::support::output_text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("apiserver_request_total"));
    let o = server
        .kubectl(&["get", "--raw", "/metrics", "--as", "nobody"])
        .await;
    assert!(!o.status.success());
}

/// Polls /metrics until `sample` of `name` with `labels` satisfies `ok`; its value.
async fn eventually_sample(
    server: &TestServer,
    name: &str,
    labels: &[(&str, &str)],
    ok: impl Fn(f64) -> bool,
) -> f64 {
    let mut last = None;
    for _ in 0..100 {
        let (_, samples) = scrape(server).await;
        last = sample(&samples, name, labels);
        if last.is_some_and(&ok) {
            return last.unwrap_or_default();
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("{name}{labels:?} never reached the expected value (last: {last:?})");
}

#[tokio::test]
async fn metrics_cover_watches_storage_and_the_control_plane() {
    let server = TestServer::start_with(Options::default().args([
        "--etcd-count-metric-poll-period=500ms",
        "--identity-lease-renew-interval=500ms",
    ]))
    .await;
    for name in ["w1", "w2", "w3"] {
        server.kubectl_ok(&["create", "configmap", name]).await;
    }
    let (_, samples) = scrape(&server).await;
    let configmaps = [("group", ""), ("resource", "configmaps")];
    let watchers_before = sample(
        &samples,
        "apiserver_registered_watchers",
        &[("group", ""), ("version", "v1"), ("kind", "ConfigMap")],
    )
    .unwrap_or(0.0);

    // A watch is a registered watcher and a long-running request while it is open, and the
    // events it is sent are counted.
    let mut watch = server
        .admin_http()
        .get(server.url("/api/v1/namespaces/default/configmaps?watch=1"))
        .send()
        .await
        .unwrap();
    assert_eq!(watch.status(), 200);
    // The initial ADDED events of the three configmaps.
    let mut received = String::new();
    while received.matches("\"ADDED\"").count() < 3 {
        let chunk = tokio::time::timeout(Duration::from_secs(10), watch.chunk())
            .await
            .expect("watch events")
            .unwrap()
            .expect("the watch stream ended");
        received.push_str(&String::from_utf8_lossy(&chunk));
    }
    let kind = [("group", ""), ("version", "v1"), ("kind", "ConfigMap")];
    let (_, samples) = scrape(&server).await;
    assert_eq!(
        sample(&samples, "apiserver_registered_watchers", &kind),
        Some(watchers_before + 1.0)
    );
    let long_running = [
        ("verb", "WATCH"),
        ("group", ""),
        ("version", "v1"),
        ("resource", "configmaps"),
        ("scope", "namespace"),
        ("component", "apiserver"),
    ];
    assert!(sample(&samples, "apiserver_longrunning_requests", &long_running).unwrap() >= 1.0);
    let events = [("group", ""), ("version", "v1"), ("resource", "configmaps")];
    assert!(sample(&samples, "apiserver_watch_events_total", &events).unwrap() >= 3.0);
    assert!(sample(&samples, "apiserver_watch_events_sizes_count", &events).unwrap() >= 3.0);
    assert!(
        sample(
            &samples,
            "apiserver_watch_cache_events_dispatched_total",
            &configmaps
        )
        .unwrap()
            >= 3.0
    );
    // Closing the watch takes it out of both gauges.
    drop(watch);
    eventually_sample(&server, "apiserver_registered_watchers", &kind, |v| {
        v == watchers_before
    })
    .await;

    // Every request of the store, by operation and resource; failures are not answers.
    let create = [
        ("operation", "create"),
        ("group", ""),
        ("resource", "configmaps"),
    ];
    assert!(sample(&samples, "etcd_requests_total", &create).unwrap() >= 3.0);
    assert!(sample(&samples, "etcd_request_duration_seconds_count", &create).unwrap() >= 3.0);
    assert_eq!(
        sample(&samples, "etcd_request_errors_total", &create),
        Some(0.0)
    );
    let _ = server.kubectl(&["get", "configmap", "missing"]).await;
    let get = [
        ("operation", "get"),
        ("group", ""),
        ("resource", "configmaps"),
    ];
    let (_, samples) = scrape(&server).await;
    assert!(sample(&samples, "etcd_requests_total", &get).unwrap() >= 1.0);
    assert_eq!(
        sample(&samples, "etcd_request_errors_total", &get),
        Some(0.0)
    );

    // A list the backend answers is a store request; one the watch cache serves is not.
    let list = [
        ("operation", "list"),
        ("group", ""),
        ("resource", "configmaps"),
    ];
    let lists = |samples: &[Value]| sample(samples, "etcd_requests_total", &list).unwrap_or(0.0);
    let before = lists(&scrape(&server).await.1);
    for query in ["", "?resourceVersion=0"] {
        let resp = server
            .admin_http()
            .get(server.url(&format!("/api/v1/namespaces/default/configmaps{query}")))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
    }
    assert_eq!(lists(&scrape(&server).await.1), before + 1.0);

    // The objects of each resource are counted on the poll period.
    let listed = server
        .kubectl_ok(&["get", "configmaps", "-A", "-o", "name"])
        .await;
    let stored = listed.lines().filter(|l| !l.is_empty()).count() as f64;
    eventually_sample(
        &server,
        "apiserver_storage_objects",
        &[("resource", "configmaps")],
        |v| v == stored,
    )
    .await;
    eventually_sample(&server, "apiserver_resource_objects", &configmaps, |v| {
        v == stored
    })
    .await;
    let leases = [("resource", "leases.coordination.k8s.io")];
    eventually_sample(&server, "apiserver_storage_objects", &leases, |v| v >= 1.0).await;
    let size = [("storage_cluster_id", "etcd-0")];
    eventually_sample(&server, "apiserver_storage_size_bytes", &size, |v| v > 0.0).await;

    // The embedded store's fsyncs and commit batches.
    let (_, samples) = scrape(&server).await;
    assert!(sample(&samples, "kapi_storage_fsync_duration_seconds_count", &[]).unwrap() >= 3.0);
    assert!(sample(&samples, "kapi_storage_commit_batch_size_count", &[]).unwrap() >= 3.0);

    // Authentication and authorization attempts, by result.
    let success = [("result", "success")];
    let failure = [("result", "failure")];
    let failed_before = sample(&samples, "authentication_attempts", &failure).unwrap_or(0.0);
    assert!(sample(&samples, "authentication_attempts", &success).unwrap() >= 1.0);
    assert!(sample(&samples, "authentication_duration_seconds_count", &success).unwrap() >= 1.0);
    assert!(
        sample(
            &samples,
            "authorization_attempts_total",
            &[("result", "allowed")]
        )
        .unwrap()
            >= 1.0
    );
    let resp = server
        .anonymous_http()
        .get(server.url("/api/v1/namespaces"))
        .bearer_auth("not-a-token")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 401);
    let o = server
        .kubectl(&["get", "configmaps", "--as", "nobody"])
        .await;
    assert!(!o.status.success());
    let (_, samples) = scrape(&server).await;
    assert_eq!(
        sample(&samples, "authentication_attempts", &failure),
        Some(failed_before + 1.0)
    );
    assert!(
        sample(
            &samples,
            "authorization_attempts_total",
            &[("result", "no-opinion")]
        )
        .unwrap()
            >= 1.0
    );

    // The post-start hooks and the identity lease's renewals.
    for hook in ["rbac/bootstrap-roles", "start-system-namespaces-controller"] {
        assert_eq!(
            sample(
                &samples,
                "kapi_post_start_hook_completed",
                &[("name", hook)]
            ),
            Some(1.0),
            "{hook}"
        );
    }
    eventually_sample(
        &server,
        "kapi_identity_lease_renewals_total",
        &success,
        |v| v >= 1.0,
    )
    .await;
}
