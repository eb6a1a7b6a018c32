//! CREATE, UPDATE and PATCH (handlers/create.go, update.go, patch.go): body decoding,
//! URL/body name and namespace checks, fieldValidation warnings, dryRun, patch application
//! through endpoints::patch, and the create-only reviews. managedFields are maintained by
//! endpoints::apply when that module provides them (see `track_managed_fields`).
//! May use: registry, api.

use super::error::Error;
use super::{gvk_of, respond, respond_object, status_response, Req};
use crate::api::At;
use crate::api::{Body, Status};
use crate::endpoints::apply::server_side_apply_of;
use crate::endpoints::negotiate::{decode_body, is_json_body, yaml_to_json};
use crate::endpoints::patch::{apply_patch, PatchError, PatchType};
use crate::endpoints::status::{error_response, error_response_warning};
use crate::registry::{self, Context, GenericStore, Review};
use http::Response;
use serde_json::Value;
use std::sync::Mutex;

/// The field manager of a write: `fieldManager`, else the User-Agent before the first `/`.
pub(super) fn manager(req: &Req<'_>) -> String {
    if let Some(m) = req.query.get("fieldManager").filter(|m| !m.is_empty()) {
        return m.to_string();
    }
    let ua = req
        .headers
        .get(http::header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    ua.split('/').next().unwrap_or("").to_string()
}

fn check_field_manager(req: &Req<'_>) -> Result<(), Error> {
    if let Some(m) = req.query.get("fieldManager") {
        if m.len() > 128 || m.chars().any(|c| c.is_control()) {
            return Err(Error::InvalidFieldManager(m.to_string()));
        }
    }
    Ok(())
}

/// The registry context of a write: `fieldManager` checked, the options, and the writer.
fn write_context(req: &Req<'_>, options_kind: &'static str) -> Result<Context, Status> {
    check_field_manager(req)?;
    let mut ctx = req.query.context(req.namespace(), options_kind)?;
    ctx.access = req.registry.access(&req.ctx.user);
    ctx.admission = admission_of(req, &ctx);
    Ok(ctx)
}

/// The admission side of a write (None when no webhook is configured).
pub(super) fn admission_of(
    req: &Req<'_>,
    ctx: &Context,
) -> Option<std::sync::Arc<crate::registry::admission::Request>> {
    if req.registry.admission().is_empty() {
        return None;
    }
    let user = match &ctx.access {
        Some(a) => a.user.clone(),
        None => std::sync::Arc::new(req.ctx.user.clone()),
    };
    let field_manager = req.query.get("fieldManager").filter(|m| !m.is_empty());
    req.registry
        .admission_request(&user, req.ctx.info.subresource.as_str(), field_manager)
}

/// The response of a write: `respond` is given `warnings`, the registry's and admission's, and
/// admission's audit annotations are attached for the audit filter.
pub(super) fn admitted(
    ctx: &Context,
    mut warnings: Vec<String>,
    respond: impl FnOnce(&[String]) -> Response<Body>,
) -> Response<Body> {
    warnings.extend(ctx.warnings.take());
    let Some(a) = &ctx.admission else {
        return respond(&warnings);
    };
    warnings.extend(a.take_warnings());
    let mut resp = respond(&warnings);
    let annotations = a.take_audit_annotations();
    if !annotations.is_empty() {
        resp.extensions_mut()
            .insert(crate::api::AuditAnnotations(annotations));
    }
    resp
}

/// managedFields of a non-apply write (operation Update).
fn track_managed_fields(
    store: &GenericStore,
    old: Option<&Value>,
    new: &mut Value,
    manager: &str,
    subresource: &str,
) {
    crate::endpoints::apply::update_managed_fields_of(
        old,
        new,
        manager,
        "Update",
        subresource,
        custom_schema(store),
    );
}

/// A custom resource's structural schema (None for built-in kinds): what server-side apply
/// and managedFields follow for its lists and maps.
pub(super) fn custom_schema(store: &GenericStore) -> Option<&Value> {
    match &store.strategy().info().schema {
        crate::registry::strategy::KindSchema::Custom(s) => Some(s.value()),
        crate::registry::strategy::KindSchema::Typed(_) => None,
    }
}

/// Sets the URL's name when the body has none; a different name is refused.
fn ensure_name(obj: &mut Value, name: &str) -> Result<(), Error> {
    let body_name = obj
        .at("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
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
        return Err(Error::NameMismatch {
            body: body_name,
            url: name.to_string(),
        });
    }
    Ok(())
}

/// POST to a collection.
pub(crate) async fn create(store: &GenericStore, req: &Req<'_>) -> Response<Body> {
    let info = store.strategy().info();
    let ctx = match write_context(req, "CreateOptions") {
        Ok(ctx) => ctx,
        Err(s) => return status_response(s),
    };
    if !req.name().is_empty() {
        return Status::not_found_path().into_response();
    }
    // A JSON body of the resource's own type decodes straight into the typed struct; anything
    // else (YAML, protobuf, a body that path cannot take) goes through the JSON tree.
    let fast = is_json_body(req.headers)
        .then(|| store.decode_json_request(&ctx, req.body, None))
        .flatten();
    let decoded = match fast {
        Some(d) => d,
        None => {
            let body = match decode_body(req.headers, req.body, &gvk_of(info)) {
                Ok(b) => b,
                Err(e) => return status_response(Status::from(e)),
            };
            store.decode_request(&ctx, body)
        }
    };
    let (mut obj, warnings) = match decoded {
        Ok(d) => d,
        Err(e) => return error_response(&e),
    };
    track_managed_fields(store, None, &mut obj, &manager(req), "");
    let result = store.create(&ctx, obj).await;
    admitted(&ctx, warnings, |warnings| match result {
        Ok(o) => respond_object(req, 201, &o, warnings),
        Err(e) => error_response_warning(&e, warnings),
    })
}

/// PUT an object or a subresource.
pub(crate) async fn update(store: &GenericStore, req: &Req<'_>) -> Response<Body> {
    let info = store.strategy().info();
    let ctx = match write_context(req, "UpdateOptions") {
        Ok(ctx) => ctx,
        Err(s) => return status_response(s),
    };
    // A JSON body naming the object decodes straight into the typed struct; anything else
    // (and any body that path cannot take as it is) goes through the JSON tree.
    let decode = || -> Result<(Value, Vec<String>), Response<Body>> {
        let fast = is_json_body(req.headers)
            .then(|| store.decode_json_request(&ctx, req.body, Some(req.name())))
            .flatten();
        let decoded = match fast {
            Some(d) => d,
            None => {
                let body = decode_body(req.headers, req.body, &gvk_of(info))
                    .map_err(Status::from)
                    .and_then(|mut b| {
                        ensure_name(&mut b, req.name())?;
                        Ok(b)
                    });
                match body {
                    Ok(b) => store.decode_request(&ctx, b),
                    Err(s) => return Err(status_response(s)),
                }
            }
        };
        decoded.map_err(|e| error_response(&e))
    };
    let (obj, warnings) = match decode() {
        Ok(d) => d,
        Err(r) => return r,
    };
    let sub = req.ctx.info.subresource.as_str();
    let mgr = manager(req);
    // Most updates run the transform once, so the first attempt takes the decoded body
    // instead of a copy; a retry after a lost race decodes the same bytes again, which gives
    // the same object (on a contended key that costs one decode per retry).
    let first = Mutex::new(Some(obj));
    let allow_create = sub.is_empty() && store.strategy().allow_create_on_update();
    let transform = |current: Option<&Value>| -> crate::registry::Result<Value> {
        let Some(current) = current else {
            // Created by a PUT: only where the strategy allows it, and without a
            // resourceVersion to match.
            let taken = first.lock().ok().and_then(|mut f| f.take());
            let has_rv = |o: &Value| {
                o.pointer("/metadata/resourceVersion")
                    .and_then(Value::as_str)
                    .is_some_and(|rv| !rv.is_empty())
            };
            return match taken {
                Some(mut obj) if allow_create && !has_rv(&obj) => {
                    track_managed_fields(store, None, &mut obj, &mgr, sub);
                    Ok(obj)
                }
                _ => Err(store.not_found(req.name())),
            };
        };
        let taken = first.lock().ok().and_then(|mut f| f.take());
        let mut next = match taken {
            Some(obj) => obj,
            None => {
                decode()
                    .map_err(|_| {
                        registry::Error::Internal("the request body did not decode again".into())
                    })?
                    .0
            }
        };
        track_managed_fields(store, Some(current), &mut next, &mgr, sub);
        Ok(next)
    };
    let result = store
        .update(&ctx, req.name(), sub, allow_create, &transform)
        .await;
    admitted(&ctx, warnings, |warnings| match result {
        Ok(w) => respond_object(
            req,
            if w.created_or_gone { 201 } else { 200 },
            &w.object,
            warnings,
        ),
        Err(e) => error_response_warning(&e, warnings),
    })
}

/// PATCH an object or a subresource.
pub(crate) async fn patch(store: &GenericStore, req: &Req<'_>) -> Response<Body> {
    let info = store.strategy().info();
    let gvk = gvk_of(info);
    let Some(patch_type) = PatchType::from_content_type(
        req.headers
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or(""),
    ) else {
        return status_response(&PatchError::unsupported_media_type());
    };
    if patch_type == PatchType::StrategicMerge
        && matches!(
            info.schema,
            crate::registry::strategy::KindSchema::Custom(_)
        )
    {
        return status_response(&PatchError::UnsupportedMediaTypeForCustom);
    }
    if patch_type == PatchType::Apply {
        return apply(store, req).await;
    }
    if req.query.get("force").is_some_and(|f| !f.is_empty()) {
        return status_response(Error::ForceWithoutApply);
    }
    let ctx = match write_context(req, "PatchOptions") {
        Ok(c) => c,
        Err(s) => return status_response(s),
    };
    let warnings: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let sub = req.ctx.info.subresource.as_str();
    let mgr = manager(req);
    let transform = |current: Option<&Value>| -> registry::Result<Value> {
        let Some(current) = current else {
            return Err(store.not_found(req.name()));
        };
        let patched =
            apply_patch(patch_type, current, req.body, &gvk).map_err(registry::Error::transform)?;
        let mut patched_name_check = patched;
        ensure_name(&mut patched_name_check, req.name())
            .map_err(|e| registry::Error::BadRequest(e.to_string()))?;
        let (mut next, warns) = store.decode_request(&ctx, patched_name_check)?;
        if let Ok(mut w) = warnings.lock() {
            *w = warns;
        }
        track_managed_fields(store, Some(current), &mut next, &mgr, sub);
        Ok(next)
    };
    let result = store.update(&ctx, req.name(), sub, false, &transform).await;
    let warnings = warnings.lock().map(|w| w.clone()).unwrap_or_default();
    admitted(&ctx, warnings, |warnings| match result {
        Ok(w) => respond_object(req, 200, &w.object, warnings),
        Err(e) => error_response_warning(&e, warnings),
    })
}

/// Server-side apply (`application/apply-patch+yaml`): creates a missing object (201).
async fn apply(store: &GenericStore, req: &Req<'_>) -> Response<Body> {
    let info = store.strategy().info();
    let gvk = gvk_of(info);
    let Some(mgr) = req
        .query
        .get("fieldManager")
        .filter(|m| !m.is_empty())
        .map(String::from)
    else {
        return status_response(Error::MissingFieldManager);
    };
    let prepared = (|| {
        let ctx = write_context(req, "PatchOptions")?;
        let force = req.query.bool("force")?.unwrap_or(false);
        let mut applied = yaml_to_json(req.body)?;
        if !applied.is_object() {
            return Err(Error::AppliedNotObject.into());
        }
        ensure_name(&mut applied, req.name())?;
        Ok::<_, Status>((force, ctx, applied))
    })();
    let (force, ctx, applied) = match prepared {
        Ok(p) => p,
        Err(s) => return status_response(s),
    };
    if let Err(e) = store.decode_request(&ctx, applied.clone()) {
        return error_response(&e);
    }
    let warnings: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let transform = |current: Option<&Value>| -> registry::Result<Value> {
        let merged =
            server_side_apply_of(current, &applied, &mgr, force, &gvk, custom_schema(store))
                .map_err(registry::Error::transform)?;
        let (next, warns) = store.decode_request(&ctx, merged)?;
        if let Ok(mut w) = warnings.lock() {
            *w = warns;
        }
        Ok(next)
    };
    let result = store
        .update(
            &ctx,
            req.name(),
            req.ctx.info.subresource.as_str(),
            true,
            &transform,
        )
        .await;
    let warnings = warnings.lock().map(|w| w.clone()).unwrap_or_default();
    admitted(&ctx, warnings, |warnings| match result {
        Ok(w) => respond_object(
            req,
            if w.created_or_gone { 201 } else { 200 },
            &w.object,
            warnings,
        ),
        Err(e) => error_response_warning(&e, warnings),
    })
}

/// A body of kind `gvk` (apiVersion and kind checked when given, then set).
fn decode_kind(req: &Req<'_>, gvk: &crate::api::GroupVersionKind) -> Result<Value, Response<Body>> {
    let body = decode_body(req.headers, req.body, gvk).map_err(status_response)?;
    let want_api_version = crate::api::gvk::api_version(&gvk.group, &gvk.version);
    for (field, want) in [
        ("apiVersion", want_api_version.clone()),
        ("kind", gvk.kind.clone()),
    ] {
        if let Some(have) = body
            .get(field)
            .and_then(Value::as_str)
            .filter(|h| !h.is_empty())
        {
            if have != want {
                return Err(status_response(Error::TypeMismatch {
                    field,
                    have: have.to_string(),
                    want,
                }));
            }
        }
    }
    let mut body = body;
    if let Some(m) = body.as_object_mut() {
        m.insert("apiVersion".into(), Value::from(want_api_version));
        m.insert("kind".into(), Value::from(gvk.kind.clone()));
    }
    Ok(body)
}

/// `POST <serviceaccount>/token`: a TokenRequest.
pub(crate) async fn token_request(req: &Req<'_>) -> Response<Body> {
    let gvk = crate::api::GroupVersionKind::new("authentication.k8s.io", "v1", "TokenRequest");
    let body = match decode_kind(req, &gvk) {
        Ok(b) => b,
        Err(resp) => return resp,
    };
    match registry::tokens::request(req.registry, req.namespace(), req.name(), body).await {
        Ok(issued) => respond(req, 201, &issued.object, &issued.warnings),
        Err(e) => error_response(&e),
    }
}

/// A create-only review.
pub(crate) fn review(review: Review, req: &Req<'_>) -> Response<Body> {
    let info = review.info();
    if req.ctx.info.verb != "create" {
        return super::method_not_allowed(info, &req.ctx.info.verb);
    }
    let body = match decode_kind(req, &gvk_of(info)) {
        Ok(b) => b,
        Err(resp) => return resp,
    };
    let Some(authorizer) = req.registry.authorizer() else {
        return error_response(&registry::Error::Internal(
            "no authorizer is configured".into(),
        ));
    };
    let asker = crate::registry::resources::reviews::Asker {
        user: &req.ctx.user,
        namespace: req.namespace(),
        authorizer: authorizer.as_ref(),
        tokens: req.registry.token_reviewer().map(|t| t.as_ref()),
    };
    match review.create(body, &asker) {
        Ok(o) => respond(req, 201, &o, &[]),
        Err(e) => error_response(&e),
    }
}
