//! Storage benchmark (`cargo bench --bench storage`): creates and updates of ~500-byte values
//! at concurrency 1, 16 and 64 on the embedded store and on a real etcd (raw etcd-client puts
//! alongside, as the reference), a list of 10,000 keys from the watch cache, and one write fanned
//! out to 1,000 watchers. etcd is the `etcd` binary on PATH, started on free loopback ports
//! with a temporary data directory (fsync on, as in production); without it the etcd rows are
//! skipped. `BENCH_SECS` sets the seconds per row (default 5).

use bytes::Bytes;
use futures::StreamExt;
use kapi::storage::{
    Cacher, CacherOptions, EmbeddedStore, EtcdStore, EtcdTls, ListOptions, ListRevision, Storage,
    Update, WatchEvent,
};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The allocator the `kapi` binary runs with (src/main.rs).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const VALUE_SIZE: usize = 500;

fn value(tag: &str) -> Bytes {
    let mut v = format!("{{\"kind\":\"Lease\",\"tag\":\"{tag}\",\"pad\":\"");
    while v.len() < VALUE_SIZE - 2 {
        v.push('x');
    }
    v.push_str("\"}");
    Bytes::from(v)
}

fn secs() -> Duration {
    Duration::from_secs(
        std::env::var("BENCH_SECS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(5),
    )
}

struct Stats {
    ops_per_sec: f64,
    p50: Duration,
    p99: Duration,
}

fn stats(mut lat: Vec<Duration>, elapsed: Duration) -> Stats {
    lat.sort();
    let pct = |p: f64| {
        lat.get(((lat.len() as f64 * p) as usize).min(lat.len().saturating_sub(1)))
            .copied()
            .unwrap_or_default()
    };
    Stats {
        ops_per_sec: lat.len() as f64 / elapsed.as_secs_f64(),
        p50: pct(0.50),
        p99: pct(0.99),
    }
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn row(backend: &str, op: &str, conc: usize, s: &Stats) {
    println!(
        "| {backend} | {op} | {conc} | {:.0} | {} | {} |",
        s.ops_per_sec,
        ms(s.p50),
        ms(s.p99)
    );
}

/// Runs `op(task, i)` in `conc` closed loops for the benchmark duration.
async fn closed_loop<F, Fut>(conc: usize, op: F) -> Stats
where
    F: Fn(usize, usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let op = Arc::new(op);
    let deadline = Instant::now() + secs();
    let start = Instant::now();
    let mut tasks = Vec::new();
    for t in 0..conc {
        let op = op.clone();
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            let mut i = 0;
            while Instant::now() < deadline {
                let s = Instant::now();
                op(t, i).await;
                lat.push(s.elapsed());
                i += 1;
            }
            lat
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.expect("bench task"));
    }
    stats(all, start.elapsed())
}

async fn writes(name: &str, store: Arc<dyn Storage>, run: &str) {
    for conc in [1, 16, 64] {
        let s = store.clone();
        let r = run.to_string();
        let st = closed_loop(conc, move |t, i| {
            let s = s.clone();
            let key = format!("/registry/leases/bench-{r}-c{conc}/t{t}-{i}");
            async move {
                s.create(&key, value("c"), None).await.expect("create");
            }
        })
        .await;
        row(name, "create", conc, &st);
    }
    for conc in [1, 16, 64] {
        for t in 0..conc {
            store
                .guaranteed_update(
                    &format!("/registry/leases/bench-{run}-u{conc}/t{t}"),
                    true,
                    &|_| Ok(Update::Set(value("u0"))),
                )
                .await
                .expect("seed");
        }
        let s = store.clone();
        let r = run.to_string();
        let st = closed_loop(conc, move |t, _| {
            let s = s.clone();
            let key = format!("/registry/leases/bench-{r}-u{conc}/t{t}");
            async move {
                s.guaranteed_update(&key, false, &|_| Ok(Update::Set(value("u"))))
                    .await
                    .expect("update");
            }
        })
        .await;
        row(name, "update", conc, &st);
    }
}

async fn raw_etcd_puts(url: &str) {
    let client = etcd_client::Client::connect([url], None)
        .await
        .expect("connect");
    for conc in [1, 16, 64] {
        let c = client.clone();
        let st = closed_loop(conc, move |t, i| {
            let mut kv = c.kv_client();
            async move {
                kv.put(
                    format!("/raw/c{conc}/t{t}-{i}"),
                    value("raw").to_vec(),
                    None,
                )
                .await
                .expect("put");
            }
        })
        .await;
        row("etcd-client (raw)", "put", conc, &st);
    }
}

async fn list_from_cache(store: Arc<dyn Storage>) {
    let n = 10_000;
    let mut tasks = Vec::new();
    for t in 0..64 {
        let s = store.clone();
        tasks.push(tokio::spawn(async move {
            let mut i = t;
            while i < n {
                s.create(
                    &format!("/registry/configmaps/ns{}/cm{i:05}", i % 10),
                    value("l"),
                    None,
                )
                .await
                .expect("seed");
                i += 64;
            }
        }));
    }
    for t in tasks {
        t.await.expect("seed task");
    }
    let rev = store.current_revision().await.expect("rev");
    let opts = ListOptions {
        revision: ListRevision::NotOlderThan(rev),
        ..Default::default()
    };
    let first = store
        .list("/registry/configmaps/", opts.clone())
        .await
        .expect("list");
    assert_eq!(first.items.len(), n);
    let mut lat = Vec::new();
    let start = Instant::now();
    for _ in 0..50 {
        let s = Instant::now();
        let page = store
            .list(
                "/registry/configmaps/",
                ListOptions {
                    revision: ListRevision::Any,
                    ..Default::default()
                },
            )
            .await
            .expect("list");
        lat.push(s.elapsed());
        assert_eq!(page.items.len(), n);
    }
    row(
        "embedded + cache",
        "list 10,000 (RV=0)",
        1,
        &stats(lat, start.elapsed()),
    );
}

async fn fan_out(store: Arc<dyn Storage>) {
    let watchers = 1000;
    let prefix = "/registry/pods/fanout/";
    store
        .create(&format!("{prefix}warm"), value("w"), None)
        .await
        .expect("warm");
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(usize, Instant)>();
    let mut handles = Vec::new();
    for w in 0..watchers {
        let mut stream = store.watch(prefix, None).await.expect("watch");
        let tx = tx.clone();
        handles.push(tokio::spawn(async move {
            while let Some(Ok(ev)) = stream.next().await {
                if let WatchEvent::Created(_) = ev {
                    if tx.send((w, Instant::now())).is_err() {
                        return;
                    }
                }
            }
        }));
    }
    let mut lat = Vec::new();
    let rounds = 20;
    let start = Instant::now();
    for r in 0..rounds {
        let s = Instant::now();
        store
            .create(&format!("{prefix}k{r}"), value("f"), None)
            .await
            .expect("write");
        for _ in 0..watchers {
            let (_, at) = tokio::time::timeout(Duration::from_secs(10), rx.recv())
                .await
                .expect("fan-out timed out")
                .expect("channel");
            lat.push(at.duration_since(s));
        }
    }
    let st = stats(lat, start.elapsed());
    println!(
        "| embedded + cache | 1 write → 1,000 watchers | - | {:.0} deliveries/s | {} | {} |",
        st.ops_per_sec,
        ms(st.p50),
        ms(st.p99)
    );
    for h in handles {
        h.abort();
    }
}

struct Etcd {
    child: Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Drop for Etcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("port")
}

async fn start_etcd() -> Option<Etcd> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let bin = std::env::split_paths(&path)
        .map(|d| d.join("etcd"))
        .find(|p| p.is_file())?;
    let dir = tempfile::tempdir().expect("tempdir");
    let (c, p) = (port(), port());
    let url = format!("http://127.0.0.1:{c}");
    let peer = format!("http://127.0.0.1:{p}");
    let child = Command::new(bin)
        .args([
            "--name=bench".to_string(),
            format!("--data-dir={}", dir.path().join("etcd").display()),
            format!("--listen-client-urls={url}"),
            format!("--advertise-client-urls={url}"),
            format!("--listen-peer-urls={peer}"),
            format!("--initial-advertise-peer-urls={peer}"),
            format!("--initial-cluster=bench={peer}"),
            "--log-level=error".to_string(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let etcd = Etcd {
        child,
        url,
        _dir: dir,
    };
    for _ in 0..200 {
        if let Ok(mut c) = etcd_client::Client::connect([etcd.url.as_str()], None).await {
            if c.get("health", None).await.is_ok() {
                return Some(etcd);
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    None
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        println!(
            "Storage benchmark: {} s per row, {VALUE_SIZE}-byte values",
            secs().as_secs()
        );
        println!();
        println!("| backend | operation | concurrency | ops/s | p50 | p99 |");
        println!("|---|---|---|---|---|---|");
        let dir = tempfile::tempdir().expect("tempdir");
        let embedded: Arc<dyn Storage> =
            Arc::new(EmbeddedStore::open(dir.path(), Duration::ZERO).expect("open"));
        writes("embedded", embedded.clone(), "e").await;
        let cached: Arc<dyn Storage> = Arc::new(Cacher::new(
            embedded.clone(),
            "/registry",
            CacherOptions::default(),
        ));
        list_from_cache(cached.clone()).await;
        fan_out(cached).await;
        match start_etcd().await {
            Some(etcd) => {
                raw_etcd_puts(&etcd.url).await;
                let store: Arc<dyn Storage> = Arc::new(
                    EtcdStore::connect(
                        std::slice::from_ref(&etcd.url),
                        &EtcdTls::default(),
                        Duration::from_secs(2),
                    )
                    .await
                    .expect("etcd"),
                );
                writes("etcd", store, "x").await;
            }
            None => println!("| etcd | skipped: no `etcd` on PATH | - | - | - | - |"),
        }
    });
}
