//! Request body limit (MaxRequestBodyBytes in k8s, 3 MiB): the body is read once, bounded, and
//! handed on as Bytes; larger bodies answer 413 Status. May use: api.

use crate::api::Status;
use bytes::Bytes;
use http_body_util::BodyExt;

/// kube-apiserver's default limit of a request body.
pub(crate) const MAX_REQUEST_BODY_BYTES: usize = 3 * 1024 * 1024;

/// Reads the whole body, at most `limit` bytes; the error is the Status to answer.
pub(crate) async fn collect<B>(
    body: B,
    headers: &http::HeaderMap,
    limit: usize,
) -> Result<Bytes, Status>
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let declared = headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > limit as u64) {
        return Err(Status::request_entity_too_large(limit));
    }
    match http_body_util::Limited::new(body, limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(err) if err.is::<http_body_util::LengthLimitError>() => {
            Err(Status::request_entity_too_large(limit))
        }
        Err(err) => Err(Status::failure(
            400,
            "BadRequest",
            format!("error reading request body: {err}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn over_limit_is_413() {
        let body = http_body_util::Full::new(Bytes::from(vec![0u8; 11]));
        let err = collect(body, &http::HeaderMap::new(), 10)
            .await
            .unwrap_err();
        assert_eq!(err.code, 413);
        let body = http_body_util::Full::new(Bytes::from(vec![0u8; 10]));
        assert_eq!(
            collect(body, &http::HeaderMap::new(), 10)
                .await
                .unwrap()
                .len(),
            10
        );
    }
}
