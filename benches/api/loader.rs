//! The bench's load generator: a lean HTTP/2-over-TLS client, so that the loader costs about
//! what `h2load` costs in the limits kit and the ratios compare servers, not loaders.
//!
//! One TLS 1.3 connection (rustls, client certificate, ALPN `h2` only) per `connect`, driven by
//! hyper's HTTP/2 client connection; workers clone the `SendRequest` handle to share it as
//! streams. Request bodies are prepared bytes: an UPDATE sends back the object the previous
//! response returned (managedFields and all, as client-go's lease renewal does) with only
//! `spec.renewTime` replaced, so the loader never parses JSON.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::sync::Arc;

pub type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// A handle on one HTTP/2 connection; clones share the connection as separate streams.
pub type Conn = SendRequest<Full<Bytes>>;

/// A TLS client configuration with the cluster CA as the only root and the admin identity.
pub fn tls_config(ca_pem: &str, admin_pem: &str) -> Res<Arc<rustls::ClientConfig>> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_pemfile::certs(&mut ca_pem.as_bytes()) {
        roots.add(cert?)?;
    }
    let chain = rustls_pemfile::certs(&mut admin_pem.as_bytes()).collect::<Result<Vec<_>, _>>()?;
    let key = rustls_pemfile::private_key(&mut admin_pem.as_bytes())?
        .ok_or("admin kubeconfig: no private key")?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_client_auth_cert(chain, key)?;
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(Arc::new(config))
}

/// Opens one HTTP/2 connection to `host:port` (an IP address, as in the admin kubeconfig).
pub async fn connect(tls: Arc<rustls::ClientConfig>, host: &str, port: u16) -> Res<Conn> {
    let tcp = tokio::net::TcpStream::connect((host, port)).await?;
    tcp.set_nodelay(true)?;
    let name = rustls::pki_types::ServerName::try_from(host.to_string())?;
    let stream = tokio_rustls::TlsConnector::from(tls)
        .connect(name, tcp)
        .await?;
    if stream.get_ref().1.alpn_protocol() != Some(b"h2") {
        return Err("the server did not negotiate HTTP/2 (ALPN h2)".into());
    }
    let (send, conn) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
        .handshake(TokioIo::new(stream))
        .await?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(send)
}

/// Sends one request and reads the whole response: (status is 2xx, body).
pub async fn send(
    conn: &mut Conn,
    method: &hyper::Method,
    uri: &str,
    body: Option<Bytes>,
) -> Res<(bool, Bytes)> {
    conn.ready().await?;
    let mut req = hyper::Request::builder()
        .method(method)
        .uri(uri)
        .header("accept", "application/json");
    if body.is_some() {
        req = req.header("content-type", "application/json");
    }
    let req = req.body(Full::new(body.unwrap_or_default()))?;
    let resp = conn.send_request(req).await?;
    let ok = resp.status().is_success();
    let body = resp.into_body().collect().await?.to_bytes();
    Ok((ok, body))
}

/// `object` with the value of its first `"renewTime"` string replaced by `now`.
pub fn with_renew_time(object: &[u8], now: &str) -> Res<Bytes> {
    const FIELD: &[u8] = b"\"renewTime\":\"";
    let start = object
        .windows(FIELD.len())
        .position(|w| w == FIELD)
        .ok_or("the lease has no spec.renewTime")?
        + FIELD.len();
    let len = object[start..]
        .iter()
        .position(|&b| b == b'"')
        .ok_or("unterminated renewTime")?;
    let mut out = Vec::with_capacity(object.len() + now.len());
    out.extend_from_slice(&object[..start]);
    out.extend_from_slice(now.as_bytes());
    out.extend_from_slice(&object[start + len..]);
    Ok(out.into())
}
