//! `/metrics`: scraped and parsed with the Prometheus project's own Python parser; request
//! counters move with requests, with kube-apiserver's names and labels; process metrics;
//! OpenMetrics on request; authorized like any non-resource URL.

use crate::support::TestServer;
use serde_json::Value;

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

async fn scrape(server: &TestServer) -> (String, Vec<Value>) {
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
