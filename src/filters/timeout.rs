//! Request timeout for non-long-running requests (WithTimeoutForNonLongRunningRequests in k8s):
//! 504 Status when the handler does not answer in time. May use: api.

use crate::api::{Body, Status};
use futures::future::Either;
use futures::FutureExt;
use std::future::Future;
use std::time::Duration;

/// Runs `handler` under `limit`; `None` means exempt (long-running requests such as watch).
/// A combinator rather than an `async fn`, which would hold `handler` twice (see
/// [`super::panic::recover`]).
pub(crate) fn with_timeout<F>(
    limit: Option<Duration>,
    handler: F,
) -> impl Future<Output = http::Response<Body>>
where
    F: Future<Output = http::Response<Body>>,
{
    match limit {
        None => Either::Left(handler),
        Some(limit) => Either::Right(
            tokio::time::timeout(limit, handler)
                .map(|answered| answered.unwrap_or_else(|_| Status::timeout().into_response())),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn slow_handler_gets_504() {
        let slow = async {
            tokio::time::sleep(Duration::from_secs(10)).await;
            crate::api::Status::not_found_path().into_response()
        };
        let resp = with_timeout(Some(Duration::from_secs(1)), slow).await;
        assert_eq!(resp.status(), 504);
    }
}
