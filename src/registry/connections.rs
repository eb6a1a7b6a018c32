//! Connections to one server kapi calls (an extension API server, a peer replica, a
//! webhook). A few HTTP/2 connections are used in turn, and each request goes straight onto
//! one through h2's own stream handles: no pool checkout, dispatch channel or per-request task
//! stands between the caller and the connection, so a proxied request wakes the connection's
//! task and is woken by it, nothing more. Its writes are coalesced ([`Coalescing`]): requests
//! forwarded at the same moment leave in one write. A backend that does not offer `h2` in ALPN
//! is reached through hyper's pooled HTTP/1.1 client instead ([`Backend::send`]), or the
//! caller's own ([`Backend::send_h2`] hands the request back).

use crate::api::coalesce::Coalescing;
use crate::api::Body;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Frame;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client as HttpClient;
use rustls::pki_types::ServerName;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};
use std::time::Duration;

/// How long dialing a backend (TCP, TLS and the HTTP/2 preface) may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How many HTTP/2 connections are kept to one backend. One multiplexed connection puts its
/// TLS and framing on one core at each end, so requests are spread over a few.
const CONNECTIONS: usize = 4;

/// Flow-control windows as hyper's HTTP/2 client sets them.
const STREAM_WINDOW: u32 = 2 * 1024 * 1024;
const CONNECTION_WINDOW: u32 = 5 * 1024 * 1024;

/// The TLS of kapi's calls to other servers: rustls' ring suites, TLS 1.3's AES-128-GCM
/// first, as Go's crypto/tls offers them (so kapi's calls negotiate what kube-apiserver's own
/// would; rustls would offer AES-256-GCM first, which costs more per record).
pub(crate) fn client_provider() -> Arc<rustls::crypto::CryptoProvider> {
    let mut provider = rustls::crypto::ring::default_provider();
    provider
        .cipher_suites
        .sort_by_key(|s| s.suite() != rustls::CipherSuite::TLS13_AES_128_GCM_SHA256);
    Arc::new(provider)
}

type Http1 = HttpClient<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>;

/// Why a request got no answer from the backend.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SendError {
    /// TCP: `dial tcp <addr>: <cause>`, as Go words it.
    #[error("dial tcp {addr}: {cause}")]
    Dial { addr: String, cause: String },
    #[error("tls")]
    Tls(#[source] std::io::Error),
    #[error("http2")]
    Http2(#[source] h2::Error),
    #[error("dialing took longer than {0:?}")]
    Timeout(Duration),
    #[error("http")]
    Http1(#[source] hyper_util::client::legacy::Error),
}

/// One kept HTTP/2 connection, to `target`.
#[derive(Clone)]
struct Conn {
    id: u64,
    target: Arc<str>,
    send: h2::client::SendRequest<Bytes>,
}

/// A place for one connection; `dialing` lets one caller dial while the others wait for it.
#[derive(Default)]
struct Slot {
    conn: Mutex<Option<Conn>>,
    dialing: tokio::sync::Mutex<()>,
}

impl Slot {
    fn current(&self, target: &str) -> Option<Conn> {
        let conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        conn.as_ref().filter(|c| &*c.target == target).cloned()
    }

    /// Forgets connection `id` (closed or failed), unless another has replaced it.
    fn forget(&self, id: u64) {
        let mut conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        if conn.as_ref().is_some_and(|c| c.id == id) {
            *conn = None;
        }
    }
}

/// A TLS connection to a backend.
pub(crate) type TlsStream = tokio_rustls::client::TlsStream<Coalescing<tokio::net::TcpStream>>;

/// A request for a backend without HTTP/2, handed back by [`Backend::send_h2`], with the
/// connection that found it out (ready for HTTP/1.1) when there is one.
pub(crate) struct Http1Only {
    pub(crate) request: http::Request<Bytes>,
    pub(crate) connection: Option<Box<TlsStream>>,
}

/// What a dial found the backend to speak.
enum Dialed {
    Http2(Conn),
    /// ALPN chose HTTP/1.1 (or nothing): the backend has no HTTP/2; the connection made.
    Http1Only(Option<Box<TlsStream>>),
}

/// The connections to one backend.
pub(crate) struct Backend {
    tls: tokio_rustls::TlsConnector,
    server_name: ServerName<'static>,
    slots: Arc<[Slot]>,
    next: AtomicUsize,
    ids: AtomicU64,
    http1_only: AtomicBool,
    http1: Http1,
    /// The runtime that serves clients, where connections' tasks run (hyper would spawn
    /// them from whichever task dials first, often a controller on the control plane's
    /// one-thread runtime).
    serving: tokio::runtime::Handle,
}

impl Backend {
    /// Connections verified as `server_name` with `tls` (ALPN is set here).
    pub(crate) fn new(
        mut tls: rustls::ClientConfig,
        server_name: ServerName<'static>,
        serving: &tokio::runtime::Handle,
    ) -> Backend {
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_connect_timeout(Some(CONNECT_TIMEOUT));
        http.set_nodelay(true);
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls.clone())
            .https_only()
            .with_server_name_resolver(hyper_rustls::FixedServerNameResolver::new(
                server_name.clone(),
            ))
            .enable_http1()
            .wrap_connector(http);
        let http1 = HttpClient::builder(Serving(serving.clone()))
            .pool_idle_timeout(Duration::from_secs(90))
            .build(connector);
        tls.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Backend {
            tls: tokio_rustls::TlsConnector::from(Arc::new(tls)),
            server_name,
            slots: (0..CONNECTIONS).map(|_| Slot::default()).collect(),
            next: AtomicUsize::new(0),
            ids: AtomicU64::new(0),
            http1_only: AtomicBool::new(false),
            http1,
            serving: serving.clone(),
        }
    }

    /// Sends `req` (its URI absolute, `https://<target>/...`) to `target` (`host:port`);
    /// the answer's body streams as it arrives. A connection found closed when the request is
    /// about to go out is replaced once.
    pub(crate) async fn send(
        &self,
        target: &str,
        req: http::Request<Bytes>,
    ) -> Result<http::Response<Body>, SendError> {
        match self.send_h2(target, req).await? {
            Ok(response) => Ok(response),
            // hyper's client dials its own connections.
            Err(fallback) => self.send_http1(fallback.request).await,
        }
    }

    /// Whether the backend was found to have no HTTP/2 (its requests go over HTTP/1.1).
    pub(crate) fn http1_only(&self) -> bool {
        self.http1_only.load(Ordering::Relaxed)
    }

    /// As [`Backend::send`] over HTTP/2 only: for a backend without `h2` the request is handed
    /// back, for the caller's own HTTP/1.1 client.
    pub(crate) async fn send_h2(
        &self,
        target: &str,
        req: http::Request<Bytes>,
    ) -> Result<Result<http::Response<Body>, Http1Only>, SendError> {
        if self.http1_only() {
            return Ok(Err(Http1Only {
                request: req,
                connection: None,
            }));
        }
        let n = self.next.fetch_add(1, Ordering::Relaxed) % self.slots.len();
        let slot = &self.slots[n];
        let (parts, body) = req.into_parts();
        let head = http::Request::from_parts(parts, ());
        let mut retried = false;
        let mut send = loop {
            let conn = match slot.current(target) {
                Some(conn) => conn,
                None => match self.dial(n, target).await? {
                    Dialed::Http2(conn) => conn,
                    Dialed::Http1Only(connection) => {
                        let (parts, ()) = head.into_parts();
                        return Ok(Err(Http1Only {
                            request: http::Request::from_parts(parts, body),
                            connection,
                        }));
                    }
                },
            };
            let id = conn.id;
            match conn.send.ready().await {
                Ok(send) => break send,
                // Closed or going away: the request is still here, the slot dials again.
                Err(e) => {
                    slot.forget(id);
                    if retried {
                        return Err(SendError::Http2(e));
                    }
                    retried = true;
                }
            }
        };
        let (response, mut stream) = send
            .send_request(head, body.is_empty())
            .map_err(SendError::Http2)?;
        if !body.is_empty() {
            stream.send_data(body, true).map_err(SendError::Http2)?;
        }
        let (parts, recv) = response.await.map_err(SendError::Http2)?.into_parts();
        let body = Recv {
            stream: recv,
            data_done: false,
        };
        Ok(Ok(http::Response::from_parts(parts, body.boxed_unsync())))
    }

    async fn send_http1(
        &self,
        req: http::Request<Bytes>,
    ) -> Result<http::Response<Body>, SendError> {
        let resp = self
            .http1
            .request(req.map(Full::new))
            .await
            .map_err(SendError::Http1)?;
        let (parts, body) = resp.into_parts();
        let body = body.map_err(std::io::Error::other).boxed_unsync();
        Ok(http::Response::from_parts(parts, body))
    }

    /// Dials `target` for slot `n`, unless another caller has just done so.
    async fn dial(&self, n: usize, target: &str) -> Result<Dialed, SendError> {
        let slot = &self.slots[n];
        let _dialing = slot.dialing.lock().await;
        if let Some(conn) = slot.current(target) {
            return Ok(Dialed::Http2(conn));
        }
        // The socket belongs to the runtime it is made on, so the dial runs on the serving one
        // whichever task needs the connection.
        let handshake = handshake(self.tls.clone(), self.server_name.clone(), target.into());
        let dialed = tokio::time::timeout(CONNECT_TIMEOUT, self.serving.spawn(handshake))
            .await
            .map_err(|_| SendError::Timeout(CONNECT_TIMEOUT))?
            .map_err(|e| SendError::Dial {
                addr: target.to_string(),
                cause: e.to_string(),
            })??;
        let (send, connection) = match dialed {
            Handshake::Http2(send, connection) => (send, connection),
            Handshake::Http1(stream) => {
                self.http1_only.store(true, Ordering::Relaxed);
                return Ok(Dialed::Http1Only(Some(stream)));
            }
        };
        let conn = Conn {
            id: self.ids.fetch_add(1, Ordering::Relaxed),
            target: target.into(),
            send,
        };
        let (slots, id) = (Arc::clone(&self.slots), conn.id);
        // The task ends with its connection (closed by either side, or every handle to it
        // dropped); the slot then forgets it, so the next request dials again.
        drop(self.serving.spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "backend connection closed");
            }
            slots[n].forget(id);
        }));
        *slot.conn.lock().unwrap_or_else(|p| p.into_inner()) = Some(conn.clone());
        Ok(Dialed::Http2(conn))
    }
}

/// What a dial made (once per connection, moved once: its size does not matter).
#[allow(clippy::large_enum_variant)]
enum Handshake {
    Http2(
        h2::client::SendRequest<Bytes>,
        h2::client::Connection<TlsStream, Bytes>,
    ),
    /// ALPN did not choose `h2`.
    Http1(Box<TlsStream>),
}

/// TCP, TLS and, when ALPN chose `h2`, the HTTP/2 preface.
async fn handshake(
    tls: tokio_rustls::TlsConnector,
    server_name: ServerName<'static>,
    target: String,
) -> Result<Handshake, SendError> {
    let tcp = tokio::net::TcpStream::connect(&target)
        .await
        .map_err(|e| SendError::Dial {
            addr: target.clone(),
            cause: super::webhook::go_dial_error(&e),
        })?;
    let _ = tcp.set_nodelay(true);
    let tls = tls
        .connect(server_name, Coalescing::new(tcp))
        .await
        .map_err(SendError::Tls)?;
    if tls.get_ref().1.alpn_protocol() != Some(b"h2") {
        return Ok(Handshake::Http1(Box::new(tls)));
    }
    let (send, connection) = h2::client::Builder::new()
        .enable_push(false)
        .initial_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONNECTION_WINDOW)
        .handshake(tls)
        .await
        .map_err(SendError::Http2)?;
    Ok(Handshake::Http2(send, connection))
}

/// An HTTP/2 answer's body: its data, flow-control capacity given back as it is read, then
/// its trailers. Dropped early, the stream is reset (a watch the client left ends upstream).
struct Recv {
    stream: h2::RecvStream,
    data_done: bool,
}

impl hyper::body::Body for Recv {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        if !self.data_done {
            match ready!(self.stream.poll_data(cx)) {
                Some(Ok(data)) => {
                    let _ = self.stream.flow_control().release_capacity(data.len());
                    return Poll::Ready(Some(Ok(Frame::data(data))));
                }
                Some(Err(e)) => return Poll::Ready(Some(Err(std::io::Error::other(e)))),
                None => self.data_done = true,
            }
        }
        match ready!(self.stream.poll_trailers(cx)) {
            Ok(Some(trailers)) => Poll::Ready(Some(Ok(Frame::trailers(trailers)))),
            Ok(None) => Poll::Ready(None),
            Err(e) => Poll::Ready(Some(Err(std::io::Error::other(e)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.stream.is_end_stream()
    }
}

/// Runs an HTTP/1.1 connection's task on the runtime that serves clients (see
/// [`Backend::serving`]).
#[derive(Clone)]
struct Serving(tokio::runtime::Handle);

impl<F> hyper::rt::Executor<F> for Serving
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn execute(&self, fut: F) {
        // A connection's task ends with its connection; the pool owns the connection.
        drop(self.0.spawn(fut));
    }
}

#[cfg(test)]
mod tests;
