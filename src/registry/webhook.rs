//! The API server's client of webhooks (CRD conversion and admission), as k8s.io/apiserver's
//! webhook ClientManager builds them: one JSON POST to the webhook's URL (or
//! `https://<service>.<namespace>.svc:<port><path>`, resolved through the followed Services
//! when asked), trusting the caBundle or else the system's roots, within a deadline. A
//! webhook that offers HTTP/2 in ALPN is called over a few kept HTTP/2 connections
//! ([`Backend`]); one that does not, over kept HTTP/1.1 connections, one call at a time
//! each. (Upstream speaks only HTTP/1.1 to webhooks, kubernetes/kubernetes#75791, so that
//! calls spread over a Service's pods; kapi resolves a Service to one address per connection
//! either way.) Its errors read as client-go's, since they reach users inside
//! Status messages; a traced request's `traceparent` goes along. May use: the registry's
//! Services, api.

use super::connections::{Backend, TlsStream};
use super::services::{join_host_port, ServiceRef, Services};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::rt::TokioIo;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::WebhookClientConfig;
use rustls::pki_types::ServerName;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// The most of a webhook's answer that is read.
const MAX_RESPONSE_BYTES: usize = 64 << 20;

/// Connections kept open per webhook between calls (the objects of a list are converted one
/// call each; admission calls one webhook from every concurrent write).
const IDLE_CONNECTIONS: usize = 64;

/// The sending half of a connection to a webhook.
type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

/// How much of a non-JSON error answer is quoted (client-go's maxUnstructuredResponseTextBytes).
const MAX_QUOTED_BYTES: usize = 2048;

/// Why a webhook call failed, in client-go's words.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum WebhookError {
    /// The client configuration cannot be used (no URL, an unparsable URL, a bad caBundle).
    #[error("{0}")]
    Config(String),
    /// The request did not get an answer: `Post "<url>": <cause>`.
    #[error("Post {url:?}: {cause}")]
    Transport {
        /// Where the request went.
        url: String,
        /// Why it got no answer.
        cause: String,
    },
    /// The webhook answered with an error status.
    #[error("{0}")]
    Status(String),
}

/// Where a webhook is and how it is trusted.
pub(crate) struct Endpoint {
    /// The URL, for messages.
    url: String,
    /// Where to dial, `host:port` (the URL's, or its service's DNS name's).
    address: Arc<str>,
    /// Path and query of the request (the URI of HTTP/1.1 calls), and their headers (Host
    /// included).
    path: http::Uri,
    h1_headers: http::HeaderMap,
    server_name: ServerName<'static>,
    /// Trust for HTTP/1.1 connections (ALPN `http/1.1`).
    tls: Arc<rustls::ClientConfig>,
    /// Trust for HTTP/2 connections (the connections set ALPN).
    h2_tls: rustls::ClientConfig,
    /// The HTTP/2 connections, made at the first call (on the runtime that makes them).
    h2: std::sync::OnceLock<Backend>,
    /// The URI of HTTP/2 calls (absolute), and their headers.
    h2_uri: http::Uri,
    h2_headers: http::HeaderMap,
    /// The clientConfig's service, and the Services it resolves through (see
    /// [`Endpoint::resolving`]); without them the service's DNS name is dialled.
    service: Option<ServiceRef>,
    resolver: Option<Arc<Services>>,
    /// Connections kept open for the next call.
    idle: std::sync::Mutex<Vec<Sender>>,
    /// Where connections are dialed and run (see [`Endpoint::on`]); None: the caller's runtime.
    runtime: Option<tokio::runtime::Handle>,
}

impl Endpoint {
    /// The endpoint of a webhook's clientConfig (url, or service resolved by DNS as
    /// upstream's default service resolver does).
    ///
    /// # Errors
    ///
    /// Neither url nor service is set, the URL does not parse, or the caBundle holds no
    /// certificate.
    pub(crate) fn new(config: &WebhookClientConfig) -> Result<Endpoint, WebhookError> {
        let mut service = None;
        let (url, server_name) = match (&config.url, &config.service) {
            (Some(url), _) => (url.clone(), None),
            (None, Some(svc)) => {
                let host = format!("{}.{}.svc", svc.name, svc.namespace);
                let port = svc.port.unwrap_or(443);
                let path = svc.path.as_deref().unwrap_or("");
                service = Some(ServiceRef {
                    namespace: svc.namespace.clone(),
                    name: svc.name.clone(),
                    port: u16::try_from(port).unwrap_or(443),
                });
                (format!("https://{host}:{port}{path}"), Some(host))
            }
            (None, None) => {
                return Err(WebhookError::Config(
                    "webhook configuration must have either service or URL".into(),
                ))
            }
        };
        let uri: http::Uri = url.parse().map_err(unparsable)?;
        let authority = uri
            .authority()
            .ok_or_else(|| unparsable(format!("no host in {url:?}")))?;
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let server_name = ServerName::try_from(server_name.unwrap_or_else(|| host.clone()))
            .map_err(unparsable)?;
        let path = uri
            .path_and_query()
            .map_or_else(|| "/".to_string(), |p| p.as_str().to_string());
        let h2_tls = tls_config(config.ca_bundle.as_ref().map(|b| &b.0[..]))?;
        let path = if path.is_empty() { "/".into() } else { path };
        let h2_uri = format!("https://{}{path}", authority.as_str())
            .parse()
            .map_err(unparsable)?;
        let path = path.parse().map_err(unparsable)?;
        let mut tls = h2_tls.clone();
        tls.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Endpoint {
            address: join_host_port(&host, authority.port_u16().unwrap_or(443)).into(),
            h1_headers: call_headers(Some(authority.as_str()))?,
            path,
            url,
            server_name,
            tls: Arc::new(tls),
            h2_tls,
            h2: std::sync::OnceLock::new(),
            h2_uri,
            h2_headers: call_headers(None)?,
            service,
            resolver: None,
            idle: std::sync::Mutex::new(Vec::new()),
            runtime: None,
        })
    }

    /// Resolves a clientConfig service through `services` at each new connection (an
    /// ExternalName's name, a headless Service's ready endpoint), as kube-apiserver resolves
    /// webhook services through the aggregator's resolver; the certificate is still checked
    /// for `<service>.<namespace>.svc`.
    pub(crate) fn resolving(mut self, services: &Arc<Services>) -> Endpoint {
        if self.service.is_some() {
            self.resolver = Some(Arc::clone(services));
        }
        self
    }

    /// Dials and runs the endpoint's connections (their sockets, TLS and HTTP/1.1 I/O) on
    /// `runtime`, the one that serves clients, whichever task needs them. A connection dialed
    /// by a controller's loopback request would otherwise belong to the controllers' one
    /// thread for as long as it is kept, client calls included.
    pub(crate) fn on(mut self, runtime: Option<&tokio::runtime::Handle>) -> Endpoint {
        self.runtime = runtime.cloned();
        self
    }

    /// POSTs `body` (JSON) and returns the answer's body, within `timeout`.
    ///
    /// # Errors
    ///
    /// No answer in time, a transport or TLS failure, or a status other than 2xx.
    pub(crate) async fn post_json(
        &self,
        body: Vec<u8>,
        timeout: Duration,
    ) -> Result<Bytes, WebhookError> {
        // Boxed: the connections' futures would otherwise make every write's future that may
        // call a webhook as large as they are.
        match tokio::time::timeout(timeout, Box::pin(self.round_trip(body))).await {
            Ok(answer) => answer,
            Err(_) => Err(self.transport("context deadline exceeded".into())),
        }
    }

    fn transport(&self, cause: String) -> WebhookError {
        transport(&self.url, cause)
    }

    async fn round_trip(&self, body: Vec<u8>) -> Result<Bytes, WebhookError> {
        let mut body = Bytes::from(body);
        // A webhook known to have no HTTP/2 goes straight to HTTP/1.1 (no request is built
        // for nothing).
        if !self.h2.get().is_some_and(Backend::http1_only) {
            body = match self.over_h2(body).await? {
                Ok(answer) => return Ok(answer),
                // The connection that found the webhook without HTTP/2 serves this call.
                Err((body, Some(stream))) => {
                    let sender = self.start_http1(stream).await?;
                    return self.exchange(sender, body).await?;
                }
                Err((body, None)) => body,
            };
        }
        // A kept connection the webhook may have closed since: a review is idempotent, so one
        // that could not be sent on it is sent again on a new connection.
        if let Some(sender) = self.take_idle() {
            if let Ok(answer) = self.exchange(sender, body.clone()).await {
                return answer;
            }
        }
        let sender = self.connect().await?;
        self.exchange(sender, body).await?
    }

    /// The call over HTTP/2: `Ok(Err(..))` hands the body back when the webhook has no HTTP/2,
    /// with the connection that found it out when one was made.
    async fn over_h2(
        &self,
        body: Bytes,
    ) -> Result<Result<Bytes, (Bytes, Option<Box<TlsStream>>)>, WebhookError> {
        let backend = self.h2.get_or_init(|| {
            let runtime = self
                .runtime
                .clone()
                .unwrap_or_else(tokio::runtime::Handle::current);
            Backend::new(self.h2_tls.clone(), self.server_name.clone(), &runtime)
        });
        let target = self.target()?;
        let request = call(&self.h2_uri, &self.h2_headers, body);
        let response = match backend.send_h2(&target, request).await {
            Ok(Ok(response)) => response,
            Ok(Err(h1)) => return Ok(Err((h1.request.into_body(), h1.connection))),
            Err(e) => return Err(self.transport(crate::api::error_chain(&e))),
        };
        let status = response.status();
        let text = is_text(response.headers());
        let body = Limited::new(response.into_body(), MAX_RESPONSE_BYTES)
            .collect()
            .await
            .map_err(|e| self.transport(e.to_string()))?
            .to_bytes();
        answer(status, body, text).map(Ok)
    }

    /// Where a new connection goes: the URL's host, or the address its Service resolves to.
    /// As `host:port` (Go's net.JoinHostPort), the key of its HTTP/2 connections.
    fn target(&self) -> Result<Arc<str>, WebhookError> {
        match (&self.service, &self.resolver) {
            (Some(svc), Some(services)) => services
                .resolve(svc)
                .map_err(|e| self.transport(e.to_string())),
            _ => Ok(Arc::clone(&self.address)),
        }
    }

    /// HTTP/1.1 over a connection made already; its task runs where the connection was made.
    async fn start_http1(&self, stream: Box<TlsStream>) -> Result<Sender, WebhookError> {
        let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| self.transport(e.to_string()))?;
        let run = async move {
            let _ = conn.await;
        };
        // The connection lives as long as its runtime and its sender.
        drop(match &self.runtime {
            Some(runtime) => runtime.spawn(run),
            None => tokio::spawn(run),
        });
        Ok(sender)
    }

    /// A kept connection that is still open.
    fn take_idle(&self) -> Option<Sender> {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        while let Some(sender) = idle.pop() {
            if !sender.is_closed() {
                return Some(sender);
            }
        }
        None
    }

    async fn connect(&self) -> Result<Sender, WebhookError> {
        let dial = Dial {
            url: self.url.clone(),
            address: self.target()?,
            tls: Arc::clone(&self.tls),
            server_name: self.server_name.clone(),
        };
        match &self.runtime {
            // The socket belongs to the runtime it is made on, so the whole dial runs there.
            Some(runtime) => runtime
                .spawn(dial.run())
                .await
                .map_err(|e| self.transport(format!("dial: {e}")))?,
            None => dial.run().await,
        }
    }

    /// One request on `sender`: `Err` when it could not be sent, `Ok` with the webhook's
    /// answer otherwise. A connection whose answer was read in full is kept for the next
    /// call.
    async fn exchange(
        &self,
        mut sender: Sender,
        body: Bytes,
    ) -> Result<Result<Bytes, WebhookError>, WebhookError> {
        let request = call(&self.path, &self.h1_headers, Full::new(body));
        // A kept connection becomes ready again only once its task has finished the previous
        // exchange; sending before that fails, and would open a new connection needlessly.
        sender
            .ready()
            .await
            .map_err(|e| self.transport(e.to_string()))?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| self.transport(e.to_string()))?;
        let status = response.status();
        let text = is_text(response.headers());
        let body = match Limited::new(response.into_body(), MAX_RESPONSE_BYTES)
            .collect()
            .await
        {
            Ok(collected) => collected.to_bytes(),
            Err(e) => return Ok(Err(self.transport(e.to_string()))),
        };
        if !sender.is_closed() {
            let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
            if idle.len() < IDLE_CONNECTIONS {
                idle.push(sender);
            }
        }
        Ok(answer(status, body, text))
    }
}

/// A call's POST to `uri` with `headers` and, for a traced request, its context (otelhttp's
/// transport in upstream's client).
fn call<B>(uri: &http::Uri, headers: &http::HeaderMap, body: B) -> http::Request<B> {
    let mut request = http::Request::new(body);
    *request.method_mut() = http::Method::POST;
    *request.uri_mut() = uri.clone();
    *request.headers_mut() = headers.clone();
    crate::api::trace::inject(request.headers_mut());
    request
}

/// A clientConfig whose URL does not make a request.
fn unparsable(e: impl std::fmt::Display) -> WebhookError {
    WebhookError::Config(format!("Unparsable URL: {e}"))
}

/// The headers of every call, with `host` as the Host header when given (HTTP/1.1).
fn call_headers(host: Option<&str>) -> Result<http::HeaderMap, WebhookError> {
    use http::header::{HeaderValue, ACCEPT, CONTENT_TYPE, HOST, USER_AGENT as AGENT};
    let mut headers = http::HeaderMap::with_capacity(4);
    if let Some(host) = host {
        let host = HeaderValue::from_str(host).map_err(unparsable)?;
        headers.insert(HOST, host);
    }
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(ACCEPT, HeaderValue::from_static("application/json, */*"));
    headers.insert(AGENT, HeaderValue::from_static(USER_AGENT));
    Ok(headers)
}

/// The User-Agent of webhook calls.
const USER_AGENT: &str = concat!("kapi/", env!("CARGO_PKG_VERSION"));

/// Whether an answer's body is plain text (quoted in errors).
fn is_text(headers: &http::HeaderMap) -> bool {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/plain"))
}

/// A webhook's answer: its body when the status is 2xx, else the error client-go makes of it.
fn answer(status: http::StatusCode, body: Bytes, text: bool) -> Result<Bytes, WebhookError> {
    if status.is_success() {
        Ok(body)
    } else {
        Err(WebhookError::Status(status_error(
            status.as_u16(),
            &body,
            text,
        )))
    }
}

/// A request to `url` that got no answer, and why.
fn transport(url: &str, cause: String) -> WebhookError {
    WebhookError::Transport {
        url: url.to_string(),
        cause,
    }
}

/// One connection to make: where, and how it is trusted.
struct Dial {
    url: String,
    /// `host:port`.
    address: Arc<str>,
    tls: Arc<rustls::ClientConfig>,
    server_name: ServerName<'static>,
}

impl Dial {
    fn transport(&self, cause: String) -> WebhookError {
        transport(&self.url, cause)
    }

    /// Connects (TCP, TLS, HTTP/1.1) and starts the connection's task on this runtime.
    async fn run(self) -> Result<Sender, WebhookError> {
        let addr = &*self.address;
        let tcp = tokio::net::TcpStream::connect(addr)
            .await
            .map_err(|e| self.transport(format!("dial tcp {addr}: {}", go_dial_error(&e))))?;
        let _ = tcp.set_nodelay(true);
        let tls = tokio_rustls::TlsConnector::from(Arc::clone(&self.tls))
            .connect(self.server_name.clone(), tcp)
            .await
            .map_err(|e| self.transport(format!("tls: {e}")))?;
        let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
            .await
            .map_err(|e| self.transport(e.to_string()))?;
        // The connection lives as long as its runtime and its sender.
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(sender)
    }
}

/// Trust for a webhook: its caBundle's certificates, or the system's roots without one (no
/// ALPN protocols).
pub(crate) fn tls_config(ca_bundle: Option<&[u8]>) -> Result<rustls::ClientConfig, WebhookError> {
    let mut roots = rustls::RootCertStore::empty();
    match ca_bundle.filter(|b| !b.trim_ascii().is_empty()) {
        Some(pem) => {
            for cert in rustls_pemfile::certs(&mut &pem[..]).flatten() {
                let _ = roots.add(cert);
            }
            if roots.is_empty() {
                return Err(WebhookError::Config(
                    "unable to load root certificates: unable to parse bytes as PEM block".into(),
                ));
            }
        }
        None => {
            for cert in rustls_native_certs::load_native_certs().certs {
                let _ = roots.add(cert);
            }
        }
    }
    let provider = crate::registry::connections::client_provider();
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| WebhookError::Config(e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(config)
}

/// A dial failure as Go words it (`connect: connection refused`).
pub(crate) fn go_dial_error(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::ConnectionRefused => "connect: connection refused".into(),
        std::io::ErrorKind::TimedOut => "i/o timeout".into(),
        _ => {
            let text = e.to_string();
            let text = text.split(" (os error").next().unwrap_or(&text);
            text.to_ascii_lowercase()
        }
    }
}

/// client-go's error for a non-2xx answer: the Status's message when the body is a Status,
/// else NewGenericServerResponse's text for the code.
fn status_error(code: u16, body: &[u8], text: bool) -> String {
    if let Ok(v) = serde_json::from_slice::<serde_json::Value>(body) {
        if v.get("kind").and_then(|k| k.as_str()) == Some("Status") {
            if let Some(m) = v.get("message").and_then(|m| m.as_str()) {
                return m.to_string();
            }
        }
    }
    let quoted = &body[..body.len().min(MAX_QUOTED_BYTES)];
    let server = if text {
        String::from_utf8_lossy(quoted).trim().to_string()
    } else {
        "unknown".to_string()
    };
    match code {
        409 => "the server reported a conflict".into(),
        404 => "the server could not find the requested resource".into(),
        400 => "the server rejected our request for an unknown reason".into(),
        401 => "the server has asked for the client to provide credentials".into(),
        403 | 415 => server,
        406 if server.is_empty() || server == "unknown" => {
            "the server was unable to respond with a content type that the client supports".into()
        }
        406 => server,
        405 => "the server does not allow this method on the requested resource".into(),
        422 => "the server rejected our request due to an error in our request".into(),
        503 => "the server is currently unable to handle the request".into(),
        504 => "the server was unable to return a response in the time allotted, but may still be processing the request".into(),
        429 => "the server has received too many requests and has asked us to try again later".into(),
        c if c >= 500 => format!(
            "an error on the server ({}) has prevented the request from succeeding",
            crate::registry::error::quote(&server)
        ),
        c => format!("the server responded with the status code {c} but did not return more information"),
    }
}

/// Runs a webhook call to completion from synchronous code (a storage codec): on a
/// multi-threaded runtime it is first polled once in place, which finishes the work that
/// never waits (admission policies over cached state, a chain where nothing matches), and
/// only work that must wait makes the worker hand its other tasks off while it waits;
/// elsewhere a thread of its own runs the call.
///
/// # Errors
///
/// The call's own, or no runtime could be started for it.
pub(crate) fn wait<F, T, E>(fut: F) -> Result<T, E>
where
    F: Future<Output = Result<T, E>> + Send,
    T: Send,
    E: Send + From<WebhookError>,
{
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current() {
        Ok(h) if h.runtime_flavor() == RuntimeFlavor::MultiThread => {
            let mut fut = std::pin::pin!(fut);
            // Polled here with a waker that does nothing: if it is not done, block_on polls
            // it again at once with its own, on the same runtime, before it parks.
            let waker = futures::task::noop_waker();
            let mut cx = std::task::Context::from_waker(&waker);
            if let std::task::Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
                return out;
            }
            tokio::task::block_in_place(|| h.block_on(fut))
        }
        _ => std::thread::scope(|s| {
            let call = s.spawn(|| {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| {
                        E::from(WebhookError::Config(format!(
                            "no runtime for the call: {e}"
                        )))
                    })?
                    .block_on(fut)
            });
            call.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
        }),
    }
}

#[cfg(test)]
pub(crate) mod testing;
#[cfg(test)]
mod tests;
