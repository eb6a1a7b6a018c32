//! Panic recovery (WithPanicRecovery in k8s): a handler that panics answers 500 Status and the
//! server keeps serving. May use: api.

use crate::api::{Body, Status};
use futures::FutureExt;
use std::future::Future;
use std::panic::AssertUnwindSafe;

/// Runs `handler`; a panic is logged and turned into a 500 Status.
///
/// A combinator rather than an `async fn`: an async fn would hold `handler` twice (as its
/// argument and as what it awaits), and the handler chain's future is thousands of bytes,
/// copied whole each time it moves.
pub(crate) fn recover<'a, F>(
    method: &'a http::Method,
    path: &'a str,
    handler: F,
) -> impl Future<Output = http::Response<Body>> + 'a
where
    F: Future<Output = http::Response<Body>> + 'a,
{
    AssertUnwindSafe(handler)
        .catch_unwind()
        .map(move |result| match result {
            Ok(resp) => resp,
            Err(payload) => {
                let msg = message(payload.as_ref());
                tracing::error!(%method, path, panic = %msg, "handler panicked");
                Status::internal(format!(
                    "Internal error occurred: the server panicked while handling {method} {path:?}"
                ))
                .into_response()
            }
        })
}

/// The text a panic was raised with.
pub(crate) fn message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn panic_becomes_500() {
        let resp = recover(&http::Method::GET, "/x", async { panic!("boom") }).await;
        assert_eq!(resp.status(), 500);
    }
}
