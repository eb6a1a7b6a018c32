//! Admission benchmark of the real `kapi serve` (`cargo bench --bench admission`).
//!
//! Starts the release `kapi serve` (embedded store, temp data dir) and a validating webhook
//! inside this process: an HTTPS server offering HTTP/2 and HTTP/1.1 in ALPN (HTTP/1.1 only
//! with `KAPI_BENCH_WEBHOOK_H1=1`; a self-signed certificate for 127.0.0.1, given to kapi as
//! the caBundle) on a thread and runtime of its own, answering
//! every AdmissionReview with `allowed: true`. The load is UPDATE of ConfigMaps in namespace
//! `bench` (a PUT of the object the previous response returned, `data.renewTime` changed; one
//! object per worker), over TLS + HTTP/2 with the admin certificate, at c=1 and at c=64
//! (8 connections x 8 streams), in three cells:
//!
//! - **none**: no admission configured;
//! - **webhook**: one ValidatingWebhookConfiguration (UPDATE of configmaps, failurePolicy
//!   Fail, sideEffects None, timeoutSeconds 10) calling the webhook above;
//! - **policy**: no webhook, a ValidatingAdmissionPolicy with three validation rules (all
//!   passing) and a binding with validationActions [Deny].
//!
//! Cells are switched by creating and deleting the configurations as the admin, and each
//! switch is waited for by probes that would fail otherwise: a merge patch of a probe
//! ConfigMap must (or must not) reach the webhook, and a dry-run create of a ConfigMap with
//! 100 keys must be denied (or admitted) by the policy's second rule. The three cells
//! alternate within each run (in reverse order every other run); the tables show medians over
//! the runs. The c=64 ratio bars are taken from pairs of short adjacent cells (see [`pairs`]):
//! cells of one run are 6-12 s apart, and this machine's speed drifts by tens of percent
//! within that (the runs' own ratios are printed too). Besides throughput and latency each cell
//! reports the server's CPU per request and its thread count at the end and, for the webhook,
//! its calls per request, the connections kapi opened to it, and its own CPU per request.
//!
//! Environment: `KAPI_BENCH_SECS` (seconds per cell, default 5), `KAPI_BENCH_RUNS` (default
//! 5), `KAPI_BENCH_PAIRS` (default 10) and `KAPI_BENCH_PAIR_SECS` (default 1), plus `KAPI_BENCH_SERVE_ARGS` and `KAPI_BENCH_BIN` as the api bench. Without `--bench`
//! (under `cargo test --benches`) it runs a short smoke pass that fails on any failed request.

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

use base64::Engine;
use bytes::Bytes;
use harness::{median, met, per_run, percentile, post};
use http_body_util::BodyExt;
use hyper::Method;
use serde_json::{json, Value};
use server::{cpu_seconds, Server};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

const NS: &str = "bench";
/// c=64: 8 connections x 8 streams, one ConfigMap per worker.
const CONNS: usize = 8;
const STREAMS: usize = 8;
const GROUP_PATH: &str = "/apis/admissionregistration.k8s.io/v1";
const WEBHOOK_CONFIG: &str = "bench-validate";
const POLICY: &str = "bench-policy";
const BINDING: &str = "bench-policy-deny";

/// Seconds per cell, warm-up and runs.
type Settings = harness::Timing;

/// The admission configured during a cell.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Admission {
    None,
    Webhook,
    Policy,
}

impl Admission {
    const ALL: [Admission; 3] = [Admission::None, Admission::Webhook, Admission::Policy];

    fn name(self) -> &'static str {
        match self {
            Admission::None => "no admission",
            Admission::Webhook => "validating webhook",
            Admission::Policy => "ValidatingAdmissionPolicy (3 rules)",
        }
    }
}

/// The validating webhook: counts its calls, the connections it accepted, and its thread's
/// CPU time.
struct Webhook {
    port: u16,
    ca_pem: String,
    calls: Arc<AtomicU64>,
    connections: Arc<AtomicU64>,
    /// `<pid>/task/<tid>` of its thread, for [`cpu_seconds`].
    thread: String,
}

/// What the webhook reads of an AdmissionReview: the request's uid (serde skips the rest).
#[derive(serde::Deserialize)]
struct Review {
    request: ReviewRequest,
}

#[derive(serde::Deserialize)]
struct ReviewRequest {
    uid: String,
}

impl Webhook {
    /// Starts the webhook on 127.0.0.1 (a free port) on a thread with a runtime of its own,
    /// so the loader's runtime cannot starve it.
    fn start() -> Res<Webhook> {
        let key = rcgen::KeyPair::generate()?;
        let cert =
            rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()])?.self_signed(&key)?;
        let certs = vec![cert.der().clone()];
        let key = rustls::pki_types::PrivateKeyDer::try_from(key.serialize_der())?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(certs, key)?;
        if std::env::var_os("KAPI_BENCH_WEBHOOK_H1").is_none() {
            config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        }
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let port = listener.local_addr()?.port();
        let calls = Arc::new(AtomicU64::new(0));
        let connections = Arc::new(AtomicU64::new(0));
        let (calls2, connections2) = (calls.clone(), connections.clone());
        let (tx, rx) = std::sync::mpsc::channel::<Res<String>>();
        std::thread::Builder::new()
            .name("webhook".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build();
                let runtime = match runtime {
                    Ok(r) => r,
                    Err(e) => return drop(tx.send(Err(e.into()))),
                };
                // "<pid>/task/<tid>": this thread's entry under /proc.
                let thread = std::fs::read_link("/proc/thread-self")
                    .map(|p| p.to_string_lossy().into_owned())
                    .map_err(Into::into);
                let _ = tx.send(thread);
                runtime.block_on(serve(listener, acceptor, calls2, connections2));
            })?;
        let thread = rx.recv()??;
        Ok(Webhook {
            port,
            ca_pem: cert.pem(),
            calls,
            connections,
            thread,
        })
    }

    fn calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }

    fn connections(&self) -> u64 {
        self.connections.load(Ordering::Relaxed)
    }

    fn cpu_seconds(&self) -> f64 {
        cpu_seconds(&self.thread)
    }
}

/// The webhook's accept loop: HTTP/1.1 over TLS, keep-alive, one task per connection.
async fn serve(
    listener: std::net::TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    calls: Arc<AtomicU64>,
    connections: Arc<AtomicU64>,
) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
        return;
    };
    while let Ok((tcp, _)) = listener.accept().await {
        let _ = tcp.set_nodelay(true);
        connections.fetch_add(1, Ordering::Relaxed);
        let (acceptor, calls) = (acceptor.clone(), calls.clone());
        tokio::spawn(async move {
            let Ok(tls) = acceptor.accept(tcp).await else {
                return;
            };
            let service =
                hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    let calls = calls.clone();
                    async move {
                        let body = req.into_body().collect().await?.to_bytes();
                        calls.fetch_add(1, Ordering::Relaxed);
                        let (status, out) = match serde_json::from_slice::<Review>(&body) {
                            Ok(review) => (200, allowed(&review.request.uid)),
                            Err(e) => (400, format!("not an AdmissionReview: {e}")),
                        };
                        Ok::<_, hyper::Error>(
                            hyper::Response::builder()
                                .status(status)
                                .header("content-type", "application/json")
                                .body(http_body_util::Full::new(Bytes::from(out)))
                                .unwrap_or_default(),
                        )
                    }
                });
            let _ =
                hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new())
                    .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                    .await;
        });
    }
}

/// The answer to every review: allowed.
fn allowed(uid: &str) -> String {
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
           "response": {"uid": uid, "allowed": true}})
    .to_string()
}

fn webhook_configuration(hook: &Webhook) -> Value {
    let ca = base64::engine::general_purpose::STANDARD.encode(&hook.ca_pem);
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": WEBHOOK_CONFIG},
        "webhooks": [{
            "name": "validate.bench.example.com",
            "clientConfig": {"url": format!("https://127.0.0.1:{}/validate", hook.port), "caBundle": ca},
            "rules": [{"operations": ["UPDATE"], "apiGroups": [""], "apiVersions": ["v1"],
                       "resources": ["configmaps"]}],
            "failurePolicy": "Fail",
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "timeoutSeconds": 10
        }]
    })
}

/// Three rules, all passing for the bench's writes. CREATE is matched too, for the probe.
fn policy() -> Value {
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": POLICY},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{
                "apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
                "resources": ["configmaps"]}]},
            "validations": [
                {"expression": "object.metadata.name.size() < 64", "message": "name too long"},
                {"expression": "!has(object.data) || size(object.data) < 100", "message": "too many keys"},
                {"expression": "request.userInfo.username != 'nobody'"}
            ]
        }
    })
}

fn binding() -> Value {
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": BINDING},
        "spec": {"policyName": POLICY, "validationActions": ["Deny"]}
    })
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

fn configmap(name: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": NS},
        "data": {"holderIdentity": name, "renewTime": now(),
                 "config": "server:\n  port: 8080\n  timeout: 30s\nlog:\n  level: info\n".repeat(4)}
    })
}

/// DELETEs `path`; a 404 counts as gone.
async fn delete(client: &reqwest::Client, url: &str, path: &str) -> Res<()> {
    let resp = client.delete(format!("{url}{path}")).send().await?;
    let status = resp.status();
    if !status.is_success() && status != 404 {
        return Err(format!("DELETE {path}: {status}: {}", resp.text().await?).into());
    }
    Ok(())
}

/// The admin's view of the server, the webhook, and what is configured now.
struct Bench {
    server: Server,
    admin: reqwest::Client,
    hook: Webhook,
    current: Admission,
    probes: u64,
    /// How long each switch took to take effect (ms).
    switch_ms: Vec<f64>,
}

impl Bench {
    /// Whether an UPDATE of the probe ConfigMap reaches the webhook.
    async fn webhook_in_force(&mut self) -> Res<bool> {
        self.probes += 1;
        let before = self.hook.calls();
        let resp = self
            .admin
            .patch(format!(
                "{}/api/v1/namespaces/{NS}/configmaps/probe",
                self.server.url
            ))
            .header("content-type", "application/merge-patch+json")
            .body(json!({"data": {"n": self.probes.to_string()}}).to_string())
            .send()
            .await?;
        if !resp.status().is_success() {
            return Err(format!("probe PATCH: {}: {}", resp.status(), resp.text().await?).into());
        }
        Ok(self.hook.calls() > before)
    }

    /// Whether the policy denies a dry-run create of a ConfigMap that breaks its second rule
    /// (100 keys).
    async fn policy_in_force(&self) -> Res<bool> {
        let data: serde_json::Map<String, Value> =
            (0..100).map(|i| (format!("k{i}"), "v".into())).collect();
        let resp = self
            .admin
            .post(format!(
                "{}/api/v1/namespaces/{NS}/configmaps?dryRun=All",
                self.server.url
            ))
            .json(&json!({"apiVersion": "v1", "kind": "ConfigMap",
                          "metadata": {"name": "probe-keys"}, "data": data}))
            .send()
            .await?;
        let status = resp.status();
        let text = resp.text().await?;
        match status.as_u16() {
            200 | 201 => Ok(false),
            422 if text.contains(&format!("ValidatingAdmissionPolicy '{POLICY}'")) => Ok(true),
            _ => Err(format!("policy probe: {status}: {text}").into()),
        }
    }

    /// Configures `want` and waits (at most 20 s) until both probes agree it is in force.
    async fn switch(&mut self, want: Admission) -> Res<()> {
        if want == self.current {
            return Ok(());
        }
        let url = self.server.url.clone();
        let started = Instant::now();
        if want != Admission::Webhook {
            let path = format!("{GROUP_PATH}/validatingwebhookconfigurations/{WEBHOOK_CONFIG}");
            delete(&self.admin, &url, &path).await?;
        }
        if want != Admission::Policy {
            let path = format!("{GROUP_PATH}/validatingadmissionpolicybindings/{BINDING}");
            delete(&self.admin, &url, &path).await?;
            let path = format!("{GROUP_PATH}/validatingadmissionpolicies/{POLICY}");
            delete(&self.admin, &url, &path).await?;
        }
        if want == Admission::Webhook {
            let path = format!("{GROUP_PATH}/validatingwebhookconfigurations");
            post(&self.admin, &url, &path, &webhook_configuration(&self.hook)).await?;
        }
        if want == Admission::Policy {
            let path = format!("{GROUP_PATH}/validatingadmissionpolicies");
            post(&self.admin, &url, &path, &policy()).await?;
            let path = format!("{GROUP_PATH}/validatingadmissionpolicybindings");
            post(&self.admin, &url, &path, &binding()).await?;
        }
        loop {
            let hook = self.webhook_in_force().await?;
            let policy = self.policy_in_force().await?;
            if hook == (want == Admission::Webhook) && policy == (want == Admission::Policy) {
                break;
            }
            if started.elapsed() > Duration::from_secs(20) {
                return Err(format!(
                    "{} not in force within 20 s (webhook called: {hook}, policy denies: {policy})",
                    want.name()
                )
                .into());
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        self.switch_ms
            .push(started.elapsed().as_secs_f64() * 1000.0);
        self.current = want;
        Ok(())
    }
}

/// One cell's figures.
#[derive(Clone, Copy, Default)]
struct Sample {
    rate: f64,
    p50: f64,
    p99: f64,
    /// Server CPU µs per request.
    cpu: f64,
    errors: u64,
    /// Webhook calls per request.
    calls: f64,
    /// Connections the webhook accepted during the measurement.
    connections: u64,
    /// Webhook CPU µs per request.
    hook_cpu: f64,
    /// The server's threads at the end of the measurement.
    threads: u64,
}

/// UPDATEs at `conns` x `streams` for one cell, each worker on its own ConfigMap.
async fn cell(b: &Bench, conns: usize, streams: usize, s: &Settings) -> Res<Sample> {
    let server = &b.server;
    let tls = loader::tls_config(&server.ca_pem, &server.admin_pem)?;
    let (host, port) = loader::host_port(&server.url)?;
    let begin = Instant::now();
    let measure_from = begin + s.warmup;
    let end = measure_from + Duration::from_secs_f64(s.secs);
    let mut tasks = Vec::new();
    for c in 0..conns {
        let conn = loader::connect(tls.clone(), &host, port).await?;
        for st in 0..streams {
            let uri: hyper::Uri = format!(
                "{}/api/v1/namespaces/{NS}/configmaps/obj-{:02}",
                server.url,
                c * streams + st
            )
            .parse()?;
            let mut conn = conn.clone();
            tasks.push(tokio::spawn(async move {
                let (mut lat, mut errors) = (Vec::new(), 0u64);
                let mut current: Option<Bytes> = None;
                loop {
                    let start = Instant::now();
                    if start >= end {
                        return (lat, errors);
                    }
                    let result: loader::Res<bool> = async {
                        let obj = match current.take() {
                            Some(obj) => obj,
                            None => loader::send(&mut conn, &Method::GET, &uri, None).await?.1,
                        };
                        let next = loader::with_renew_time(&obj, &now())?;
                        let (ok, body) =
                            loader::send(&mut conn, &Method::PUT, &uri, Some(next)).await?;
                        if ok {
                            current = Some(body);
                        }
                        Ok(ok)
                    }
                    .await;
                    let done = Instant::now();
                    if done < measure_from || done > end {
                        continue;
                    }
                    match result {
                        Ok(true) => lat.push((done - start).as_secs_f64() * 1e6),
                        _ => errors += 1,
                    }
                }
            }));
        }
    }
    let pid = server.child.id().to_string();
    tokio::time::sleep_until(measure_from.into()).await;
    let (cpu0, hook_cpu0) = (cpu_seconds(&pid), b.hook.cpu_seconds());
    let (calls0, conns0) = (b.hook.calls(), b.hook.connections());
    tokio::time::sleep_until(end.into()).await;
    let cpu = cpu_seconds(&pid) - cpu0;
    let hook_cpu = b.hook.cpu_seconds() - hook_cpu0;
    let calls = b.hook.calls() - calls0;
    let connections = b.hook.connections() - conns0;
    let threads = threads(&pid);
    let (mut lat, mut errors) = (Vec::new(), 0);
    for t in tasks {
        let (l, e) = t.await?;
        lat.extend(l);
        errors += e;
    }
    lat.sort_by(|a, b| a.total_cmp(b));
    let n = lat.len().max(1) as f64;
    Ok(Sample {
        rate: lat.len() as f64 / s.secs,
        p50: percentile(&lat, 0.5),
        p99: percentile(&lat, 0.99),
        cpu: cpu * 1e6 / n,
        errors,
        calls: calls as f64 / n,
        connections,
        hook_cpu: hook_cpu * 1e6 / n,
        threads,
    })
}

/// The number of threads of process `pid` (0 when unknown).
fn threads(pid: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Threads:"))
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or(0)
}

/// The namespace, the 64 ConfigMaps of the load and the probe's.
async fn populate(b: &Bench) -> Res<()> {
    let url = &b.server.url;
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}});
    post(&b.admin, url, "/api/v1/namespaces", &ns).await?;
    let path = format!("/api/v1/namespaces/{NS}/configmaps");
    for i in 0..CONNS * STREAMS {
        post(&b.admin, url, &path, &configmap(&format!("obj-{i:02}"))).await?;
    }
    post(&b.admin, url, &path, &configmap("probe")).await?;
    let size = b
        .admin
        .get(format!("{url}{path}/obj-00"))
        .send()
        .await?
        .bytes()
        .await?
        .len();
    println!("ConfigMap as served: {size} bytes");
    Ok(())
}

async fn bench(s: Settings, smoke: bool) -> Res<()> {
    println!("before: {}", machine::conditions());
    let dir = tempfile::tempdir()?;
    let server = Server::start(dir.path()).await?;
    let admin = server.client(true)?;
    let hook = Webhook::start()?;
    let mut b = Bench {
        server,
        admin,
        hook,
        current: Admission::None,
        probes: 0,
        switch_ms: Vec::new(),
    };
    populate(&b).await?;
    let shapes = [(1usize, 1usize), (CONNS, STREAMS)];
    // results[admission][shape]: one sample per run.
    let mut results: Vec<Vec<Vec<Sample>>> = vec![vec![Vec::new(); 2]; 3];
    for run in 0..s.runs {
        let mut order = Admission::ALL;
        if run % 2 == 1 {
            order.reverse();
        }
        for admission in order {
            b.switch(admission).await?;
            for (si, &(conns, streams)) in shapes.iter().enumerate() {
                let r = cell(&b, conns, streams, &s).await?;
                eprintln!(
                    "run {} {} c={}: {:.0} req/s p50 {:.0} µs p99 {:.0} µs server {:.1} µs/req webhook {:.2} calls/req {} new conns {:.1} µs/req server threads {} errors {}",
                    run + 1,
                    admission.name(),
                    conns * streams,
                    r.rate,
                    r.p50,
                    r.p99,
                    r.cpu,
                    r.calls,
                    r.connections,
                    r.hook_cpu,
                    r.threads,
                    r.errors
                );
                if smoke && (r.errors > 0 || r.rate == 0.0) {
                    return Err(format!(
                        "{} c={}: {} failed requests, {:.0} req/s",
                        admission.name(),
                        conns * streams,
                        r.errors,
                        r.rate
                    )
                    .into());
                }
                results[admission as usize][si].push(r);
            }
        }
    }
    let paired = pairs(&mut b, smoke).await?;
    b.switch(Admission::None).await?;
    println!(
        "\nUPDATE of a ConfigMap (TLS + HTTP/2; c=64 = 8 connections x 8 streams), {} runs of {} s per cell, medians",
        s.runs, s.secs
    );
    println!("| cell | c | req/s | p50 µs | p99 µs | server CPU µs/req | webhook calls/req | new webhook connections | webhook CPU µs/req | server threads | failed |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for a in Admission::ALL {
        for (si, &(conns, streams)) in shapes.iter().enumerate() {
            let v = &results[a as usize][si];
            let m = |f: fn(&Sample) -> f64| median(v.iter().map(f).collect());
            // The webhook's columns, in the webhook's rows only.
            let hooked = |digits: usize, x: f64| match a {
                Admission::Webhook => format!("{x:.digits$}"),
                _ => "-".to_string(),
            };
            println!(
                "| {} | {} | {:.0} | {:.0} | {:.0} | {:.1} | {} | {} | {} | {:.0} | {} |",
                a.name(),
                conns * streams,
                m(|r| r.rate),
                m(|r| r.p50),
                m(|r| r.p99),
                m(|r| r.cpu),
                hooked(2, m(|r| r.calls)),
                hooked(0, m(|r| r.connections as f64)),
                hooked(1, m(|r| r.hook_cpu)),
                m(|r| r.threads as f64),
                v.iter().map(|r| r.errors).sum::<u64>(),
            );
        }
    }
    let (none, hook, policy) = (
        &results[Admission::None as usize],
        &results[Admission::Webhook as usize],
        &results[Admission::Policy as usize],
    );
    let added: Vec<f64> = hook[0]
        .iter()
        .zip(&none[0])
        .map(|(h, n)| (h.p50 - n.p50) / 1000.0)
        .collect();
    let hook_ratio: Vec<f64> = hook[1]
        .iter()
        .zip(&none[1])
        .map(|(h, n)| h.rate / n.rate)
        .collect();
    let policy_ratio: Vec<f64> = policy[1]
        .iter()
        .zip(&none[1])
        .map(|(p, n)| p.rate / n.rate)
        .collect();
    let (added_m, hook_m, policy_m) = (
        median(added.clone()),
        median(paired[0].clone()),
        median(paired[1].clone()),
    );
    println!(
        "\nc=64 ratios of the runs above (cells 6-12 s apart): webhook {:.1}% ({}), policy {:.1}% ({})",
        median(hook_ratio.clone()) * 100.0,
        per_run(&hook_ratio, "%", 100.0, 1),
        median(policy_ratio.clone()) * 100.0,
        per_run(&policy_ratio, "%", 100.0, 1),
    );
    println!("\n| bar | figure (median; per run or pair) | bar | |\n|---|---|---|---|");
    println!(
        "| 1. webhook p50 − no-admission p50, c=1 | {:.3} ms ({}) | ≤ 1 ms | {} |",
        added_m,
        per_run(&added, " ms", 1.0, 3),
        met(added_m <= 1.0)
    );
    println!(
        "| 2. webhook ÷ no admission, c=64, adjacent pairs | {:.1}% ({}) | ≥ 60% | {} |",
        hook_m * 100.0,
        per_run(&paired[0], "%", 100.0, 1),
        met(hook_m >= 0.6)
    );
    println!(
        "| 3. policy ÷ no admission, c=64, adjacent pairs | {:.1}% ({}) | ≥ 85% | {} |",
        policy_m * 100.0,
        per_run(&paired[1], "%", 100.0, 1),
        met(policy_m >= 0.85)
    );
    println!(
        "switching cells took effect in {:.0} ms (median of {}); webhook connections accepted in all: {}",
        median(b.switch_ms.clone()),
        b.switch_ms.len(),
        b.hook.connections()
    );
    println!("after: {}", machine::conditions());
    b.server.stop().await?;
    Ok(())
}

/// The c=64 throughput ratios of the webhook and the policy to no admission, each from
/// pairs of short adjacent cells (in alternating order): this machine's speed drifts by
/// tens of percent within seconds, so cells measured 6-12 s apart (the runs above) compare
/// different machines as often as different admissions. `KAPI_BENCH_PAIRS` pairs (default
/// 10) of `KAPI_BENCH_PAIR_SECS` (default 1) after a 0.5 s warm-up.
async fn pairs(b: &mut Bench, smoke: bool) -> Res<[Vec<f64>; 2]> {
    let (n, timing) = if smoke {
        (1, Settings::from_env(true, 1))
    } else {
        let n = harness::env_num("KAPI_BENCH_PAIRS", 10.0).max(1.0) as usize;
        let timing = Settings {
            secs: harness::env_num("KAPI_BENCH_PAIR_SECS", 1.0),
            warmup: Duration::from_millis(500),
            runs: n,
        };
        (n, timing)
    };
    let mut ratios: [Vec<f64>; 2] = Default::default();
    for (k, other) in [Admission::Webhook, Admission::Policy]
        .into_iter()
        .enumerate()
    {
        for i in 0..n {
            let mut order = [Admission::None, other];
            if i % 2 == 1 {
                order.reverse();
            }
            let mut rates = [0.0; 2];
            for a in order {
                b.switch(a).await?;
                let r = cell(b, CONNS, STREAMS, &timing).await?;
                if smoke && (r.errors > 0 || r.rate == 0.0) {
                    return Err(format!("{} pair: {} failed requests", a.name(), r.errors).into());
                }
                rates[usize::from(a == other)] = r.rate;
            }
            eprintln!(
                "pair {} {}: {:.0} vs {:.0} req/s",
                i + 1,
                other.name(),
                rates[1],
                rates[0]
            );
            ratios[k].push(rates[1] / rates[0]);
        }
    }
    Ok(ratios)
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` does not: run a short smoke pass then.
    let smoke = !std::env::args().any(|a| a == "--bench");
    let settings = Settings::from_env(smoke, 5);
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
