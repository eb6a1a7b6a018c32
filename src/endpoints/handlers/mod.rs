//! REST handlers: extract → registry call → respond (endpoints/handlers in k8s). One file per
//! verb group; this file dispatches a resource request by verb. May use: registry, api.
// Status (the error type here) is large by design: it is the response body itself.
#![allow(clippy::result_large_err)]

mod bookmarks;
mod delete;
pub(crate) mod error;
mod read;
mod scale;
mod table;
mod watch;
mod write;

use super::negotiate::{self, Output};
use super::query::Query;
use super::status::error_response;
use crate::api::{Body, GroupVersionKind, RequestContext, Status};
use crate::registry::{Decoded, Error, GenericStore, Resource, ResourceInfo};
use bytes::Bytes;
use http::{HeaderMap, Response};

/// Everything a handler needs of one request.
pub(crate) struct Req<'a> {
    /// Request headers.
    pub(crate) headers: &'a HeaderMap,
    /// The request body (already bounded by the chain).
    pub(crate) body: &'a Bytes,
    /// Query parameters.
    pub(crate) query: Query,
    /// The chain's context.
    pub(crate) ctx: &'a RequestContext,
    /// The registry (its authorizer answers access reviews and checks RBAC writes).
    pub(crate) registry: &'a crate::registry::Registry,
    /// The negotiated output.
    pub(crate) out: Output,
    /// The loopback client's watch omits renewals ([`crate::api::OmitRenewals`]).
    pub(crate) omit_renewals: bool,
    /// The garbage collector's watch takes only the events it acts on
    /// ([`crate::api::CollectorEvents`]).
    pub(crate) collector_events: bool,
}

impl Req<'_> {
    /// Namespace from the path.
    pub(crate) fn namespace(&self) -> &str {
        &self.ctx.info.namespace
    }
    /// Object name from the path.
    pub(crate) fn name(&self) -> &str {
        &self.ctx.info.name
    }
}

/// The GVK a resource serves.
pub(crate) fn gvk_of(i: &ResourceInfo) -> GroupVersionKind {
    GroupVersionKind::new(&i.group, &i.version, &i.kind)
}

pub(super) fn method_not_allowed(i: &ResourceInfo, verb: &str) -> Response<Body> {
    error_response(&Error::MethodNotAllowed {
        group: i.group.to_string(),
        resource: i.resource.to_string(),
        verb: verb.into(),
        message: None,
    })
}

/// Serves a resource request for `resource`.
pub(crate) async fn dispatch(resource: &Resource, req: Req<'_>) -> Response<Body> {
    let info = resource.info();
    let verb = req.ctx.info.verb.as_str();
    let sub = req.ctx.info.subresource.as_str();
    if !sub.is_empty()
        && !info
            .subresources
            .iter()
            .any(|(s, verbs)| *s == sub && verbs.contains(&verb))
    {
        let known = info.subresources.iter().any(|(s, _)| *s == sub);
        return if known {
            method_not_allowed(info, verb)
        } else {
            Status::not_found_path().into_response()
        };
    }
    if sub.is_empty() && !info.serves(verb) {
        return method_not_allowed(info, verb);
    }
    // A namespaced resource with a namespace in the path, or a cluster-scoped one without.
    if !info.namespaced && !req.namespace().is_empty() && info.resource != "namespaces" {
        return Status::not_found_path().into_response();
    }
    if info.namespaced && req.namespace().is_empty() && !matches!(verb, "list" | "watch") {
        return Status::not_found_path().into_response();
    }
    let store = match resource {
        Resource::Review(review) => return write::review(*review, &req),
        Resource::Stored(store) => store,
    };
    let mut resp = serve_stored(store, &req, verb, sub).await;
    if let Some(w) = store.strategy().deprecation_warning() {
        crate::endpoints::negotiate::add_warning(&mut resp, w);
    }
    resp
}

/// Serves a request for a stored resource.
async fn serve_stored(
    store: &std::sync::Arc<GenericStore>,
    req: &Req<'_>,
    verb: &str,
    sub: &str,
) -> Response<Body> {
    if sub == "scale" {
        return Box::pin(scale::handle(store, req, verb)).await;
    }
    if sub == "token" {
        return Box::pin(write::token_request(req)).await;
    }
    let info = store.strategy().info();
    // Each verb's future is boxed so this one stays as small as the largest pointer.
    match verb {
        "get" => Box::pin(read::get(store, req)).await,
        "list" => Box::pin(read::list(store, req)).await,
        "watch" => Box::pin(watch::watch(store, req)).await,
        "create" => Box::pin(write::create(store, req)).await,
        "update" => Box::pin(write::update(store, req)).await,
        "patch" => Box::pin(write::patch(store, req)).await,
        "delete" => Box::pin(delete::delete(store, req)).await,
        "deletecollection" => Box::pin(delete::delete_collection(store, req)).await,
        other => method_not_allowed(info, other),
    }
}

/// The response to a request refused before or around the registry call (handlers' early
/// returns); endpoints/status.rs says which Status each error is.
pub(crate) fn status_response(err: impl Into<Status>) -> Response<Body> {
    err.into().into_response()
}

/// One object in the request's output; plain JSON is the memoized encoding, so an object is
/// serialized once for the response, later GETs and every watcher.
pub(crate) fn respond_object(
    req: &Req<'_>,
    code: u16,
    object: &Decoded,
    warnings: &[String],
) -> Response<Body> {
    if req.out == Output::Json {
        return negotiate::respond_bytes(code, object.json().clone(), "application/json", warnings);
    }
    respond(req, code, &object.obj, warnings)
}

/// `negotiate::respond` with the request's output.
pub(crate) fn respond(
    req: &Req<'_>,
    code: u16,
    value: &serde_json::Value,
    warnings: &[String],
) -> Response<Body> {
    negotiate::respond(code, value, req.out, warnings)
}
