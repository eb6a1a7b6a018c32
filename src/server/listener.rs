//! TLS serving (pkg/server/secure_serving.go): TCP accept with keep-alive, tokio-rustls
//! handshake (ALPN h2 + http/1.1, TLS 1.2+), client certificates requested but verified later
//! by the authentication filter, hyper-util's auto (HTTP/1.1 + HTTP/2) connection per task in
//! a JoinSet, and connection-aware graceful shutdown.
//! May use: filters, api.

use super::pki::{CertKey, Pki, LOOPBACK_SERVER_NAME};
use crate::api::coalesce::Coalescing;
use crate::filters::authn::PeerCertificates;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use rustls::client::danger::HandshakeSignatureValid;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::{ClientHello, ResolvesServerCert, WebPkiClientVerifier};
use rustls::sign::CertifiedKey;
use rustls::{DigitallySignedStruct, DistinguishedName, RootCertStore, SignatureScheme};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// Why TLS could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum Error {
    /// The serving key is not usable by rustls.
    #[error("unsupported serving private key")]
    Key(#[source] rustls::Error),
    /// A client CA certificate is not usable.
    #[error("invalid client CA certificate")]
    ClientCa(#[source] rustls::Error),
    /// The client-certificate verifier could not be built.
    #[error("cannot build the client certificate verifier")]
    Verifier(#[source] rustls::server::VerifierBuilderError),
}

/// Settings of the HTTP layer.
#[derive(Debug, Clone)]
pub(crate) struct HttpSettings {
    /// Serve HTTP/1.1 only.
    pub disable_http2: bool,
    /// HTTP/2 max concurrent streams (0 = 100).
    pub http2_max_streams: u32,
}

/// A verifier that checks client chains against `cas` alone: the client CAs for the x509
/// authenticator, the request-header CAs for the front-proxy one (never both in one verifier,
/// so a front proxy's certificate is no user and a user's certificate is no front proxy).
pub(crate) fn client_verifier(
    cas: &[CertificateDer<'static>],
) -> Result<Arc<dyn ClientCertVerifier>, Error> {
    let mut roots = RootCertStore::empty();
    for ca in cas {
        roots.add(ca.clone()).map_err(Error::ClientCa)?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
        .allow_unauthenticated()
        .build()
        .map_err(Error::Verifier)
}

/// Builds the rustls server config: serving cert (+ loopback cert by SNI), ALPN, TLS 1.2+,
/// client certs requested (not required) naming the subjects of every verifier's CAs (Go
/// clients send no certificate their server did not name), chains checked later by the authn
/// filter: `verifier` checks against the client CAs, `request_header` (if any) against the
/// request-header CAs.
/// Also returns the serving certificate's slot, which [`ServingCert::replace`] swaps for
/// the connections accepted after it.
pub(crate) fn server_config(
    pki: &Pki,
    verifier: Arc<dyn ClientCertVerifier>,
    request_header: Option<&dyn ClientCertVerifier>,
    disable_http2: bool,
) -> Result<(Arc<rustls::ServerConfig>, Arc<ServingCert>), Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let serving = Arc::new(ServingCert(std::sync::RwLock::new(certified(
        &pki.serving,
    )?)));
    let resolver = SniResolver {
        serving: serving.clone(),
        loopback: certified(&pki.loopback)?,
    };
    let mut config = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(Error::Key)?
        .with_client_cert_verifier(Arc::new(RequestClientCert::new(verifier, request_header)))
        .with_cert_resolver(Arc::new(resolver));
    config.alpn_protocols = if disable_http2 {
        vec![b"http/1.1".to_vec()]
    } else {
        vec![b"h2".to_vec(), b"http/1.1".to_vec()]
    };
    Ok((Arc::new(config), serving))
}

/// A certificate chain and key as rustls serves them, the key checked against the chain.
fn certified(c: &CertKey) -> Result<Arc<CertifiedKey>, Error> {
    let provider = rustls::crypto::ring::default_provider();
    let key = provider
        .key_provider
        .load_private_key(c.key.clone_key())
        .map_err(Error::Key)?;
    let certified = CertifiedKey::new(c.chain.clone(), key);
    match certified.keys_match() {
        // A key type whose public half rustls cannot derive is served unchecked, as before.
        Ok(()) | Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::Unknown)) => {}
        Err(e) => return Err(Error::Key(e)),
    }
    Ok(Arc::new(certified))
}

/// The serving certificate new connections get (replaced when its files change).
#[derive(Debug)]
pub(crate) struct ServingCert(std::sync::RwLock<Arc<CertifiedKey>>);

impl ServingCert {
    /// Serves `pair` to the connections accepted from now on (those open keep theirs).
    ///
    /// # Errors
    ///
    /// The key cannot be used, or it does not match the certificate.
    pub(crate) fn replace(&self, pair: &CertKey) -> Result<(), Error> {
        let next = certified(pair)?;
        *self.0.write().unwrap_or_else(|e| e.into_inner()) = next;
        Ok(())
    }

    fn current(&self) -> Arc<CertifiedKey> {
        self.0.read().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// Serves the loopback certificate for SNI `apiserver-loopback-client`, else the serving one.
#[derive(Debug)]
struct SniResolver {
    serving: Arc<ServingCert>,
    loopback: Arc<CertifiedKey>,
}

impl ResolvesServerCert for SniResolver {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        if hello.server_name() == Some(LOOPBACK_SERVER_NAME) {
            Some(self.loopback.clone())
        } else {
            Some(self.serving.current())
        }
    }
}

/// Go's `RequestClientCert`: offers the client-CA and request-header-CA subjects and accepts
/// any chain at handshake time (the authn filter answers 401 for a bad one), while still
/// checking the handshake signature that proves the client holds the certificate's key.
#[derive(Debug)]
struct RequestClientCert {
    /// Checks handshake signatures (which need no roots).
    inner: Arc<dyn ClientCertVerifier>,
    /// Every verifier's root subjects, without repeats.
    hints: Vec<DistinguishedName>,
}

impl RequestClientCert {
    fn new(inner: Arc<dyn ClientCertVerifier>, more: Option<&dyn ClientCertVerifier>) -> Self {
        let mut hints = inner.root_hint_subjects().to_vec();
        for subject in more.map(|v| v.root_hint_subjects()).unwrap_or_default() {
            if !hints.iter().any(|h| h.as_ref() == subject.as_ref()) {
                hints.push(subject.clone());
            }
        }
        RequestClientCert { inner, hints }
    }
}

impl ClientCertVerifier for RequestClientCert {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &self.hints
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// The request handler a connection feeds (the handler chain).
pub(crate) type Handler = Arc<
    dyn Fn(
            http::Request<hyper::body::Incoming>,
        ) -> futures::future::BoxFuture<'static, http::Response<crate::api::Body>>
        + Send
        + Sync,
>;

/// Response bytes one HTTP/2 stream may have queued (beyond what the peer's flow-control
/// window lets out) before its body is no longer polled: with a slow reader, a response stops
/// here and the watch queue behind it ([`crate::storage`]'s hub) decides when to give up on
/// it. One body chunk (a LIST page, a watch event) always goes out whole, so this never splits
/// or slows a response; it bounds what a stalled stream holds to this plus one chunk.
const SEND_BUFFER_PER_STREAM: usize = 16 * 1024;

/// Accepts connections until `stop` fires, then stops listening, lets in-flight requests
/// finish (HTTP/2 gets GOAWAY) for at most `drain_timeout`, and aborts what is left.
pub(crate) async fn serve(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    settings: HttpSettings,
    handler: Handler,
    stop: CancellationToken,
    drain_timeout: Duration,
) {
    let acceptor = tokio_rustls::TlsAcceptor::from(tls);
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(Duration::from_secs(32))
        .max_buf_size(1 << 20);
    let streams = if settings.http2_max_streams == 0 {
        100
    } else {
        settings.http2_max_streams
    };
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(streams)
        // h2's rapid-reset guard (CVE-2023-44487) closes a connection once 20 streams were
        // reset by the client before the server took them; clients that cancel a burst of
        // watches (a reflector restarting) hit that under load. Go's server bounds the same
        // attack by its stream limit, so allow as many as a connection may have open.
        .max_pending_accept_reset_streams(streams as usize)
        .max_frame_size(256 * 1024)
        .max_send_buf_size(SEND_BUFFER_PER_STREAM)
        .initial_stream_window_size(256 * 1024)
        .initial_connection_window_size(256 * 1024 * streams);
    let builder = if settings.disable_http2 {
        builder.http1_only()
    } else {
        builder
    };
    let builder = Arc::new(builder);
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            _ = stop.cancelled() => break,
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(a) => a,
                    Err(err) => {
                        tracing::warn!(error = %err, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                // Small HTTP/2 frames must not wait for delayed ACKs (Go sets TCP_NODELAY too).
                let _ = stream.set_nodelay(true);
                let keepalive = socket2::TcpKeepalive::new().with_time(Duration::from_secs(180)).with_interval(Duration::from_secs(180));
                if let Err(err) = socket2::SockRef::from(&stream).set_tcp_keepalive(&keepalive) {
                    tracing::debug!(%peer, error = %err, "cannot enable TCP keep-alive");
                }
                let (acceptor, builder, handler, watcher) = (acceptor.clone(), builder.clone(), handler.clone(), graceful.watcher());
                conns.spawn(async move {
                    let tls = match tokio::time::timeout(Duration::from_secs(10), acceptor.accept(Coalescing::new(stream))).await {
                        Ok(Ok(tls)) => tls,
                        Ok(Err(err)) => {
                            tracing::debug!(%peer, error = %err, "TLS handshake failed");
                            return;
                        }
                        Err(_) => {
                            tracing::debug!(%peer, "TLS handshake timed out");
                            return;
                        }
                    };
                    let certs = PeerCertificates::from_connection(
                        tls.get_ref().1.peer_certificates().map(|c| c.iter().map(|c| c.clone().into_owned()).collect()).unwrap_or_default(),
                        peer,
                    );
                    let service = hyper::service::service_fn(move |mut req: http::Request<hyper::body::Incoming>| {
                        req.extensions_mut().insert(certs.clone());
                        let fut = handler(req);
                        async move { Ok::<_, std::convert::Infallible>(fut.await) }
                    });
                    let conn = builder.serve_connection_with_upgrades(TokioIo::new(tls), service).into_owned();
                    if let Err(err) = watcher.watch(conn).await {
                        tracing::debug!(%peer, error = %err, "connection ended with an error");
                    }
                });
            }
            Some(done) = conns.join_next(), if !conns.is_empty() => {
                if let Err(err) = done {
                    if err.is_panic() {
                        tracing::error!(error = %err, "connection task panicked");
                    }
                }
            }
        }
    }
    drop(listener);
    tracing::info!(
        connections = conns.len(),
        "stopped listening; draining in-flight requests"
    );
    let drained = tokio::time::timeout(drain_timeout, graceful.shutdown()).await;
    if drained.is_err() {
        tracing::warn!(timeout = ?drain_timeout, "in-flight requests did not finish in time, closing their connections");
    }
    conns.shutdown().await;
}
