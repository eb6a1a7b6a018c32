//! The audit filters (WithAuditInit and WithAudit in k8s.io/apiserver pkg/endpoints/filters):
//! every request gets an audit ID, the one its `Audit-ID` header carries or a new UUID, echoed
//! in the `Audit-ID` response header whether auditing is on or not; an audited request's
//! handler runs under [`run`], which writes the Panic stage if it panics and otherwise hands
//! the response to the audit context for ResponseStarted and ResponseComplete.
//! May use: api, audit.

use crate::api::Body;
use crate::audit::context::Context;
use crate::audit::AUDIT_ID_HEADER;
use futures::future::Either;
use futures::FutureExt;
use http::{HeaderMap, HeaderValue};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

/// The request's audit ID: its `Audit-ID` header as sent, else a new random UUID.
pub(crate) fn audit_id(headers: &HeaderMap) -> HeaderValue {
    match headers.get(AUDIT_ID_HEADER) {
        Some(id) if !id.is_empty() => id.clone(),
        _ => new_id(),
    }
}

fn new_id() -> HeaderValue {
    let id = crate::api::new_uuid();
    let mut buf = uuid::Uuid::encode_buffer();
    HeaderValue::from_str(id.hyphenated().encode_lower(&mut buf))
        .expect("a hyphenated UUID is a valid header value")
}

/// The audit ID as event text (a header may hold bytes that are not UTF-8).
pub(crate) fn id_text(id: &HeaderValue) -> String {
    String::from_utf8_lossy(id.as_bytes()).into_owned()
}

/// Sets the `Audit-ID` response header unless the response has one (a proxied answer keeps
/// its server's).
///
/// The value is marked sensitive, which HTTP/2 sends as a literal never added to the
/// connection's header table: an ID new on every response would otherwise be added to it each
/// time, pushing out the headers that repeat, and h2's encoder compares a header with every
/// value its table holds under the same name (a connection's ~50 earlier IDs per response).
pub(crate) fn echo(resp: &mut http::Response<Body>, mut id: HeaderValue) {
    match resp.headers_mut().entry(AUDIT_ID_HEADER) {
        http::header::Entry::Occupied(mut kept) => kept.get_mut().set_sensitive(true),
        http::header::Entry::Vacant(slot) => {
            id.set_sensitive(true);
            slot.insert(id);
        }
    }
}

/// Runs `handler`; with an audit context, a panic is written as the Panic stage and raised
/// again (for the panic filter), and the response goes through [`Context::respond`].
///
/// A combinator rather than an `async fn`, which would hold `handler` twice (see
/// [`super::panic::recover`]).
pub(crate) fn run<F>(
    ctx: Option<Arc<Context>>,
    handler: F,
) -> impl Future<Output = http::Response<Body>>
where
    F: Future<Output = http::Response<Body>>,
{
    let Some(ctx) = ctx else {
        return Either::Left(handler);
    };
    Either::Right(
        AssertUnwindSafe(handler)
            .catch_unwind()
            .map(move |result| match result {
                Ok(resp) => ctx.respond(resp),
                Err(payload) => {
                    ctx.panicked(&super::panic::message(payload.as_ref()));
                    std::panic::resume_unwind(payload)
                }
            }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuses_a_sent_id_else_makes_a_uuid() {
        let mut h = HeaderMap::new();
        let a = audit_id(&h);
        let b = audit_id(&h);
        assert_ne!(a, b);
        let text = id_text(&a);
        assert_eq!(text.len(), 36);
        assert!(uuid::Uuid::parse_str(&text).is_ok());
        h.insert("audit-id", HeaderValue::from_static("from-the-client"));
        assert_eq!(audit_id(&h), "from-the-client");
        h.insert("audit-id", HeaderValue::from_static(""));
        assert_ne!(audit_id(&h), "");
    }

    /// An auditor writing every request at Metadata into `dir`/audit.log.
    fn auditor(dir: &std::path::Path) -> Arc<crate::audit::Auditor> {
        crate::audit::test_auditor(dir, "- level: Metadata\n")
    }

    fn begin(auditor: &Arc<crate::audit::Auditor>, id: &str) -> Arc<Context> {
        let uri: http::Uri = "/api/v1/namespaces/a/configmaps/b".parse().unwrap();
        let info = crate::api::RequestInfo::parse(&http::Method::GET, uri.path(), None);
        let req = crate::audit::context::Request {
            audit_id: id,
            received: chrono::Utc::now(),
            uri: &uri,
            headers: &HeaderMap::new(),
            remote: None,
            info: &info,
            annotation: None,
        };
        let user = crate::api::UserInfo::anonymous();
        auditor.begin(&req, &user).unwrap().unwrap()
    }

    fn stages(dir: &std::path::Path, id: &str) -> Vec<serde_json::Value> {
        std::fs::read_to_string(dir.join("audit.log"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .filter(|e| e["auditID"] == id)
            .collect()
    }

    #[tokio::test]
    async fn a_panic_is_written_then_raised_again() {
        let dir = tempfile::tempdir().unwrap();
        let auditor = auditor(dir.path());
        let ctx = begin(&auditor, "p");
        let handler = async { panic!("boom") };
        let outcome = AssertUnwindSafe(run(Some(ctx), handler))
            .catch_unwind()
            .await;
        assert!(outcome.is_err(), "the panic filter still sees the panic");
        let events = stages(dir.path(), "p");
        assert_eq!(events.len(), 2);
        assert_eq!(events[1]["stage"], "Panic");
        assert_eq!(
            events[1]["responseStatus"],
            serde_json::json!({"metadata": {}, "status": "Failure", "message": "APIServer panic'd: boom", "reason": "InternalError", "code": 500})
        );
    }

    #[tokio::test]
    async fn response_complete_when_the_body_ends() {
        use http_body_util::BodyExt;
        let dir = tempfile::tempdir().unwrap();
        let auditor = auditor(dir.path());
        let handler = async { crate::api::Status::not_found_path().into_response() };
        let resp = run(Some(begin(&auditor, "r")), handler).await;
        assert_eq!(
            stages(dir.path(), "r").len(),
            1,
            "only RequestReceived before the body"
        );
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        assert!(!body.is_empty());
        let events = stages(dir.path(), "r");
        assert_eq!(events.len(), 2);
        assert_eq!(events[1]["stage"], "ResponseComplete");
        assert_eq!(events[1]["responseStatus"]["reason"], "NotFound");
        assert_eq!(events[1]["responseStatus"]["code"], 404);
    }

    #[test]
    fn echo_keeps_an_existing_header() {
        let mut resp = http::Response::new(crate::api::empty_body());
        echo(&mut resp, HeaderValue::from_static("one"));
        echo(&mut resp, HeaderValue::from_static("two"));
        assert_eq!(resp.headers()["audit-id"], "one");
        assert!(resp.headers()["audit-id"].is_sensitive());
    }
}
