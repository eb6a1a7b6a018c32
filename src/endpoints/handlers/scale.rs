//! The scale subresource of custom resources (apiextensions-apiserver's ScaleREST): an
//! autoscaling/v1 Scale read from the paths the CRD names, and written back by GET, PUT and
//! PATCH; the write is an update of the object itself, so its schema still applies.
//! May use: registry, api.

use super::{respond, status_response, Req};
use crate::api::{At, Body, GroupVersionKind, Status};
use crate::endpoints::negotiate::decode_body;
use crate::endpoints::patch::{apply_patch, PatchError, PatchType};
use crate::endpoints::status::error_response;
use crate::registry::error::FieldError;
use crate::registry::strategy::ScalePaths;
use crate::registry::{self, Context, GenericStore};
use http::Response;
use serde_json::Value;

fn scale_gvk() -> GroupVersionKind {
    GroupVersionKind::new("autoscaling", "v1", "Scale")
}

/// Serves `verb` (get, update or patch) on `<resource>/<name>/scale`.
pub(crate) async fn handle(store: &GenericStore, req: &Req<'_>, verb: &str) -> Response<Body> {
    let Some(paths) = store.strategy().scale() else {
        return Status::not_found_path().into_response();
    };
    let ctx = match req.query.context(req.namespace(), "UpdateOptions") {
        Ok(c) => c,
        Err(s) => return status_response(s),
    };
    match verb {
        "get" => match store.get_shared(&ctx, req.name()).await {
            Ok(obj) => scale_response(req, paths, &obj.obj),
            Err(e) => error_response(&e),
        },
        "update" => {
            let scale = match decode_body(req.headers, req.body, &scale_gvk()) {
                Ok(s) => s,
                Err(e) => return status_response(Status::from(e)),
            };
            write(store, req, &ctx, paths, &|_| Ok(scale.clone())).await
        }
        "patch" => {
            let content_type = req
                .headers
                .get(http::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            let patch_type = match PatchType::from_content_type(content_type) {
                Some(t) if t != PatchType::Apply => t,
                _ => return status_response(&PatchError::unsupported_media_type()),
            };
            let patch = |current: &Value| {
                apply_patch(patch_type, current, req.body, &scale_gvk())
                    .map_err(registry::Error::transform)
            };
            write(store, req, &ctx, paths, &patch).await
        }
        other => super::method_not_allowed(store.strategy().info(), other),
    }
}

fn scale_response(req: &Req<'_>, paths: &ScalePaths, obj: &Value) -> Response<Body> {
    match paths.to_scale(obj) {
        Ok(scale) => respond(req, 200, &scale, &[]),
        Err(e) => error_response(&registry::Error::Internal(e)),
    }
}

/// Updates the object from the Scale that `scale_of(current scale)` gives.
async fn write(
    store: &GenericStore,
    req: &Req<'_>,
    ctx: &Context,
    paths: &ScalePaths,
    scale_of: &(dyn Fn(&Value) -> registry::Result<Value> + Send + Sync),
) -> Response<Body> {
    let name = req.name();
    let manager = super::write::manager(req);
    let transform = |current: Option<&Value>| -> registry::Result<Value> {
        let current = current.ok_or_else(|| store.not_found(name))?;
        let old_scale = paths.to_scale(current).map_err(registry::Error::Internal)?;
        let scale = scale_of(&old_scale)?;
        let rv = scale
            .at("/metadata/resourceVersion")
            .and_then(Value::as_str);
        let current_rv = current
            .at("/metadata/resourceVersion")
            .and_then(Value::as_str);
        if rv.is_some_and(|rv| !rv.is_empty() && Some(rv) != current_rv) {
            return Err(store.conflict(name, registry::OPTIMISTIC_LOCK_MSG));
        }
        let replicas = match scale.at("/spec/replicas") {
            None | Some(Value::Null) => 0,
            Some(v) => v.as_i64().filter(|r| i32::try_from(*r).is_ok()).ok_or_else(|| {
                registry::Error::BadRequest(format!(
                    "Scale in version \"v1\" cannot be handled as a Scale: spec.replicas: {v} is not an int32"
                ))
            })?,
        };
        if replicas < 0 {
            return Err(registry::Error::invalid(
                "autoscaling",
                "Scale",
                name,
                vec![FieldError::invalid_raw(
                    "spec.replicas",
                    replicas,
                    "must be greater than or equal to 0",
                )],
            ));
        }
        let mut next = current.clone();
        paths.set_replicas(&mut next, replicas);
        crate::endpoints::apply::update_managed_fields_of(
            Some(current),
            &mut next,
            &manager,
            "Update",
            "scale",
            super::write::custom_schema(store),
        );
        Ok(next)
    };
    match store.update(ctx, name, "", false, &transform).await {
        Ok(w) => scale_response(req, paths, &w.object.obj),
        Err(e) => error_response(&e),
    }
}
