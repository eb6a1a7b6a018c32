//! Aggregation benchmark of the real `kapi serve` (`cargo bench --bench aggregation`).
//!
//! Starts two release `kapi serve` processes on embedded stores: the **front** and a
//! **backend** that trusts the front's front-proxy CA for request-header authentication
//! (`--requestheader-client-ca-file <front>/pki/front-proxy-ca.crt`,
//! `--requestheader-allowed-names front-proxy-client`), as an extension API server built on
//! k8s.io/apiserver would. The backend serves a CRD `widgets.example.com` (v1) and one widget;
//! the front has an APIService `v1.example.com` pointing at an ExternalName Service for
//! 127.0.0.1 and the backend's port (insecureSkipTLSVerify: the backend's certificate does not
//! name `<service>.<namespace>.svc`). The load is GET of the widget over TLS + HTTP/2 with each
//! server's admin certificate, at c=1 and at c=64 (8 connections x 8 streams), in two cells:
//!
//! - **direct**: to the backend;
//! - **proxied**: to the front, which authenticates and authorizes the request and proxies it
//!   to the backend with the admin's identity in X-Remote-* headers over its front-proxy
//!   client certificate.
//!
//! The cells alternate within each run (reversed every other run); ratios are taken within a
//! run, the tables show medians. Both processes share the machine's cores, so a proxied
//! request pays the front's and the backend's CPU: the tables give both servers' CPU per
//! request.
//!
//! Then the mixed-version peer proxy: two replicas on a real etcd (the `etcd` binary on PATH;
//! without it this part is skipped) sharing a PKI, **old** started with
//! `--runtime-config coordination.k8s.io/v1beta1=false`, **new** with everything. GET of a
//! LeaseCandidate at c=1 straight from new, and through old, which forwards it to new with
//! the caller's identity: the difference of the p50s is what the forwarding adds.
//!
//! Environment: `KAPI_BENCH_SECS` (seconds per cell, default 5), `KAPI_BENCH_RUNS` (default
//! 5), `KAPI_BENCH_BIN` as the api bench. Without `--bench` (under `cargo test --benches`) it
//! runs a short smoke pass that fails on any failed request.

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

use harness::{median, met, per_run, percentile, post};
use hyper::Method;
use serde_json::json;
use server::{cpu_seconds, Server};
use std::time::{Duration, Instant};

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

const CONNS: usize = 8;
const STREAMS: usize = 8;
const WIDGET: &str = "/apis/example.com/v1/namespaces/default/widgets/w0";
const CANDIDATE: &str = "/apis/coordination.k8s.io/v1beta1/namespaces/default/leasecandidates/c0";

/// Seconds per cell, warm-up and runs.
type Settings = harness::Timing;

/// GETs `path` until it answers 200 (at most 30 s).
async fn until_ok(client: &reqwest::Client, url: &str, path: &str) -> Res<()> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let resp = client.get(format!("{url}{path}")).send().await?;
        if resp.status() == 200 {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!("GET {path}: {}: {}", resp.status(), resp.text().await?).into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The widgets CRD and one widget on the backend.
async fn backend_widget(backend: &Server) -> Res<()> {
    let admin = backend.client(true)?;
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true}}}]}
    });
    post(
        &admin,
        &backend.url,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        &crd,
    )
    .await?;
    until_ok(
        &admin,
        &backend.url,
        "/apis/example.com/v1/namespaces/default/widgets",
    )
    .await?;
    let widget = json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w0", "namespace": "default"},
        "spec": {"size": 3, "color": "blue", "labels": {"tier": "backend"}}});
    post(
        &admin,
        &backend.url,
        "/apis/example.com/v1/namespaces/default/widgets",
        &widget,
    )
    .await
}

/// The Service and APIService on the front, pointing at the backend.
async fn register(front: &Server, backend: &Server) -> Res<()> {
    let admin = front.client(true)?;
    let (_, port) = loader::host_port(&backend.url)?;
    let svc = json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "bench-ext", "namespace": "default"},
        "spec": {"type": "ExternalName", "externalName": "127.0.0.1"}});
    post(
        &admin,
        &front.url,
        "/api/v1/namespaces/default/services",
        &svc,
    )
    .await?;
    let apiservice = json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": "v1.example.com"},
        "spec": {"group": "example.com", "version": "v1", "groupPriorityMinimum": 1000,
            "versionPriority": 15, "insecureSkipTLSVerify": true,
            "service": {"namespace": "default", "name": "bench-ext", "port": port}}});
    post(
        &admin,
        &front.url,
        "/apis/apiregistration.k8s.io/v1/apiservices",
        &apiservice,
    )
    .await?;
    until_ok(&admin, &front.url, WIDGET).await
}

/// One cell's figures.
#[derive(Clone, Copy, Default)]
struct Sample {
    rate: f64,
    p50: f64,
    p99: f64,
    /// CPU µs per request of the front and of the backend.
    front_cpu: f64,
    backend_cpu: f64,
    errors: u64,
}

/// GETs of `path` from `target` at `conns` x `streams`; CPU of `front` and `backend`.
async fn cell(
    target: &Server,
    path: &str,
    (front, backend): (&Server, &Server),
    (conns, streams): (usize, usize),
    s: &Settings,
) -> Res<Sample> {
    let tls = loader::tls_config(&target.ca_pem, &target.admin_pem)?;
    let (host, port) = loader::host_port(&target.url)?;
    let uri: hyper::Uri = format!("{}{path}", target.url).parse()?;
    let begin = Instant::now();
    let measure_from = begin + s.warmup;
    let end = measure_from + Duration::from_secs_f64(s.secs);
    let mut tasks = Vec::new();
    for _ in 0..conns {
        let conn = loader::connect(tls.clone(), &host, port).await?;
        for _ in 0..streams {
            let (mut conn, uri) = (conn.clone(), uri.clone());
            tasks.push(tokio::spawn(async move {
                let (mut lat, mut errors) = (Vec::new(), 0u64);
                loop {
                    let start = Instant::now();
                    if start >= end {
                        return (lat, errors);
                    }
                    let result = loader::send(&mut conn, &Method::GET, &uri, None).await;
                    let done = Instant::now();
                    if done < measure_from || done > end {
                        continue;
                    }
                    match result {
                        Ok((true, _)) => lat.push((done - start).as_secs_f64() * 1e6),
                        _ => errors += 1,
                    }
                }
            }));
        }
    }
    let (fpid, bpid) = (front.child.id().to_string(), backend.child.id().to_string());
    tokio::time::sleep_until(measure_from.into()).await;
    let (f0, b0) = (cpu_seconds(&fpid), cpu_seconds(&bpid));
    tokio::time::sleep_until(end.into()).await;
    let (f1, b1) = (cpu_seconds(&fpid), cpu_seconds(&bpid));
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
        front_cpu: (f1 - f0) * 1e6 / n,
        backend_cpu: (b1 - b0) * 1e6 / n,
        errors,
    })
}

async fn bench(s: Settings, smoke: bool) -> Res<()> {
    println!("before: {}", machine::conditions());
    let (front_dir, backend_dir) = (tempfile::tempdir()?, tempfile::tempdir()?);
    let front = Server::start(front_dir.path()).await?;
    let ca = front_dir.path().join("pki").join("front-proxy-ca.crt");
    let ca = ca.to_str().ok_or("a non-UTF-8 temp path")?;
    let backend = Server::start_with(
        backend_dir.path(),
        &[
            "--requestheader-client-ca-file",
            ca,
            "--requestheader-allowed-names",
            "front-proxy-client",
        ],
    )
    .await?;
    backend_widget(&backend).await?;
    register(&front, &backend).await?;
    let shapes = [(1usize, 1usize), (CONNS, STREAMS)];
    const NAMES: [&str; 2] = ["direct to the backend", "proxied by the front"];
    // results[cell][shape]: one sample per run.
    let mut results: Vec<Vec<Vec<Sample>>> = vec![vec![Vec::new(); 2]; 2];
    for run in 0..s.runs {
        let mut order = [0usize, 1];
        if run % 2 == 1 {
            order.reverse();
        }
        for c in order {
            let target = if c == 0 { &backend } else { &front };
            for (si, &(conns, streams)) in shapes.iter().enumerate() {
                let r = cell(target, WIDGET, (&front, &backend), (conns, streams), &s).await?;
                eprintln!(
                    "run {} {} c={}: {:.0} req/s p50 {:.0} µs p99 {:.0} µs front {:.1} µs/req backend {:.1} µs/req errors {}",
                    run + 1,
                    NAMES[c],
                    conns * streams,
                    r.rate,
                    r.p50,
                    r.p99,
                    r.front_cpu,
                    r.backend_cpu,
                    r.errors
                );
                if smoke && (r.errors > 0 || r.rate == 0.0) {
                    return Err(format!(
                        "{} c={}: {} failed requests, {:.0} req/s",
                        NAMES[c],
                        conns * streams,
                        r.errors,
                        r.rate
                    )
                    .into());
                }
                results[c][si].push(r);
            }
        }
    }
    println!(
        "\nGET of a custom object (TLS + HTTP/2; c=64 = 8 connections x 8 streams), {} runs of {} s per cell, medians",
        s.runs, s.secs
    );
    println!(
        "| cell | c | req/s | p50 µs | p99 µs | front CPU µs/req | backend CPU µs/req | failed |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for (c, name) in NAMES.iter().enumerate() {
        for (si, &(conns, streams)) in shapes.iter().enumerate() {
            let v = &results[c][si];
            let m = |f: fn(&Sample) -> f64| median(v.iter().map(f).collect());
            println!(
                "| {name} | {} | {:.0} | {:.0} | {:.0} | {:.1} | {:.1} | {} |",
                conns * streams,
                m(|r| r.rate),
                m(|r| r.p50),
                m(|r| r.p99),
                m(|r| r.front_cpu),
                m(|r| r.backend_cpu),
                v.iter().map(|r| r.errors).sum::<u64>(),
            );
        }
    }
    let ratio: Vec<f64> = results[1][1]
        .iter()
        .zip(&results[0][1])
        .map(|(p, d)| p.rate / d.rate)
        .collect();
    let added: Vec<f64> = results[1][0]
        .iter()
        .zip(&results[0][0])
        .map(|(p, d)| (p.p50 - d.p50) / 1000.0)
        .collect();
    let (ratio_m, added_m) = (median(ratio.clone()), median(added.clone()));
    println!("\n| figure | median (per run) | bar | |\n|---|---|---|---|");
    println!(
        "| proxied ÷ direct, c=64 | {:.1}% ({}) | ≥ 50% | {} |",
        ratio_m * 100.0,
        per_run(&ratio, "%", 100.0, 1),
        met(ratio_m >= 0.5)
    );
    println!(
        "| proxied p50 − direct p50, c=1 | {:.3} ms ({}) | - | |",
        added_m,
        per_run(&added, " ms", 1.0, 3)
    );
    front.stop().await?;
    backend.stop().await?;
    peer_proxy(&s, smoke).await?;
    println!("after: {}", machine::conditions());
    Ok(())
}

/// A free loopback port.
fn free_port() -> Res<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// `etcd` from PATH on free ports and a temp dir; None when there is none.
fn start_etcd(dir: &std::path::Path) -> Res<Option<(std::process::Child, String)>> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let Some(bin) = std::env::split_paths(&path)
        .map(|d| d.join("etcd"))
        .find(|p| p.is_file())
    else {
        return Ok(None);
    };
    let (client, peer) = (free_port()?, free_port()?);
    let url = format!("http://127.0.0.1:{client}");
    let peer = format!("http://127.0.0.1:{peer}");
    let child = std::process::Command::new(bin)
        .args([
            "--name=bench".to_string(),
            format!("--data-dir={}", dir.join("etcd").display()),
            format!("--listen-client-urls={url}"),
            format!("--advertise-client-urls={url}"),
            format!("--listen-peer-urls={peer}"),
            format!("--initial-advertise-peer-urls={peer}"),
            format!("--initial-cluster=bench={peer}"),
            "--log-level=error".to_string(),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()?;
    Ok(Some((child, url)))
}

/// The peer-proxy section: p50 of a GET forwarded by a replica minus the same GET answered
/// by the peer that serves it.
async fn peer_proxy(s: &Settings, smoke: bool) -> Res<()> {
    let dir = tempfile::tempdir()?;
    let Some((mut etcd, url)) = start_etcd(dir.path())? else {
        println!("\npeer proxy: skipped (no etcd on PATH)");
        return Ok(());
    };
    let pki = dir.path().join("pki");
    let pki = pki.to_str().ok_or("a non-UTF-8 temp path")?.to_string();
    let replica = |host: &'static str, extra: &'static [&'static str]| {
        let (url, pki, dir) = (url.clone(), pki.clone(), dir.path().join(host));
        async move {
            let mut args = vec![
                "--etcd-servers",
                url.as_str(),
                "--cert-dir",
                pki.as_str(),
                "--hostname-override",
                host,
            ];
            args.extend_from_slice(extra);
            Server::start_with(&dir, &args).await
        }
    };
    let result = async {
        let new = replica("new", &[]).await?;
        let old = replica(
            "old",
            &["--runtime-config", "coordination.k8s.io/v1beta1=false"],
        )
        .await?;
        let candidate = json!({"apiVersion": "coordination.k8s.io/v1beta1", "kind": "LeaseCandidate",
            "metadata": {"name": "c0", "namespace": "default"},
            "spec": {"leaseName": "bench", "binaryVersion": "1.35.0", "emulationVersion": "1.35.0",
                "strategy": "OldestEmulationVersion",
                "renewTime": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true)}});
        post(
            &new.client(true)?,
            &new.url,
            "/apis/coordination.k8s.io/v1beta1/namespaces/default/leasecandidates",
            &candidate,
        )
        .await?;
        until_ok(&old.client(true)?, &old.url, CANDIDATE).await?;
        let mut added = Vec::new();
        let (mut direct_p50, mut proxied_p50) = (Vec::new(), Vec::new());
        for run in 0..s.runs {
            let mut pair = [None, None];
            let order: [usize; 2] = if run % 2 == 0 { [0, 1] } else { [1, 0] };
            for i in order {
                let target = if i == 0 { &new } else { &old };
                let r = cell(target, CANDIDATE, (&old, &new), (1, 1), s).await?;
                if smoke && (r.errors > 0 || r.rate == 0.0) {
                    return Err(format!("peer proxy: {} failed requests", r.errors).into());
                }
                pair[i] = Some(r);
            }
            let (d, p) = (pair[0].unwrap_or_default(), pair[1].unwrap_or_default());
            eprintln!(
                "run {} peer proxy c=1: direct p50 {:.0} µs, forwarded p50 {:.0} µs",
                run + 1,
                d.p50,
                p.p50
            );
            direct_p50.push(d.p50);
            proxied_p50.push(p.p50);
            added.push((p.p50 - d.p50) / 1000.0);
        }
        let added_m = median(added.clone());
        println!("\nGET of a LeaseCandidate, c=1, {} runs of {} s, medians", s.runs, s.secs);
        println!("| cell | p50 µs |\n|---|---|");
        println!("| straight from the replica that serves it | {:.0} |", median(direct_p50));
        println!("| forwarded by the peer proxy | {:.0} |", median(proxied_p50));
        println!(
            "| forwarded p50 − direct p50 | {:.3} ms ({}) | ≤ 1 ms | {} |",
            added_m,
            per_run(&added, " ms", 1.0, 3),
            met(added_m <= 1.0)
        );
        old.stop().await?;
        new.stop().await?;
        Ok(())
    }
    .await;
    let _ = etcd.kill();
    let _ = etcd.wait();
    result
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
