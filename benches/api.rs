//! API benchmark of the real `kapi serve` (`cargo bench --bench api`).
//!
//! Spawns the `kapi` binary that cargo builds for this bench (`CARGO_BIN_EXE_kapi`; under
//! `cargo bench` that is the release-profile build) on 127.0.0.1, port 0, with a temp data dir
//! (embedded store). It creates leases, then measures GET, LIST (100 items) and UPDATE (PUT
//! with the current resourceVersion, one lease per worker so there are no conflicts) of
//! coordination.k8s.io/v1 leases, and CREATE (POST of a ~300-byte ConfigMap with
//! `generateName`, every create a new object) over TLS + HTTP/2 (ALPN "h2" only),
//! authenticated with the admin client certificate from `<data-dir>/admin.kubeconfig`.
//!
//! Concurrency 1, 16 and 64 are laid out as connections x streams like the h2load runs of
//! the physical-limits kit: 1x1, 4x4, 8x8. Each cell runs a warm-up, then a fixed duration;
//! cells are interleaved over several runs and the table shows medians over the runs.
//! Afterwards the server is stopped and restarted on the same (now populated) data dir
//! several times to measure process start → first `/readyz` 200 and the idle RSS.
//!
//! Environment: `KAPI_BENCH_SECS` (measured seconds per cell, default 5),
//! `KAPI_BENCH_WARMUP_MS` (default 1000), `KAPI_BENCH_RUNS` (default 3),
//! `KAPI_BENCH_RESTARTS` (default 7), `KAPI_BENCH_LOADER_THREADS` (default 1, like
//! `h2load -t1`), `KAPI_BENCH_OPS` (comma-separated subset of `get,list,update,create`; default all),
//! `KAPI_BENCH_CONC` (comma-separated subset of `1,16,64`; default all; handy for profiling
//! one cell), `KAPI_BENCH_SERVE_ARGS` (extra `kapi serve` flags, whitespace-separated, e.g.
//! `--feature-gates=CoordinatedLeaderElection=false`), `KAPI_BENCH_BIN` (the `kapi` binary to
//! measure instead of the one cargo built, for A/B runs of two builds in one session).
//! Without `--bench` (i.e. under `cargo test --benches`) it runs a short
//! smoke pass so the bench itself stays tested.

#[path = "api/loader.rs"]
mod loader;
#[path = "common/machine.rs"]
mod machine;
#[path = "api/server.rs"]
mod server;

// mimalloc for the loader (one thread, no cross-thread frees), so it does not pay glibc
// malloc's costs on the CPU it shares with the server.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

use bytes::Bytes;
use hyper::Method;
use serde_json::{json, Value};
use server::{cpu_seconds, kapi_binary, rss_mib, Server};
use std::time::{Duration, Instant};

const GROUP_PATH: &str = "/apis/coordination.k8s.io/v1/namespaces";
const LIST_NS: &str = "bench-list";
/// Namespace the CREATE cells fill with ConfigMaps named from `generateName`.
const CREATE_NS: &str = "bench-create";
const RW_NS: &str = "bench-rw";
const LIST_ITEMS: usize = 100;
const RW_ITEMS: usize = 64;
/// Concurrency → (connections, streams per connection), as in the limits kit's h2load runs.
const LAYOUTS: [(usize, usize, usize); 3] = [(1, 1, 1), (16, 4, 4), (64, 8, 8)];

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

#[derive(Clone, Copy, PartialEq, Debug)]
enum Op {
    Get,
    List,
    Update,
    Create,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Get => "GET",
            Op::List => "LIST (100 items)",
            Op::Update => "UPDATE",
            Op::Create => "CREATE",
        }
    }
}

struct Settings {
    secs: f64,
    warmup: Duration,
    runs: usize,
    restarts: usize,
    loader_threads: usize,
    /// Lower-case prefixes of the operations to run (`get`, `list`, `update`).
    ops: Vec<String>,
    conc: Vec<usize>,
}

impl Settings {
    fn from_env(smoke: bool) -> Settings {
        let get = |name: &str, default: f64| {
            std::env::var(name)
                .ok()
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or(default)
        };
        if smoke {
            return Settings {
                secs: 0.3,
                warmup: Duration::from_millis(100),
                runs: 1,
                restarts: 2,
                loader_threads: 1,
                ops: all_ops(),
                conc: all_conc(),
            };
        }
        Settings {
            secs: get("KAPI_BENCH_SECS", 5.0),
            warmup: Duration::from_millis(get("KAPI_BENCH_WARMUP_MS", 1000.0) as u64),
            runs: get("KAPI_BENCH_RUNS", 3.0).max(1.0) as usize,
            restarts: get("KAPI_BENCH_RESTARTS", 7.0).max(1.0) as usize,
            loader_threads: get("KAPI_BENCH_LOADER_THREADS", 1.0).max(1.0) as usize,
            ops: std::env::var("KAPI_BENCH_OPS")
                .map(|v| v.split(',').map(|o| o.trim().to_lowercase()).collect())
                .unwrap_or_else(|_| all_ops()),
            conc: std::env::var("KAPI_BENCH_CONC")
                .map(|v| v.split(',').filter_map(|c| c.trim().parse().ok()).collect())
                .unwrap_or_else(|_| all_conc()),
        }
    }
}

fn all_conc() -> Vec<usize> {
    LAYOUTS.iter().map(|l| l.0).collect()
}

fn all_ops() -> Vec<String> {
    vec![
        "get".into(),
        "list".into(),
        "update".into(),
        "create".into(),
    ]
}

fn lease(name: &str, ns: &str) -> Value {
    json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"holderIdentity": name, "leaseDurationSeconds": 40,
                 "acquireTime": now_micro(), "renewTime": now_micro()}
    })
}

/// The current time as a metav1.MicroTime: RFC 3339, microseconds, `Z`.
fn now_micro() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

/// The body of every CREATE: a ConfigMap named by the server from `generateName`, with a
/// label and a few data keys (about 300 bytes, as a small real ConfigMap).
fn configmap_body() -> Bytes {
    let cm = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"generateName": "bench-", "namespace": CREATE_NS,
                     "labels": {"app.kubernetes.io/name": "bench"}},
        "data": {"mode": "fast", "replicas": "3",
                 "config.yaml": "server:\n  port: 8080\n  timeout: 30s\nlog:\n  level: info\n"}
    });
    Bytes::from(serde_json::to_vec(&cm).unwrap_or_default())
}

/// Creates the namespaces and leases (idempotent: 409 counts as present).
async fn populate(client: &reqwest::Client, url: &str) -> Res<()> {
    for ns in [LIST_NS, RW_NS, CREATE_NS] {
        let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
        let resp = client
            .post(format!("{url}/api/v1/namespaces"))
            .json(&body)
            .send()
            .await?;
        if !(resp.status().is_success() || resp.status() == 409) {
            return Err(format!(
                "create namespace {ns}: {} {}",
                resp.status(),
                resp.text().await?
            )
            .into());
        }
    }
    for (ns, count) in [(LIST_NS, LIST_ITEMS), (RW_NS, RW_ITEMS)] {
        for i in 0..count {
            let resp = client
                .post(format!("{url}{GROUP_PATH}/{ns}/leases"))
                .json(&lease(&format!("lease-{i:03}"), ns))
                .send()
                .await?;
            if !(resp.status().is_success() || resp.status() == 409) {
                return Err(
                    format!("create lease: {} {}", resp.status(), resp.text().await?).into(),
                );
            }
        }
    }
    let list: Value = client
        .get(format!("{url}{GROUP_PATH}/{LIST_NS}/leases"))
        .send()
        .await?
        .json()
        .await?;
    let n = list["items"].as_array().map_or(0, Vec::len);
    if n != LIST_ITEMS {
        return Err(format!("LIST returned {n} items, want {LIST_ITEMS}").into());
    }
    Ok(())
}

/// What one worker saw inside the measured window.
#[derive(Default)]
struct Tally {
    latencies_us: Vec<u32>,
    errors: u64,
    bytes: u64,
}

/// One worker in a closed loop until `end`; only requests that finish after `measure_from`
/// are recorded.
async fn worker(
    mut conn: loader::Conn,
    (lease_url, list_url, create_url): (hyper::Uri, hyper::Uri, hyper::Uri),
    op: Op,
    measure_from: Instant,
    end: Instant,
) -> Tally {
    let mut tally = Tally::default();
    let mut current: Option<Bytes> = None;
    let configmap = configmap_body();
    loop {
        let start = Instant::now();
        if start >= end {
            return tally;
        }
        let result: loader::Res<(bool, u64)> = async {
            match op {
                Op::Get | Op::List => {
                    let target = if op == Op::Get { &lease_url } else { &list_url };
                    let (ok, body) = loader::send(&mut conn, &Method::GET, target, None).await?;
                    Ok((ok, body.len() as u64))
                }
                Op::Create => {
                    let body = Some(configmap.clone());
                    let (ok, body) =
                        loader::send(&mut conn, &Method::POST, &create_url, body).await?;
                    Ok((ok, body.len() as u64))
                }
                Op::Update => {
                    let obj = match current.take() {
                        Some(obj) => obj,
                        None => {
                            loader::send(&mut conn, &Method::GET, &lease_url, None)
                                .await?
                                .1
                        }
                    };
                    let next = loader::with_renew_time(&obj, &now_micro())?;
                    let (ok, body) =
                        loader::send(&mut conn, &Method::PUT, &lease_url, Some(next)).await?;
                    let len = body.len() as u64;
                    if ok {
                        // The response carries the new resourceVersion for the next PUT.
                        current = Some(body);
                    }
                    Ok((ok, len))
                }
            }
        }
        .await;
        let done = Instant::now();
        if done < measure_from || done > end {
            continue;
        }
        match result {
            Ok((true, bytes)) => {
                tally
                    .latencies_us
                    .push((done - start).as_micros().min(u32::MAX as u128) as u32);
                tally.bytes += bytes;
            }
            _ => tally.errors += 1,
        }
    }
}

/// One measured cell.
struct Cell {
    ops: f64,
    p50_us: f64,
    p99_us: f64,
    /// p90, p99.9 and max, for the per-run line.
    tail_us: [f64; 3],
    errors: u64,
    server_us_per_op: f64,
    server_cores: f64,
    loader_cores: f64,
    bytes_per_op: f64,
}

async fn run_cell(
    server: &Server,
    op: Op,
    conns: usize,
    streams: usize,
    s: &Settings,
) -> Res<Cell> {
    let tls = loader::tls_config(&server.ca_pem, &server.admin_pem)?;
    let (host, port) = loader::host_port(&server.url)?;
    let mut clients = Vec::new();
    for _ in 0..conns {
        clients.push(loader::connect(tls.clone(), &host, port).await?);
    }
    let pid = server.child.id().to_string();
    let begin = Instant::now();
    let measure_from = begin + s.warmup;
    let end = measure_from + Duration::from_secs_f64(s.secs);
    let mut tasks = Vec::new();
    for (c, client) in clients.iter().enumerate() {
        for st in 0..streams {
            let url = &server.url;
            let lease = format!(
                "{url}{GROUP_PATH}/{RW_NS}/leases/lease-{:03}",
                (c * streams + st) % RW_ITEMS
            );
            let list = format!("{url}{GROUP_PATH}/{LIST_NS}/leases");
            let create = format!("{url}/api/v1/namespaces/{CREATE_NS}/configmaps");
            let uris = (lease.parse()?, list.parse()?, create.parse()?);
            let fut = worker(client.clone(), uris, op, measure_from, end);
            tasks.push(tokio::spawn(fut));
        }
    }
    tokio::time::sleep_until(measure_from.into()).await;
    let (srv0, me0, t0) = (cpu_seconds(&pid), cpu_seconds("self"), Instant::now());
    tokio::time::sleep_until(end.into()).await;
    let (srv1, me1, wall) = (
        cpu_seconds(&pid),
        cpu_seconds("self"),
        t0.elapsed().as_secs_f64(),
    );
    let mut all = Tally::default();
    for task in tasks {
        let t = tokio::time::timeout(Duration::from_secs(60), task).await??;
        all.latencies_us.extend(t.latencies_us);
        all.errors += t.errors;
        all.bytes += t.bytes;
    }
    all.latencies_us.sort_unstable();
    let n = all.latencies_us.len();
    let pct = |p: f64| -> f64 {
        if n == 0 {
            return f64::NAN;
        }
        let rank = ((p * n as f64).ceil() as usize).clamp(1, n);
        all.latencies_us[rank - 1] as f64
    };
    Ok(Cell {
        ops: n as f64 / s.secs,
        p50_us: pct(0.50),
        p99_us: pct(0.99),
        tail_us: [pct(0.90), pct(0.999), pct(1.0)],
        errors: all.errors,
        server_us_per_op: (srv1 - srv0) * 1e6 / n.max(1) as f64,
        server_cores: (srv1 - srv0) / wall,
        loader_cores: (me1 - me0) / wall,
        bytes_per_op: all.bytes as f64 / n.max(1) as f64,
    })
}

/// Host and port of an `https://host:port` URL.
fn median(mut v: Vec<f64>) -> f64 {
    v.retain(|x| !x.is_nan());
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

fn fmt_us(us: f64) -> String {
    if us >= 10_000.0 {
        format!("{:.1} ms", us / 1000.0)
    } else if us >= 1000.0 {
        format!("{:.2} ms", us / 1000.0)
    } else {
        format!("{us:.0} µs")
    }
}

/// Runs the bench; `smoke` (under `cargo test --benches`) fails on any failed request.
async fn bench(s: Settings, smoke: bool) -> Res<()> {
    let dir = tempfile::tempdir()?;
    println!("kapi API bench: {}", kapi_binary().display());
    println!("before: {}", machine::conditions());
    println!(
        "settings: {} s per cell after {} ms warm-up, {} run(s) interleaved, {} restart(s), {} loader thread(s)\n",
        s.secs, s.warmup.as_millis(), s.runs, s.restarts, s.loader_threads
    );
    let server = Server::start(dir.path()).await?;
    let first_start = server.ready_after;
    let admin = server.client(true)?;
    populate(&admin, &server.url).await?;
    drop(admin);

    let ops: Vec<Op> = [Op::Get, Op::List, Op::Update, Op::Create]
        .into_iter()
        .filter(|op| {
            s.ops
                .iter()
                .any(|name| op.name().to_lowercase().starts_with(name))
        })
        .collect();
    let mut results: Vec<Vec<Cell>> = (0..ops.len() * LAYOUTS.len()).map(|_| Vec::new()).collect();
    for run in 0..s.runs {
        for (oi, op) in ops.iter().enumerate() {
            for (li, (conc, conns, streams)) in LAYOUTS.iter().enumerate() {
                if !s.conc.contains(conc) {
                    continue;
                }
                let cell = run_cell(&server, *op, *conns, *streams, &s).await?;
                eprintln!(
                    "run {} {:<16} c={:<2} {:>8.0} ops/s p50 {:>9} p90 {:>9} p99 {:>9} p99.9 {:>9} max {:>9} errors {}",
                    run + 1,
                    op.name(),
                    conc,
                    cell.ops,
                    fmt_us(cell.p50_us),
                    fmt_us(cell.tail_us[0]),
                    fmt_us(cell.p99_us),
                    fmt_us(cell.tail_us[1]),
                    fmt_us(cell.tail_us[2]),
                    cell.errors
                );
                if smoke && (cell.errors > 0 || cell.ops == 0.0) {
                    return Err(format!(
                        "{} c={conc}: {} errors, {} ops/s",
                        op.name(),
                        cell.errors,
                        cell.ops
                    )
                    .into());
                }
                results[oi * LAYOUTS.len() + li].push(cell);
            }
        }
    }
    let rss_after_load = rss_mib(server.child.id());
    server.stop().await?;

    println!("| op | conc | ops/s (median) | ops/s min-max | p50 | p99 | errors | server CPU µs/op | server cores | loader cores | bytes/response |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for (oi, op) in ops.iter().enumerate() {
        for (li, (conc, _, _)) in LAYOUTS.iter().enumerate() {
            let cells = &results[oi * LAYOUTS.len() + li];
            if cells.is_empty() {
                continue;
            }
            let m = |f: fn(&Cell) -> f64| median(cells.iter().map(f).collect());
            let lo = cells.iter().map(|c| c.ops).fold(f64::INFINITY, f64::min);
            let hi = cells.iter().map(|c| c.ops).fold(0.0, f64::max);
            println!(
                "| {} | {} | {:.0} | {:.0}-{:.0} | {} | {} | {} | {:.1} | {:.2} | {:.2} | {:.0} |",
                op.name(),
                conc,
                m(|c| c.ops),
                lo,
                hi,
                fmt_us(m(|c| c.p50_us)),
                fmt_us(m(|c| c.p99_us)),
                cells.iter().map(|c| c.errors).sum::<u64>(),
                m(|c| c.server_us_per_op),
                m(|c| c.server_cores),
                m(|c| c.loader_cores),
                m(|c| c.bytes_per_op)
            );
        }
    }

    let mut starts = Vec::new();
    let mut rss = Vec::new();
    for _ in 0..s.restarts {
        let server = Server::start(dir.path()).await?;
        starts.push(server.ready_after.as_secs_f64() * 1000.0);
        tokio::time::sleep(Duration::from_secs(1)).await;
        rss.push(rss_mib(server.child.id()));
        server.stop().await?;
    }
    let (lo, hi) = starts
        .iter()
        .fold((f64::INFINITY, 0.0f64), |(l, h), x| (l.min(*x), h.max(*x)));
    println!("\nstart → first /readyz 200, existing data dir: median {:.1} ms (min {lo:.1}, max {hi:.1}, {} restarts)", median(starts.clone()), starts.len());
    println!(
        "first start on an empty data dir: {:.1} ms",
        first_start.as_secs_f64() * 1000.0
    );
    println!(
        "idle RSS 1 s after /readyz 200: median {:.1} MiB ({:.1} MB)",
        median(rss.clone()),
        median(rss) * 1.048576
    );
    println!("RSS after the load: {rss_after_load:.1} MiB");
    println!("after: {}", machine::conditions());
    Ok(())
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` does not: run a short smoke pass then.
    let smoke = !std::env::args().any(|a| a == "--bench");
    let settings = Settings::from_env(smoke);
    // The h2 crate opens tracing spans per stream; with no subscriber at all, tracing hands
    // each one to the `log` crate (its `log` feature is on in this build), which was ~4% of
    // the loader's CPU. A subscriber that takes nothing makes them free, as in the server.
    let _ = tracing::dispatcher::set_global_default(tracing::Dispatch::new(
        tracing::subscriber::NoSubscriber::default(),
    ));
    // One loader thread (the default, like `h2load -t1`) is a current-thread runtime: the
    // workers and connections all run on the thread that drives the bench.
    let mut rt = if settings.loader_threads == 1 {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut b = tokio::runtime::Builder::new_multi_thread();
        b.worker_threads(settings.loader_threads);
        b
    };
    rt.enable_all();
    let result = rt
        .build()
        .map_err(Into::into)
        .and_then(|rt| rt.block_on(bench(settings, smoke)));
    if let Err(err) = result {
        eprintln!("bench failed: {err}");
        std::process::exit(1);
    }
}
