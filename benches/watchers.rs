//! Slow-watcher benchmark of the real `kapi serve` (`cargo bench --bench watchers`).
//!
//! The scenario of the reliability issue: many watch streams on the ConfigMaps of one
//! namespace (default 10 HTTP/2 connections x 100 streams), all read and decoded by ONE client
//! thread, so together they read slower than events arrive, while writers (default 16: 4
//! connections x 4 streams) create ConfigMaps in that namespace at the rate (about
//! 1,300/s in all, `KAPI_WATCH_RATE`; 0 for as fast as kapi takes them).
//! A watcher whose stream ends re-watches from the last resourceVersion it saw, and after a
//! 410 Expired from a fresh resourceVersion (a `limit=1` LIST), as client-go and kube-rs
//! reflectors resume. Optionally some streams per connection never read at all ("stalled").
//!
//! It samples kapi's RSS every 100 ms and probes `/readyz` every 500 ms, and reports peak RSS,
//! create throughput and latency, 5xx and other failures, how many watch streams the server
//! closed, and what kapi logged about closed watchers and leader election. It fails (exit 1)
//! when a bar of the issue is missed: peak RSS >= `KAPI_WATCH_MAX_RSS_MIB` (default 300),
//! any 5xx, any failed `/readyz`, a "leader election lost" log line, or (bench mode only)
//! create p99 >= 50 ms.
//!
//! Environment: `KAPI_WATCH_SECS` (default 60), `KAPI_WATCH_CONNS` (10),
//! `KAPI_WATCH_STREAMS` (streams per connection, 100), `KAPI_WATCH_STALLED` (of those, how
//! many never read, 0), `KAPI_WATCH_WRITERS` (16, as 4 per connection),
//! `KAPI_WATCH_RATE` (writes/s in all, 1300), `KAPI_WATCH_MAX_RSS_MIB` (300),
//! `KAPI_WATCH_KEEP` (soak form: each writer deletes its oldest ConfigMap beyond this many, so
//! the object count stays flat), `KAPI_WATCH_FLAT_PCT` (soak form: fail when RSS after the
//! first fifth of the run varies by more than this many percent), plus the API bench's `KAPI_BENCH_BIN` and
//! `KAPI_BENCH_SERVE_ARGS`. Without `--bench` (under `cargo test --benches`) it runs the short
//! form: 15 s, 2 x 50 streams of which 25 per connection are stalled, bound 200 MiB.

#[path = "api/loader.rs"]
#[allow(dead_code)]
mod loader;
#[path = "common/machine.rs"]
mod machine;
#[path = "api/server.rs"]
#[allow(dead_code)]
mod server;

use bytes::Bytes;
use hyper::Method;
use serde_json::{json, Value};
use server::{rss_mib, Server};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

const NS: &str = "bench-watch";
/// The bars of the issue.
const P99_BAR_MS: f64 = 50.0;

struct Settings {
    secs: u64,
    conns: usize,
    streams: usize,
    stalled: usize,
    writers: usize,
    /// Creates per second in all (0: unpaced).
    rate: u64,
    /// Soak form: each writer deletes its oldest ConfigMap beyond this many.
    keep: Option<usize>,
    /// Soak form: RSS after the first fifth of the run may vary by at most this (percent).
    flat_pct: Option<f64>,
    max_rss_mib: f64,
    smoke: bool,
}

impl Settings {
    fn from_env(smoke: bool) -> Settings {
        let get = |name: &str, default: u64| {
            std::env::var(name)
                .ok()
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(default)
        };
        if smoke {
            return Settings {
                secs: get("KAPI_WATCH_SECS", 15),
                conns: 2,
                streams: 50,
                stalled: 25,
                writers: 16,
                rate: get("KAPI_WATCH_RATE", 1300),
                keep: None,
                flat_pct: None,
                max_rss_mib: get("KAPI_WATCH_MAX_RSS_MIB", 200) as f64,
                smoke,
            };
        }
        Settings {
            secs: get("KAPI_WATCH_SECS", 60),
            conns: get("KAPI_WATCH_CONNS", 10).max(1) as usize,
            streams: get("KAPI_WATCH_STREAMS", 100).max(1) as usize,
            stalled: get("KAPI_WATCH_STALLED", 0) as usize,
            writers: get("KAPI_WATCH_WRITERS", 16).max(1) as usize,
            rate: get("KAPI_WATCH_RATE", 1300),
            keep: std::env::var("KAPI_WATCH_KEEP")
                .ok()
                .and_then(|v| v.parse().ok()),
            flat_pct: std::env::var("KAPI_WATCH_FLAT_PCT")
                .ok()
                .and_then(|v| v.parse().ok()),
            max_rss_mib: get("KAPI_WATCH_MAX_RSS_MIB", 300) as f64,
            smoke,
        }
    }
}

/// What the watchers saw, shared across their tasks.
#[derive(Default)]
struct WatchStats {
    events: AtomicU64,
    /// Streams that ended (or were reset) before the run's end.
    ended: AtomicU64,
    /// 410 Expired (as a status or an ERROR event): resumed from a fresh resourceVersion.
    expired: AtomicU64,
    /// Watch requests answered with anything but 200 or 410.
    failed: AtomicU64,
    /// resourceVersions that went backwards within one watcher's view.
    backwards: AtomicU64,
}

/// What the writers saw.
#[derive(Default)]
struct WriteStats {
    latencies_us: Vec<u32>,
    server_errors: u64,
    other_errors: u64,
}

fn configmap_body(i: usize) -> Bytes {
    let cm = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"generateName": format!("w{i}-"), "namespace": NS,
                     "labels": {"app.kubernetes.io/name": "bench"}},
        "data": {"mode": "fast", "replicas": "3",
                 "config.yaml": "server:\n  port: 8080\n  timeout: 30s\nlog:\n  level: info\n"}
    });
    Bytes::from(serde_json::to_vec(&cm).unwrap_or_default())
}

/// The namespace's current resourceVersion, from a one-item LIST.
async fn fresh_rv(conn: &mut loader::Conn, base: &str) -> Res<String> {
    let uri: hyper::Uri = format!("{base}?limit=1").parse()?;
    let (ok, body) = loader::send(conn, &Method::GET, &uri, None).await?;
    if !ok {
        return Err(format!("LIST failed: {}", String::from_utf8_lossy(&body)).into());
    }
    let list: Value = serde_json::from_slice(&body)?;
    Ok(list["metadata"]["resourceVersion"]
        .as_str()
        .ok_or("LIST without resourceVersion")?
        .to_string())
}

/// One watcher until `end`: watch, decode every event, resume where it left off.
async fn watcher(
    mut conn: loader::Conn,
    base: String,
    mut rv: String,
    stalled: bool,
    end: tokio::time::Instant,
    stats: Arc<WatchStats>,
) {
    let mut last: u64 = rv.parse().unwrap_or(0);
    while tokio::time::Instant::now() < end {
        let attempt = async {
            let uri: hyper::Uri =
                format!("{base}?watch=1&allowWatchBookmarks=true&resourceVersion={rv}").parse()?;
            let mut req = hyper::Request::new(());
            *req.uri_mut() = uri;
            std::future::poll_fn(|cx| conn.poll_ready(cx)).await?;
            let (response, _) = conn.send_request(req, true)?;
            let response = response.await?;
            let status = response.status().as_u16();
            let mut body = response.into_body();
            if status == 410 {
                return Ok::<_, Box<dyn std::error::Error + Send + Sync>>(Some(410));
            }
            if status != 200 {
                stats.failed.fetch_add(1, Ordering::Relaxed);
                return Ok(Some(status));
            }
            if stalled {
                // Holds the stream open and never reads it.
                tokio::time::sleep_until(end).await;
                drop(body);
                return Ok(None);
            }
            let mut buf: Vec<u8> = Vec::new();
            while let Some(chunk) = body.data().await {
                let chunk = chunk?;
                let _ = body.flow_control().release_capacity(chunk.len());
                buf.extend_from_slice(&chunk);
                let mut start = 0;
                while let Some(n) = memchr::memchr(b'\n', &buf[start..]) {
                    let line = &buf[start..start + n];
                    start += n + 1;
                    let ev: Value = serde_json::from_slice(line)?;
                    if ev["type"] == "ERROR" {
                        let code = ev["object"]["code"].as_u64().unwrap_or(0);
                        return Ok(Some(code as u16));
                    }
                    if let Some(v) = ev["object"]["metadata"]["resourceVersion"].as_str() {
                        let n: u64 = v.parse().unwrap_or(0);
                        if n < last {
                            stats.backwards.fetch_add(1, Ordering::Relaxed);
                        }
                        last = last.max(n);
                        rv = v.to_string();
                    }
                    if ev["type"] != "BOOKMARK" {
                        stats.events.fetch_add(1, Ordering::Relaxed);
                    }
                }
                buf.drain(..start);
            }
            Ok(None)
        };
        let outcome = tokio::select! {
            o = attempt => o,
            _ = tokio::time::sleep_until(end) => return,
        };
        if tokio::time::Instant::now() >= end {
            return;
        }
        match outcome {
            Ok(Some(410)) => {
                stats.expired.fetch_add(1, Ordering::Relaxed);
                match fresh_rv(&mut conn, &base).await {
                    Ok(fresh) => rv = fresh,
                    Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
                }
            }
            Ok(Some(_)) => tokio::time::sleep(Duration::from_millis(100)).await,
            Ok(None) | Err(_) => {
                stats.ended.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// All watchers, on the calling thread: `conns` connections x `streams` streams.
async fn watchers(
    server_url: String,
    tls: Arc<rustls::ClientConfig>,
    s: (usize, usize, usize),
    end: tokio::time::Instant,
    stats: Arc<WatchStats>,
) -> Res<()> {
    let (conns, streams, stalled) = s;
    let (host, port) = loader::host_port(&server_url)?;
    let base = format!("{server_url}/api/v1/namespaces/{NS}/configmaps");
    // Readers get client-go's flow-control windows (Go's http2 transport: 4 MiB per stream,
    // 1 GiB per connection); stalled streams get their own connections with HTTP/2's default
    // 64 KiB windows, so they stop taking data soon.
    let mut tasks = Vec::new();
    for _ in 0..conns {
        let mut shapes = vec![(streams - stalled, false, 4 << 20, 1 << 30)];
        if stalled > 0 {
            shapes.push((stalled, true, 65_535, 1 << 20));
        }
        for (n, stalled, window, conn_window) in shapes {
            let mut conn =
                loader::connect_with_windows(tls.clone(), &host, port, window, conn_window).await?;
            let rv = fresh_rv(&mut conn, &base).await?;
            for _ in 0..n {
                tasks.push(tokio::spawn(watcher(
                    conn.clone(),
                    base.clone(),
                    rv.clone(),
                    stalled,
                    end,
                    stats.clone(),
                )));
            }
        }
    }
    for t in tasks {
        t.await?;
    }
    Ok(())
}

/// One writer creating ConfigMaps until `end`, one every `interval` (or back to back). With
/// `keep`, it also deletes its oldest ConfigMap once it has more than `keep`, so the number of
/// objects stays flat (the soak's form).
async fn writer(
    mut conn: loader::Conn,
    uri: hyper::Uri,
    i: usize,
    interval: Option<Duration>,
    keep: Option<usize>,
    end: Instant,
) -> WriteStats {
    let mut stats = WriteStats::default();
    let body = configmap_body(i);
    let mut next = Instant::now();
    let mut mine = std::collections::VecDeque::new();
    while Instant::now() < end {
        if let Some(interval) = interval {
            tokio::time::sleep_until(next.into()).await;
            next += interval;
        }
        let start = Instant::now();
        let delete = keep.is_some_and(|k| mine.len() > k);
        let result = match delete.then(|| mine.pop_front()).flatten() {
            Some(name) => {
                let target = format!("{uri}/{name}").parse::<hyper::Uri>();
                match target {
                    Ok(t) => loader::request(&mut conn, &Method::DELETE, &t, None).await,
                    Err(e) => Err(e.into()),
                }
            }
            None => loader::request(&mut conn, &Method::POST, &uri, Some(body.clone())).await,
        };
        match result.map(|(status, body)| (status.as_u16(), body)) {
            Ok((200 | 201, response)) => {
                stats
                    .latencies_us
                    .push(start.elapsed().as_micros().min(u32::MAX as u128) as u32);
                if keep.is_some() && !delete {
                    let obj: Value = serde_json::from_slice(&response).unwrap_or_default();
                    if let Some(name) = obj["metadata"]["name"].as_str() {
                        mine.push_back(name.to_string());
                    }
                }
            }
            Ok((code, _)) if code >= 500 => stats.server_errors += 1,
            _ => stats.other_errors += 1,
        }
    }
    stats
}

fn percentile(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i] as f64 / 1000.0
}

async fn bench(s: Settings) -> Res<bool> {
    println!("machine: {}", machine::conditions());
    let dir = tempfile::tempdir()?;
    let server = Server::start(dir.path()).await?;
    let pid = server.child.id();
    let admin = server.client(true)?;
    let url = server.url.clone();
    let resp = admin
        .post(format!("{url}/api/v1/namespaces"))
        .json(&json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}))
        .send()
        .await?;
    if !resp.status().is_success() {
        return Err(format!("create namespace: {}", resp.status()).into());
    }
    let idle_rss = rss_mib(pid);
    let tls = loader::tls_config(&server.ca_pem, &server.admin_pem)?;
    let secs = Duration::from_secs(s.secs);

    // The watchers: one thread, one current-thread runtime.
    let stats = Arc::new(WatchStats::default());
    let watch_end = tokio::time::Instant::now() + secs + Duration::from_secs(2);
    let watch_thread = {
        let (url, tls, stats) = (url.clone(), tls.clone(), stats.clone());
        let shape = (s.conns, s.streams, s.stalled.min(s.streams));
        std::thread::spawn(move || -> Res<()> {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?
                .block_on(watchers(url, tls, shape, watch_end, stats))
        })
    };
    // Let the watch streams open before the writes start.
    tokio::time::sleep(Duration::from_secs(2)).await;

    let (host, port) = loader::host_port(&url)?;
    let end = Instant::now() + secs;
    let create: hyper::Uri = format!("{url}/api/v1/namespaces/{NS}/configmaps").parse()?;
    let per_conn = 4;
    let interval = (s.rate > 0).then(|| Duration::from_secs_f64(s.writers as f64 / s.rate as f64));
    let mut writers = Vec::new();
    for c in 0..s.writers.div_ceil(per_conn) {
        let conn = loader::connect(tls.clone(), &host, port).await?;
        for i in 0..per_conn.min(s.writers - c * per_conn) {
            let n = c * per_conn + i;
            writers.push(tokio::spawn(writer(
                conn.clone(),
                create.clone(),
                n,
                interval,
                s.keep,
                end,
            )));
        }
    }
    // RSS every 100 ms, /readyz every 500 ms, until the writers are done.
    let anon = server.client(false)?;
    let mut peak = idle_rss;
    let mut samples = Vec::new();
    let mut ready_failures = 0u64;
    let mut tick = 0u64;
    let started = Instant::now();
    while Instant::now() < end {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let rss = rss_mib(pid);
        peak = peak.max(rss);
        samples.push(rss);
        tick += 1;
        if tick.is_multiple_of(20) && std::env::var_os("KAPI_WATCH_TRACE").is_some() {
            println!("  at {:>3} s: RSS {rss:.0} MiB", tick / 10);
        }
        if tick.is_multiple_of(5) {
            let ok = tokio::time::timeout(
                Duration::from_secs(5),
                anon.get(format!("{url}/readyz")).send(),
            )
            .await
            .is_ok_and(|r| r.is_ok_and(|r| r.status() == 200));
            if !ok {
                ready_failures += 1;
            }
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    let mut writes = WriteStats::default();
    for w in writers {
        let w = w.await?;
        writes.latencies_us.extend(w.latencies_us);
        writes.server_errors += w.server_errors;
        writes.other_errors += w.other_errors;
    }
    watch_thread
        .join()
        .map_err(|_| "the watcher thread panicked")??;
    let after_rss = rss_mib(pid);
    let log = server.stderr_text();
    if let Some(path) = std::env::var_os("KAPI_WATCH_LOG") {
        std::fs::write(path, &log)?;
    }
    server.stop().await?;

    writes.latencies_us.sort_unstable();
    let creates = writes.latencies_us.len();
    let p50 = percentile(&writes.latencies_us, 0.50);
    let p99 = percentile(&writes.latencies_us, 0.99);
    let forced = log.matches("due to unresponsiveness").count();
    let election_lost = log.matches("leader election lost").count();
    let warnings: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("WARN") || l.contains("ERROR"))
        .collect();
    let watchers_total = s.conns * s.streams;
    println!(
        "{} watch streams ({} x {}, {} stalled each), {} writers at {}, {:.0} s:",
        watchers_total,
        s.conns,
        s.streams,
        s.stalled,
        s.writers,
        match s.rate {
            0 => "full speed".to_string(),
            r => format!("{r} creates/s"),
        },
        elapsed
    );
    println!(
        "  RSS: idle {idle_rss:.0} MiB, peak {peak:.0} MiB (bar < {:.0}), after {after_rss:.0} MiB; samples {}",
        s.max_rss_mib,
        samples.len()
    );
    println!(
        "  writes: {creates} ({:.0}/s), p50 {p50:.1} ms, p99 {p99:.1} ms; 5xx {}, other failures {}",
        creates as f64 / elapsed,
        writes.server_errors,
        writes.other_errors
    );
    println!(
        "  watch events decoded: {} ({:.0}/s); streams ended by the server: {}; 410 resumes: {}; failed watches: {}; RV backwards: {}",
        stats.events.load(Ordering::Relaxed),
        stats.events.load(Ordering::Relaxed) as f64 / elapsed,
        stats.ended.load(Ordering::Relaxed),
        stats.expired.load(Ordering::Relaxed),
        stats.failed.load(Ordering::Relaxed),
        stats.backwards.load(Ordering::Relaxed),
    );
    println!(
        "  kapi logged: {forced} forced watcher closes, {election_lost} 'leader election lost', {} WARN/ERROR lines; /readyz failures: {ready_failures}",
        warnings.len()
    );
    for w in warnings.iter().take(5) {
        println!("    {w}");
    }
    let mut ok = true;
    let mut fail = |what: String| {
        println!("FAIL: {what}");
        ok = false;
    };
    if peak >= s.max_rss_mib {
        fail(format!(
            "peak RSS {peak:.0} MiB >= {:.0} MiB",
            s.max_rss_mib
        ));
    }
    if writes.server_errors > 0 {
        fail(format!("{} writes answered 5xx", writes.server_errors));
    }
    if ready_failures > 0 {
        fail(format!("/readyz failed {ready_failures} times"));
    }
    if election_lost > 0 {
        fail("kapi lost a leader election".into());
    }
    if stats.backwards.load(Ordering::Relaxed) > 0 {
        fail("a watcher saw a resourceVersion go backwards".into());
    }
    if creates == 0 {
        fail("no write succeeded".into());
    }
    if let Some(pct) = s.flat_pct {
        // After the first fifth of the run (warm-up), RSS stays within `pct` of its minimum.
        let settled = &samples[samples.len() / 5..];
        let lo = settled.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = settled.iter().copied().fold(0.0, f64::max);
        let drift = (hi - lo) / lo * 100.0;
        println!("  RSS after warm-up: {lo:.0}..{hi:.0} MiB ({drift:.1}% apart, bar {pct}%)");
        if drift > pct {
            fail(format!("RSS drifted {drift:.1}% after warm-up"));
        }
    }
    if s.stalled > 0 && forced == 0 {
        fail("stalled watchers were never closed".into());
    }
    if !s.smoke && p99 >= P99_BAR_MS {
        fail(format!("write p99 {p99:.1} ms >= {P99_BAR_MS} ms"));
    }
    Ok(ok)
}

fn main() {
    let smoke = !std::env::args().any(|a| a == "--bench");
    let settings = Settings::from_env(smoke);
    let _ = tracing::dispatcher::set_global_default(tracing::Dispatch::new(
        tracing::subscriber::NoSubscriber::default(),
    ));
    let result = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(Into::into)
        .and_then(|rt| rt.block_on(bench(settings)));
    match result {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(err) => {
            eprintln!("bench failed: {err}");
            std::process::exit(1);
        }
    }
}
