//! The audit context of one request (AuditContext in k8s.io/apiserver pkg/audit, with
//! LogRequestMetadata, LogImpersonatedUser, LogRequestObject and LogResponseObject of
//! pkg/audit/request.go and the stage handling of pkg/endpoints/filters/audit.go): the event
//! is built as the request passes the filters and written at each stage. Bodies are decoded
//! only at the levels that record them: Request (the request body of a mutating resource
//! request) and RequestResponse (also the JSON response body of a resource request); at
//! Metadata a create or update body is only scanned for the object reference.
//! May use: api, metrics.

use super::body::{
    decode, drop_managed_fields, fill_object_ref, is_json, reference_of, AuditedBody,
};
use super::event::{Event, ObjectReference, ResponseStatus, User};
use super::policy::{Level, RequestConfig, Stage};
use super::Auditor;
use crate::api::authorizer::Decision;
use crate::api::{
    AuditAnnotations, Body, RequestInfo, Status, StatusCause, StatusDetails, UserInfo,
};
use crate::metrics;
use bytes::Bytes;
use chrono::{DateTime, Utc};
use http::header::USER_AGENT;
use http::HeaderMap;
use serde_json::Value;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, PoisonError};

const DECISION: &str = "authorization.k8s.io/decision";
const REASON: &str = "authorization.k8s.io/reason";
/// upstream's maxUserAgentLength and its truncation suffix.
const MAX_USER_AGENT: usize = 1024;

/// What the audit filter knows of a request before it is handled.
pub(crate) struct Request<'a> {
    /// The request's audit ID.
    pub audit_id: &'a str,
    /// When the request was received.
    pub received: DateTime<Utc>,
    /// The request URI as sent.
    pub uri: &'a http::Uri,
    /// The request headers.
    pub headers: &'a HeaderMap,
    /// The connection's remote address (None in process).
    pub remote: Option<SocketAddr>,
    /// The parsed request info.
    pub info: &'a RequestInfo,
    /// An annotation authentication added (the secret of a legacy service-account token).
    pub annotation: Option<(&'static str, &'a str)>,
}

/// What the request body is decoded for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BodyUse {
    /// Nothing (reads, non-resource requests, level Metadata for patch and delete).
    Ignore,
    /// The object reference's name, namespace, uid and resourceVersion, for create and
    /// update at level Metadata (LogRequestObject fills them at every level).
    Reference,
    /// The request object too, at level Request and above.
    Record,
}

/// The request's event and what the policy decided for it.
pub(crate) struct Context {
    auditor: Arc<Auditor>,
    config: RequestConfig,
    long_running: bool,
    resource: bool,
    body: BodyUse,
    event: Mutex<Event>,
}

/// The request was refused: its RequestReceived event could not be stored
/// (blocking-strict mode).
#[derive(Debug)]
pub(crate) struct Rejected;

impl Rejected {
    /// The 500 upstream answers (responsewriters.InternalError).
    pub(crate) fn into_status(self) -> Status {
        let cause = "failed to store audit event";
        Status::internal(format!("Internal error occurred: {cause}")).with_details(StatusDetails {
            causes: vec![StatusCause {
                message: cause.into(),
                ..StatusCause::default()
            }],
            ..StatusDetails::default()
        })
    }
}

/// LogRequestMetadata in k8s: everything but the objects and the response.
fn new_event(req: &Request<'_>, level: Level, user: Option<&UserInfo>) -> Event {
    let info = req.info;
    let mut ev = Event::new(level, req.audit_id.to_string(), req.received);
    ev.request_uri = req
        .uri
        .path_and_query()
        .map_or_else(|| req.uri.path().to_string(), |pq| pq.as_str().to_string());
    ev.verb.clone_from(&info.verb);
    ev.user_agent = user_agent(req.headers);
    ev.source_ips = source_ips(req.headers, req.remote);
    if let Some(user) = user {
        ev.user = User::from(user);
    }
    if info.is_resource_request {
        ev.object_ref = Some(ObjectReference {
            resource: info.resource.clone(),
            namespace: info.namespace.clone(),
            name: info.name.clone(),
            subresource: info.subresource.clone(),
            api_group: info.api_group.clone(),
            api_version: info.api_version.clone(),
            ..ObjectReference::default()
        });
    }
    if let Some((key, value)) = req.annotation {
        ev.annotations.insert(key.into(), value.to_string());
    }
    ev
}

fn user_agent(headers: &HeaderMap) -> String {
    let ua = headers
        .get(USER_AGENT)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .unwrap_or_default();
    if ua.len() <= MAX_USER_AGENT {
        return ua;
    }
    let mut cut = MAX_USER_AGENT;
    while !ua.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}...TRUNCATED", &ua[..cut])
}

/// utilnet.SourceIPs in k8s: X-Forwarded-For, then X-Real-Ip unless already listed, then the
/// connection's address unless it is the last one listed. A request made in process (the
/// loopback client) counts as from 127.0.0.1, where kube-apiserver's loopback client dials.
fn source_ips(headers: &HeaderMap, remote: Option<SocketAddr>) -> Vec<String> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let mut ips: Vec<IpAddr> = header("x-forwarded-for")
        .into_iter()
        .flat_map(|v| v.split(','))
        .filter_map(|part| part.trim().parse().ok())
        .collect();
    if let Some(ip) = header("x-real-ip").and_then(|v| v.trim().parse().ok()) {
        if !ips.contains(&ip) {
            ips.push(ip);
        }
    }
    let remote = remote.map_or(IpAddr::from([127, 0, 0, 1]), |r| r.ip());
    if ips.last() != Some(&remote) {
        ips.push(remote);
    }
    ips.iter().map(ToString::to_string).collect()
}

/// getAuthMethods in k8s: which credentials a request that failed authentication presented
/// (named, never shown).
pub(crate) fn auth_methods(headers: &HeaderMap, query: Option<&str>, has_cert: bool) -> String {
    let mut methods = Vec::new();
    let auth = headers
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .trim();
    let scheme = auth.split(' ').next().unwrap_or("");
    if scheme.eq_ignore_ascii_case("basic") {
        methods.push("basic");
    }
    if auth.split(' ').count() > 1 && scheme.eq_ignore_ascii_case("bearer") {
        methods.push("bearer");
    }
    if form_urlencoded::parse(query.unwrap_or("").as_bytes())
        .any(|(k, v)| k == "access_token" && !v.trim().is_empty())
    {
        methods.push("access_token");
    }
    if has_cert {
        methods.push("x509");
    }
    if methods.is_empty() {
        "Authentication failed, no credentials provided".into()
    } else {
        format!("Authentication failed, attempted: {}", methods.join(", "))
    }
}

impl Auditor {
    /// Evaluates the policy for an authenticated request; below level None, builds its event
    /// and writes RequestReceived (WithAudit in k8s). `Err` when blocking-strict mode could
    /// not store it.
    pub(crate) fn begin(
        self: &Arc<Self>,
        req: &Request<'_>,
        user: &UserInfo,
    ) -> Result<Option<Arc<Context>>, Rejected> {
        let config = self.policy.evaluate(Some(user), req.info);
        metrics::global().audit_level(config.level.as_str());
        if config.level == Level::None {
            return Ok(None);
        }
        let info = req.info;
        let body = if !info.is_resource_request || !info.is_mutating() {
            BodyUse::Ignore
        } else if config.level >= Level::Request {
            BodyUse::Record
        } else if info.verb == "create" || info.verb == "update" {
            BodyUse::Reference
        } else {
            BodyUse::Ignore
        };
        let ctx = Arc::new(Context {
            auditor: self.clone(),
            config,
            long_running: info.is_long_running(),
            resource: info.is_resource_request,
            body,
            event: Mutex::new(new_event(req, config.level, Some(user))),
        });
        if ctx.with_event(|ctx, ev| ctx.emit(ev, Stage::RequestReceived)) {
            Ok(Some(ctx))
        } else {
            metrics::global().audit_rejected();
            Err(Rejected)
        }
    }

    /// A request that failed authentication (WithFailedAuthenticationAudit in k8s): one
    /// ResponseStarted event without a user, naming the credentials tried.
    pub(crate) fn failed_authentication(&self, req: &Request<'_>, code: u16, methods: String) {
        let config = self.policy.evaluate(None, req.info);
        metrics::global().audit_level(config.level.as_str());
        if config.level == Level::None || config.omit_stages.contains(Stage::ResponseStarted) {
            return;
        }
        let mut ev = new_event(req, config.level, None);
        ev.response_status = Some(ResponseStatus::with_message(code, "", methods));
        ev.stage = Stage::ResponseStarted;
        ev.stage_timestamp = Utc::now();
        metrics::global().audit_event();
        self.backend.process(&ev);
    }
}

impl Context {
    fn with_event<T>(&self, f: impl FnOnce(&Self, &mut Event) -> T) -> T {
        let mut ev = self.event.lock().unwrap_or_else(PoisonError::into_inner);
        f(self, &mut ev)
    }

    /// processAuditEvent in k8s: writes the event at `stage` unless the policy omits it.
    fn emit(&self, ev: &mut Event, stage: Stage) -> bool {
        if self.config.omit_stages.contains(stage) {
            return true;
        }
        ev.stage = stage;
        ev.stage_timestamp = if stage == Stage::RequestReceived {
            ev.request_received_timestamp
        } else {
            Utc::now()
        };
        metrics::global().audit_event();
        self.auditor.backend.process(ev)
    }

    /// Records the user the request impersonates.
    pub(crate) fn impersonated(&self, user: &UserInfo) {
        self.with_event(|_, ev| ev.impersonated_user = Some(User::from(user)));
    }

    /// Records the authorizer's decision and reason as annotations.
    pub(crate) fn authorized(&self, decision: &Decision) {
        let verdict = if decision.allowed() {
            "allow"
        } else {
            "forbid"
        };
        self.with_event(|_, ev| {
            ev.annotations.insert(DECISION.into(), verdict.into());
            ev.annotations
                .insert(REASON.into(), decision.reason().into());
        });
    }

    /// Whether the request body is wanted: at level Request and above for a mutating
    /// resource request, at Metadata for create and update (for the object reference only);
    /// callers skip [`Context::request_body`] otherwise.
    pub(crate) fn wants_request_body(&self) -> bool {
        self.body != BodyUse::Ignore
    }

    /// Fills the object reference from the body's metadata and, at level Request and above,
    /// records the body as requestObject (LogRequestObject / LogRequestPatch in k8s; a
    /// patch is recorded as sent). JSON, YAML and protobuf bodies are understood.
    pub(crate) fn request_body(&self, headers: &HeaderMap, body: &[u8]) {
        if body.is_empty() {
            return;
        }
        let is_patch = self.with_event(|_, ev| ev.verb == "patch");
        match self.body {
            BodyUse::Ignore => {}
            BodyUse::Reference => {
                if let Some(meta) = reference_of(headers, body, self.auditor.protobuf) {
                    self.with_event(|_, ev| fill_object_ref(ev.object_ref.as_mut(), &meta));
                }
            }
            BodyUse::Record => {
                let Some(mut object) = decode(headers, body, self.auditor.protobuf) else {
                    return;
                };
                if !is_patch {
                    if self.config.omit_managed_fields {
                        drop_managed_fields(&mut object);
                    }
                    let meta = object.get("metadata").cloned().unwrap_or_default();
                    let meta = serde_json::from_value(meta).unwrap_or_default();
                    self.with_event(|_, ev| fill_object_ref(ev.object_ref.as_mut(), &meta));
                }
                if let Ok(raw) = serde_json::value::to_raw_value(&object) {
                    self.with_event(|_, ev| ev.request_object = Some(Arc::from(raw)));
                }
            }
        }
    }

    /// The response is ready: records its status, writes ResponseStarted for a long-running
    /// request, and hands back the response with a body that writes ResponseComplete when
    /// it ends (or is dropped), with the response object at level RequestResponse.
    pub(crate) fn respond(self: Arc<Self>, resp: http::Response<Body>) -> http::Response<Body> {
        let status = resp.extensions().get::<Status>().map_or_else(
            || ResponseStatus::code(resp.status().as_u16()),
            ResponseStatus::from_status,
        );
        let long_running = self.long_running;
        let annotations = resp.extensions().get::<AuditAnnotations>();
        self.with_event(|ctx, ev| {
            ev.response_status = Some(status);
            for (key, value) in annotations.into_iter().flat_map(|a| &a.0) {
                ev.annotations
                    .entry(key.clone().into())
                    .or_insert_with(|| value.clone());
            }
            if long_running {
                ctx.emit(ev, Stage::ResponseStarted);
            }
        });
        let capture = self.config.level == Level::RequestResponse
            && self.resource
            && !long_running
            && is_json(resp.headers());
        resp.map(|inner| {
            http_body_util::BodyExt::boxed_unsync(AuditedBody::new(inner, self, capture))
        })
    }

    /// The handler panicked: writes the Panic stage with upstream's 500 status.
    pub(crate) fn panicked(&self, message: &str) {
        self.with_event(|ctx, ev| {
            ev.response_status = Some(ResponseStatus::from_status(&Status::internal(format!(
                "APIServer panic'd: {message}"
            ))));
            ctx.emit(ev, Stage::Panic);
        });
    }

    /// The body ended: writes ResponseComplete, with the response object when captured.
    pub(super) fn complete(&self, captured: Option<Vec<Bytes>>) {
        let object = captured.and_then(|chunks| {
            let body: Vec<u8> = chunks.concat();
            let mut object: Value = serde_json::from_slice(&body).ok()?;
            if self.config.omit_managed_fields {
                drop_managed_fields(&mut object);
            }
            serde_json::value::to_raw_value(&object).ok()
        });
        self.with_event(|ctx, ev| {
            ev.response_object = object.map(Arc::from);
            if ev.response_status.is_none() {
                // "Connection closed early", as upstream fakes it.
                ev.response_status = Some(ResponseStatus::with_message(
                    200,
                    "Success",
                    "Connection closed early".into(),
                ));
            }
            ctx.emit(ev, Stage::ResponseComplete);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::audit::test_headers as headers;

    #[test]
    fn source_ips_as_upstream() {
        let remote = Some("10.0.0.9:5555".parse().unwrap());
        assert_eq!(source_ips(&HeaderMap::new(), remote), ["10.0.0.9"]);
        let h = headers(&[
            ("x-forwarded-for", "1.2.3.4, bogus, 5.6.7.8"),
            ("x-real-ip", "5.6.7.8"),
        ]);
        assert_eq!(source_ips(&h, remote), ["1.2.3.4", "5.6.7.8", "10.0.0.9"]);
        let h = headers(&[("x-real-ip", "10.0.0.9")]);
        assert_eq!(source_ips(&h, remote), ["10.0.0.9"], "not repeated");
        assert_eq!(source_ips(&HeaderMap::new(), None), ["127.0.0.1"]);
    }

    #[test]
    fn user_agent_is_truncated() {
        let long = "é".repeat(600);
        let ua = user_agent(&headers(&[("user-agent", &long)]));
        assert!(ua.ends_with("...TRUNCATED"));
        assert_eq!(ua.len(), 1024 + "...TRUNCATED".len());
    }

    #[test]
    fn auth_methods_name_credentials_not_values() {
        let h = headers(&[("authorization", "Bearer s3cret")]);
        let m = auth_methods(&h, Some("access_token=x"), true);
        assert_eq!(
            m,
            "Authentication failed, attempted: bearer, access_token, x509"
        );
        assert!(!m.contains("s3cret"));
        assert_eq!(
            auth_methods(&HeaderMap::new(), None, false),
            "Authentication failed, no credentials provided"
        );
    }
}
