//! The loopback client: the privileged kube::Client the post-start hooks (the in-process
//! controllers) use to reach this very server.
//!
//! kube-apiserver's loopback client dials its own secure port over TLS. kapi hands the
//! client's requests to the handler chain in process instead: the same filters run
//! (authentication with the loopback token, authorization, max-in-flight, timeouts, body
//! limit), the same handlers answer and watches stream the same bytes, but nothing is
//! encrypted, framed as HTTP/1 or copied through the kernel twice. The controllers' watches
//! of every lease otherwise cost each lease update about a tenth of its CPU. Request
//! extensions pass through unchanged (see [`crate::api::OmitRenewals`]).
//! May use: the chain, api.

use super::chain::{self, Chain};
use crate::api::Status;
use std::sync::{Arc, OnceLock};

/// Where the handler chain is published once it is built ([`super::GenericServer::prepare_run`]);
/// the loopback client is made earlier ([`super::Config::complete`]).
pub(super) type ChainSlot = Arc<OnceLock<Arc<Chain>>>;

/// A kube::Client whose requests run through `slot`'s chain, authenticated by `token`.
pub(super) fn client(slot: ChainSlot, token: &str) -> Result<kube::Client, http::Error> {
    let mut auth = http::HeaderValue::from_str(&format!("Bearer {token}"))?;
    auth.set_sensitive(true);
    let service = tower::service_fn(move |req: http::Request<kube::client::Body>| {
        let (slot, auth) = (slot.clone(), auth.clone());
        async move {
            let (mut parts, body) = req.into_parts();
            parts.headers.insert(http::header::AUTHORIZATION, auth);
            parts.headers.insert(
                http::header::USER_AGENT,
                http::HeaderValue::from_static(concat!(
                    "kapi/",
                    env!("CARGO_PKG_VERSION"),
                    " (loopback)"
                )),
            );
            let body = http_body_util::BodyExt::map_err(body, std::io::Error::other);
            let req = http::Request::from_parts(parts, body);
            let resp = match slot.get() {
                Some(chain) => chain::handle(chain.clone(), req).await,
                // Hooks start after the chain is published; nothing should get here.
                None => Status::failure(503, "ServiceUnavailable", "the server is not serving yet")
                    .into_response(),
            };
            Ok::<_, std::convert::Infallible>(resp)
        }
    });
    Ok(kube::client::ClientBuilder::new(service, "default").build())
}
