//! What recording the metrics costs (`cargo bench --bench metrics`).
//!
//! Two servers of the same binary (embedded store, temp data dirs, default flags): one as it
//! runs for users, recording every request (apiserver_request_total and its histograms, the
//! authentication and authorization attempts, the store's request metrics); one started with
//! `KAPI_METRICS_RECORDING=off`, which leaves those out. The admin GETs one ConfigMap at
//! concurrency 64 (8 connections x 8 streams, TLS + HTTP/2) on each, the two cells
//! alternating within each run; the table shows medians and the per-run ratios. The bar:
//! recording costs at most 2% of GET throughput (the median ratio is at least 98%).
//!
//! Environment: `KAPI_BENCH_SECS` (seconds per cell, default 5), `KAPI_BENCH_RUNS` (default
//! 7), plus `KAPI_BENCH_SERVE_ARGS` and `KAPI_BENCH_BIN` as the api bench. Without `--bench`
//! (under `cargo test --benches`) it runs a short smoke pass that fails on any failed request
//! and checks that the recording server did count the requests.

#[allow(dead_code)]
#[path = "common/gets.rs"]
mod gets;
#[path = "common/goh2.rs"]
mod goh2;
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

use gets::{compare, Credential, Proto, NS};
use harness::{met, post, Timing};
use serde_json::json;
use server::Server;

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// The most recording may cost, as a share of GET throughput.
const BAR: f64 = 0.02;

/// The namespace and ConfigMap the GETs read.
async fn populate(server: &Server) -> Res<()> {
    let admin = server.client(true)?;
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}});
    post(&admin, &server.url, "/api/v1/namespaces", &ns).await?;
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "target"},
                    "data": {"k": "v"}});
    let path = format!("/api/v1/namespaces/{NS}/configmaps");
    post(&admin, &server.url, &path, &cm).await
}

/// How many GETs of ConfigMaps answered 200 the server counted in apiserver_request_total.
async fn counted_gets(server: &Server) -> Res<f64> {
    let text = server
        .client(true)?
        .get(format!("{}/metrics", server.url))
        .send()
        .await?
        .text()
        .await?;
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string())))?;
    Ok(scrape
        .samples
        .iter()
        .filter(|s| s.metric == "apiserver_request_total")
        .filter(|s| {
            s.labels.get("verb") == Some("GET")
                && s.labels.get("resource") == Some("configmaps")
                && s.labels.get("code") == Some("200")
        })
        .filter_map(|s| match s.value {
            prometheus_parse::Value::Counter(v) => Some(v),
            _ => None,
        })
        .fold(0.0, |sum, v| sum + v))
}

async fn bench(t: Timing, smoke: bool) -> Res<()> {
    println!("{}", machine::conditions());
    let (dir_on, dir_off) = (tempfile::tempdir()?, tempfile::tempdir()?);
    let on = Server::start(dir_on.path()).await?;
    let off =
        Server::start_with_env(dir_off.path(), &[], &[("KAPI_METRICS_RECORDING", "off")]).await?;
    populate(&on).await?;
    populate(&off).await?;
    let admin_on = Credential::Cert(on.admin_pem.clone());
    let admin_off = Credential::Cert(off.admin_pem.clone());
    let ratio = compare(
        "Recording metrics ÷ not recording",
        ("not recording", &off, &admin_off),
        ("recording", &on, &admin_on),
        Proto::H2,
        &t,
        smoke,
    )
    .await?;
    let cost = 1.0 - ratio;
    println!(
        "\n| bar | figure | |\n|---|---|---|\n| recording costs ≤ {:.0}% of GET throughput at c=64 | {:.1}% | {} |",
        BAR * 100.0,
        cost * 100.0,
        met(cost <= BAR)
    );
    // The comparison means something only if one server records and the other does not.
    let (counted_on, counted_off) = (counted_gets(&on).await?, counted_gets(&off).await?);
    println!("GETs counted: recording {counted_on:.0}, not recording {counted_off:.0}");
    if counted_on == 0.0 || counted_off != 0.0 {
        return Err("the recording server must count the GETs and the other none".into());
    }
    on.stop().await?;
    off.stop().await?;
    Ok(())
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` does not: run a short smoke pass then.
    let smoke = !std::env::args().any(|a| a == "--bench");
    let timing = Timing::from_env(smoke, 7);
    let result = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(Into::into)
        .and_then(|rt| rt.block_on(bench(timing, smoke)));
    if let Err(err) = result {
        eprintln!("bench failed: {err}");
        std::process::exit(1);
    }
}
