//! Spans around the backend's operations for a traced request (upstream's etcd3 store opens
//! "Create etcd3", "GuaranteedUpdate etcd3", "List(recursive=true) etcd3" and so on with
//! tracing.Start). Put in front of the backend only when tracing is on, so an untraced server
//! pays nothing; with tracing on, a span is made only under the request's sampled span (the
//! task's current OpenTelemetry context), else the call goes straight through.
//! May use: nothing internal.

use super::{
    DeleteCheck, KeyValue, ListOptions, ListResult, ListRevision, Result, Revision, Storage,
    UpdateFn, WatchStream,
};
use bytes::Bytes;
use opentelemetry::context::FutureExt as _;
use opentelemetry::trace::{TraceContextExt as _, Tracer as _};
use opentelemetry::{global, Context, KeyValue as Attribute};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// Instrumentation scope of the spans (upstream's component-base/tracing).
const SCOPE: &str = "k8s.io/component-base/tracing";

/// A backend whose reads and writes are spans of the traced requests that make them.
pub(super) struct Traced {
    inner: Arc<dyn Storage>,
    /// The store in span names: `etcd3` as upstream, or `embedded`.
    store: &'static str,
}

impl Traced {
    /// Wraps `inner`, naming spans `<Operation> <store>`.
    pub(super) fn new(inner: Arc<dyn Storage>, store: &'static str) -> Traced {
        Traced { inner, store }
    }

    async fn span<F, A, T>(&self, op: &str, attributes: A, fut: F) -> Result<T>
    where
        F: Future<Output = Result<T>>,
        A: FnOnce() -> Vec<Attribute>,
    {
        if !Context::map_current(|cx| cx.span().span_context().is_sampled()) {
            return fut.await;
        }
        let tracer = global::tracer(SCOPE);
        let span = tracer
            .span_builder(format!("{op} {}", self.store))
            .with_attributes(attributes())
            .start(&tracer);
        let cx = Context::current_with_span(span);
        let out = fut.with_context(cx.clone()).await;
        if let Err(e) = &out {
            // As upstream's "... failed" events: a NotFound or a Conflict is an answer, not
            // a failure of the span.
            cx.span()
                .add_event("failed", vec![Attribute::new("err", e.to_string())]);
        }
        cx.span().end();
        out
    }
}

fn key(key: &str) -> impl FnOnce() -> Vec<Attribute> + '_ {
    move || vec![Attribute::new("key", key.to_string())]
}

/// upstream's resourceVersion attribute of a list, as the request gave it.
fn resource_version(revision: ListRevision) -> String {
    match revision {
        ListRevision::Latest => String::new(),
        ListRevision::Any => "0".into(),
        ListRevision::NotOlderThan(r) | ListRevision::Exact(r) => r.to_string(),
    }
}

#[async_trait::async_trait]
impl Storage for Traced {
    async fn get(&self, k: &str) -> Result<KeyValue> {
        self.span("Get", key(k), self.inner.get(k)).await
    }

    async fn get_cached(&self, k: &str) -> Result<KeyValue> {
        self.inner.get_cached(k).await
    }

    fn forget_cached(&self, prefix: &str) {
        self.inner.forget_cached(prefix);
    }

    async fn start_cache(&self, prefix: &str) {
        self.inner.start_cache(prefix).await;
    }

    async fn list(&self, prefix: &str, opts: ListOptions) -> Result<ListResult> {
        let (revision, limit, start) = (opts.revision, opts.limit, opts.start_key.clone());
        let attributes = move || {
            vec![
                Attribute::new("key", prefix.to_string()),
                Attribute::new("resourceVersion", resource_version(revision)),
                Attribute::new("limit", i64::try_from(limit).unwrap_or(i64::MAX)),
                Attribute::new("continue", start.unwrap_or_default()),
            ]
        };
        let list = self.inner.list(prefix, opts);
        self.span("List(recursive=true)", attributes, list).await
    }

    async fn create(&self, k: &str, value: Bytes, ttl: Option<Duration>) -> Result<KeyValue> {
        let len = i64::try_from(value.len()).unwrap_or(i64::MAX);
        let attributes = move || {
            vec![
                Attribute::new("key", k.to_string()),
                Attribute::new("len", len),
            ]
        };
        let create = self.inner.create(k, value, ttl);
        self.span("Create", attributes, create).await
    }

    async fn guaranteed_update(
        &self,
        k: &str,
        ignore_not_found: bool,
        update: UpdateFn<'_>,
    ) -> Result<KeyValue> {
        let update = self.inner.guaranteed_update(k, ignore_not_found, update);
        self.span("GuaranteedUpdate", key(k), update).await
    }

    async fn delete(&self, k: &str, check: DeleteCheck<'_>) -> Result<KeyValue> {
        self.span("Delete", key(k), self.inner.delete(k, check))
            .await
    }

    async fn watch(&self, prefix: &str, after: Option<Revision>) -> Result<WatchStream> {
        self.inner.watch(prefix, after).await
    }

    async fn watch_without_heartbeats(
        &self,
        prefix: &str,
        after: Option<Revision>,
    ) -> Result<WatchStream> {
        self.inner.watch_without_heartbeats(prefix, after).await
    }

    async fn current_revision(&self) -> Result<Revision> {
        self.inner.current_revision().await
    }

    async fn compact(&self, revision: Revision) -> Result<()> {
        self.inner.compact(revision).await
    }

    async fn check_health(&self) -> Result<()> {
        self.inner.check_health().await
    }
}
