//! A real HTTPS webhook for tests: a self-signed certificate for 127.0.0.1 and a hyper server
//! answering POSTs with what a handler makes of the request body.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use std::sync::Arc;
use std::time::Duration;

/// A self-signed certificate for 127.0.0.1 and its key, PEM.
pub(crate) fn self_signed() -> (String, String) {
    let key = rcgen::KeyPair::generate().unwrap();
    let params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    let cert = params.self_signed(&key).unwrap();
    (cert.pem(), key.serialize_pem())
}

/// A TLS server configuration serving the certificate `cert_pem` with `key_pem`.
pub(crate) fn server_config(cert_pem: &str, key_pem: &str) -> rustls::ServerConfig {
    let certs: Vec<_> = rustls_pemfile::certs(&mut cert_pem.as_bytes())
        .map(Result::unwrap)
        .collect();
    let key = rustls_pemfile::private_key(&mut key_pem.as_bytes())
        .unwrap()
        .unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap()
}

/// What a test webhook answers: status, content type, body.
pub(crate) type Answer = (u16, &'static str, Vec<u8>);

/// Serves HTTPS on 127.0.0.1 with the certificate `(cert, key)`: every POST to `/convert`
/// gets `handler(body)` after `delay`. Returns the port. The server lives as long as the
/// runtime it was started on.
pub(crate) async fn serve(
    pem: (&str, &str),
    delay: Duration,
    handler: impl Fn(Bytes) -> Answer + Send + Sync + 'static,
) -> u16 {
    serve_counting(pem, delay, handler).await.0
}

/// [`serve`], also counting the connections accepted.
pub(crate) async fn serve_counting(
    pem: (&str, &str),
    delay: Duration,
    handler: impl Fn(Bytes) -> Answer + Send + Sync + 'static,
) -> (u16, Arc<std::sync::atomic::AtomicUsize>) {
    serve_closing(pem, delay, Duration::MAX, handler).await
}

/// [`serve_counting`], closing each connection `lifetime` after it was accepted (without
/// telling the client, as a webhook's idle timeout does).
pub(crate) async fn serve_closing(
    pem: (&str, &str),
    delay: Duration,
    lifetime: Duration,
    handler: impl Fn(Bytes) -> Answer + Send + Sync + 'static,
) -> (u16, Arc<std::sync::atomic::AtomicUsize>) {
    serve_as(pem, delay, lifetime, false, handler).await
}

/// [`serve_counting`], offering HTTP/2 (and HTTP/1.1) in ALPN.
pub(crate) async fn serve_http2(
    pem: (&str, &str),
    handler: impl Fn(Bytes) -> Answer + Send + Sync + 'static,
) -> (u16, Arc<std::sync::atomic::AtomicUsize>) {
    serve_as(pem, Duration::ZERO, Duration::MAX, true, handler).await
}

async fn serve_as(
    (cert_pem, key_pem): (&str, &str),
    delay: Duration,
    lifetime: Duration,
    http2: bool,
    handler: impl Fn(Bytes) -> Answer + Send + Sync + 'static,
) -> (u16, Arc<std::sync::atomic::AtomicUsize>) {
    let mut config = server_config(cert_pem, key_pem);
    if http2 {
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    }
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let handler = Arc::new(handler);
    let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = Arc::clone(&accepted);
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let (acceptor, handler) = (acceptor.clone(), Arc::clone(&handler));
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service =
                    hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
                        let handler = Arc::clone(&handler);
                        async move {
                            let wrong = req.method() != http::Method::POST
                                || req.uri().path() != "/convert";
                            let body = req.into_body().collect().await?.to_bytes();
                            tokio::time::sleep(delay).await;
                            let (status, content_type, body) = if wrong {
                                (404, "text/plain", b"wrong path or method".to_vec())
                            } else {
                                handler(body)
                            };
                            Ok::<_, hyper::Error>(
                                http::Response::builder()
                                    .status(status)
                                    .header("content-type", content_type)
                                    .body(Full::new(Bytes::from(body)))
                                    .unwrap(),
                            )
                        }
                    });
                let builder = hyper_util::server::conn::auto::Builder::new(
                    hyper_util::rt::TokioExecutor::new(),
                );
                let conn = builder.serve_connection(TokioIo::new(tls), service);
                let _ = tokio::time::timeout(lifetime, conn).await;
            });
        }
    });
    (port, accepted)
}
