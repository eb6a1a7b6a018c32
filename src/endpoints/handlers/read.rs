//! GET and LIST (handlers/get.go): objects, lists with `"items": []`, Tables and
//! PartialObjectMetadata(List). May use: registry, api.

use super::table::{include, partial, table};
use super::{respond, respond_object, status_response, Req};
use crate::api::Body;
use crate::endpoints::negotiate::respond_bytes;
use crate::endpoints::negotiate::Output;
use crate::endpoints::status::error_response;
use crate::registry::{Decoded, GenericStore};
use bytes::Bytes;
use http::Response;
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
        (Ok(c), Ok(o)) => (c, o),
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
            respond_bytes(200, list_json(&head, &page.items), "application/json", &[])
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

/// `head` with `"items": [...]` appended, spliced from each item's memoized JSON: the same
/// bytes as serializing the whole list, without encoding every item again.
fn list_json(head: &Value, items: &[Arc<Decoded>]) -> Bytes {
    let mut out = serde_json::to_vec(head).unwrap_or_default();
    out.pop(); // the head's closing brace
    let len: usize = items.iter().map(|d| d.json().len() + 1).sum();
    out.reserve(len + 12);
    out.extend_from_slice(b",\"items\":[");
    for (i, d) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(d.json());
    }
    out.extend_from_slice(b"]}");
    Bytes::from(out)
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
            list_json(&head, &items),
            serde_json::to_vec(&whole).unwrap()
        );
        let mut empty = head.clone();
        empty["items"] = json!([]);
        assert_eq!(list_json(&head, &[]), serde_json::to_vec(&empty).unwrap());
    }
}
