//! Shared vocabulary of the server side: the response body type, request info, the
//! authenticated user, and the per-request context handed from the chain to the endpoints.
//! May use: nothing internal (k8s-openapi, serde, http).

pub(crate) mod authorizer;
pub(crate) mod coalesce;
pub(crate) mod gvk;
pub(crate) mod json;
pub(crate) mod protobuf;
pub(crate) mod rbac;
pub(crate) mod request_info;
pub(crate) mod selectors;
pub(crate) mod status;
pub(crate) mod time;
pub(crate) mod trace;
pub(crate) mod well_known;

pub(crate) use gvk::GroupVersionKind;
pub(crate) use json::At;
pub(crate) use request_info::RequestInfo;
pub(crate) use status::{Status, StatusCause, StatusDetails};

use bytes::Bytes;
use tokio_util::sync::CancellationToken;

/// The body of every response kapi serves: a boxed stream of bytes (watch streams are long).
pub(crate) type Body = http_body_util::combinators::UnsyncBoxBody<Bytes, std::io::Error>;

/// A std error and its sources, joined with `: `.
pub(crate) fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut out = err.to_string();
    let mut source = err.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

/// A new random (version 4) UUID, from the thread's generator (a CSPRNG seeded by the
/// system): `Uuid::new_v4` asks the kernel for each one, a `getrandom` call that every
/// create (its metadata.uid) and every webhook review (its uid) would otherwise pay.
pub(crate) fn new_uuid() -> uuid::Uuid {
    uuid::Builder::from_random_bytes(rand::random()).into_uuid()
}

/// Builds a complete (non-streaming) body.
pub(crate) fn full_body(bytes: impl Into<Bytes>) -> Body {
    use http_body_util::BodyExt;
    http_body_util::Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed_unsync()
}

/// Builds an empty body.
pub(crate) fn empty_body() -> Body {
    full_body(Bytes::new())
}

/// Request extension: a watch that omits MODIFIED events which only renew the object (for
/// leases, a new `spec.renewTime`; see `Strategy::is_renewal`). Only an in-process request
/// can carry it (the in-process controllers' shared lease watch sets it; nothing from the
/// network becomes an extension). The garbage collector and the coordinated-leader-election
/// controller follow every lease but act on none of its renewals, and delivering each one
/// (encoded, then decoded by them) cost about a tenth of a lease update's CPU.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OmitRenewals;

/// Request extension: a watch or list that carries only what the garbage collector acts on.
/// A list leaves out the objects that have no ownerReferences and are not being deleted; a
/// watch their ADDED and MODIFIED events (DELETED events, bookmarks and errors pass). Only an
/// in-process request can carry it (the garbage collector's watches and passes set it).
/// Without it every create of every object was encoded for the collector's watch and decoded
/// by it, about 8% of a ConfigMap create's instructions, and every object listed by each of
/// its passes, for objects nothing owns.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CollectorEvents;

/// Response extension: annotations for the request's audit event that the handler learnt
/// (admission webhooks' `auditAnnotations`, admission policies' audit annotations and
/// failures), as `audit.AddAuditAnnotation` adds them in k8s. Keys are qualified names; the
/// first value of a key wins.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct AuditAnnotations(pub Vec<(String, String)>);

/// A user `name` in `groups`, for tests.
#[cfg(test)]
pub(crate) fn test_user(name: &str, groups: &[&str]) -> UserInfo {
    UserInfo {
        name: name.into(),
        groups: groups.iter().map(|g| g.to_string()).collect(),
        ..UserInfo::default()
    }
}

/// The authenticated user of a request (k8s.io/apiserver pkg/authentication/user.Info).
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub(crate) struct UserInfo {
    /// User name, e.g. `kapi-admin` or `system:anonymous`.
    pub name: String,
    /// Optional UID.
    pub uid: String,
    /// Groups, including the implicit `system:authenticated` / `system:unauthenticated`.
    pub groups: Vec<String>,
    /// Extra attributes.
    pub extra: std::collections::BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// The anonymous user of a request without credentials.
    pub(crate) fn anonymous() -> Self {
        Self {
            name: "system:anonymous".into(),
            groups: vec!["system:unauthenticated".into()],
            ..Self::default()
        }
    }
}

/// What the handler chain hands to the endpoints with every request.
#[derive(Debug, Clone)]
pub(crate) struct RequestContext {
    /// Parsed once by the request-info filter.
    pub info: RequestInfo,
    /// Set by the authentication filter.
    pub user: UserInfo,
    /// Cancelled when the server shuts down: long-running requests (watch) end their stream.
    pub shutdown: CancellationToken,
}
