//! HTTP ↔ REST translation (pkg/endpoints): discovery, handlers, negotiation, Status errors.
//! May use: registry, api.

pub mod apply;
pub mod openapi;
pub mod patch;
pub mod protobuf;

use crate::api::{Body, RequestContext, Status};
use crate::registry::Registry;
use bytes::Bytes;
use std::sync::Arc;

/// The API installed on the server: everything under /api, /apis and /openapi.
pub struct ApiServer {
    #[allow(dead_code)]
    registry: Arc<Registry>,
}

impl ApiServer {
    /// Installs every served group over the registry.
    pub fn new(registry: Arc<Registry>) -> Self {
        ApiServer { registry }
    }

    /// Serves one authenticated, authorized request whose body was read already
    /// (bounded by the chain). Unknown paths answer 404 Status.
    pub async fn handle(&self, req: http::Request<Bytes>, ctx: RequestContext) -> http::Response<Body> {
        let _ = (req, ctx);
        Status::not_found_path().into_response()
    }
}
