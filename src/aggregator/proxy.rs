//! The proxy to a remote APIService (kube-aggregator's proxyHandler): HTTPS to the resolved
//! address over a few kept HTTP/2 connections ([`Backend`]; HTTP/1.1 when the backend has no
//! HTTP/2), verifying the backend against the APIService's caBundle under the name
//! `<service>.<namespace>.svc` (or not at all with `insecureSkipTLSVerify`), presenting the
//! front-proxy client certificate, and carrying the caller's identity in the request headers
//! (client-go's NewAuthProxyRoundTripper). The caller's own credentials, impersonation
//! headers and any identity headers it sent are dropped; the answer streams back as it
//! arrives (watches included).

use super::{ApiService, ProxyIdentity};
use crate::api::{full_body, Body, UserInfo};
use crate::registry::connections::Backend;
use bytes::Bytes;
use http::header::{HeaderMap, HeaderName, HeaderValue};
use http_body_util::BodyExt;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use std::sync::Arc;
use std::time::Duration;

/// The identity headers (k8s.io/client-go/transport).
pub(super) const USER_HEADER: &str = "x-remote-user";
pub(super) const UID_HEADER: &str = "x-remote-uid";
pub(super) const GROUP_HEADER: &str = "x-remote-group";
pub(super) const EXTRA_PREFIX: &str = "x-remote-extra-";

/// Headers that belong to one connection, never forwarded (Go's httputil hop-by-hop list).
const HOP_BY_HOP: [&str; 9] = [
    "connection",
    "proxy-connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// Whom a request is forwarded to, for its error messages.
#[derive(Clone, Copy)]
pub(super) enum Via<'a> {
    /// A remote APIService's backend, by the APIService's name.
    ApiService(&'a str),
    /// A peer replica (the mixed-version proxy).
    Peer,
}

impl Via<'_> {
    /// What failed, as upstream's responders word it, naming the APIService or peer.
    fn failure(self, target: &str) -> String {
        match self {
            Via::ApiService(name) => format!("error trying to reach service: {name} at {target}"),
            Via::Peer => format!("error while proxying request to peer apiserver {target}"),
        }
    }
}

/// The connections to one APIService's backend (or one peer).
#[derive(Clone)]
pub(crate) struct Client {
    backend: Arc<Backend>,
}

impl Client {
    /// The client of `api`'s backend, verified as `<service>.<namespace>.svc`; Err with
    /// upstream's transport-building message.
    pub(super) fn new(
        api: &ApiService,
        identity: Option<&ProxyIdentity>,
        serving: &tokio::runtime::Handle,
    ) -> Result<Client, String> {
        let svc = api
            .service
            .as_ref()
            .ok_or_else(|| "the APIService is Local".to_string())?;
        let trust = Trust {
            ca_bundle: &api.ca_bundle,
            insecure: api.insecure_skip_tls_verify,
        };
        Client::with(
            &format!("{}.{}.svc", svc.name, svc.namespace),
            trust,
            identity,
            serving,
        )
    }

    /// A client that verifies the server as `server_name` with `trust`; its connections run
    /// on `serving`.
    pub(super) fn with(
        server_name: &str,
        trust: Trust<'_>,
        identity: Option<&ProxyIdentity>,
        serving: &tokio::runtime::Handle,
    ) -> Result<Client, String> {
        let tls = tls_config(trust, identity)?;
        let name = ServerName::try_from(server_name.to_string())
            .map_err(|e| format!("invalid server name {server_name:?}: {e}"))?;
        Ok(Client {
            backend: Arc::new(Backend::new(tls, name, serving)),
        })
    }

    /// Sends `req` to `target` (`host:port`) as `user`; a failure to reach the backend
    /// answers 503 naming the APIService or the peer, as upstream's responders do.
    pub(super) async fn forward(
        &self,
        via: Via<'_>,
        target: &str,
        req: &http::Request<Bytes>,
        user: &UserInfo,
    ) -> http::Response<Body> {
        let path = req
            .uri()
            .path_and_query()
            .cloned()
            .unwrap_or_else(|| http::uri::PathAndQuery::from_static("/"));
        let uri = http::Uri::builder()
            .scheme(http::uri::Scheme::HTTPS)
            .authority(target)
            .path_and_query(path)
            .build();
        let uri = match uri {
            Ok(u) => u,
            Err(e) => {
                return text_error(
                    http::StatusCode::SERVICE_UNAVAILABLE,
                    &format!("{}: {e}", via.failure(target)),
                )
            }
        };
        let mut out = http::Request::builder()
            .method(req.method().clone())
            .uri(uri)
            .body(req.body().clone())
            .unwrap_or_default();
        // Room for the identity and the trace and peer headers, so the map does not grow.
        let room = 4 + user.groups.len() + user.extra.values().map(Vec::len).sum::<usize>();
        *out.headers_mut() = forwarded_headers(req.headers(), room);
        set_identity(out.headers_mut(), user);
        // A traced request's span becomes the parent of the server's (otelhttp's transport).
        crate::api::trace::inject(out.headers_mut());
        if let Via::Peer = via {
            out.headers_mut().insert(
                super::peers::PEER_PROXIED_HEADER,
                HeaderValue::from_static("true"),
            );
        }
        match self.backend.send(target, out).await {
            Ok(mut resp) => {
                strip_hop_by_hop(resp.headers_mut());
                resp
            }
            Err(e) => {
                let cause = crate::api::error_chain(&e);
                let failure = via.failure(target);
                tracing::warn!(error = %cause, "{failure}");
                text_error(
                    http::StatusCode::SERVICE_UNAVAILABLE,
                    &format!("{failure}: {cause}"),
                )
            }
        }
    }

    /// GETs `path` (with its query) from `target` as `system:kube-aggregator` in
    /// `system:masters` (the availability, discovery and OpenAPI fetches), within `limit`.
    pub(super) async fn get(
        &self,
        target: &str,
        path: &str,
        accept: &str,
        limit: Duration,
    ) -> Result<http::Response<Bytes>, String> {
        self.get_with(target, path, &[(http::header::ACCEPT, accept)], limit)
            .await
    }

    /// [`Client::get`] with the request headers `headers` (Accept, If-None-Match, ...).
    pub(super) async fn get_with(
        &self,
        target: &str,
        path: &str,
        headers: &[(http::header::HeaderName, &str)],
        limit: Duration,
    ) -> Result<http::Response<Bytes>, String> {
        let uri: http::Uri = format!("https://{target}{path}")
            .parse()
            .map_err(|e| format!("{e}"))?;
        let mut req = http::Request::get(uri);
        for (name, value) in headers {
            req = req.header(name, *value);
        }
        let mut req = req.body(Bytes::new()).map_err(|e| e.to_string())?;
        let checker = UserInfo {
            name: "system:kube-aggregator".into(),
            uid: String::new(),
            groups: vec!["system:masters".into()],
            extra: Default::default(),
        };
        set_identity(req.headers_mut(), &checker);
        let fetch = async {
            let resp = self
                .backend
                .send(target, req)
                .await
                .map_err(|e| crate::api::error_chain(&e))?;
            let (parts, body) = resp.into_parts();
            let body = body.collect().await.map_err(|e| e.to_string())?.to_bytes();
            Ok(http::Response::from_parts(parts, body))
        };
        tokio::time::timeout(limit, fetch)
            .await
            .map_err(|_| format!("timed out after {limit:?}"))?
    }
}

/// Go's http.Error: a plain-text body with a newline.
pub(super) fn text_error(code: http::StatusCode, message: &str) -> http::Response<Body> {
    http::Response::builder()
        .status(code)
        .header(http::header::CONTENT_TYPE, "text/plain; charset=utf-8")
        .header("x-content-type-options", "nosniff")
        .body(full_body(format!("{message}\n")))
        .unwrap_or_default()
}

/// The request's headers without hop-by-hop ones, credentials, impersonation and identity
/// headers, and Host (the target's authority replaces it), with room for `room` more.
fn forwarded_headers(headers: &HeaderMap, room: usize) -> HeaderMap {
    let mut out = HeaderMap::with_capacity(headers.len() + room);
    for (name, value) in headers {
        let n = name.as_str();
        if HOP_BY_HOP.contains(&n)
            || n == "host"
            || n == "authorization"
            || n.starts_with("impersonate-")
            || n.starts_with("x-remote-")
        {
            continue;
        }
        out.append(name.clone(), value.clone());
    }
    out
}

fn strip_hop_by_hop(headers: &mut HeaderMap) {
    // Most answers have none: looking costs less than a removal of each name.
    if headers.keys().any(|k| HOP_BY_HOP.contains(&k.as_str())) {
        for name in HOP_BY_HOP {
            headers.remove(name);
        }
    }
}

/// client-go's SetAuthProxyHeaders: user, uid, every group, every extra value (keys
/// percent-encoded).
fn set_identity(headers: &mut HeaderMap, user: &UserInfo) {
    let mut put = |name: HeaderName, value: &str| {
        if let Ok(v) = HeaderValue::from_str(value) {
            headers.append(name, v);
        }
    };
    put(HeaderName::from_static(USER_HEADER), &user.name);
    if !user.uid.is_empty() {
        put(HeaderName::from_static(UID_HEADER), &user.uid);
    }
    for g in &user.groups {
        put(HeaderName::from_static(GROUP_HEADER), g);
    }
    for (key, values) in &user.extra {
        let key = header_key_escape(key);
        let Ok(name) = HeaderName::from_bytes(format!("{EXTRA_PREFIX}{key}").as_bytes()) else {
            continue;
        };
        for v in values {
            put(name.clone(), v);
        }
    }
}

/// client-go's headerKeyEscape: bytes that are not HTTP token characters, and `%`, become
/// `%XX` (upper-case hex), so the backend's url.PathUnescape gets the key back.
fn header_key_escape(key: &str) -> String {
    const TOKEN_PUNCTUATION: &[u8] = b"!#$&'*+-.^_`|~";
    let mut out = String::with_capacity(key.len());
    for &b in key.as_bytes() {
        if b.is_ascii_alphanumeric() || TOKEN_PUNCTUATION.contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// How a backend's serving certificate is checked.
#[derive(Clone, Copy)]
pub(super) struct Trust<'a> {
    /// PEM bundle (empty: the system's roots).
    pub ca_bundle: &'a [u8],
    /// Accept any certificate.
    pub insecure: bool,
}

/// Trust of the backend and the proxy's client certificate.
pub(super) fn tls_config(
    trust: Trust<'_>,
    identity: Option<&ProxyIdentity>,
) -> Result<rustls::ClientConfig, String> {
    let provider = crate::registry::connections::client_provider();
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let builder = if trust.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerifier(provider)))
    } else {
        let mut roots = rustls::RootCertStore::empty();
        if trust.ca_bundle.trim_ascii().is_empty() {
            for cert in rustls_native_certs::load_native_certs().certs {
                let _ = roots.add(cert);
            }
        } else {
            for cert in rustls_pemfile::certs(&mut &trust.ca_bundle[..]).flatten() {
                let _ = roots.add(cert);
            }
            if roots.is_empty() {
                return Err(
                    "unable to load root certificates: unable to parse bytes as PEM block".into(),
                );
            }
        }
        builder.with_root_certificates(roots)
    };
    match identity {
        Some(id) => {
            let certs: Vec<CertificateDer<'static>> =
                rustls_pemfile::certs(&mut id.cert_pem.as_bytes())
                    .collect::<Result<_, _>>()
                    .map_err(|e| format!("the proxy client certificate: {e}"))?;
            let key = rustls_pemfile::private_key(&mut id.key_pem.as_bytes())
                .map_err(|e| format!("the proxy client key: {e}"))?
                .ok_or_else(|| "the proxy client key: no private key".to_string())?;
            builder
                .with_client_auth_cert(certs, key)
                .map_err(|e| format!("the proxy client certificate: {e}"))
        }
        None => Ok(builder.with_no_client_auth()),
    }
}

/// `insecureSkipTLSVerify`: any certificate is accepted (the handshake's signatures are
/// still checked).
#[derive(Debug)]
struct NoVerifier(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for NoVerifier {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_and_identity_headers_are_replaced_by_the_callers_identity() {
        let mut headers = HeaderMap::new();
        for (k, v) in [
            ("authorization", "Bearer secret"),
            ("impersonate-user", "root"),
            ("x-remote-user", "mallory"),
            ("x-remote-extra-scopes", "all"),
            ("connection", "keep-alive"),
            ("accept", "application/json"),
        ] {
            headers.append(k, HeaderValue::from_static(v));
        }
        let mut out = forwarded_headers(&headers, 0);
        let user = UserInfo {
            name: "alice".into(),
            uid: "42".into(),
            groups: vec!["devs".into(), "system:authenticated".into()],
            extra: [("example.com/team".to_string(), vec!["a".to_string()])].into(),
        };
        set_identity(&mut out, &user);
        let all =
            |n: &str| -> Vec<&str> { out.get_all(n).iter().map(|v| v.to_str().unwrap()).collect() };
        assert_eq!(all("x-remote-user"), ["alice"]);
        assert_eq!(all("x-remote-uid"), ["42"]);
        assert_eq!(all("x-remote-group"), ["devs", "system:authenticated"]);
        assert_eq!(all("x-remote-extra-example.com%2fteam"), ["a"]);
        assert!(all("x-remote-extra-scopes").is_empty());
        assert!(out.get("authorization").is_none());
        assert!(out.get("impersonate-user").is_none());
        assert!(out.get("connection").is_none());
        assert_eq!(all("accept"), ["application/json"]);
    }
}
