//! DELETE and DELETECOLLECTION (handlers/delete.go): DeleteOptions from the body or the
//! query (preconditions, dryRun, propagationPolicy, orphanDependents; validated like
//! ValidateDeleteOptions), the deleted object, the object still pending deletion (202 for the
//! legacy orphanDependents=false) or a Success Status, and the list of deleted objects for a
//! collection. May use: registry, api.

use super::{respond, respond_object, status_response, Req};
use crate::api::{Body, GroupVersionKind, Status, StatusDetails};
use crate::endpoints::negotiate::{content_type, json_to_value, yaml_to_json};
use crate::endpoints::status::error_response;
use crate::registry::{DeleteOptions, GenericStore};
use http::Response;
use serde_json::{json, Value};

/// DeleteOptions from the body (JSON, YAML or protobuf; an undecodable protobuf body is
/// ignored) or, when there is no body, from the query (handlers/delete.go).
fn delete_options(req: &Req<'_>) -> Result<(DeleteOptions, Option<bool>), Status> {
    let mut body = Value::Null;
    if !req.body.is_empty() {
        body = match content_type(req.headers).as_str() {
            "application/yaml" => yaml_to_json(req.body)?,
            "application/vnd.kubernetes.protobuf" => {
                let hint = GroupVersionKind::new("meta.k8s.io", "v1", "DeleteOptions");
                crate::endpoints::protobuf::decode(req.body, &hint).unwrap_or(Value::Null)
            }
            _ => json_to_value(req.body)?,
        };
    }
    let text = |v: &Value, ptr: &str| v.pointer(ptr).and_then(Value::as_str).map(String::from);
    let dry_run = body
        .get("dryRun")
        .and_then(Value::as_array)
        .map(|a| a.iter().any(|v| v == "All"));
    let (propagation_policy, orphan_dependents) = if req.body.is_empty() {
        (
            req.query.get("propagationPolicy").map(String::from),
            req.query.bool("orphanDependents")?,
        )
    } else {
        (
            text(&body, "/propagationPolicy"),
            body.get("orphanDependents").and_then(Value::as_bool),
        )
    };
    Ok((
        DeleteOptions {
            uid: text(&body, "/preconditions/uid"),
            resource_version: text(&body, "/preconditions/resourceVersion"),
            propagation_policy,
            orphan_dependents,
        },
        dry_run,
    ))
}

/// DELETE one object.
pub(crate) async fn delete(store: &GenericStore, req: &Req<'_>) -> Response<Body> {
    let (mut ctx, (opts, body_dry_run)) = match (
        req.query
            .context(req.namespace(), "DeleteOptions")
            .map_err(Status::from),
        delete_options(req),
    ) {
        (Ok(c), Ok(o)) => (c, o),
        (Err(s), _) | (_, Err(s)) => return status_response(s),
    };
    ctx.dry_run |= body_dry_run.unwrap_or(false);
    ctx.admission = super::write::admission_of(req, &ctx);
    let info = store.strategy().info();
    let result = store.delete(&ctx, req.name(), &opts).await;
    super::write::admitted(&ctx, Vec::new(), |warnings| match result {
        Ok(w) if w.created_or_gone && !store.strategy().return_deleted_object() => {
            let uid = w
                .object
                .obj
                .pointer("/metadata/uid")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let status = Status::success(StatusDetails {
                name: req.name().to_string(),
                group: info.group.to_string(),
                kind: info.resource.to_string(),
                uid,
                ..Default::default()
            });
            respond(
                req,
                200,
                &serde_json::to_value(status).unwrap_or(Value::Null),
                warnings,
            )
        }
        // 202 when the object stays and the client asked for cascading deletion through the
        // legacy orphanDependents=false (kube keeps this for old clients).
        Ok(w) if !w.created_or_gone && opts.orphan_dependents == Some(false) => {
            respond_object(req, 202, &w.object, warnings)
        }
        Ok(w) => respond_object(req, 200, &w.object, warnings),
        Err(e) => crate::endpoints::status::error_response_warning(&e, warnings),
    })
}

/// DELETE a collection: every object matching the selectors, one by one.
pub(crate) async fn delete_collection(store: &GenericStore, req: &Req<'_>) -> Response<Body> {
    let (mut ctx, list_opts, (opts, body_dry_run)) = match (
        req.query
            .context(req.namespace(), "DeleteOptions")
            .map_err(Status::from),
        req.query.list_options().map_err(Status::from),
        delete_options(req),
    ) {
        (Ok(c), Ok(l), Ok(o)) => (c, l, o),
        (Err(s), _, _) | (_, Err(s), _) | (_, _, Err(s)) => return status_response(s),
    };
    ctx.dry_run |= body_dry_run.unwrap_or(false);
    ctx.admission = super::write::admission_of(req, &ctx);
    if let Err(e) = opts.validate() {
        return error_response(&e);
    }
    let mut list_opts = list_opts;
    list_opts.limit = 0;
    list_opts.continue_token = None;
    let page = match store.list(&ctx, &list_opts).await {
        Ok(p) => p,
        Err(e) => return error_response(&e),
    };
    let mut deleted = Vec::new();
    for item in page.items {
        let obj = &item.obj;
        let name = obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let mut item_ctx = ctx.clone();
        item_ctx.namespace = obj
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        match store.delete(&item_ctx, &name, &opts).await {
            Ok(w) => deleted.push(w.object.obj.clone()),
            Err(crate::registry::Error::NotFound { .. }) => {}
            Err(e) => return error_response(&e),
        }
    }
    let info = store.strategy().info();
    let list = json!({
        "kind": format!("{}List", info.kind),
        "apiVersion": info.api_version(),
        "metadata": { "resourceVersion": page.resource_version },
        "items": deleted,
    });
    respond(req, 200, &list, &[])
}
