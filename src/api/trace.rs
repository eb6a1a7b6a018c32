//! OpenTelemetry trace context shared by the server side (k8s.io/component-base/tracing):
//! nested spans that exist only under a sampled request span (upstream's tracing.Start),
//! and the W3C `traceparent` read from requests and written on the calls kapi makes on a
//! request's behalf. The request's context is the task's current OpenTelemetry context,
//! set by the handler chain while the request is traced; without tracing there is none, and
//! every function here returns after one thread-local read.
//! May use: nothing internal.

use opentelemetry::context::FutureExt as _;
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator as _};
use opentelemetry::trace::{SpanContext, TraceContextExt as _, Tracer as _};
use opentelemetry::{global, Context, KeyValue};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use std::future::Future;

/// Instrumentation scope of the nested spans (upstream's instrumentationScope).
pub(crate) const SCOPE: &str = "k8s.io/component-base/tracing";

/// Whether the current context holds a sampled span, under which nested spans are made.
pub(crate) fn sampled() -> bool {
    Context::map_current(|cx| cx.span().span_context().is_sampled())
}

/// Runs `fut` in a span named `name`, a child of the current span, when that one is sampled
/// (tracing.Start); otherwise just runs it. `attributes` is called only for a span.
pub(crate) async fn in_span<F, A>(name: &'static str, attributes: A, fut: F) -> F::Output
where
    F: Future,
    A: FnOnce() -> Vec<KeyValue>,
{
    traced(name, attributes, fut, |_| None).await
}

/// [`in_span`] for a fallible step: an error is recorded as upstream's `failed` event (with
/// `err`); the span's status is left alone, as a NotFound or a Conflict is an answer.
pub(crate) async fn in_fallible_span<F, A, T, E>(
    name: &'static str,
    attributes: A,
    fut: F,
) -> F::Output
where
    F: Future<Output = Result<T, E>>,
    A: FnOnce() -> Vec<KeyValue>,
    E: std::fmt::Display,
{
    traced(name, attributes, fut, |out| {
        out.as_ref().err().map(ToString::to_string)
    })
    .await
}

async fn traced<F, A>(
    name: &'static str,
    attributes: A,
    fut: F,
    failure: impl FnOnce(&F::Output) -> Option<String>,
) -> F::Output
where
    F: Future,
    A: FnOnce() -> Vec<KeyValue>,
{
    if !sampled() {
        return fut.await;
    }
    let tracer = global::tracer(SCOPE);
    let span = tracer
        .span_builder(name)
        .with_attributes(attributes())
        .start(&tracer);
    let cx = Context::current_with_span(span);
    let out = fut.with_context(cx.clone()).await;
    if let Some(err) = failure(&out) {
        cx.span()
            .add_event("failed", vec![KeyValue::new("err", err)]);
    }
    cx.span().end();
    out
}

/// Writes the current span's context as `traceparent` (and `tracestate`) into `headers`,
/// replacing any there, for a call made on the current request's behalf (otelhttp's
/// transport). Without a current span the headers are left as they are.
pub(crate) fn inject(headers: &mut http::HeaderMap) {
    Context::map_current(|cx| {
        if cx.span().span_context().is_valid() {
            TraceContextPropagator::new().inject_context(cx, &mut Headers(headers));
        }
    });
}

/// The remote span context a request's `traceparent` (and `tracestate`) carries, if valid.
pub(crate) fn extract(headers: &http::HeaderMap) -> Option<SpanContext> {
    let cx =
        TraceContextPropagator::new().extract_with_context(&Context::new(), &HeadersRef(headers));
    let span = cx.span();
    let remote = span.span_context();
    remote.is_valid().then(|| remote.clone())
}

struct Headers<'a>(&'a mut http::HeaderMap);

impl Injector for Headers<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(name), Ok(value)) = (
            http::HeaderName::from_bytes(key.as_bytes()),
            http::HeaderValue::from_str(&value),
        ) {
            self.0.insert(name, value);
        }
    }
}

struct HeadersRef<'a>(&'a http::HeaderMap);

impl Extractor for HeadersRef<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(http::HeaderName::as_str).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::{SpanId, TraceFlags, TraceId, TraceState};

    const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_traceparent_is_read_and_written_back() {
        let mut headers = http::HeaderMap::new();
        headers.insert("traceparent", PARENT.parse().unwrap());
        let remote = extract(&headers).unwrap();
        assert!(remote.is_remote() && remote.is_sampled());
        assert_eq!(
            remote.trace_id(),
            TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").unwrap()
        );

        let cx = Context::new().with_remote_span_context(remote);
        let _attached = cx.attach();
        let mut out = http::HeaderMap::new();
        out.insert(
            "traceparent",
            "00-ffffffffffffffffffffffffffffffff-ffffffffffffffff-01"
                .parse()
                .unwrap(),
        );
        inject(&mut out);
        assert_eq!(out["traceparent"], PARENT);
    }

    #[test]
    fn without_a_span_nothing_is_written_or_sampled() {
        let mut out = http::HeaderMap::new();
        inject(&mut out);
        assert!(out.is_empty());
        assert!(!sampled());
        let mut headers = http::HeaderMap::new();
        headers.insert(
            "traceparent",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01"
                .parse()
                .unwrap(),
        );
        assert!(extract(&headers).is_none());
    }

    #[test]
    fn an_unsampled_parent_gets_no_nested_spans() {
        let remote = SpanContext::new(
            TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").unwrap(),
            SpanId::from_hex("00f067aa0ba902b7").unwrap(),
            TraceFlags::default(),
            true,
            TraceState::default(),
        );
        let _attached = Context::new().with_remote_span_context(remote).attach();
        assert!(!sampled());
    }
}
