//! The bench's load generator: a lean HTTP/2-over-TLS client, so that the loader costs about
//! what `h2load` costs in the limits kit and the ratios compare servers, not loaders.
//!
//! One TLS 1.3 connection (rustls, client certificate, ALPN `h2` only) per `connect`, driven
//! by the `h2` crate directly (the HTTP/2 codec hyper's client wraps): each worker holds a
//! clone of the connection's `SendRequest` and opens one stream per request from its own
//! task, so a request costs no task spawn and no hop through a dispatch channel. Request
//! bodies are prepared bytes: an UPDATE sends back the object the previous response returned
//! (managedFields and all, as client-go's lease renewal does) with only `spec.renewTime`
//! replaced, so the loader never parses JSON.

use bytes::Bytes;
use std::sync::Arc;

pub(crate) type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// A handle on one HTTP/2 connection; clones share the connection as separate streams.
pub(crate) type Conn = h2::client::SendRequest<Bytes>;

/// A TLS client configuration with the cluster CA as the only root and the admin identity.
pub(crate) fn tls_config(ca_pem: &str, admin_pem: &str) -> Res<Arc<rustls::ClientConfig>> {
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
pub(crate) async fn connect(tls: Arc<rustls::ClientConfig>, host: &str, port: u16) -> Res<Conn> {
    // Flow-control windows as h2load's defaults (`-w 30 -W 30`), so a 63 KB LIST response
    // never waits for a WINDOW_UPDATE.
    const WINDOW: u32 = (1 << 30) - 1;
    connect_with_windows(tls, host, port, WINDOW, WINDOW).await
}

/// [`connect`] with the given stream and connection flow-control windows.
pub(crate) async fn connect_with_windows(
    tls: Arc<rustls::ClientConfig>,
    host: &str,
    port: u16,
    stream_window: u32,
    connection_window: u32,
) -> Res<Conn> {
    let stream = tls_h2(tls, host, port).await?;
    let (send, conn) = h2::client::Builder::new()
        .initial_window_size(stream_window)
        .initial_connection_window_size(connection_window)
        .handshake(stream)
        .await?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(send)
}

/// A TLS connection to `host:port` that negotiated HTTP/2.
pub(crate) async fn tls_h2(
    tls: Arc<rustls::ClientConfig>,
    host: &str,
    port: u16,
) -> Res<tokio_rustls::client::TlsStream<tokio::net::TcpStream>> {
    let tcp = tokio::net::TcpStream::connect((host, port)).await?;
    tcp.set_nodelay(true)?;
    let name = rustls::pki_types::ServerName::try_from(host.to_string())?;
    let stream = tokio_rustls::TlsConnector::from(tls)
        .connect(name, tcp)
        .await?;
    if stream.get_ref().1.alpn_protocol() != Some(b"h2") {
        return Err("the server did not negotiate HTTP/2 (ALPN h2)".into());
    }
    Ok(stream)
}

/// Host and port of an `https://host:port` server URL.
pub(crate) fn host_port(url: &str) -> Res<(String, u16)> {
    let rest = url
        .strip_prefix("https://")
        .ok_or("server URL is not https")?;
    let (host, port) = rest.rsplit_once(':').ok_or("server URL has no port")?;
    Ok((
        host.trim_matches(['[', ']']).to_string(),
        port.trim_end_matches('/').parse()?,
    ))
}

/// Sends one request on a new stream and reads the whole response: (status is 2xx, body).
/// `uri` is absolute (`https://host:port/path`): HTTP/2 carries scheme and authority as
/// pseudo-headers.
pub(crate) async fn send(
    conn: &mut Conn,
    method: &hyper::Method,
    uri: &hyper::Uri,
    body: Option<Bytes>,
) -> Res<(bool, Bytes)> {
    let (status, body) = request(conn, method, uri, body).await?;
    Ok((status.is_success(), body))
}

/// [`send`] with the response's status.
pub(crate) async fn request(
    conn: &mut Conn,
    method: &hyper::Method,
    uri: &hyper::Uri,
    body: Option<Bytes>,
) -> Res<(hyper::StatusCode, Bytes)> {
    request_with(conn, method, uri, body, None).await
}

/// [`request`] with an `Authorization` header (a bearer token).
pub(crate) async fn request_with(
    conn: &mut Conn,
    method: &hyper::Method,
    uri: &hyper::Uri,
    body: Option<Bytes>,
    authorization: Option<&hyper::header::HeaderValue>,
) -> Res<(hyper::StatusCode, Bytes)> {
    let mut req = hyper::Request::new(());
    *req.method_mut() = method.clone();
    *req.uri_mut() = uri.clone();
    let headers = req.headers_mut();
    headers.insert(
        "accept",
        hyper::header::HeaderValue::from_static("application/json"),
    );
    if let Some(auth) = authorization {
        headers.insert(hyper::header::AUTHORIZATION, auth.clone());
    }
    if body.is_some() {
        headers.insert(
            "content-type",
            hyper::header::HeaderValue::from_static("application/json"),
        );
    }
    std::future::poll_fn(|cx| conn.poll_ready(cx)).await?;
    let (response, mut stream) = conn.send_request(req, body.is_none())?;
    if let Some(body) = body {
        stream.send_data(body, true)?;
    }
    let response = response.await?;
    let status = response.status();
    let mut recv = response.into_body();
    let mut chunks = Vec::new();
    while let Some(chunk) = recv.data().await {
        let chunk = chunk?;
        recv.flow_control().release_capacity(chunk.len())?;
        chunks.push(chunk);
    }
    // Most responses arrive in one DATA frame: hand that on without a copy.
    let body = match chunks.len() {
        1 => chunks.swap_remove(0),
        _ => Bytes::from(chunks.concat()),
    };
    Ok((status, body))
}

/// `object` with the value of its first `"renewTime"` string replaced by `now`.
pub(crate) fn with_renew_time(object: &[u8], now: &str) -> Res<Bytes> {
    const FIELD: &[u8] = b"\"renewTime\":\"";
    let start =
        memchr::memmem::find(object, FIELD).ok_or("the lease has no spec.renewTime")? + FIELD.len();
    let len = memchr::memchr(b'"', &object[start..]).ok_or("unterminated renewTime")?;
    let mut out = Vec::with_capacity(object.len() + now.len());
    out.extend_from_slice(&object[..start]);
    out.extend_from_slice(now.as_bytes());
    out.extend_from_slice(&object[start + len..]);
    Ok(out.into())
}
