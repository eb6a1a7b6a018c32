//! Request timeout for non-long-running requests (WithTimeoutForNonLongRunningRequests in k8s):
//! 504 Status when the handler does not answer in time. May use: api.

use crate::api::{Body, Status};
use std::future::Future;
use std::time::Duration;

/// Runs `handler` under `limit`; `None` means exempt (long-running requests such as watch).
pub(crate) async fn with_timeout<F>(limit: Option<Duration>, handler: F) -> http::Response<Body>
where
    F: Future<Output = http::Response<Body>>,
{
    match limit {
        None => handler.await,
        Some(limit) => match tokio::time::timeout(limit, handler).await {
            Ok(resp) => resp,
            Err(_) => Status::timeout().into_response(),
        },
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
