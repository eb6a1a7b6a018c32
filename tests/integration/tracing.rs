//! Request tracing against the real server: an OTLP gRPC receiver in this process gets the
//! spans of a request that carries a W3C traceparent (the request's span a child of it, the
//! storage span a child of the request's), an untrusted caller's traceparent is only linked,
//! a sampled parent is traced with samplingRatePerMillion 0, pending spans are flushed at
//! shutdown, and a bad --tracing-config-file stops the start with one line naming the field.

use crate::crud::wait_default;
use crate::support::{within, Options, TestServer};
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{any_value, KeyValue};
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use opentelemetry_proto::tonic::trace::v1::Span;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_ID: &str = "00f067aa0ba902b7";

/// A span as received, with its resource's `service.name`.
#[derive(Debug, Clone)]
struct Received {
    service: String,
    span: Span,
}

/// A small OTLP trace receiver (an OpenTelemetry collector's gRPC endpoint).
#[derive(Default, Clone)]
struct Collector {
    spans: Arc<Mutex<Vec<Received>>>,
}

#[tonic::async_trait]
impl TraceService for Collector {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let mut spans = self.spans.lock().unwrap();
        for resource in request.into_inner().resource_spans {
            let service = resource
                .resource
                .as_ref()
                .and_then(|r| string(&r.attributes, "service.name"))
                .unwrap_or_default();
            for scope in resource.scope_spans {
                for span in scope.spans {
                    spans.push(Received {
                        service: service.clone(),
                        span,
                    });
                }
            }
        }
        Ok(tonic::Response::new(ExportTraceServiceResponse {
            partial_success: None,
        }))
    }
}

impl Collector {
    /// Serves on a free loopback port until the test ends.
    async fn start() -> (Collector, SocketAddr) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let collector = Collector::default();
        let service = TraceServiceServer::new(collector.clone());
        tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(service)
                .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
        );
        (collector, addr)
    }

    fn spans(&self) -> Vec<Received> {
        self.spans.lock().unwrap().clone()
    }

    /// Waits until a span matching `want` has arrived and returns it.
    async fn wait_for(&self, what: &str, want: impl Fn(&Span) -> bool) -> Received {
        within(Duration::from_secs(30), what, async {
            loop {
                if let Some(found) = self.spans().into_iter().find(|r| want(&r.span)) {
                    return found;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
        .await
    }
}

fn string(attrs: &[KeyValue], key: &str) -> Option<String> {
    attrs
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref()?.value.as_ref())
        .map(|v| match v {
            any_value::Value::StringValue(s) => s.clone(),
            any_value::Value::IntValue(i) => i.to_string(),
            other => format!("{other:?}"),
        })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A tracing configuration file sending to `addr`.
fn config(addr: SocketAddr, rate: u32) -> tempfile::NamedTempFile {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        file.path(),
        format!(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nendpoint: {addr}\nsamplingRatePerMillion: {rate}\n"
        ),
    )
    .unwrap();
    file
}

async fn traced_server(file: &tempfile::NamedTempFile) -> TestServer {
    TestServer::start_with(Options::default().args([
        "--tracing-config-file".to_string(),
        file.path().display().to_string(),
    ]))
    .await
}

/// POSTs a config map as the admin (system:masters) with `traceparent`.
async fn create_config_map(server: &TestServer, name: &str, traceparent: &str) {
    let resp = server
        .admin_http()
        .post(server.url("/api/v1/namespaces/default/configmaps"))
        .header("traceparent", traceparent)
        .json(&serde_json::json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name},
            "data": {"a": "b"},
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 201, "{}", resp.text().await.unwrap());
}

#[tokio::test]
async fn a_traced_request_reaches_the_collector_under_its_traceparent() {
    let (collector, addr) = Collector::start().await;
    let file = config(addr, 1_000_000);
    let server = traced_server(&file).await;
    wait_default(&server).await;

    create_config_map(&server, "traced", &format!("00-{TRACE_ID}-{PARENT_ID}-01")).await;
    let request = collector
        .wait_for("the request's span", |s| {
            hex(&s.trace_id) == TRACE_ID && hex(&s.parent_span_id) == PARENT_ID
        })
        .await;
    assert_eq!(request.service, "apiserver");
    let span = &request.span;
    assert_eq!(span.name, "POST /api/v1/namespaces/{:namespace}/configmaps");
    assert_eq!(span.kind, SpanKind::Server as i32);
    let attr = |key| string(&span.attributes, key);
    assert_eq!(attr("http.request.method").as_deref(), Some("POST"));
    assert_eq!(
        attr("url.path").as_deref(),
        Some("/api/v1/namespaces/default/configmaps")
    );
    assert_eq!(attr("http.response.status_code").as_deref(), Some("201"));
    assert!(
        attr("audit-id").is_some_and(|id| !id.is_empty()),
        "{span:?}"
    );

    let storage = collector
        .wait_for("the storage span", |s| {
            s.name == "Create embedded" && hex(&s.trace_id) == TRACE_ID
        })
        .await;
    assert_eq!(storage.span.parent_span_id, span.span_id);
    assert_eq!(
        string(&storage.span.attributes, "key").as_deref(),
        Some("/registry/configmaps/default/traced")
    );

    // An anonymous caller's trace context is only linked: its request starts a new trace.
    const OTHER: &str = "0af7651916cd43dd8448eb211c80319c";
    let resp = server
        .anonymous_http()
        .get(server.url("/version"))
        .header("traceparent", format!("00-{OTHER}-b7ad6b7169203331-01"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let version = collector
        .wait_for("the anonymous request's span", |s| {
            s.links.iter().any(|l| hex(&l.trace_id) == OTHER)
        })
        .await;
    assert_eq!(version.span.name, "GET");
    assert_ne!(hex(&version.span.trace_id), OTHER);
    assert!(version.span.parent_span_id.is_empty());
}

#[tokio::test]
async fn a_sampled_parent_is_traced_at_rate_zero_and_flushed_at_shutdown() {
    let (collector, addr) = Collector::start().await;
    let file = config(addr, 0);
    let mut server = traced_server(&file).await;
    wait_default(&server).await;

    create_config_map(
        &server,
        "unsampled",
        &format!("00-{TRACE_ID}-{PARENT_ID}-00"),
    )
    .await;
    create_config_map(&server, "sampled", &format!("00-{TRACE_ID}-{PARENT_ID}-01")).await;
    // Stopped at once: the batch's 5 s delay has not passed, the spans go out at shutdown.
    server.signal(libc::SIGTERM);
    let status = server.wait_exit(Duration::from_secs(60)).await;
    assert!(status.success(), "{status}\n{}", server.stderr());

    let spans = collector.spans();
    assert!(!spans.is_empty(), "no span was flushed at shutdown");
    // Rate 0: only the sampled parent's trace is recorded, the unsampled one is not.
    for r in &spans {
        assert_eq!(hex(&r.span.trace_id), TRACE_ID, "{:?}", r.span.name);
    }
    let keys: Vec<String> = spans
        .iter()
        .filter_map(|r| string(&r.span.attributes, "key"))
        .collect();
    assert!(
        keys.contains(&"/registry/configmaps/default/sampled".to_string()),
        "{keys:?}"
    );
    assert!(!keys.iter().any(|k| k.ends_with("/unsampled")), "{keys:?}");
}

#[tokio::test]
async fn an_unreachable_collector_does_not_hold_requests_up() {
    // Nothing listens there: spans are dropped, requests go on, the loss is logged once.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let file = config(port, 1_000_000);
    let mut server = traced_server(&file).await;
    wait_default(&server).await;
    let started = std::time::Instant::now();
    for i in 0..20 {
        create_config_map(
            &server,
            &format!("cm-{i}"),
            &format!("00-{TRACE_ID}-{PARENT_ID}-01"),
        )
        .await;
    }
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    server.signal(libc::SIGTERM);
    let status = server.wait_exit(Duration::from_secs(60)).await;
    assert!(status.success(), "{status}\n{}", server.stderr());
    let stderr = server.stderr();
    let warned = stderr
        .lines()
        .filter(|l| l.contains("cannot send spans to the collector"))
        .count();
    assert!(warned <= 1, "{stderr}");
    assert!(
        stderr.contains("spans were not delivered to the collector"),
        "{stderr}"
    );
}

#[tokio::test]
async fn webhook_calls_are_spans_and_carry_the_traceparent() {
    use crate::admission::{apply, eventually, webhook, Webhook};
    let (collector, addr) = Collector::start().await;
    // Rate 0: only the requests sent with a sampled traceparent are traced.
    let file = config(addr, 0);
    let server = traced_server(&file).await;
    wait_default(&server).await;
    let hook = Webhook::start().await;
    let allow = webhook(
        "allow.example.com",
        &hook.url("/allow"),
        &hook.ca_bundle(),
        "configmaps",
        serde_json::json!({}),
    );
    apply(
        &server,
        "ValidatingWebhookConfiguration",
        "traced-hooks",
        vec![allow],
    )
    .await;
    let mut attempt = 0;
    eventually("the webhook to be called", || {
        attempt += 1;
        let name = format!("hooked-{attempt}");
        let server = &server;
        let hook = &hook;
        async move {
            create_config_map(server, &name, &format!("00-{TRACE_ID}-{PARENT_ID}-01")).await;
            (!hook.sent_to("/allow").is_empty()).then_some(())
        }
    })
    .await;

    let call = collector
        .wait_for("the webhook call's span", |s| {
            s.name == "Call validating webhook" && hex(&s.trace_id) == TRACE_ID
        })
        .await
        .span;
    let attr = |key| string(&call.attributes, key);
    assert_eq!(attr("webhook").as_deref(), Some("allow.example.com"));
    assert_eq!(attr("configuration").as_deref(), Some("traced-hooks"));
    assert_eq!(
        attr("resource").as_deref(),
        Some("/v1, Resource=configmaps")
    );
    assert_eq!(attr("operation").as_deref(), Some("CREATE"));
    assert!(attr("UID").is_some_and(|uid| !uid.is_empty()));
    let request = collector
        .wait_for("the request's span", |s| s.span_id == call.parent_span_id)
        .await
        .span;
    assert_eq!(
        request.name,
        "POST /api/v1/namespaces/{:namespace}/configmaps"
    );
    assert_eq!(hex(&request.parent_span_id), PARENT_ID);
    // The webhook was told the call's span as its parent.
    let sent = format!("00-{TRACE_ID}-{}-01", hex(&call.span_id));
    assert!(
        hook.traceparents().contains(&sent),
        "{:?}",
        hook.traceparents()
    );
}

/// `kapi serve --tracing-config-file <file with body>`: (exit code, stderr, file path).
async fn refused(body: Option<&str>) -> (Option<i32>, String, String) {
    let data = tempfile::tempdir().unwrap();
    let file = data.path().join("tracing.yaml");
    if let Some(body) = body {
        std::fs::write(&file, body).unwrap();
    }
    let out = within(
        Duration::from_secs(30),
        "kapi serve",
        tokio::process::Command::new(env!("CARGO_BIN_EXE_kapi"))
            .args(["serve", "--secure-port", "0", "--data-dir"])
            .arg(data.path())
            .arg("--tracing-config-file")
            .arg(&file)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .unwrap();
    assert!(!data.path().join("admin.kubeconfig").exists());
    (
        out.status.code(),
        String::from_utf8(out.stderr).unwrap(),
        file.display().to_string(),
    )
}

#[tokio::test]
async fn a_bad_tracing_config_is_a_usage_error_in_one_line() {
    const HEAD: &str = "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\n";
    let cases = [
        (
            Some(format!("{HEAD}samplingRatePerMillion: 1000001\n")),
            "samplingRatePerMillion: Invalid value: 1000001",
        ),
        (
            Some(format!("{HEAD}samplingRatePerMillion: -5\n")),
            "samplingRatePerMillion: Invalid value: -5",
        ),
        (
            Some(format!("{HEAD}endpoint: http://collector:4317\n")),
            "endpoint: Invalid value: \"http://collector:4317\"",
        ),
        (
            Some(format!("{HEAD}endpiont: collector:4317\n")),
            "endpiont: unknown field",
        ),
        (
            Some("apiVersion: apiserver.config.k8s.io/v9\nkind: TracingConfiguration\n".into()),
            "apiVersion: Unsupported value: \"apiserver.config.k8s.io/v9\"",
        ),
        (
            Some("apiVersion: apiserver.config.k8s.io/v1\nkind: Tracing\n".into()),
            "kind: Unsupported value: \"Tracing\"",
        ),
        (
            Some(format!("{HEAD}samplingRatePerMillion: [1]\n")),
            "samplingRatePerMillion",
        ),
        (None, "cannot read --tracing-config-file"),
    ];
    for (body, want) in cases {
        let (code, stderr, file) = refused(body.as_deref()).await;
        assert_eq!(code, Some(2), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.starts_with("kapi: error: "), "{stderr}");
        assert!(stderr.contains(&file), "{stderr}");
        assert!(stderr.contains(want), "want {want:?} in {stderr}");
    }
}
