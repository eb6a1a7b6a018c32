//! Spans around the backend's operations for a traced request (upstream's etcd3 store opens
//! "Create etcd3", "GuaranteedUpdate etcd3", "List(recursive=true) etcd3" and so on with
//! tracing.Start). Put in front of the backend only when tracing is on, so an untraced server
//! pays nothing; with tracing on, a span is made only under the request's sampled span (the
//! task's current OpenTelemetry context), else the call goes straight through.
//! May use: api (its trace spans).

use super::{
    DeleteCheck, KeyValue, ListOptions, ListResult, ListRevision, Result, Revision, Storage,
    UpdateFn, WatchStream,
};
use crate::api::trace::in_fallible_span;
use bytes::Bytes;
use opentelemetry::KeyValue as Attribute;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// The operations that make spans.
#[derive(Clone, Copy)]
enum Op {
    Get,
    List,
    Create,
    GuaranteedUpdate,
    Delete,
}

/// A backend whose reads and writes are spans of the traced requests that make them.
pub(super) struct Traced {
    inner: Arc<dyn Storage>,
    /// Span names, `<operation> <store>` (`etcd3` as upstream, or `embedded`), by [`Op`].
    names: &'static [&'static str; 5],
}

const ETCD3: [&str; 5] = [
    "Get etcd3",
    "List(recursive=true) etcd3",
    "Create etcd3",
    "GuaranteedUpdate etcd3",
    "Delete etcd3",
];
const EMBEDDED: [&str; 5] = [
    "Get embedded",
    "List(recursive=true) embedded",
    "Create embedded",
    "GuaranteedUpdate embedded",
    "Delete embedded",
];

impl Traced {
    /// Wraps `inner`; `etcd`: it is etcd (spans named `... etcd3`), else the embedded store.
    pub(super) fn new(inner: Arc<dyn Storage>, etcd: bool) -> Traced {
        let names = if etcd { &ETCD3 } else { &EMBEDDED };
        Traced { inner, names }
    }

    async fn span<F, A, T>(&self, op: Op, attributes: A, fut: F) -> Result<T>
    where
        F: Future<Output = Result<T>>,
        A: FnOnce() -> Vec<Attribute>,
    {
        in_fallible_span(self.names[op as usize], attributes, fut).await
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
        self.span(Op::Get, key(k), self.inner.get(k)).await
    }

    async fn get_cached(&self, k: &str) -> Result<KeyValue> {
        self.inner.get_cached(k).await
    }

    fn remembered(&self, k: &str) -> Option<KeyValue> {
        self.inner.remembered(k)
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
        self.span(Op::List, attributes, list).await
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
        self.span(Op::Create, attributes, create).await
    }

    async fn guaranteed_update(
        &self,
        k: &str,
        ignore_not_found: bool,
        update: UpdateFn<'_>,
    ) -> Result<KeyValue> {
        let update = self.inner.guaranteed_update(k, ignore_not_found, update);
        self.span(Op::GuaranteedUpdate, key(k), update).await
    }

    async fn delete(&self, k: &str, check: DeleteCheck<'_>) -> Result<KeyValue> {
        self.span(Op::Delete, key(k), self.inner.delete(k, check))
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

    fn close(&self) {
        self.inner.close();
    }

    async fn count(&self, prefix: &str) -> Result<i64> {
        self.inner.count(prefix).await
    }

    async fn db_size(&self) -> Result<Option<(String, i64)>> {
        self.inner.db_size().await
    }
}
