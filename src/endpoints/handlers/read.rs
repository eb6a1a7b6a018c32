//! GET and LIST (handlers/get.go): objects, lists with `"items": []`, Tables and
//! PartialObjectMetadata(List). May use: registry, api.

use super::table::{include, partial, table};
use super::{respond, status_response, Req};
use crate::api::Body;
use crate::endpoints::negotiate::Output;
use crate::endpoints::status::error_response;
use crate::registry::GenericStore;
use http::Response;
use serde_json::{json, Value};

/// GET one object.
pub(crate) async fn get(store: &GenericStore, req: &Req<'_>) -> Response<Body> {
    let ctx = match req
        .query
        .context(req.namespace(), &req.ctx.user, "GetOptions")
    {
        Ok(c) => c,
        Err(s) => return status_response(s),
    };
    let obj = match store.get(&ctx, req.name()).await {
        Ok(o) => o,
        Err(e) => return error_response(&e),
    };
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
                    &[obj],
                    json!({ "resourceVersion": rv }),
                    v,
                    inc,
                    true,
                ),
                &[],
            )
        }
        Output::Metadata(v) => respond(req, 200, &partial(&obj, v), &[]),
        _ => respond(req, 200, &obj, &[]),
    }
}

/// LIST a collection (one page with `limit`).
pub(crate) async fn list(store: &GenericStore, req: &Req<'_>) -> Response<Body> {
    let (ctx, opts) = match (
        req.query
            .context(req.namespace(), &req.ctx.user, "ListOptions"),
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
            respond(
                req,
                200,
                &table(store, &page.items, meta, v, inc, true),
                &[],
            )
        }
        Output::Metadata(v) => {
            let items: Vec<Value> = page.items.iter().map(|o| partial(o, v)).collect();
            let list = json!({ "kind": "PartialObjectMetadataList", "apiVersion": format!("meta.k8s.io/{v}"), "metadata": meta, "items": items });
            respond(req, 200, &list, &[])
        }
        _ => {
            let list = json!({
                "kind": format!("{}List", info.kind),
                "apiVersion": info.api_version(),
                "metadata": meta,
                "items": page.items,
            });
            respond(req, 200, &list, &[])
        }
    }
}
