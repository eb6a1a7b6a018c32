//! WATCH (handlers/watch.go): a 200 stream of compact JSON WatchEvents, one per line;
//! BOOKMARKs as objects of the watched kind carrying only metadata.resourceVersion (and the
//! `k8s.io/initial-events-end` annotation for watch-list), periodic ones with
//! allowWatchBookmarks (bookmarks.rs); errors after the stream started as
//! an ERROR event with a Status. Ends at `timeoutSeconds` (default: random in [30, 60) min,
//! like kube's minRequestTimeout), when the server shuts down, or after an ERROR.
//! May use: registry, api, metrics.

use super::bookmarks::{with_bookmarks, BOOKMARK_FREQUENCY};
use super::table::{include, partial, table, Include};
use super::{status_response, Req};
use crate::api::Body;
use crate::endpoints::negotiate::Output;
use crate::endpoints::status::{error_response, to_status};
use crate::registry::codec::memo::spliced_line;
use crate::registry::{Decoded, GenericStore, WatchEvent};
use bytes::Bytes;
use futures::StreamExt;
use http::{header, HeaderValue, Response};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

/// Default watch timeout bounds (minRequestTimeout 1800 s, up to twice that).
const MIN_TIMEOUT_SECS: u64 = 1800;

/// Serves a watch.
pub(crate) async fn watch(
    store: &Arc<crate::registry::GenericStore>,
    req: &Req<'_>,
) -> Response<Body> {
    let (ctx, mut opts) = match (
        req.query.context(req.namespace(), "ListOptions"),
        req.query.list_options(),
    ) {
        (Ok(c), Ok(o)) => (c, o),
        (Err(s), _) | (_, Err(s)) => return status_response(s),
    };
    // A named watch (`.../leases/x?watch=1`, deprecated form) selects that one object.
    if !req.name().is_empty() && opts.field.exact("metadata.name").is_none() {
        opts.field
            .requirements
            .push(crate::api::selectors::FieldRequirement {
                field: "metadata.name".into(),
                negated: false,
                value: req.name().to_string(),
            });
    }
    opts.omit_renewals = req.omit_renewals;
    opts.collector_events = req.collector_events;
    if opts.omit_renewals {
        tracing::debug!(resource = %req.ctx.info.resource, "watch leaves out renewals");
    }
    let timeout = match req.query.int("timeoutSeconds") {
        Ok(Some(t)) if t > 0 => Duration::from_secs(t as u64),
        Ok(_) => {
            use rand::Rng;
            Duration::from_secs(
                rand::thread_rng().gen_range(MIN_TIMEOUT_SECS..2 * MIN_TIMEOUT_SECS),
            )
        }
        Err(s) => return status_response(s),
    };
    let inc = match include(req.query.get("includeObject")) {
        Ok(i) => i,
        Err(s) => return status_response(s),
    };
    let deadline = deadline_after(tokio::time::Instant::now(), timeout);
    let events = match store.watch_with_progress(&ctx, &opts).await {
        Ok((events, progress)) if opts.allow_bookmarks => {
            with_bookmarks(events, progress, deadline, BOOKMARK_FREQUENCY)
        }
        Ok((events, _)) => events,
        Err(e) => return error_response(&e),
    };
    let watcher = crate::metrics::global()
        .watch
        .watcher(&req.ctx.info, &store.strategy().info().kind);
    let encoder = Encoder {
        store: Arc::clone(store),
        out: req.out,
        include: inc,
        first: true,
        watcher,
    };
    let shutdown = req.ctx.shutdown.clone();
    let lines = events
        .scan(encoder, |enc, ev| {
            let line = enc.line(ev);
            enc.watcher.sent(line.len());
            futures::future::ready(Some(line))
        })
        .take_until(tokio::time::sleep_until(deadline))
        .take_until(shutdown.cancelled_owned())
        .map(|line| Ok::<_, std::io::Error>(hyper::body::Frame::data(line)));
    let body = http_body_util::StreamBody::new(lines).boxed_unsync();
    let mut resp = Response::new(body);
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

/// How long a watch may last at most: a `timeoutSeconds` beyond it (any up to i64::MAX is
/// valid) waits this long instead of overflowing the clock.
const MAX_TIMEOUT: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// The deadline of a watch that started at `now` and lasts `timeout` (at most [`MAX_TIMEOUT`]).
fn deadline_after(now: tokio::time::Instant, timeout: Duration) -> tokio::time::Instant {
    now.checked_add(timeout.min(MAX_TIMEOUT))
        .or_else(|| now.checked_add(Duration::from_secs(3600)))
        .unwrap_or(now)
}

/// Encodes events as lines, remembering whether the Table columns were sent.
struct Encoder {
    store: Arc<GenericStore>,
    out: Output,
    include: Include,
    first: bool,
    /// Counts the events sent; counts the watch out of the open ones when the stream ends.
    watcher: crate::metrics::watch::Watcher,
}

impl Encoder {
    fn object(&mut self, obj: &Value) -> Value {
        match self.out {
            Output::Table(v) => {
                let meta = json!({ "resourceVersion": obj.pointer("/metadata/resourceVersion").cloned().unwrap_or(Value::Null) });
                let t = table(
                    &self.store,
                    std::slice::from_ref(obj),
                    meta,
                    v,
                    self.include,
                    self.first,
                );
                self.first = false;
                t
            }
            Output::Metadata(v) => partial(obj, v),
            _ => obj.clone(),
        }
    }

    /// `{"type":…,"object":…}` + newline; plain JSON objects are spliced in from their
    /// memoized encoding (the same bytes serde would write).
    fn object_line(&mut self, kind: &'static str, obj: &Decoded) -> Bytes {
        match self.out {
            Output::Json => obj.event_line(kind),
            Output::Metadata(v) => spliced_line(kind, &partial_json(obj, v)),
            _ => event_line(kind, self.object(&obj.obj)),
        }
    }

    fn line(&mut self, ev: WatchEvent) -> Bytes {
        let (kind, object) = match ev {
            WatchEvent::Added(o) => return self.object_line("ADDED", &o),
            WatchEvent::Modified(o) => return self.object_line("MODIFIED", &o),
            WatchEvent::Deleted(o) => return self.object_line("DELETED", &o),
            WatchEvent::Bookmark {
                resource_version,
                initial_events_end,
            } => {
                let info = self.store.strategy().info();
                let mut meta =
                    json!({ "resourceVersion": resource_version, "creationTimestamp": null });
                if initial_events_end {
                    meta["annotations"] = json!({ "k8s.io/initial-events-end": "true" });
                }
                let (kind, api_version) = match self.out {
                    Output::Metadata(v) => (
                        "PartialObjectMetadata".to_string(),
                        format!("meta.k8s.io/{v}"),
                    ),
                    _ => (info.kind.to_string(), info.api_version()),
                };
                (
                    "BOOKMARK",
                    json!({ "kind": kind, "apiVersion": api_version, "metadata": meta }),
                )
            }
            WatchEvent::Error(e) => (
                "ERROR",
                serde_json::to_value(to_status(&e)).unwrap_or(Value::Null),
            ),
        };
        event_line(kind, object)
    }
}

/// `partial(obj, version)` encoded, the metadata copied from the object's own encoding.
fn partial_json(obj: &Decoded, version: &str) -> Vec<u8> {
    let mut json = format!(
        "{{\"kind\":\"PartialObjectMetadata\",\"apiVersion\":\"meta.k8s.io/{version}\",\"metadata\":"
    )
    .into_bytes();
    // Served objects always have a metadata object; `{}` stands in for a missing one.
    json.extend_from_slice(obj.metadata_json().unwrap_or(b"{}"));
    json.push(b'}');
    json
}

/// One watch event line encoded by serde.
fn event_line(kind: &str, object: Value) -> Bytes {
    let mut bytes =
        serde_json::to_vec(&json!({ "type": kind, "object": object })).unwrap_or_default();
    bytes.push(b'\n');
    Bytes::from(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_timeout_seconds_waits_the_longest_watch_instead_of_overflowing() {
        // Found by fuzzing (target query): `?watch=1&timeoutSeconds=9223372036854775807`
        // panicked adding the timeout to the clock.
        let now = tokio::time::Instant::now();
        let huge = Duration::from_secs(i64::MAX as u64);
        assert_eq!(deadline_after(now, huge) - now, MAX_TIMEOUT);
        let short = Duration::from_secs(5);
        assert_eq!(deadline_after(now, short) - now, short);
    }

    #[test]
    fn spliced_event_line_is_byte_identical_to_serde() {
        let obj = json!({"kind": "Lease", "metadata": {"name": "a\"b", "resourceVersion": "9"}});
        let json = serde_json::to_vec(&obj).unwrap();
        assert_eq!(spliced_line("MODIFIED", &json), event_line("MODIFIED", obj));
    }

    #[test]
    fn spliced_metadata_line_is_byte_identical_to_partial_object_metadata() {
        for obj in [
            json!({"kind": "Lease", "metadata": {"name": "a", "labels": {"x": "y"}}, "spec": {}}),
            json!({"spec": {}, "metadata": {"name": "last", "resourceVersion": "3"}}),
            json!({"kind": "Lease", "spec": {}}),
        ] {
            let d = Decoded::new(obj.clone());
            assert_eq!(
                spliced_line("ADDED", &partial_json(&d, "v1")),
                event_line("ADDED", partial(&obj, "v1")),
                "{obj}"
            );
        }
    }
}
