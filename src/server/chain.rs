//! The handler chain, ordered in ONE function as DefaultBuildHandlerChain in k8s:
//! audit ID → panic recovery → request info → authentication → audit → impersonation →
//! authorization → max-in-flight → request timeout (long-running exempt) → body limit →
//! routing (health, /version, /metrics, the API); resource requests are counted in the
//! metrics, and traced when tracing is on (the span starts after authentication).
//! May use: filters, endpoints, api, metrics, audit.

use super::health::Health;
use super::otel::{self, Received, RequestTracer};
use crate::aggregator::peers::{self, PeerProxy};
use crate::aggregator::Aggregator;
use crate::api::authorizer::{Authorizer, Decision};
use crate::api::{full_body, Body, RequestContext, RequestInfo, Status, UserInfo};
use crate::audit::context::{self as audit_context, auth_methods};
use crate::audit::Auditor;
use crate::endpoints::ApiServer;
use crate::filters::authn::{Authenticator, PeerCertificates};
use crate::filters::sa_tokens::LegacyUse;
use crate::filters::{audit, body_limit, impersonation, in_flight::MaxInFlight, panic, timeout};
use crate::metrics;
use bytes::Bytes;
use opentelemetry::context::FutureExt as _;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

/// Everything the chain needs, built once by the server.
pub(super) struct Chain {
    /// Authentication step.
    pub authn: Arc<Authenticator>,
    /// Authorization step.
    pub authz: Arc<dyn Authorizer>,
    /// Max-in-flight budgets.
    pub in_flight: MaxInFlight,
    /// Timeout of non-long-running requests.
    pub request_timeout: Duration,
    /// Health endpoints.
    pub health: Arc<Health>,
    /// The API (everything that is not health or /version).
    pub api: Arc<ApiServer>,
    /// kube-aggregator: remote APIServices are proxied, their groups added to discovery.
    pub aggregator: Arc<Aggregator>,
    /// The mixed-version peer proxy, when on.
    pub peers: Option<Arc<PeerProxy>>,
    /// Cancelled when the server stops serving: watches end their streams.
    pub shutdown: CancellationToken,
    /// The audit policy and log, when auditing is on.
    pub audit: Option<Arc<Auditor>>,
    /// Starts each request's span, when tracing is on.
    pub tracer: Option<RequestTracer>,
}

/// Serves one request through every filter, in order.
pub(super) async fn handle<B>(chain: Arc<Chain>, mut req: http::Request<B>) -> http::Response<Body>
where
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let (method, path) = (req.method().clone(), req.uri().path().to_string());
    let started = tokio::time::Instant::now();
    let audit_id = audit::audit_id(req.headers());
    let received = chain.audit.is_some().then(chrono::Utc::now);
    let id = audit_id.clone();
    let mut resp = panic::recover(&method, &path, async move {
        let info = RequestInfo::parse(req.method(), req.uri().path(), req.uri().query());

        let certs = req.extensions().get::<PeerCertificates>().cloned();
        let authenticating = std::time::Instant::now();
        let authenticated = chain
            .authn
            .authenticate_noting_legacy(req.headers_mut(), certs.as_ref());
        metrics::global().control.authentication(
            if authenticated.is_ok() {
                "success"
            } else {
                "failure"
            },
            authenticating.elapsed(),
        );
        let (authenticated, legacy) = match authenticated {
            Ok((user, legacy)) => (Ok(user), legacy),
            Err(e) => (Err(e), None),
        };
        if let Some(used) = &legacy {
            metrics::global()
                .control
                .legacy_token_used(used.auto_generated);
        }
        // A refusal's own annotation (a legacy token marked invalid); owned, as the error
        // moves on below. Only refused requests allocate it.
        let refused = authenticated
            .as_ref()
            .err()
            .and_then(|e| e.audit_annotation())
            .map(|(key, value)| (key, value.to_owned()));
        if refused.is_some() {
            metrics::global().control.invalid_legacy_token_used();
        }
        let audit_id = chain.audit.as_ref().map(|_| audit::id_text(&id));
        let auditing = chain.audit.as_ref().zip(received).zip(audit_id.as_deref());
        let request = auditing.map(|((auditor, received), audit_id)| {
            let request = audit_context::Request {
                audit_id,
                received,
                uri: req.uri(),
                headers: req.headers(),
                remote: certs.as_ref().and_then(PeerCertificates::remote),
                info: &info,
                annotation: legacy
                    .as_ref()
                    .map(LegacyUse::audit_annotation)
                    .or_else(|| refused.as_ref().map(|(key, value)| (*key, value.as_str()))),
            };
            (auditor, request)
        });
        let user = match authenticated {
            Ok(found) => found,
            Err(err) => {
                tracing::debug!(path = %info.path, error = %err, "authentication failed");
                if let Some((auditor, request)) = &request {
                    let has_cert = certs.as_ref().is_some_and(|c| !c.chain().is_empty());
                    let methods = auth_methods(request.headers, request.uri.query(), has_cert);
                    auditor.failed_authentication(request, 401, methods);
                }
                return Status::unauthorized().into_response();
            }
        };
        let ctx = match &request {
            Some((auditor, request)) => match auditor.begin(request, &user) {
                Ok(ctx) => ctx,
                Err(rejected) => return rejected.into_status().into_response(),
            },
            None => None,
        };
        // The request's span (WithTracing), after authentication as upstream's: whose trace
        // context is trusted depends on the user.
        let span = chain.tracer.as_ref().map(|tracer| {
            tracer.start(Received {
                req: &req,
                info: &info,
                user: &user,
                audit_id: &audit::id_text(&id),
                remote: certs.as_ref().and_then(PeerCertificates::remote),
                started,
            })
        });
        // Boxed: the routed request's future is most of this one's size, which would
        // otherwise be moved with it (into the connection's task, through each combinator).
        let served = audit::run(
            ctx.clone(),
            Box::pin(serve(chain, req, info, user, ctx, started)),
        );
        let mut resp = match span {
            None => served.await,
            Some(cx) => {
                let resp = served.with_context(cx.clone()).await;
                otel::finish(&cx, resp.status());
                resp
            }
        };
        if let Some(text) = legacy.as_ref().and_then(LegacyUse::warning) {
            crate::endpoints::add_warning_first(&mut resp, text);
        }
        resp
    })
    .await;
    audit::echo(&mut resp, audit_id);
    super::date::stamp(resp.headers_mut());
    tracing::debug!(%method, %path, code = resp.status().as_u16(), latency = ?started.elapsed(), "request");
    resp
}

/// The chain after authentication (and the audit filter): impersonation → authorization →
/// max-in-flight → timeout → body limit → routing.
async fn serve<B>(
    chain: Arc<Chain>,
    req: http::Request<B>,
    info: RequestInfo,
    user: UserInfo,
    audit: Option<Arc<audit_context::Context>>,
    started: tokio::time::Instant,
) -> http::Response<Body>
where
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let user = if impersonation::requested(req.headers()) {
        match impersonation::impersonate(req.headers(), &user, chain.authz.as_ref()) {
            Ok(acting_as) => {
                if let Some(audit) = &audit {
                    audit.impersonated(&acting_as);
                }
                acting_as
            }
            Err(status) => return status.into_response(),
        }
    } else {
        user
    };

    let authorizing = std::time::Instant::now();
    let decision = chain.authz.authorize(&user, &info);
    metrics::global().control.authorization(
        match decision {
            Decision::Allow(_) => "allowed",
            Decision::NoOpinion(_) => "no-opinion",
        },
        authorizing.elapsed(),
    );
    if let Some(audit) = &audit {
        audit.authorized(&decision);
    }
    if let Decision::NoOpinion(reason) = decision {
        tracing::debug!(user = %user.name, verb = %info.verb, path = %info.path, %reason, "authorization denied");
        return Status::forbidden(&user.name, &info, &reason).into_response();
    }

    let _permit = match chain.in_flight.try_acquire(&info, &user) {
        Ok(permit) => permit,
        Err(busy) => return busy.to_status().into_response(),
    };

    let limit = (!info.is_long_running()).then_some(chain.request_timeout);
    let recorder = metrics::global().recorder(
        &info,
        is_apply(req.headers()),
        is_dry_run(req.uri().query()),
    );
    let span = tracing::debug_span!(
        "request",
        verb = %info.verb,
        resource = %info.resource,
        ns = %info.namespace,
        name = %info.name,
        user = %user.name,
    );
    let handler = async move {
        let (parts, body) = req.into_parts();
        let body =
            match body_limit::collect(body, &parts.headers, body_limit::MAX_REQUEST_BODY_BYTES)
                .await
            {
                Ok(body) => body,
                Err(status) => return status.into_response(),
            };
        if let Some(audit) = audit.as_ref().filter(|a| a.wants_request_body()) {
            audit.request_body(&parts.headers, &body);
        }
        let req = http::Request::from_parts(parts, body);
        // Boxed: every layer above embeds this future, and hyper moves it per request.
        let resp = Box::pin(route(
            &chain,
            req,
            RequestContext {
                info,
                user,
                shutdown: chain.shutdown.clone(),
            },
        ))
        .await;
        if let Some(recorder) = &recorder {
            let size = hyper::body::Body::size_hint(resp.body()).exact();
            recorder.observe(
                resp.status().as_u16(),
                started.elapsed().as_secs_f64(),
                size,
            );
        }
        resp
    };
    timeout::with_timeout(limit, handler.instrument(span)).await
}

async fn route(
    chain: &Chain,
    req: http::Request<Bytes>,
    ctx: RequestContext,
) -> http::Response<Body> {
    let path = req.uri().path();
    if Health::owns(path) {
        if let Some(resp) = chain.health.serve(path, req.uri().query()).await {
            return resp;
        }
        return Status::not_found_path().into_response();
    }
    if path == "/version" || path == "/version/" {
        return version();
    }
    if path == "/metrics" {
        return serve_metrics(chain, &req);
    }
    if let Some(resp) = issuer_discovery(chain, path) {
        return resp;
    }
    let registry = chain.api.registry();
    let local_group = |group: &str| registry.resources().iter().any(|r| r.info().group == group);
    let excluded = |group: &str, version: &str| chain.aggregator.excludes(group, version);
    if let Some(resp) = chain.aggregator.serve(&req, &ctx, local_group).await {
        return resp;
    }
    // Only a replica with live peers looks a resource up here (the API looks it up again).
    if let Some(peers) = chain.peers.as_ref().filter(|p| p.has_peers()) {
        let i = &ctx.info;
        if i.is_resource_request
            && registry
                .resources()
                .lookup(&i.api_group, &i.api_version, &i.resource)
                .is_none()
            && !excluded(&i.api_group, &i.api_version)
        {
            if let Some(resp) = peers.serve(&req, &ctx).await {
                return resp;
            }
        }
    }
    if path.trim_end_matches('/') == "/openapi/v2" {
        let remote = chain.aggregator.openapi_v2();
        if !remote.specs.is_empty() {
            let (generation, specs) = (remote.generation, &remote.specs);
            return chain
                .api
                .openapi_v2_merged(req.headers(), generation, specs);
        }
    }
    if path.starts_with("/openapi/v3") && chain.aggregator.has_remote() {
        if let Some(resp) = chain.aggregator.serve_openapi(&req).await {
            return resp;
        }
        if path.trim_end_matches('/') == "/openapi/v3" {
            let mut req = req;
            // The merged index has its own content: no 304 for the local one's ETag.
            req.headers_mut().remove(http::header::IF_NONE_MATCH);
            let resp = chain.api.handle(req, ctx).await;
            return chain.aggregator.merge_openapi_index(resp).await;
        }
    }
    let root = path.trim_end_matches('/');
    if root == "/apis" || root == "/api" {
        let core = root == "/api";
        let aggregated = crate::endpoints::wants_aggregated_discovery(req.headers());
        let extra = chain
            .peers
            .as_ref()
            .filter(|_| aggregated && !peers::no_peer(req.headers()))
            .map(|p| {
                let resources = registry.resources();
                let local = |group: &str, version: &str| {
                    resources
                        .iter()
                        .any(|r| r.info().group == group && r.info().version == version)
                };
                p.extra_groups(core, &local, &excluded)
            });
        let mut resp = chain.api.handle(req, ctx).await;
        if !core {
            resp = chain.aggregator.merge_discovery(resp, aggregated).await;
        }
        if let Some(extra) = extra {
            resp = peers::merge(resp, extra).await;
        }
        return resp;
    }
    chain.api.handle(req, ctx).await
}

/// Whether the request is a server-side apply (metrics report it as APPLY).
fn is_apply(headers: &http::HeaderMap) -> bool {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/apply-patch"))
}

/// Whether the query asks for a dry run.
fn is_dry_run(query: Option<&str>) -> bool {
    query.is_some_and(|q| q.split('&').any(|kv| kv == "dryRun=All"))
}

/// `/metrics`: the Prometheus text format, or OpenMetrics when the Accept header asks.
fn serve_metrics(chain: &Chain, req: &http::Request<Bytes>) -> http::Response<Body> {
    let openmetrics = req
        .headers()
        .get(http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("application/openmetrics-text"));
    let m = metrics::global();
    let (read_only, mutating) = chain.in_flight.in_use();
    m.set_in_flight(read_only as i64, mutating as i64);
    let (content_type, body) = m.encode(openmetrics);
    http::Response::builder()
        .header(http::header::CONTENT_TYPE, content_type)
        .body(full_body(body))
        .unwrap_or_else(|_| Status::internal("encoding metrics failed").into_response())
}

/// Service-account issuer discovery (pkg/serviceaccount/openidmetadata.go):
/// `/.well-known/openid-configuration` and `/openid/v1/jwks`, so anything that verifies OIDC
/// tokens can verify service-account tokens.
fn issuer_discovery(chain: &Chain, path: &str) -> Option<http::Response<Body>> {
    let path = path.strip_suffix('/').unwrap_or(path);
    let issuer = chain.api.registry().token_issuer()?;
    let (doc, content_type) = match path {
        "/.well-known/openid-configuration" => (issuer.openid_configuration(), "application/json"),
        "/openid/v1/jwks" => (issuer.jwks(), "application/jwk-set+json"),
        _ => return None,
    };
    let body = serde_json::to_vec(&doc).unwrap_or_default();
    http::Response::builder()
        .status(200)
        .header(http::header::CONTENT_TYPE, content_type)
        .header(http::header::CACHE_CONTROL, "public, max-age=3600")
        .body(full_body(body))
        .ok()
}

/// The Kubernetes version kapi serves (kubectl 1.37 is the client kapi is tested with).
pub(super) const KUBE_VERSION: (&str, &str) = ("1", "37");

/// `/version`, shaped like kube-apiserver's version.Info.
fn version() -> http::Response<Body> {
    let (major, minor) = KUBE_VERSION;
    let info = serde_json::json!({
        "major": major,
        "minor": minor,
        "emulationMajor": major,
        "emulationMinor": minor,
        "minCompatibilityMajor": major,
        "minCompatibilityMinor": (minor.parse::<u32>().unwrap_or(1) - 1).to_string(),
        "gitVersion": format!("v{major}.{minor}.0+kapi-{}", env!("CARGO_PKG_VERSION")),
        "gitCommit": option_env!("KAPI_GIT_COMMIT").unwrap_or(""),
        "gitTreeState": "",
        "buildDate": "1970-01-01T00:00:00Z",
        "goVersion": "",
        "compiler": "rustc",
        "platform": format!("{}/{}", go_os(), go_arch()),
    });
    let body = serde_json::to_vec_pretty(&info).unwrap_or_default();
    http::Response::builder()
        .status(200)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(full_body(body))
        .unwrap_or_else(|_| http::Response::new(crate::api::empty_body()))
}

fn go_os() -> &'static str {
    std::env::consts::OS
}

fn go_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    }
}
