//! Request tracing over OpenTelemetry (`--tracing-config-file`), as kube-apiserver's
//! TracingOptions.ApplyTo and component-base's NewProvider set it up: spans batched and sent
//! to an OTLP gRPC collector, resource `service.name=apiserver` with the apiserver ID as
//! `service.instance.id`, sampler ParentBased(TraceIDRatioBased(samplingRatePerMillion/1e6)).
//! The tracer provider is the process's global one, so the layers below (storage, admission
//! and conversion webhooks, the aggregator) make their spans from the request's context.
//!
//! Also the request span itself (WithTracing in k8s.io/apiserver endpoints/filters): started
//! after authentication, it continues the caller's W3C trace context only for
//! `system:masters` and `system:monitoring` (upstream's notSystemPrivilegedGroup); anyone
//! else's becomes a link of a new trace, so an untrusted caller cannot pick what is sampled.
//!
//! An unreachable collector never holds a request up: spans wait in a bounded queue that a
//! thread of the exporter drains; what cannot be sent is dropped, the first failure logged
//! once and the count of lost spans logged at shutdown.
//! May use: options, api.

use crate::api::{trace::SCOPE, RequestInfo, UserInfo};
use crate::options::{TracingConfiguration, TracingParseError};
use opentelemetry::global::{self, BoxedTracer};
use opentelemetry::trace::{Link, SpanKind, Status, TraceContextExt as _, Tracer as _};
use opentelemetry::{Context, KeyValue};
use opentelemetry_otlp::WithExportConfig as _;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{
    BatchSpanProcessor, Sampler, SdkTracerProvider, Span, SpanData, SpanExporter, SpanProcessor,
};
use opentelemetry_sdk::Resource;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// upstream's apiserverService.
const SERVICE_NAME: &str = "apiserver";

/// Why tracing could not be set up.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    /// The file could not be read.
    #[error("cannot read --tracing-config-file {0}")]
    Read(PathBuf, #[source] std::io::Error),
    /// The file is not a TracingConfiguration, or holds values it does not allow.
    #[error("invalid --tracing-config-file {0}")]
    Config(PathBuf, #[source] TracingParseError),
    /// The OTLP exporter could not be built for the endpoint.
    #[error("cannot set up the OTLP exporter for {0}")]
    Exporter(String, #[source] opentelemetry_otlp::ExporterBuildError),
}

/// Reads and checks the configuration file (ReadTracingConfiguration and
/// ValidateTracingConfiguration in k8s).
///
/// # Errors
///
/// [`Error::Read`] or [`Error::Config`], naming the file (and the field).
pub(crate) fn load(path: &Path) -> Result<TracingConfiguration, Error> {
    let bytes = std::fs::read(path).map_err(|e| Error::Read(path.to_path_buf(), e))?;
    TracingConfiguration::parse(&bytes).map_err(|e| Error::Config(path.to_path_buf(), e))
}

/// The installed tracer provider; [`Tracing::shutdown`] flushes what is pending.
pub(crate) struct Tracing {
    provider: SdkTracerProvider,
    endpoint: String,
    counts: Arc<Counts>,
}

impl Tracing {
    /// Builds the exporter and the provider and makes the provider the global one. Call it
    /// inside the tokio runtime: the gRPC channel's worker runs on it. The collector is
    /// dialled lazily, so one that is down does not stop the start.
    ///
    /// # Errors
    ///
    /// [`Error::Exporter`] when the endpoint is not a usable URI.
    pub(crate) fn install(
        config: &TracingConfiguration,
        instance_id: &str,
    ) -> Result<Tracing, Error> {
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_tonic()
            .with_endpoint(format!("http://{}", config.endpoint))
            .build()
            .map_err(|e| Error::Exporter(config.endpoint.clone(), e))?;
        let counts = Arc::new(Counts::default());
        let exporter = Counted {
            inner: exporter,
            endpoint: config.endpoint.clone(),
            counts: counts.clone(),
        };
        let processor = Ended {
            inner: BatchSpanProcessor::builder(exporter).build(),
            counts: counts.clone(),
        };
        let rate = config.sampling_rate_per_million;
        let root = if rate == 0 {
            Sampler::AlwaysOff
        } else {
            Sampler::TraceIdRatioBased(f64::from(rate) / 1e6)
        };
        let resource = Resource::builder()
            .with_service_name(SERVICE_NAME)
            .with_attribute(KeyValue::new(
                "service.instance.id",
                instance_id.to_string(),
            ))
            .build();
        let provider = SdkTracerProvider::builder()
            .with_sampler(Sampler::ParentBased(Box::new(root)))
            .with_span_processor(processor)
            .with_resource(resource)
            .build();
        global::set_tracer_provider(provider.clone());
        tracing::info!(endpoint = %config.endpoint, sampling_rate_per_million = rate, "tracing requests");
        Ok(Tracing {
            provider,
            endpoint: config.endpoint.clone(),
            counts,
        })
    }

    /// Sends the spans still queued, waiting at most `deadline`, and stops the exporter;
    /// logs how many spans were never sent, if any. Blocks: call it off the async workers.
    pub(crate) fn shutdown(self, deadline: Duration) {
        if let Err(err) = self.provider.shutdown_with_timeout(deadline) {
            tracing::warn!(endpoint = %self.endpoint, error = %err, "tracing: pending spans not flushed");
        }
        let c = &self.counts;
        let ended = c.ended.load(Ordering::Relaxed);
        let (sent, failed) = (
            c.sent.load(Ordering::Relaxed),
            c.failed.load(Ordering::Relaxed),
        );
        let lost = ended.saturating_sub(sent);
        if lost > 0 {
            tracing::warn!(
                endpoint = %self.endpoint,
                spans = ended,
                lost,
                failed_exports = failed,
                queue_full_or_pending = lost.saturating_sub(failed),
                "tracing: spans were not delivered to the collector"
            );
        }
    }
}

/// Spans ended, sent, and lost to failed exports, for the report at shutdown.
#[derive(Debug, Default)]
struct Counts {
    ended: AtomicU64,
    sent: AtomicU64,
    failed: AtomicU64,
    warned: AtomicBool,
}

/// The batch processor, counting the spans handed to it.
#[derive(Debug)]
struct Ended {
    inner: BatchSpanProcessor,
    counts: Arc<Counts>,
}

impl SpanProcessor for Ended {
    fn on_start(&self, span: &mut Span, cx: &Context) {
        self.inner.on_start(span, cx);
    }

    fn on_end(&self, span: SpanData) {
        if span.span_context.is_sampled() {
            self.counts.ended.fetch_add(1, Ordering::Relaxed);
        }
        self.inner.on_end(span);
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// The OTLP exporter, counting what it sent and warning once when a send first fails.
#[derive(Debug)]
struct Counted<E> {
    inner: E,
    endpoint: String,
    counts: Arc<Counts>,
}

impl<E: SpanExporter> SpanExporter for Counted<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let n = batch.len() as u64;
        let result = self.inner.export(batch).await;
        match &result {
            Ok(()) => {
                self.counts.sent.fetch_add(n, Ordering::Relaxed);
            }
            Err(err) => {
                self.counts.failed.fetch_add(n, Ordering::Relaxed);
                if !self.counts.warned.swap(true, Ordering::Relaxed) {
                    tracing::warn!(endpoint = %self.endpoint, error = %err, "tracing: cannot send spans to the collector; they are dropped (counted at shutdown, not logged again)");
                }
            }
        }
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// Starts the span of each request (WithTracing): from the global provider, so it exists
/// only once [`Tracing::install`] ran.
pub(super) struct RequestTracer {
    tracer: BoxedTracer,
}

/// What the request span records of a request, gathered by the chain.
pub(super) struct Received<'a, B> {
    pub req: &'a http::Request<B>,
    pub info: &'a RequestInfo,
    pub user: &'a UserInfo,
    pub audit_id: &'a str,
    pub remote: Option<std::net::SocketAddr>,
    /// When the request arrived (the span starts then, as upstream's does).
    pub started: tokio::time::Instant,
}

impl RequestTracer {
    /// A tracer of the global provider.
    pub(super) fn new() -> RequestTracer {
        RequestTracer {
            tracer: global::tracer(SCOPE),
        }
    }

    /// Starts the request's span; the context returned holds it, to be made current while
    /// the request is served and handed to [`finish`].
    pub(super) fn start<B>(&self, r: Received<'_, B>) -> Context {
        let req = r.req;
        let remote = crate::api::trace::extract(req.headers());
        let trusted = r
            .user
            .groups
            .iter()
            .any(|g| g == "system:masters" || g == "system:monitoring");
        let start = SystemTime::now()
            .checked_sub(r.started.elapsed())
            .unwrap_or_else(SystemTime::now);
        let mut builder = self
            .tracer
            .span_builder(span_name(req.method(), r.info))
            .with_kind(SpanKind::Server)
            .with_start_time(start)
            .with_attributes(attributes(&r));
        let parent = match remote {
            Some(remote) if trusted => Context::new().with_remote_span_context(remote),
            Some(remote) => {
                builder = builder.with_links(vec![Link::with_context(remote)]);
                Context::new()
            }
            None => Context::new(),
        };
        let span = builder.start_with_context(&self.tracer, &parent);
        Context::new().with_span(span)
    }
}

/// Ends the request's span with the response's status code (5xx marks it an error, as
/// otelhttp does for servers).
pub(super) fn finish(cx: &Context, status: http::StatusCode) {
    let span = cx.span();
    span.set_attribute(KeyValue::new(
        "http.response.status_code",
        i64::from(status.as_u16()),
    ));
    if status.is_server_error() {
        span.set_status(Status::error(""));
    }
    span.end();
}

/// upstream's getSpanNameFromRequestInfo: `GET /api/v1/namespaces/{:namespace}/pods/{:name}`
/// for a resource request, the method alone otherwise.
fn span_name(method: &http::Method, info: &RequestInfo) -> String {
    if !info.is_resource_request || info.resource.is_empty() {
        return method.to_string();
    }
    let mut name = format!("{method} /{}", info.api_prefix);
    if !info.api_group.is_empty() {
        name.push('/');
        name.push_str(&info.api_group);
    }
    name.push('/');
    name.push_str(&info.api_version);
    if !info.namespace.is_empty() {
        name.push_str("/namespaces/{:namespace}");
    }
    name.push('/');
    name.push_str(&info.resource);
    if !info.name.is_empty() {
        name.push_str("/{:name}");
    }
    if !info.subresource.is_empty() {
        name.push('/');
        name.push_str(&info.subresource);
    }
    name
}

/// otelhttp's server attributes (HTTP semantic conventions), plus upstream's `http.target`
/// and `audit-id`.
fn attributes<B>(r: &Received<'_, B>) -> Vec<KeyValue> {
    let req = r.req;
    let header =
        |name: http::header::HeaderName| req.headers().get(name).and_then(|v| v.to_str().ok());
    let target = req
        .uri()
        .path_and_query()
        .map_or_else(|| req.uri().path().to_string(), |p| p.as_str().to_string());
    let mut attrs = vec![
        KeyValue::new("http.request.method", req.method().to_string()),
        KeyValue::new("url.scheme", "https"),
        KeyValue::new("url.path", req.uri().path().to_string()),
        KeyValue::new("http.target", target),
        KeyValue::new("network.protocol.version", protocol_version(req.version())),
        KeyValue::new("audit-id", r.audit_id.to_string()),
    ];
    let authority =
        header(http::header::HOST).or_else(|| req.uri().authority().map(|a| a.as_str()));
    if let Some(authority) = authority.and_then(|a| a.parse::<http::uri::Authority>().ok()) {
        attrs.push(KeyValue::new(
            "server.address",
            authority.host().to_string(),
        ));
        if let Some(port) = authority.port_u16() {
            attrs.push(KeyValue::new("server.port", i64::from(port)));
        }
    }
    if let Some(remote) = r.remote {
        attrs.push(KeyValue::new(
            "network.peer.address",
            remote.ip().to_string(),
        ));
        attrs.push(KeyValue::new("network.peer.port", i64::from(remote.port())));
    }
    if let Some(agent) = header(http::header::USER_AGENT) {
        attrs.push(KeyValue::new("user_agent.original", agent.to_string()));
    }
    attrs
}

fn protocol_version(version: http::Version) -> &'static str {
    match version {
        http::Version::HTTP_09 => "0.9",
        http::Version::HTTP_10 => "1.0",
        http::Version::HTTP_2 => "2",
        http::Version::HTTP_3 => "3",
        _ => "1.1",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn span_names_follow_upstream() {
        let name = |method: http::Method, path: &str| {
            span_name(&method, &RequestInfo::parse(&method, path, None))
        };
        assert_eq!(
            name(http::Method::GET, "/api/v1/namespaces/default/configmaps/x"),
            "GET /api/v1/namespaces/{:namespace}/configmaps/{:name}"
        );
        assert_eq!(
            name(
                http::Method::POST,
                "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"
            ),
            "POST /apis/coordination.k8s.io/v1/namespaces/{:namespace}/leases"
        );
        assert_eq!(name(http::Method::GET, "/apis"), "GET");
        assert_eq!(name(http::Method::GET, "/readyz"), "GET");
    }
}
