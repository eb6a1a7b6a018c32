//! CREATE, UPDATE and PATCH (handlers/create.go, update.go, patch.go): body decoding,
//! URL/body name and namespace checks, fieldValidation warnings, dryRun, patch application
//! through endpoints::patch, and the create-only reviews. managedFields are maintained by
//! endpoints::apply when that module provides them (see `track_managed_fields`).
//! May use: registry, api.

use super::{gvk_of, respond, status_response, Req};
use crate::api::{Body, Status};
use crate::endpoints::negotiate::{content_type, decode_body};
use crate::endpoints::patch::{apply_patch, PatchError, PatchType};
use crate::endpoints::status::error_response;
use crate::registry::{Error, GenericStore, Review};
use http::Response;
use serde_json::Value;
use std::sync::Mutex;

/// The field manager of a write: `fieldManager`, else the User-Agent before the first `/`.
fn manager(req: &Req<'_>) -> String {
    if let Some(m) = req.query.get("fieldManager").filter(|m| !m.is_empty()) {
        return m.to_string();
    }
    let ua = req.headers.get(http::header::USER_AGENT).and_then(|v| v.to_str().ok()).unwrap_or("");
    ua.split('/').next().unwrap_or("").to_string()
}

fn check_field_manager(req: &Req<'_>) -> Result<(), Status> {
    if let Some(m) = req.query.get("fieldManager") {
        if m.len() > 128 || m.chars().any(|c| c.is_control()) {
            return Err(Status::failure(
                422,
                "Invalid",
                format!("CreateOptions.meta.k8s.io \"\" is invalid: fieldManager: Invalid value: {m:?}: must be less than 128 characters and consist of printable characters"),
            ));
        }
    }
    Ok(())
}

/// The place managedFields are maintained on writes (Update operations). Wired to
/// `endpoints::apply::update_managed_fields` once that exists; until then a no-op.
fn track_managed_fields(_old: Option<&Value>, _new: &mut Value, _manager: &str, _subresource: &str) {}

/// Sets the URL's name when the body has none; a different name is a 400.
fn ensure_name(obj: &mut Value, name: &str) -> Result<(), Status> {
    let body_name = obj.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("").to_string();
    if body_name.is_empty() {
        if let Some(m) = obj.as_object_mut() {
            let meta = m.entry("metadata").or_insert_with(|| serde_json::json!({}));
            if let Some(meta) = meta.as_object_mut() {
                meta.insert("name".into(), Value::from(name));
            }
        }
        return Ok(());
    }
    if body_name != name {
        return Err(Status::failure(
            400,
            "BadRequest",
            format!("the name of the object ({body_name}) does not match the name on the URL ({name})"),
        ));
    }
    Ok(())
}

/// POST to a collection.
pub(crate) async fn create(store: &GenericStore, req: &Req<'_>) -> Response<Body> {
    let info = store.strategy().info();
    let prepared = (|| {
        check_field_manager(req)?;
        let ctx = req.query.context(req.namespace(), &req.ctx.user, "CreateOptions")?;
        let body = decode_body(req.headers, req.body, &gvk_of(info))?;
        Ok::<_, Status>((ctx, body))
    })();
    let (ctx, body) = match prepared {
        Ok(p) => p,
        Err(s) => return status_response(s),
    };
    if !req.name().is_empty() {
        return Status::not_found_path().into_response();
    }
    let (mut obj, warnings) = match store.decode_request(&ctx, body) {
        Ok(d) => d,
        Err(e) => return error_response(&e),
    };
    track_managed_fields(None, &mut obj, &manager(req), "");
    match store.create(&ctx, obj).await {
        Ok(o) => respond(req, 201, &o, &warnings),
        Err(e) => error_response(&e),
    }
}

/// PUT an object or a subresource.
pub(crate) async fn update(store: &GenericStore, req: &Req<'_>) -> Response<Body> {
    let info = store.strategy().info();
    let prepared = (|| {
        check_field_manager(req)?;
        let ctx = req.query.context(req.namespace(), &req.ctx.user, "UpdateOptions")?;
        let mut body = decode_body(req.headers, req.body, &gvk_of(info))?;
        ensure_name(&mut body, req.name())?;
        Ok::<_, Status>((ctx, body))
    })();
    let (ctx, body) = match prepared {
        Ok(p) => p,
        Err(s) => return status_response(s),
    };
    let (obj, warnings) = match store.decode_request(&ctx, body) {
        Ok(d) => d,
        Err(e) => return error_response(&e),
    };
    let sub = req.ctx.info.subresource.as_str();
    let mgr = manager(req);
    let transform = |current: Option<&Value>| -> crate::registry::Result<Value> {
        let Some(current) = current else { return Err(store.not_found(req.name())) };
        let mut next = obj.clone();
        track_managed_fields(Some(current), &mut next, &mgr, sub);
        Ok(next)
    };
    match store.update(&ctx, req.name(), sub, false, &transform).await {
        Ok(w) => respond(req, if w.created_or_gone { 201 } else { 200 }, &w.object, &warnings),
        Err(e) => error_response(&e),
    }
}

/// PATCH an object or a subresource.
pub(crate) async fn patch(store: &GenericStore, req: &Req<'_>) -> Response<Body> {
    let info = store.strategy().info();
    let gvk = gvk_of(info);
    let Some(patch_type) = PatchType::from_content_type(req.headers.get(http::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("")) else {
        let e = PatchError::unsupported_media_type();
        return Status::failure(e.code, e.reason, e.message).into_response();
    };
    let _ = content_type(req.headers);
    if patch_type == PatchType::Apply {
        // Server-side apply: wired to endpoints::apply::server_side_apply when it lands.
        return Status::failure(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: {}, {}, {}",
                PatchType::MEDIA_TYPES[0],
                PatchType::MEDIA_TYPES[1],
                PatchType::MEDIA_TYPES[2]
            ),
        )
        .into_response();
    }
    if req.query.get("force").is_some_and(|f| !f.is_empty()) {
        return Status::failure(422, "Invalid", "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch").into_response();
    }
    let ctx = match check_field_manager(req).and_then(|_| req.query.context(req.namespace(), &req.ctx.user, "PatchOptions")) {
        Ok(c) => c,
        Err(s) => return status_response(s),
    };
    let patch_failure: Mutex<Option<PatchError>> = Mutex::new(None);
    let warnings: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let sub = req.ctx.info.subresource.as_str();
    let mgr = manager(req);
    let transform = |current: Option<&Value>| -> crate::registry::Result<Value> {
        let Some(current) = current else { return Err(store.not_found(req.name())) };
        let patched = apply_patch(patch_type, current, req.body, &gvk).map_err(|e| {
            let msg = e.message.clone();
            if let Ok(mut f) = patch_failure.lock() {
                *f = Some(e);
            }
            Error::BadRequest(msg)
        })?;
        let mut patched_name_check = patched;
        ensure_name(&mut patched_name_check, req.name()).map_err(|s| Error::BadRequest(s.message))?;
        let (mut next, warns) = store.decode_request(&ctx, patched_name_check)?;
        if let Ok(mut w) = warnings.lock() {
            *w = warns;
        }
        track_managed_fields(Some(current), &mut next, &mgr, sub);
        Ok(next)
    };
    let result = store.update(&ctx, req.name(), sub, false, &transform).await;
    let warnings = warnings.lock().map(|w| w.clone()).unwrap_or_default();
    match result {
        Ok(w) => respond(req, 200, &w.object, &warnings),
        Err(e) => match patch_failure.lock().ok().and_then(|mut f| f.take()) {
            Some(p) => Status::failure(p.code, p.reason, p.message).into_response(),
            None => error_response(&e),
        },
    }
}

/// POST of a create-only review.
pub(crate) fn review(review: Review, req: &Req<'_>) -> Response<Body> {
    let info = review.info();
    if req.ctx.info.verb != "create" {
        return super::method_not_allowed(info, &req.ctx.info.verb);
    }
    let body = match decode_body(req.headers, req.body, &gvk_of(info)) {
        Ok(b) => b,
        Err(s) => return status_response(s),
    };
    for (field, want) in [("apiVersion", info.api_version()), ("kind", info.kind.to_string())] {
        if let Some(have) = body.get(field).and_then(Value::as_str).filter(|h| !h.is_empty()) {
            if have != want {
                return Status::failure(400, "BadRequest", format!("the {field} in the data ({have}) does not match the expected {field} ({want})")).into_response();
            }
        }
    }
    let mut body = body;
    if let Some(m) = body.as_object_mut() {
        m.insert("apiVersion".into(), Value::from(info.api_version()));
        m.insert("kind".into(), Value::from(info.kind));
    }
    match review.create(body, &req.ctx.user) {
        Ok(o) => respond(req, 201, &o, &[]),
        Err(e) => error_response(&e),
    }
}
