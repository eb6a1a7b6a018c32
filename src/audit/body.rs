//! What the audit reads of bodies: request bodies (JSON, YAML or protobuf) decoded into the
//! request object or just its metadata, managed fields dropped when the policy says so, and
//! the response body wrapper that writes ResponseComplete when the body ends, capturing it for
//! the response object at level RequestResponse. May use: api.

use super::context::Context;
use super::event::ObjectReference;
use crate::api::Body;
use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http::HeaderMap;
use hyper::body::{Frame, SizeHint};
use serde_json::Value;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

/// Turns a protobuf request body into its JSON object (None when it cannot): the
/// endpoints' decoder, handed in by whoever builds the [`super::Auditor`].
pub(crate) type ProtobufDecoder = fn(&[u8]) -> Option<Value>;

/// The largest response body recorded as responseObject; larger ones are left out rather
/// than held in memory twice.
const MAX_RESPONSE_OBJECT: usize = 16 << 20;

pub(super) fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| media_type(ct).ends_with("json"))
}

fn media_type(content_type: &str) -> &str {
    content_type.split(';').next().unwrap_or("").trim()
}

fn content_type(headers: &HeaderMap) -> &str {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map_or("application/json", media_type)
}

/// A JSON, YAML or protobuf body as a JSON value (JSON when no content type is given).
pub(super) fn decode(headers: &HeaderMap, body: &[u8], protobuf: ProtobufDecoder) -> Option<Value> {
    let ct = content_type(headers);
    if ct.ends_with("json") {
        serde_json::from_slice(body).ok()
    } else if ct.ends_with("yaml") {
        serde_yaml::from_slice(body).ok()
    } else if ct == "application/vnd.kubernetes.protobuf" {
        protobuf(body)
    } else {
        None
    }
}

/// The metadata fields an object reference takes from a request object.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(super) struct ReferenceMeta {
    name: String,
    namespace: String,
    uid: String,
    resource_version: String,
}

#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct WithMeta {
    metadata: ReferenceMeta,
}

/// The object reference's fields from a body; a JSON body is scanned, not built as a tree.
pub(super) fn reference_of(
    headers: &HeaderMap,
    body: &[u8],
    protobuf: ProtobufDecoder,
) -> Option<ReferenceMeta> {
    if content_type(headers).ends_with("json") {
        return serde_json::from_slice::<WithMeta>(body)
            .ok()
            .map(|o| o.metadata);
    }
    let object = decode(headers, body, protobuf)?;
    serde_json::from_value::<WithMeta>(object)
        .ok()
        .map(|o| o.metadata)
}

/// copyWithoutManagedFields in k8s: an object's, a list's items' and a table's rows'.
pub(super) fn drop_managed_fields(object: &mut Value) {
    fn strip(object: &mut Value) {
        if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.shift_remove("managedFields");
        }
    }
    strip(object);
    if let Some(items) = object.get_mut("items").and_then(Value::as_array_mut) {
        items.iter_mut().for_each(strip);
    }
    if let Some(rows) = object.get_mut("rows").and_then(Value::as_array_mut) {
        for row in rows {
            if let Some(o) = row.get_mut("object") {
                strip(o);
            }
        }
    }
}

/// LogRequestObject in k8s fills what the URL did not say from the object's metadata.
pub(super) fn fill_object_ref(reference: Option<&mut ObjectReference>, meta: &ReferenceMeta) {
    let Some(r) = reference else { return };
    for (field, value) in [
        (&mut r.namespace, &meta.namespace),
        (&mut r.name, &meta.name),
        (&mut r.uid, &meta.uid),
        (&mut r.resource_version, &meta.resource_version),
    ] {
        if field.is_empty() {
            field.clone_from(value);
        }
    }
}

/// A response body that writes ResponseComplete when it ends, capturing what it sends when
/// the response object is recorded.
pub(super) struct AuditedBody {
    inner: Body,
    ctx: Option<Arc<Context>>,
    captured: Option<Vec<Bytes>>,
    captured_len: usize,
}

impl AuditedBody {
    /// Wraps `inner`; `capture` keeps what it sends for the response object.
    pub(super) fn new(inner: Body, ctx: Arc<Context>, capture: bool) -> AuditedBody {
        AuditedBody {
            inner,
            ctx: Some(ctx),
            captured: capture.then(Vec::new),
            captured_len: 0,
        }
    }

    fn complete(&mut self) {
        if let Some(ctx) = self.ctx.take() {
            ctx.complete(self.captured.take());
        }
    }
}

impl hyper::body::Body for AuditedBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let (Some(chunks), Some(data)) = (this.captured.as_mut(), frame.data_ref()) {
                    this.captured_len += data.len();
                    if this.captured_len > MAX_RESPONSE_OBJECT {
                        this.captured = None;
                    } else {
                        chunks.push(data.clone());
                    }
                }
            }
            Poll::Ready(None) | Poll::Ready(Some(Err(_))) => this.complete(),
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for AuditedBody {
    fn drop(&mut self) {
        self.complete();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::audit::test_headers as headers;

    #[test]
    fn managed_fields_dropped_from_objects_lists_and_tables() {
        let mut v = serde_json::json!({
            "metadata": {"name": "a", "managedFields": [{}], "uid": "u"},
            "items": [{"metadata": {"managedFields": [], "name": "i"}}],
            "rows": [{"object": {"metadata": {"managedFields": []}}}],
        });
        drop_managed_fields(&mut v);
        assert_eq!(
            v,
            serde_json::json!({
                "metadata": {"name": "a", "uid": "u"},
                "items": [{"metadata": {"name": "i"}}],
                "rows": [{"object": {"metadata": {}}}],
            })
        );
        assert_eq!(
            serde_json::to_string(&v["metadata"]).unwrap(),
            r#"{"name":"a","uid":"u"}"#,
            "order kept"
        );
    }

    #[test]
    fn bodies_of_every_content_type() {
        let none: ProtobufDecoder = |_| None;
        let yaml = headers(&[("content-type", "application/apply-patch+yaml")]);
        let v = decode(&yaml, b"apiVersion: v1\nkind: ConfigMap\n", none).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap"})
        );
        let pb = headers(&[("content-type", "application/vnd.kubernetes.protobuf")]);
        assert!(decode(&pb, b"k8s\0", none).is_none());
        let some: ProtobufDecoder = |_| Some(serde_json::json!({"metadata": {"name": "pb"}}));
        assert_eq!(reference_of(&pb, b"k8s\0", some).unwrap().name, "pb");
        let text = headers(&[("content-type", "text/plain")]);
        assert!(decode(&text, b"{}", some).is_none());
        let mut r = ObjectReference {
            name: "url-name".into(),
            ..ObjectReference::default()
        };
        let json = headers(&[("content-type", "application/json")]);
        let body = br#"{"data": {"x": [1, {"y": 2}]}, "metadata": {"name": "n", "namespace": "ns", "resourceVersion": "7", "labels": {"a": "b"}}}"#;
        fill_object_ref(Some(&mut r), &reference_of(&json, body, none).unwrap());
        assert_eq!(
            (
                r.name.as_str(),
                r.namespace.as_str(),
                r.resource_version.as_str()
            ),
            ("url-name", "ns", "7")
        );
    }
}
