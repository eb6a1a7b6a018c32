//! GET and LIST (handlers/get.go): objects, lists with `"items": []`, Tables and
//! PartialObjectMetadata(List). May use: registry, api.

use super::table::{include, partial, table};
use super::{respond, respond_object, status_response, Req};
use crate::api::Body;
use crate::endpoints::negotiate::respond_bytes;
use crate::endpoints::negotiate::Output;
use crate::endpoints::status::error_response;
use crate::registry::{Decoded, GenericStore, ListOptions};
use bytes::Bytes;
use futures::StreamExt;
use http::Response;
use http_body_util::BodyExt;
use serde_json::{json, Value};
use std::sync::Arc;

/// GET one object.
pub(crate) async fn get(store: &GenericStore, req: &Req<'_>) -> Response<Body> {
    let ctx = match req.query.context(req.namespace(), "GetOptions") {
        Ok(c) => c,
        Err(s) => return status_response(s),
    };
    let shared = match store.get_shared(&ctx, req.name()).await {
        Ok(o) => o,
        Err(e) => return error_response(&e),
    };
    let obj = &shared.obj;
    match req.out {
        Output::Table(v) => {
            let inc = match include(req.query.get("includeObject")) {
                Ok(i) => i,
                Err(s) => return status_response(s),
            };
            let rv = obj
                .pointer("/metadata/resourceVersion")
                .cloned()
                .unwrap_or(Value::Null);
            respond(
                req,
                200,
                &table(
                    store,
                    std::slice::from_ref(obj),
                    json!({ "resourceVersion": rv }),
                    v,
                    inc,
                    true,
                ),
                &[],
            )
        }
        Output::Metadata(v) => respond(req, 200, &partial(obj, v), &[]),
        Output::Json | Output::Yaml => respond_object(req, 200, &shared, &[]),
    }
}

/// LIST a collection (one page with `limit`).
pub(crate) async fn list(store: &GenericStore, req: &Req<'_>) -> Response<Body> {
    let (ctx, opts) = match (
        req.query.context(req.namespace(), "ListOptions"),
        req.query.list_options(),
    ) {
        (Ok(c), Ok(o)) => (
            c,
            ListOptions {
                metadata_only: matches!(req.out, Output::Metadata(_)),
                collector_events: req.collector_events,
                ..o
            },
        ),
        (Err(s), _) | (_, Err(s)) => return status_response(s),
    };
    let page = match store.list(&ctx, &opts).await {
        Ok(p) => p,
        Err(e) => return error_response(&e),
    };
    let mut meta = json!({ "resourceVersion": page.resource_version });
    if let Some(c) = &page.continue_token {
        meta["continue"] = Value::from(c.clone());
    }
    if let Some(r) = page.remaining {
        meta["remainingItemCount"] = Value::from(r);
    }
    let info = store.strategy().info();
    match req.out {
        Output::Table(v) => {
            let inc = match include(req.query.get("includeObject")) {
                Ok(i) => i,
                Err(s) => return status_response(s),
            };
            let items: Vec<Value> = page.items.iter().map(|d| d.obj.clone()).collect();
            respond(req, 200, &table(store, &items, meta, v, inc, true), &[])
        }
        Output::Metadata(v) => {
            let items: Vec<Value> = page.items.iter().map(|d| partial(&d.obj, v)).collect();
            let list = json!({ "kind": "PartialObjectMetadataList", "apiVersion": format!("meta.k8s.io/{v}"), "metadata": meta, "items": items });
            respond(req, 200, &list, &[])
        }
        Output::Json => {
            let head = json!({
                "kind": format!("{}List", info.kind),
                "apiVersion": info.api_version(),
                "metadata": meta,
            });
            list_response(&head, page.items)
        }
        Output::Yaml => {
            let items: Vec<&Value> = page.items.iter().map(|d| &d.obj).collect();
            let list = json!({
                "kind": format!("{}List", info.kind),
                "apiVersion": info.api_version(),
                "metadata": meta,
                "items": items,
            });
            respond(req, 200, &list, &[])
        }
    }
}

/// Bodies up to this size go out as one buffer; larger LIST bodies are streamed in chunks of
/// about this size, encoded as the client takes them.
const LIST_CHUNK: usize = 64 * 1024;

/// A JSON list response: `head` with `"items": [...]` appended, spliced from each item's
/// memoized JSON (the same bytes as serializing the whole list). A large list is streamed: a
/// client reading it slowly holds its items (shared with the memo) and one chunk, never a
/// second copy of the whole list.
fn list_response(head: &Value, items: Vec<Arc<Decoded>>) -> Response<Body> {
    let len: usize = items.iter().map(|d| d.json().len() + 1).sum();
    let chunks = ListChunks::new(head, items);
    if len <= LIST_CHUNK {
        return respond_bytes(200, chunks.concat(), "application/json", &[]);
    }
    let frames = futures::stream::iter(chunks)
        .map(|chunk| Ok::<_, std::io::Error>(hyper::body::Frame::data(chunk)));
    let mut resp = Response::new(http_body_util::StreamBody::new(frames).boxed_unsync());
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    resp
}

/// The chunks of a JSON list body (see [`list_response`]), each item encoded and let go as
/// its chunk is made.
struct ListChunks {
    head: Option<Vec<u8>>,
    items: std::vec::IntoIter<Arc<Decoded>>,
    first: bool,
    done: bool,
}

impl ListChunks {
    fn new(head: &Value, items: Vec<Arc<Decoded>>) -> ListChunks {
        let mut out = serde_json::to_vec(head).unwrap_or_default();
        out.pop(); // the head's closing brace
        out.extend_from_slice(b",\"items\":[");
        ListChunks {
            head: Some(out),
            items: items.into_iter(),
            first: true,
            done: false,
        }
    }

    /// The whole body in one buffer.
    fn concat(self) -> Bytes {
        let mut out = Vec::new();
        for chunk in self {
            out.extend_from_slice(&chunk);
        }
        Bytes::from(out)
    }
}

impl Iterator for ListChunks {
    type Item = Bytes;

    fn next(&mut self) -> Option<Bytes> {
        if self.done {
            return None;
        }
        let mut out = self.head.take().unwrap_or_default();
        out.reserve(LIST_CHUNK);
        while out.len() < LIST_CHUNK {
            let Some(item) = self.items.next() else {
                out.extend_from_slice(b"]}");
                self.done = true;
                break;
            };
            if !self.first {
                out.push(b',');
            }
            self.first = false;
            out.extend_from_slice(item.json());
        }
        Some(Bytes::from(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spliced_list_is_byte_identical_to_serializing_the_list() {
        let head = json!({"kind": "LeaseList", "apiVersion": "coordination.k8s.io/v1",
                          "metadata": {"resourceVersion": "7"}});
        let objs = [
            json!({"metadata": {"name": "a"}}),
            json!({"n": "b\"q", "x": [1, 2]}),
        ];
        let items: Vec<Arc<Decoded>> = objs
            .iter()
            .cloned()
            .map(|o| Arc::new(Decoded::new(o)))
            .collect();
        let mut whole = head.clone();
        whole["items"] = json!(objs);
        assert_eq!(
            ListChunks::new(&head, items).concat(),
            serde_json::to_vec(&whole).unwrap()
        );
        let mut empty = head.clone();
        empty["items"] = json!([]);
        assert_eq!(
            ListChunks::new(&head, vec![]).concat(),
            serde_json::to_vec(&empty).unwrap()
        );
    }

    #[test]
    fn large_list_is_streamed_in_bounded_chunks_of_the_same_bytes() {
        let head = json!({"kind": "ConfigMapList", "apiVersion": "v1", "metadata": {}});
        let objs: Vec<Value> = (0..2000)
            .map(|i| json!({"metadata": {"name": format!("cm-{i}")}, "data": {"k": "v".repeat(100)}}))
            .collect();
        let items: Vec<Arc<Decoded>> = objs
            .iter()
            .cloned()
            .map(|o| Arc::new(Decoded::new(o)))
            .collect();
        let chunks: Vec<Bytes> = ListChunks::new(&head, items).collect();
        assert!(chunks.len() > 3, "{} chunks", chunks.len());
        // No chunk holds much more than the bound (one item at most beyond it).
        assert!(chunks.iter().all(|c| c.len() < LIST_CHUNK + 1024));
        let mut whole = head.clone();
        whole["items"] = json!(objs);
        assert_eq!(chunks.concat(), serde_json::to_vec(&whole).unwrap());
    }
}
