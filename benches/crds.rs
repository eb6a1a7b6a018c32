//! CustomResourceDefinition benchmark of the real `kapi serve` (`cargo bench --bench crds`).
//!
//! Spawns the `kapi` binary cargo builds for this bench on 127.0.0.1 with a temp data dir (the
//! embedded store) and measures, over TLS + HTTP/2 with the admin client certificate:
//!
//! 1. **Custom resources against ConfigMaps.** GET and UPDATE (PUT with the current
//!    resourceVersion, one object per worker) at concurrency 64 (8 connections x 8 streams)
//!    of a CronTab and of a ConfigMap of the same size (~600 bytes). The CronTab's schema has
//!    types, bounds, a pattern, defaults, unknown fields to prune and one CEL rule. The
//!    ConfigMap and CronTab cells alternate within each run; the table shows the medians over
//!    the runs and the CronTab ÷ ConfigMap ratio.
//! 2. **One CRD to its first object.** For each of 20 CRDs in turn: POST the CRD, then POST an
//!    object of it until one is accepted (a 404 while the resource is not served yet); the
//!    time from the CRD's POST to the first 201, and to the CRD's Established condition.
//! 3. **Many CRDs.** 2,000 CRDs (about 5 KB of schema each, 20 kinds per group, as Crossplane
//!    providers install them) POSTed at concurrency 16; the time until every one is
//!    Established; the server's RSS afterwards; GET /apis, aggregated discovery (/apis as
//!    `application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList`), /openapi/v3
//!    and /openapi/v2 as kubectl asks for it (protobuf, gzip) (the first and the median of
//!    10 each); the most RSS over the next 70 s (the garbage
//!    collector's resync watches the new resources); then a restart with all of them, spawn →
//!    /readyz. This part runs on a fresh server and data dir, so its RSS is the CRDs' alone.
//!
//! Environment: `KAPI_BENCH_SECS` (seconds per cell of part 1, default 5),
//! `KAPI_BENCH_RUNS` (default 3), `KAPI_BENCH_CRDS` (part 3's count, default 2000),
//! `KAPI_BENCH_SETTLE_SECS` (how long part 3 watches RSS after, default 70),
//! `KAPI_BENCH_PARTS` (which parts, e.g. `3`; default `1,2,3`),
//! `KAPI_BENCH_SERVE_ARGS`, `KAPI_BENCH_BIN` (as the api bench). Without `--bench` (under
//! `cargo test --benches`) it runs a short smoke pass that fails on any failed request.

#[allow(dead_code)]
#[path = "common/harness.rs"]
mod harness;
#[path = "api/loader.rs"]
mod loader;
#[path = "common/machine.rs"]
mod machine;
#[path = "crds/many.rs"]
mod many;
#[path = "api/server.rs"]
mod server;

use bytes::Bytes;
use futures::StreamExt;
use harness::{median, percentile, post};
use hyper::Method;
use many::many_crds;
use serde_json::{json, Value};
use server::{cpu_seconds, kapi_binary, rss_mib, Server};
use std::time::{Duration, Instant};

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

const NS: &str = "bench";
/// Objects per kind in part 1: one per worker at c=64.
const OBJECTS: usize = 64;
/// Part 1's layout: 8 connections x 8 streams.
const CONNS: usize = 8;
const STREAMS: usize = 8;
const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

struct Settings {
    secs: f64,
    warmup: Duration,
    runs: usize,
    first_object_crds: usize,
    many_crds: usize,
    /// How long RSS is watched after the CRDs are Established (the garbage collector's
    /// next resync starts a watch per new resource within 60 s).
    settle: Duration,
}

impl Settings {
    fn from_env(smoke: bool) -> Settings {
        let t = harness::Timing::from_env(smoke, 3);
        Settings {
            secs: t.secs,
            warmup: t.warmup,
            runs: t.runs,
            first_object_crds: if smoke { 3 } else { 20 },
            settle: if smoke {
                Duration::ZERO
            } else {
                Duration::from_secs(harness::env_num("KAPI_BENCH_SETTLE_SECS", 70.0) as u64)
            },
            many_crds: if smoke {
                40
            } else {
                harness::env_num("KAPI_BENCH_CRDS", 2000.0).max(1.0) as usize
            },
        }
    }
}

/// The CronTab CRD of part 1: validation, defaulting, pruning and one CEL rule in play.
fn crontab_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "crontabs.stable.example.com"},
        "spec": {
            "group": "stable.example.com", "scope": "Namespaced",
            "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {
                        "type": "object",
                        "x-kubernetes-validations": [
                            {"rule": "self.replicas <= self.maxReplicas", "message": "replicas must not exceed maxReplicas"}
                        ],
                        "properties": {
                            "cronSpec": {"type": "string", "pattern": "^(\\S+\\s+){4}\\S+$", "maxLength": 64},
                            "image": {"type": "string", "minLength": 1},
                            "replicas": {"type": "integer", "minimum": 0, "default": 1},
                            "maxReplicas": {"type": "integer", "minimum": 0, "default": 10},
                            "policy": {"type": "string", "enum": ["Allow", "Forbid"], "default": "Allow"},
                            "renewTime": {"type": "string"},
                            "config": {"type": "string"}
                        }
                    }
                }}}
            }]
        }
    })
}

/// About 400 bytes of configuration text, the same in both kinds.
fn payload() -> String {
    "server:\n  port: 8080\n  timeout: 30s\nlog:\n  level: info\n".repeat(8)
}

fn crontab(name: &str) -> Value {
    json!({
        "apiVersion": "stable.example.com/v1", "kind": "CronTab",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"cronSpec": "*/5 * * * *", "image": "registry.example.com/app:1.0",
                 "replicas": 3, "renewTime": now(), "config": payload()}
    })
}

fn configmap(name: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": NS},
        "data": {"cronSpec": "*/5 * * * *", "image": "registry.example.com/app:1.0",
                 "replicas": "3", "policy": "Allow", "renewTime": now(), "config": payload()}
    })
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

/// Whether the CRD named `name` has the condition Established=True.
async fn established(client: &reqwest::Client, url: &str, name: &str) -> Res<bool> {
    let path = format!("{url}/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}");
    let crd: Value = client.get(path).send().await?.json().await?;
    Ok(is_established(&crd))
}

fn is_established(crd: &Value) -> bool {
    crd["status"]["conditions"].as_array().is_some_and(|c| {
        c.iter()
            .any(|c| c["type"] == "Established" && c["status"] == "True")
    })
}

/// Polls until `name` is Established (at most `limit`).
async fn wait_established(
    client: &reqwest::Client,
    url: &str,
    name: &str,
    limit: Duration,
) -> Res<()> {
    let end = Instant::now() + limit;
    while !established(client, url, name).await? {
        if Instant::now() > end {
            return Err(format!("{name} not Established within {limit:?}").into());
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    Ok(())
}

/// One cell's (ops/s, p50 µs, p99 µs, server CPU µs per op).
type Sample = (f64, f64, f64, f64);

#[derive(Clone, Copy, PartialEq)]
enum Op {
    Get,
    Update,
}

/// One cell of part 1: (ops/s, p50 µs, p99 µs, server CPU µs per op, errors).
async fn cell(
    server: &Server,
    kind_path: &str,
    op: Op,
    s: &Settings,
) -> Res<(f64, f64, f64, f64, u64)> {
    let tls = loader::tls_config(&server.ca_pem, &server.admin_pem)?;
    let (host, port) = loader::host_port(&server.url)?;
    let begin = Instant::now();
    let measure_from = begin + s.warmup;
    let end = measure_from + Duration::from_secs_f64(s.secs);
    let mut tasks = Vec::new();
    for c in 0..CONNS {
        let conn = loader::connect(tls.clone(), &host, port).await?;
        for st in 0..STREAMS {
            let uri: hyper::Uri =
                format!("{}{kind_path}/obj-{:02}", server.url, c * STREAMS + st).parse()?;
            let mut conn = conn.clone();
            tasks.push(tokio::spawn(async move {
                let mut lat = Vec::new();
                let mut errors = 0u64;
                let mut current: Option<Bytes> = None;
                loop {
                    let start = Instant::now();
                    if start >= end {
                        return (lat, errors);
                    }
                    let result: loader::Res<bool> = async {
                        if op == Op::Get {
                            return Ok(loader::send(&mut conn, &Method::GET, &uri, None).await?.0);
                        }
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
    let cpu0 = cpu_seconds(&pid);
    tokio::time::sleep_until(end.into()).await;
    let cpu = cpu_seconds(&pid) - cpu0;
    let mut lat = Vec::new();
    let mut errors = 0;
    for t in tasks {
        let (l, e) = t.await?;
        lat.extend(l);
        errors += e;
    }
    lat.sort_by(|a, b| a.total_cmp(b));
    Ok((
        lat.len() as f64 / s.secs,
        percentile(&lat, 0.5),
        percentile(&lat, 0.99),
        cpu * 1e6 / lat.len().max(1) as f64,
        errors,
    ))
}

/// Part 1: CronTab against ConfigMap, GET and UPDATE at c=64.
async fn custom_against_configmaps(server: &Server, s: &Settings, smoke: bool) -> Res<()> {
    let admin = server.client(true)?;
    let url = &server.url;
    post(
        &admin,
        url,
        "/api/v1/namespaces",
        &json!({"metadata": {"name": NS}}),
    )
    .await?;
    post(
        &admin,
        url,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        &crontab_crd(),
    )
    .await?;
    wait_established(
        &admin,
        url,
        "crontabs.stable.example.com",
        Duration::from_secs(10),
    )
    .await?;
    let cm_path = format!("/api/v1/namespaces/{NS}/configmaps");
    let ct_path = format!("/apis/stable.example.com/v1/namespaces/{NS}/crontabs");
    for i in 0..OBJECTS {
        let name = format!("obj-{i:02}");
        post(&admin, url, &cm_path, &configmap(&name)).await?;
        post(&admin, url, &ct_path, &crontab(&name)).await?;
    }
    let size = |path: String| {
        let admin = admin.clone();
        async move { Ok::<_, reqwest::Error>(admin.get(path).send().await?.bytes().await?.len()) }
    };
    println!(
        "object sizes as served: ConfigMap {} bytes, CronTab {} bytes",
        size(format!("{url}{cm_path}/obj-00")).await?,
        size(format!("{url}{ct_path}/obj-00")).await?
    );
    let mut results: Vec<[Vec<Sample>; 2]> = vec![Default::default(), Default::default()];
    for run in 0..s.runs {
        for (oi, op) in [Op::Get, Op::Update].into_iter().enumerate() {
            // Alternate which kind goes first, so drift hurts both alike.
            let order = if run % 2 == 0 { [0, 1] } else { [1, 0] };
            for k in order {
                let path = if k == 0 { &cm_path } else { &ct_path };
                let (ops, p50, p99, cpu, errors) = cell(server, path, op, s).await?;
                let kind = if k == 0 { "ConfigMap" } else { "CronTab" };
                let name = if op == Op::Get { "GET" } else { "UPDATE" };
                eprintln!("run {} {name} {kind} c=64: {ops:.0} ops/s p50 {p50:.0} µs p99 {p99:.0} µs server {cpu:.0} µs/op errors {errors}", run + 1);
                if smoke && (errors > 0 || ops == 0.0) {
                    return Err(format!("{name} {kind}: {errors} errors, {ops} ops/s").into());
                }
                results[oi][k].push((ops, p50, p99, cpu));
            }
        }
    }
    println!("\n| op (c=64) | ConfigMap ops/s | CronTab ops/s | CronTab ÷ ConfigMap | ConfigMap p50 / p99 | CronTab p50 / p99 | server µs/op ConfigMap / CronTab |");
    println!("|---|---|---|---|---|---|---|");
    for (oi, name) in ["GET", "UPDATE"].iter().enumerate() {
        let m = |k: usize, f: fn(&Sample) -> f64| median(results[oi][k].iter().map(f).collect());
        let ratios: Vec<f64> = results[oi][0]
            .iter()
            .zip(&results[oi][1])
            .map(|(cm, ct)| ct.0 / cm.0)
            .collect();
        println!(
            "| {name} | {:.0} | {:.0} | {:.0}% | {:.0} / {:.0} µs | {:.0} / {:.0} µs | {:.0} / {:.0} |",
            m(0, |r| r.0),
            m(1, |r| r.0),
            median(ratios) * 100.0,
            m(0, |r| r.1),
            m(0, |r| r.2),
            m(1, |r| r.1),
            m(1, |r| r.2),
            m(0, |r| r.3),
            m(1, |r| r.3),
        );
    }
    Ok(())
}

/// A small CRD of its own group, for part 2.
fn small_crd(i: usize) -> (String, Value) {
    let group = format!("first{i}.bench.example.com");
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("widgets.{group}")},
        "spec": {
            "group": group, "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {"size": {"type": "integer", "default": 1}}}
                }}}}]
        }
    });
    (group, crd)
}

/// Part 2: CRD POST → Established, and → first object accepted, one CRD at a time.
async fn first_objects(server: &Server, s: &Settings) -> Res<()> {
    let admin = server.client(true)?;
    let url = &server.url;
    let mut to_object = Vec::new();
    let mut to_established = Vec::new();
    for i in 0..s.first_object_crds {
        let (group, crd) = small_crd(i);
        let name = crd["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let object = json!({"apiVersion": format!("{group}/v1"), "kind": "Widget",
                            "metadata": {"name": "w"}, "spec": {}});
        let objects = format!("{url}/apis/{group}/v1/namespaces/{NS}/widgets");
        let start = Instant::now();
        post(
            &admin,
            url,
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            &crd,
        )
        .await?;
        let (mut object_at, mut established_at) = (None, None);
        while object_at.is_none() || established_at.is_none() {
            if start.elapsed() > Duration::from_secs(30) {
                return Err(format!("{name}: no object accepted within 30 s").into());
            }
            if object_at.is_none() {
                let resp = admin.post(&objects).json(&object).send().await?;
                if resp.status().is_success() {
                    object_at = Some(start.elapsed());
                } else if resp.status() != 404 {
                    return Err(
                        format!("POST widget: {} {}", resp.status(), resp.text().await?).into(),
                    );
                }
            }
            if established_at.is_none() && established(&admin, url, &name).await? {
                established_at = Some(start.elapsed());
            }
            if object_at.is_none() {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
        let ms = |d: Option<Duration>| d.unwrap_or_default().as_secs_f64() * 1000.0;
        to_object.push(ms(object_at));
        to_established.push(ms(established_at));
    }
    let mut sorted = to_object.clone();
    sorted.sort_by(|a, b| a.total_cmp(b));
    println!(
        "\nCRD POST → first object accepted, over {} CRDs: p50 {:.1} ms, max {:.1} ms; → Established p50 {:.1} ms",
        to_object.len(),
        median(to_object),
        sorted.last().copied().unwrap_or(f64::NAN),
        median(to_established)
    );
    Ok(())
}

async fn bench(s: Settings, smoke: bool) -> Res<()> {
    let dir = tempfile::tempdir()?;
    println!("kapi CRD bench: {}", kapi_binary().display());
    println!("before: {}", machine::conditions());
    let parts = std::env::var("KAPI_BENCH_PARTS").unwrap_or_else(|_| "1,2,3".into());
    let part = |n: &str| parts.split(',').any(|p| p.trim() == n);
    let server = Server::start(dir.path()).await?;
    if part("1") {
        custom_against_configmaps(&server, &s, smoke).await?;
    }
    if part("2") {
        first_objects(&server, &s).await?;
    }
    server.stop().await?;
    if !part("3") {
        return Ok(());
    }
    // Part 3 on a fresh server and data dir: its RSS is the CRDs', not part 1's watch cache.
    let fresh = tempfile::tempdir()?;
    let server = Server::start(fresh.path()).await?;
    many_crds(server, fresh.path(), &s).await?;
    println!("after: {}", machine::conditions());
    Ok(())
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` does not: run a short smoke pass then.
    let smoke = !std::env::args().any(|a| a == "--bench");
    let settings = Settings::from_env(smoke);
    let _ = tracing::dispatcher::set_global_default(tracing::Dispatch::new(
        tracing::subscriber::NoSubscriber::default(),
    ));
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
