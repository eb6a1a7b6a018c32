//! HTTP ↔ REST translation (pkg/endpoints): discovery, handlers, negotiation, Status errors.
//! May use: registry, api, metrics.

pub(crate) mod apply;
mod discovery;
mod handlers;
mod negotiate;
pub(crate) mod openapi;
pub(crate) mod patch;
pub(crate) mod protobuf;
pub(crate) mod query;
mod status;

pub(crate) use negotiate::{add_warning_first, wants_aggregated_discovery};

use crate::api::{Body, RequestContext, Status};
use crate::registry::{Registry, Resources};
use bytes::Bytes;
use std::sync::{Arc, RwLock};

/// The API installed on the server: everything under /api, /apis and /openapi.
pub(crate) struct ApiServer {
    registry: Arc<Registry>,
    /// The discovery and OpenAPI documents of one set of resources.
    docs: RwLock<Arc<Docs>>,
}

/// Documents of the registry's resources of one generation, built when a request first needs
/// them after a change (the OpenAPI ones lazily, inside [`openapi::OpenApi`]).
struct Docs {
    generation: u64,
    discovery: discovery::Discovery,
    openapi: openapi::OpenApi,
}

impl Docs {
    fn new(resources: &Resources) -> Docs {
        Docs {
            generation: resources.generation(),
            discovery: discovery::Discovery::new(resources),
            openapi: openapi::OpenApi::new(resources.iter().map(|r| r.info())),
        }
    }
}

impl ApiServer {
    /// Installs every served group over the registry.
    pub(crate) fn new(registry: Arc<Registry>) -> Self {
        let docs = Docs::new(&registry.resources());
        ApiServer {
            registry,
            docs: RwLock::new(Arc::new(docs)),
        }
    }

    /// The registry it serves.
    pub(crate) fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// The documents of `resources`, rebuilt when the set changed since they were made.
    fn docs(&self, resources: &Resources) -> Arc<Docs> {
        let cur = self.docs.read().unwrap_or_else(|e| e.into_inner()).clone();
        if cur.generation == resources.generation() {
            return cur;
        }
        let mut slot = self.docs.write().unwrap_or_else(|e| e.into_inner());
        if slot.generation != resources.generation() {
            *slot = Arc::new(Docs::new(resources));
        }
        slot.clone()
    }

    /// Serves `/openapi/v2` with the documents of remote APIServices merged into this
    /// server's (kube-aggregator's OpenAPI aggregation): `remotes` holds each one's path prefix
    /// and document in merge order, `generation` changes whenever they do.
    pub(crate) fn openapi_v2_merged(
        &self,
        headers: &http::HeaderMap,
        generation: u64,
        remotes: &[(String, Arc<serde_json::Value>)],
    ) -> http::Response<Body> {
        self.docs(&self.registry.resources())
            .openapi
            .handle_v2_merged(headers, generation, remotes)
    }

    /// Serves one authenticated, authorized request whose body was read already
    /// (bounded by the chain). Unknown paths answer 404 Status.
    pub(crate) async fn handle(
        &self,
        req: http::Request<Bytes>,
        ctx: RequestContext,
    ) -> http::Response<Body> {
        let path = req.uri().path();
        let resources = self.registry.resources();
        if path == "/openapi" || path.starts_with("/openapi/") {
            let target = req
                .uri()
                .path_and_query()
                .map(|p| p.as_str())
                .unwrap_or(path);
            return self
                .docs(&resources)
                .openapi
                .handle(target, req.headers())
                .unwrap_or_else(|| Status::not_found_path().into_response());
        }
        let info = &ctx.info;
        if !info.is_resource_request {
            // Discovery documents live at the non-resource paths /api, /apis and below.
            return self
                .docs(&resources)
                .discovery
                .serve(path, req.headers())
                .unwrap_or_else(|| Status::not_found_path().into_response());
        }
        let Some(resource) = resources.lookup(&info.api_group, &info.api_version, &info.resource)
        else {
            return Status::not_found_path().into_response();
        };
        let r = handlers::Req {
            headers: req.headers(),
            body: req.body(),
            query: query::Query::parse(req.uri().query()),
            ctx: &ctx,
            registry: &self.registry,
            out: negotiate::output(req.headers()),
            omit_renewals: req.extensions().get::<crate::api::OmitRenewals>().is_some(),
            collector_events: (req.extensions())
                .get::<crate::api::CollectorEvents>()
                .is_some(),
        };
        // Boxed: the handlers' state machines are large, and hyper moves the request future.
        Box::pin(handlers::dispatch(resource, r)).await
    }
}
