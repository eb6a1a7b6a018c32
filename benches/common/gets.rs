//! GETs of one ConfigMap (`bench/target`) at concurrency 64, over HTTP/2 (8 connections x 8
//! streams) or HTTP/1.1 (64 connections), as a client certificate or a bearer token; and two
//! such cells compared run by run. Shared by the benches that compare two servers or two
//! credentials on the same load (auth, metrics).

use super::goh2;
use super::harness::{median, Timing};
use super::loader;
use super::server::{cpu_seconds, Server};
use super::Res;
use hyper::header::HeaderValue;
use hyper::Method;
use std::time::{Duration, Instant};

/// The namespace of the target ConfigMap.
pub(crate) const NS: &str = "bench";
const CONNS: usize = 8;
const STREAMS: usize = 8;

/// How the loader connects: HTTP/2 (8 connections x 8 streams, as kubectl and client-go)
/// from the `h2` crate or encoded as Go's client encodes it, or HTTP/1.1 (64 connections,
/// one request at a time each, as the Python client).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Proto {
    H2,
    #[allow(dead_code)] // the metrics bench does not use it
    GoH2,
    Http1,
}

/// One connection's request sender.
enum Sender {
    H2(loader::Conn),
    GoH2(goh2::Conn),
    Http1(hyper::client::conn::http1::SendRequest<http_body_util::Empty<bytes::Bytes>>),
}

impl Sender {
    /// One HTTP/1.1 connection (the HTTP/2 ones are shared by several senders).
    async fn http1(
        tls: std::sync::Arc<rustls::ClientConfig>,
        host: &str,
        port: u16,
    ) -> Res<Sender> {
        let mut config = (*tls).clone();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let tcp = tokio::net::TcpStream::connect((host, port)).await?;
        tcp.set_nodelay(true)?;
        let name = rustls::pki_types::ServerName::try_from(host.to_string())?;
        let stream = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config))
            .connect(name, tcp)
            .await?;
        let (send, conn) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(Sender::Http1(send))
    }

    /// GETs `uri` and reads the whole response: its status.
    async fn get(
        &mut self,
        uri: &hyper::Uri,
        auth: Option<&HeaderValue>,
    ) -> Res<hyper::StatusCode> {
        match self {
            Sender::H2(conn) => {
                let (status, _) = loader::request_with(conn, &Method::GET, uri, None, auth).await?;
                Ok(status)
            }
            Sender::GoH2(conn) => Ok(hyper::StatusCode::from_u16(conn.get().await?)?),
            Sender::Http1(send) => {
                use http_body_util::BodyExt;
                let mut req = hyper::Request::new(http_body_util::Empty::new());
                *req.uri_mut() = uri.path().parse()?;
                let headers = req.headers_mut();
                let host = uri.authority().map(|a| a.as_str()).unwrap_or_default();
                headers.insert(hyper::header::HOST, HeaderValue::from_str(host)?);
                headers.insert("accept", HeaderValue::from_static("application/json"));
                if let Some(auth) = auth {
                    headers.insert(hyper::header::AUTHORIZATION, auth.clone());
                }
                send.ready().await?;
                let resp = send.send_request(req).await?;
                let status = resp.status();
                resp.into_body().collect().await?;
                Ok(status)
            }
        }
    }
}

/// How the load's requests authenticate.
#[derive(Clone)]
pub(crate) enum Credential {
    /// A client certificate + key (PEM).
    Cert(String),
    /// A bearer token.
    Token(HeaderValue),
}

/// GETs of the target ConfigMap at c=64 for one cell: (requests/s, p99 µs, server CPU µs per
/// request, failed requests).
pub(crate) async fn cell(
    server: &Server,
    cred: &Credential,
    proto: Proto,
    s: &Timing,
) -> Res<(f64, f64, f64, u64)> {
    let identity = match cred {
        Credential::Cert(pem) => pem.clone(),
        Credential::Token(_) => String::new(),
    };
    let tls = if identity.is_empty() {
        anonymous_tls(&server.ca_pem)?
    } else {
        loader::tls_config(&server.ca_pem, &identity)?
    };
    let auth = match cred {
        Credential::Token(t) => Some(t.clone()),
        Credential::Cert(_) => None,
    };
    let (host, port) = loader::host_port(&server.url)?;
    let uri: hyper::Uri =
        format!("{}/api/v1/namespaces/{NS}/configmaps/target", server.url).parse()?;
    let begin = Instant::now();
    let measure_from = begin + s.warmup;
    let end = measure_from + Duration::from_secs_f64(s.secs);
    let mut tasks = Vec::new();
    let (conns, streams) = match proto {
        Proto::H2 | Proto::GoH2 => (CONNS, STREAMS),
        Proto::Http1 => (CONNS * STREAMS, 1),
    };
    for _ in 0..conns {
        let shared = match proto {
            Proto::H2 => Some(Sender::H2(loader::connect(tls.clone(), &host, port).await?)),
            Proto::GoH2 => {
                let auth = auth.as_ref().map(|a| a.as_bytes());
                let conn = goh2::connect(tls.clone(), &host, port, uri.path(), auth).await?;
                Some(Sender::GoH2(conn))
            }
            Proto::Http1 => None,
        };
        for _ in 0..streams {
            let mut conn = match &shared {
                Some(Sender::H2(c)) => Sender::H2(c.clone()),
                Some(Sender::GoH2(c)) => Sender::GoH2(c.clone()),
                _ => Sender::http1(tls.clone(), &host, port).await?,
            };
            let (uri, auth) = (uri.clone(), auth.clone());
            tasks.push(tokio::spawn(async move {
                let (mut lat, mut errors) = (Vec::new(), 0u64);
                loop {
                    let start = Instant::now();
                    if start >= end {
                        return (lat, errors);
                    }
                    let r = conn.get(&uri, auth.as_ref()).await;
                    let done = Instant::now();
                    if done < measure_from || done > end {
                        continue;
                    }
                    match r {
                        Ok(status) if status.is_success() => {
                            lat.push((done - start).as_secs_f64() * 1e6)
                        }
                        _ => errors += 1,
                    }
                }
            }));
        }
    }
    let pid = server.child.id().to_string();
    tokio::time::sleep_until(measure_from.into()).await;
    let cpu0 = cpu_seconds(&pid);
    tokio::time::sleep_until(end.into()).await;
    let cpu = cpu_seconds(&pid) - cpu0;
    let (mut lat, mut errors) = (Vec::new(), 0);
    for t in tasks {
        let (l, e) = t.await?;
        lat.extend(l);
        errors += e;
    }
    lat.sort_by(|a, b| a.total_cmp(b));
    let p99 = lat
        .get(((lat.len() as f64) * 0.99) as usize)
        .copied()
        .unwrap_or(f64::NAN);
    Ok((
        lat.len() as f64 / s.secs,
        p99,
        cpu * 1e6 / lat.len().max(1) as f64,
        errors,
    ))
}

/// TLS without a client certificate (the bearer-token cells).
fn anonymous_tls(ca_pem: &str) -> Res<std::sync::Arc<rustls::ClientConfig>> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_pemfile::certs(&mut ca_pem.as_bytes()) {
        roots.add(cert?)?;
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(std::sync::Arc::new(config))
}

/// Runs two cells alternately `runs` times; prints both and the per-run ratios of b to a;
/// the median ratio.
pub(crate) async fn compare(
    title: &str,
    (a_name, a_server, a_cred): (&str, &Server, &Credential),
    (b_name, b_server, b_cred): (&str, &Server, &Credential),
    proto: Proto,
    s: &Timing,
    smoke: bool,
) -> Res<f64> {
    let (mut a, mut b, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    let (mut a_cpu, mut b_cpu, mut a_p99, mut b_p99) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..s.runs {
        let (ra, pa, ca, ea) = cell(a_server, a_cred, proto, s).await?;
        let (rb, pb, cb, eb) = cell(b_server, b_cred, proto, s).await?;
        if smoke && (ea > 0 || eb > 0 || ra == 0.0 || rb == 0.0) {
            return Err(format!("{title}: failed requests ({ea}, {eb})").into());
        }
        a.push(ra);
        b.push(rb);
        ratios.push(rb / ra);
        a_cpu.push(ca);
        b_cpu.push(cb);
        a_p99.push(pa);
        b_p99.push(pb);
    }
    let shape = match proto {
        Proto::H2 => "HTTP/2 from the h2 crate, c=64 = 8 connections x 8 streams",
        Proto::GoH2 => "HTTP/2 encoded as Go's client, c=64 = 8 connections x 8 streams",
        Proto::Http1 => "HTTP/1.1, c=64 = 64 connections",
    };
    println!(
        "\n{title} (GET of a ConfigMap, {shape}, {} runs of {} s)",
        s.runs, s.secs
    );
    println!("| cell | req/s (median) | p99 µs | server CPU µs/req |\n|---|---|---|---|");
    println!(
        "| {a_name} | {:.0} | {:.0} | {:.1} |",
        median(a.clone()),
        median(a_p99),
        median(a_cpu)
    );
    println!(
        "| {b_name} | {:.0} | {:.0} | {:.1} |",
        median(b.clone()),
        median(b_p99),
        median(b_cpu)
    );
    let shown: Vec<String> = ratios
        .iter()
        .map(|r| format!("{:.1}%", r * 100.0))
        .collect();
    let ratio = median(ratios);
    println!(
        "{b_name} ÷ {a_name}: median {:.1}% (per run: {})",
        ratio * 100.0,
        shown.join(", ")
    );
    Ok(ratio)
}
