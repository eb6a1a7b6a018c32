//! Authentication and authorization benchmark of the real `kapi serve`
//! (`cargo bench --bench auth`).
//!
//! 1. **RBAC against AlwaysAllow.** Two servers (embedded store, temp data dirs): one with
//!    the default `--authorization-mode=RBAC`, one with `--authorization-mode=AlwaysAllow`.
//!    Each gets the same 1,000 Roles and 1,000 RoleBindings (spread over 100 namespaces,
//!    each binding a different user), and the user `bench-user` is granted GET on ConfigMaps
//!    of namespace `bench` through a Role and RoleBinding of its own. bench-user presents a
//!    client certificate signed by the server's client CA; it GETs one ConfigMap at
//!    concurrency 64 (8 connections x 8 streams, TLS + HTTP/2). The two servers' cells
//!    alternate within each run; the table shows medians and the per-run ratios.
//! 2. **Bound token against x509.** On the RBAC server, the same GET as a ServiceAccount
//!    authenticating with a token from TokenRequest (bound to the same Role), alternating with
//!    bench-user's certificate.
//!
//! Environment: `KAPI_BENCH_SECS` (seconds per cell, default 5), `KAPI_BENCH_RUNS` (default
//! 5), `KAPI_BENCH_OBJECTS` (Roles and RoleBindings each, default 1000), plus
//! `KAPI_BENCH_SERVE_ARGS` and `KAPI_BENCH_BIN` as the api bench. Without `--bench` (under
//! `cargo test --benches`) it runs a short smoke pass that fails on any failed request.

// Shared with the other benches, which use what this one does not.
#[allow(dead_code)]
#[path = "common/harness.rs"]
mod harness;
#[allow(dead_code)]
#[path = "api/loader.rs"]
mod loader;
#[path = "common/machine.rs"]
mod machine;
#[allow(dead_code)]
#[path = "api/server.rs"]
mod server;

use futures::StreamExt;
use harness::{median, post};
use hyper::header::HeaderValue;
use hyper::Method;
use serde_json::{json, Value};
use server::{cpu_seconds, Server};
use std::path::Path;
use std::time::{Duration, Instant};

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

const NS: &str = "bench";
const CONNS: usize = 8;
const STREAMS: usize = 8;

struct Settings {
    secs: f64,
    warmup: Duration,
    runs: usize,
    objects: usize,
}

impl Settings {
    fn from_env(smoke: bool) -> Settings {
        let t = harness::Timing::from_env(smoke, 5);
        Settings {
            secs: t.secs,
            warmup: t.warmup,
            runs: t.runs,
            objects: if smoke {
                20
            } else {
                harness::env_num("KAPI_BENCH_OBJECTS", 1000.0) as usize
            },
        }
    }
}

/// How the loader connects: HTTP/2 (8 connections x 8 streams, as kubectl and client-go),
/// or HTTP/1.1 (64 connections, one request at a time each, as the Python client).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Proto {
    H2,
    Http1,
}

/// One connection's request sender.
enum Sender {
    H2(loader::Conn),
    Http1(hyper::client::conn::http1::SendRequest<http_body_util::Empty<bytes::Bytes>>),
}

impl Sender {
    async fn connect(
        proto: Proto,
        tls: std::sync::Arc<rustls::ClientConfig>,
        host: &str,
        port: u16,
    ) -> Res<Sender> {
        if proto == Proto::H2 {
            return Ok(Sender::H2(loader::connect(tls, host, port).await?));
        }
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
enum Credential {
    /// A client certificate + key (PEM).
    Cert(String),
    /// A bearer token.
    Token(HeaderValue),
}

/// A client certificate for `user`, signed by the server's client CA (in its cert dir).
fn user_cert(cert_dir: &Path, user: &str) -> Res<String> {
    let ca_cert = std::fs::read_to_string(cert_dir.join("client-ca.crt"))?;
    let ca_key =
        rcgen::KeyPair::from_pem(&std::fs::read_to_string(cert_dir.join("client-ca.key"))?)?;
    let issuer = rcgen::Issuer::from_ca_cert_pem(&ca_cert, ca_key)?;
    let key = rcgen::KeyPair::generate()?;
    let mut params = rcgen::CertificateParams::default();
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, user);
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let cert = params.signed_by(&key, &issuer)?;
    Ok(format!("{}{}", cert.pem(), key.serialize_pem()))
}

fn role(ns: &str, name: &str, resource: &str) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
           "metadata": {"name": name, "namespace": ns},
           "rules": [{"apiGroups": [""], "resources": [resource], "verbs": ["get", "list"]}]})
}

fn binding(ns: &str, name: &str, role: &str, subject: Value) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
           "metadata": {"name": name, "namespace": ns},
           "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role},
           "subjects": [subject]})
}

/// The objects of part 1 (and the service account of part 2), created as the admin.
async fn populate(server: &Server, objects: usize) -> Res<()> {
    let admin = server.client(true)?;
    let url = server.url.clone();
    let namespaces = 100.min(objects.max(1));
    for n in 0..namespaces {
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": format!("team-{n}")}});
        post(&admin, &url, "/api/v1/namespaces", &ns).await?;
    }
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}});
    post(&admin, &url, "/api/v1/namespaces", &ns).await?;
    let writes = futures::stream::iter(0..objects).map(|i| {
        let (admin, url) = (admin.clone(), url.clone());
        async move {
            let ns = format!("team-{}", i % namespaces);
            let path = format!("/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}");
            post(&admin, &url, &format!("{path}/roles"), &role(&ns, &format!("role-{i}"), "secrets")).await?;
            let user = json!({"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": format!("user-{i}")});
            post(&admin, &url, &format!("{path}/rolebindings"), &binding(&ns, &format!("binding-{i}"), &format!("role-{i}"), user)).await
        }
    });
    let results: Vec<Res<()>> = writes.buffer_unordered(16).collect().await;
    results.into_iter().collect::<Res<Vec<()>>>()?;
    let path = format!("/apis/rbac.authorization.k8s.io/v1/namespaces/{NS}");
    post(
        &admin,
        &url,
        &format!("{path}/roles"),
        &role(NS, "reader", "configmaps"),
    )
    .await?;
    for subject in [
        json!({"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "bench-user"}),
        json!({"kind": "ServiceAccount", "name": "bench-sa", "namespace": NS}),
    ] {
        let name = format!("reader-{}", subject["name"].as_str().unwrap_or(""));
        post(
            &admin,
            &url,
            &format!("{path}/rolebindings"),
            &binding(NS, &name, "reader", subject),
        )
        .await?;
    }
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "target"}, "data": {"k": "v"}});
    post(
        &admin,
        &url,
        &format!("/api/v1/namespaces/{NS}/configmaps"),
        &cm,
    )
    .await?;
    let sa =
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "bench-sa"}});
    post(
        &admin,
        &url,
        &format!("/api/v1/namespaces/{NS}/serviceaccounts"),
        &sa,
    )
    .await?;
    Ok(())
}

/// A token for bench-sa (TokenRequest).
async fn token(server: &Server) -> Res<HeaderValue> {
    let admin = server.client(true)?;
    let req = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}});
    let resp: Value = admin
        .post(format!(
            "{}/api/v1/namespaces/{NS}/serviceaccounts/bench-sa/token",
            server.url
        ))
        .json(&req)
        .send()
        .await?
        .json()
        .await?;
    let token = resp["status"]["token"]
        .as_str()
        .ok_or("TokenRequest gave no token")?;
    Ok(HeaderValue::from_str(&format!("Bearer {token}"))?)
}

/// GETs of the target ConfigMap at c=64 for one cell: (requests/s, p99 µs, server CPU µs per
/// request, failed requests).
async fn cell(
    server: &Server,
    cred: &Credential,
    proto: Proto,
    s: &Settings,
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
        Proto::H2 => (CONNS, STREAMS),
        Proto::Http1 => (CONNS * STREAMS, 1),
    };
    for _ in 0..conns {
        let h2 = match proto {
            Proto::H2 => Some(loader::connect(tls.clone(), &host, port).await?),
            Proto::Http1 => None,
        };
        for _ in 0..streams {
            let mut conn = match &h2 {
                Some(c) => Sender::H2(c.clone()),
                None => Sender::connect(proto, tls.clone(), &host, port).await?,
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

/// Runs two cells alternately `runs` times; prints both and the per-run ratios of b to a.
async fn compare(
    title: &str,
    (a_name, a_server, a_cred): (&str, &Server, &Credential),
    (b_name, b_server, b_cred): (&str, &Server, &Credential),
    proto: Proto,
    s: &Settings,
    smoke: bool,
) -> Res<()> {
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
        Proto::H2 => "HTTP/2, c=64 = 8 connections x 8 streams",
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
    println!(
        "{b_name} ÷ {a_name}: median {:.1}% (per run: {})",
        median(ratios) * 100.0,
        shown.join(", ")
    );
    Ok(())
}

async fn bench(s: Settings, smoke: bool) -> Res<()> {
    println!("{}", machine::conditions());
    let (dir_rbac, dir_allow) = (tempfile::tempdir()?, tempfile::tempdir()?);
    let rbac = Server::start(dir_rbac.path()).await?;
    let allow = Server::start_with(dir_allow.path(), &["--authorization-mode=AlwaysAllow"]).await?;
    let started = Instant::now();
    populate(&rbac, s.objects).await?;
    populate(&allow, s.objects).await?;
    println!(
        "{} Roles and RoleBindings on each server, made in {:.1} s",
        s.objects,
        started.elapsed().as_secs_f64()
    );
    // bench-user's identity, valid on each server (each has its own client CA).
    let rbac_user = Credential::Cert(user_cert(&dir_rbac.path().join("pki"), "bench-user")?);
    let allow_user = Credential::Cert(user_cert(&dir_allow.path().join("pki"), "bench-user")?);
    compare(
        "1. RBAC (1,000 Roles and RoleBindings) ÷ AlwaysAllow",
        ("AlwaysAllow", &allow, &allow_user),
        ("RBAC", &rbac, &rbac_user),
        Proto::H2,
        &s,
        smoke,
    )
    .await?;
    let sa = Credential::Token(token(&rbac).await?);
    compare(
        "2. Bound service-account token ÷ client certificate (RBAC server)",
        ("x509 client certificate", &rbac, &rbac_user),
        ("TokenRequest token", &rbac, &sa),
        Proto::H2,
        &s,
        smoke,
    )
    .await?;
    compare(
        "3. The same over HTTP/1.1",
        ("x509 client certificate", &rbac, &rbac_user),
        ("TokenRequest token", &rbac, &sa),
        Proto::Http1,
        &s,
        smoke,
    )
    .await?;
    rbac.stop().await?;
    allow.stop().await?;
    Ok(())
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` does not: run a short smoke pass then.
    let smoke = !std::env::args().any(|a| a == "--bench");
    let settings = Settings::from_env(smoke);
    let result = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(Into::into)
        .and_then(|rt| rt.block_on(bench(settings, smoke)));
    if let Err(err) = result {
        eprintln!("bench failed: {err}");
        std::process::exit(1);
    }
}
