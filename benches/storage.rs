//! Storage benchmark (`cargo bench --bench storage`): creates, updates and gets of ~500-byte
//! values at concurrency 1, 16 and 64 on a real etcd, through the etcd backend and as raw
//! etcd-client requests of the same shape; creates and updates on the embedded store; a list of
//! 10,000 keys from the watch cache; and one write fanned out to 1,000 watchers. etcd is the
//! `etcd` binary on PATH, started on free loopback ports with a temporary data directory (fsync
//! on, as in production); without it the etcd rows are skipped.
//!
//! The raw references are what the backend sends, as kube-apiserver's etcd3 store does: for a
//! create, a transaction putting the key if its mod revision is 0 (absent); for an update, a
//! transaction putting the key if its mod revision is still the one the previous write
//! returned, else reading it (one round trip, as the backend's update, which starts from the
//! value it last wrote); for a get, a range of one key, the same keys for both. Raw puts are
//! measured too, for the record: a transaction costs etcd more than a put, so no backend
//! reaches them. The bar: the backend's rate at least 85% of the raw request's rate of the
//! same shape, at every concurrency.
//!
//! The rows run in `BENCH_ROUNDS` rounds (default 3): in a round, raw puts, then each etcd
//! backend row together with its raw reference, then the embedded store's rows, so a noisy
//! minute hurts one round of each rather than all of one. A backend row and its reference are
//! interleaved in slices of about a second (raw, backend, backend, raw, raw, ...; the other
//! way round on odd rounds), because on a shared machine the load changes within seconds: two
//! identical raw rows run back to back differed by up to ±50% per round. The table shows
//! medians over the rounds; the etcd ratios are taken within each round, then the median.
//! `BENCH_SECS` sets the seconds per row (default 5). Without `--bench` (under `cargo test
//! --benches`) it runs a short smoke pass: 1 s rows, one round.

#[path = "common/machine.rs"]
mod machine;

use bytes::Bytes;
use futures::{FutureExt, StreamExt};
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
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

const VALUE_SIZE: usize = 500;

fn value(tag: &str) -> Bytes {
    let mut v = format!("{{\"kind\":\"Lease\",\"tag\":\"{tag}\",\"pad\":\"");
    while v.len() < VALUE_SIZE - 2 {
        v.push('x');
    }
    v.push_str("\"}");
    Bytes::from(v)
}

/// Whether this is a real run (`cargo bench` passes `--bench`) rather than the smoke pass.
fn measuring() -> bool {
    std::env::args().any(|a| a == "--bench")
}

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn secs() -> Duration {
    Duration::from_secs(if measuring() {
        env_or("BENCH_SECS", 5)
    } else {
        1
    })
}

fn rounds() -> usize {
    if measuring() {
        env_or("BENCH_ROUNDS", 3).max(1) as usize
    } else {
        1
    }
}

struct Stats {
    ops_per_sec: f64,
    p50: Duration,
    p99: Duration,
    /// CPU time per operation of this process (loader and, for the embedded store, the store).
    self_us: f64,
    /// CPU time per operation of the etcd process.
    etcd_us: f64,
}

/// The PID of the etcd the bench started (0 = none).
static ETCD_PID: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// CPU seconds (user + system) a process has used, from /proc/<pid>/stat; 0 if unreadable.
fn cpu_secs(pid: &str) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0.0;
    };
    // Fields after the parenthesised command: state is the first, utime the 12th, stime the 13th.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}

/// (this process, etcd) CPU seconds so far.
fn cpu_now() -> (f64, f64) {
    let etcd = ETCD_PID.load(std::sync::atomic::Ordering::Relaxed);
    let etcd = if etcd == 0 {
        0.0
    } else {
        cpu_secs(&etcd.to_string())
    };
    (cpu_secs("self"), etcd)
}

fn stats(lat: Vec<Duration>, elapsed: Duration) -> Stats {
    stats_with_cpu(lat, elapsed, (0.0, 0.0))
}

fn stats_with_cpu(mut lat: Vec<Duration>, elapsed: Duration, cpu: (f64, f64)) -> Stats {
    lat.sort();
    let pct = |p: f64| {
        lat.get(((lat.len() as f64 * p) as usize).min(lat.len().saturating_sub(1)))
            .copied()
            .unwrap_or_default()
    };
    let per_op = |secs: f64| 1e6 * secs / lat.len().max(1) as f64;
    Stats {
        ops_per_sec: lat.len() as f64 / elapsed.as_secs_f64(),
        p50: pct(0.50),
        p99: pct(0.99),
        self_us: per_op(cpu.0),
        etcd_us: per_op(cpu.1),
    }
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn row(backend: &str, op: &str, conc: usize, s: &Stats) {
    println!(
        "| {backend} | {op} | {conc} | {:.0} | {} | {} | - | - |",
        s.ops_per_sec,
        ms(s.p50),
        ms(s.p99)
    );
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Which row: (backend, operation, concurrency).
type RowId = (&'static str, &'static str, usize);

/// The write rows of every round: one Stats per round for each row.
#[derive(Default)]
struct Rounds {
    rows: Vec<(RowId, Vec<Stats>)>,
}

impl Rounds {
    fn add(&mut self, backend: &'static str, op: &'static str, conc: usize, st: Stats) {
        eprintln!(
            "{backend} {op} c={conc}: {:.0} ops/s p99 {}",
            st.ops_per_sec,
            ms(st.p99)
        );
        let id = (backend, op, conc);
        match self.rows.iter_mut().find(|(k, _)| *k == id) {
            Some((_, v)) => v.push(st),
            None => self.rows.push((id, vec![st])),
        }
    }

    fn get(&self, backend: &str, op: &str, conc: usize) -> Option<&[Stats]> {
        self.rows
            .iter()
            .find(|((b, o, c), _)| *b == backend && *o == op && *c == conc)
            .map(|(_, v)| v.as_slice())
    }

    /// One row per measurement, grouped by backend: medians over the rounds, and the range of
    /// ops/s.
    fn print(&self) {
        let mut backends: Vec<&str> = Vec::new();
        for ((b, _, _), _) in &self.rows {
            if !backends.contains(b) {
                backends.push(b);
            }
        }
        let grouped = backends
            .iter()
            .flat_map(|b| self.rows.iter().filter(move |((r, _, _), _)| r == b));
        for ((backend, op, conc), runs) in grouped {
            let ops: Vec<f64> = runs.iter().map(|s| s.ops_per_sec).collect();
            let lo = ops.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = ops.iter().copied().fold(0.0, f64::max);
            let p = |f: fn(&Stats) -> Duration| {
                Duration::from_secs_f64(median(runs.iter().map(|s| f(s).as_secs_f64()).collect()))
            };
            let etcd_us = median(runs.iter().map(|s| s.etcd_us).collect());
            println!(
                "| {backend} | {op} | {conc} | {:.0} ({lo:.0}-{hi:.0}) | {} | {} | {:.0} | {} |",
                median(ops),
                ms(p(|s| s.p50)),
                ms(p(|s| s.p99)),
                median(runs.iter().map(|s| s.self_us).collect()),
                if *backend == "embedded" {
                    "-".to_string()
                } else {
                    format!("{etcd_us:.0}")
                }
            );
        }
    }

    /// The etcd backend's rate over the raw rate, per round (the rows of a round ran back to
    /// back), for each (backend operation, raw operation) pair: the median and every round.
    fn print_ratios(&self, title: &str, pairs: &[(&str, &str)], bar: Option<f64>) {
        println!();
        match bar {
            Some(bar) => {
                println!("| {title} | concurrency | median | per round | ≥ {bar:.0}% |");
                println!("|---|---|---|---|---|");
            }
            None => {
                println!("| {title} | concurrency | median | per round |");
                println!("|---|---|---|---|");
            }
        }
        for (op, raw_op) in pairs {
            for conc in CONCURRENCY {
                let (Some(raw), Some(ours)) =
                    (self.get(RAW, raw_op, conc), self.get(ETCD, op, conc))
                else {
                    continue;
                };
                let ratios: Vec<f64> = raw
                    .iter()
                    .zip(ours)
                    .map(|(r, o)| 100.0 * o.ops_per_sec / r.ops_per_sec)
                    .collect();
                let each: Vec<String> = ratios.iter().map(|r| format!("{r:.0}%")).collect();
                let med = median(ratios.clone());
                let verdict = match bar {
                    Some(bar) if med >= bar => " met |",
                    Some(_) => " **missed** |",
                    None => "",
                };
                println!(
                    "| {op} ÷ raw {raw_op} | {conc} | {med:.0}% | {} |{verdict}",
                    each.join(", ")
                );
            }
        }
    }

    /// The bar: the etcd backend against raw etcd-client requests of the same shape; and,
    /// for the record, its writes against raw puts (which no backend can match: etcd charges
    /// more for a transaction than for a put).
    fn print_etcd_ratios(&self) {
        let same_shape = [
            ("create", CREATE_TXN),
            ("update", UPDATE_TXN),
            ("get", "get"),
        ];
        self.print_ratios(
            "etcd backend ÷ raw etcd-client request of the same shape",
            &same_shape,
            Some(85.0),
        );
        self.print_ratios(
            "etcd backend ÷ raw etcd-client put",
            &[("create", "put"), ("update", "put")],
            None,
        );
    }
}

const CONCURRENCY: [usize; 3] = [1, 16, 64];
const RAW: &str = "etcd-client (raw)";
const ETCD: &str = "etcd";

/// What closed loops measured: every operation's latency, the wall time, and the CPU seconds
/// of (this process, etcd).
#[derive(Default)]
struct Sample {
    lat: Vec<Duration>,
    elapsed: Duration,
    cpu: (f64, f64),
}

impl Sample {
    fn add(&mut self, other: Sample) {
        self.lat.extend(other.lat);
        self.elapsed += other.elapsed;
        self.cpu.0 += other.cpu.0;
        self.cpu.1 += other.cpu.1;
    }

    fn stats(self) -> Stats {
        stats_with_cpu(self.lat, self.elapsed, self.cpu)
    }
}

/// Runs `op(task, i)` in `conc` closed loops for `time`.
async fn closed_loop<F, Fut>(conc: usize, time: Duration, op: F) -> Sample
where
    F: Fn(usize, usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let op = Arc::new(op);
    let deadline = Instant::now() + time;
    let start = Instant::now();
    let cpu_before = cpu_now();
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
    let mut lat = Vec::new();
    for t in tasks {
        lat.extend(t.await.expect("bench task"));
    }
    let elapsed = start.elapsed();
    let cpu_after = cpu_now();
    let cpu = (cpu_after.0 - cpu_before.0, cpu_after.1 - cpu_before.1);
    Sample { lat, elapsed, cpu }
}

/// A prepared row: `run(slice, time)` runs its operation in closed loops for `time`; each
/// slice of a row writes keys of its own.
type Runner =
    Box<dyn Fn(usize, Duration) -> futures::future::BoxFuture<'static, Sample> + Send + Sync>;

/// A row of `conc` closed loops running `op(slice, task, i)`.
fn runner<F, Fut>(conc: usize, op: F) -> Runner
where
    F: Fn(usize, usize, usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let op = Arc::new(op);
    Box::new(move |slice, time| {
        let op = op.clone();
        closed_loop(conc, time, move |t, i| op(slice, t, i)).boxed()
    })
}

/// An operation measured on the etcd backend (or the embedded store) and, for the etcd
/// backend, on raw etcd-client requests of the same shape.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Create,
    Update,
    Get,
}

impl Op {
    /// The row names: the backend's operation, and the raw etcd-client request it sends.
    fn names(self) -> (&'static str, &'static str) {
        match self {
            Op::Create => ("create", CREATE_TXN),
            Op::Update => ("update", UPDATE_TXN),
            Op::Get => ("get", "get"),
        }
    }
}

/// The raw create: compare mod revision = 0 (absent), then put — the transaction the etcd
/// backend's create sends, as kube-apiserver's etcd3 store does.
const CREATE_TXN: &str = "create-if-absent txn";
/// The raw update: compare the key's mod revision with the one the previous write returned,
/// then put, else get — the transaction the backend's update sends (one round trip: it starts
/// from the value it last wrote, as kube-apiserver starts from the watch cache's copy).
const UPDATE_TXN: &str = "mod-revision txn";

/// The keys a row writes: `/registry/leases/bench-{run}-{c|u}{conc}/t{task}[-{slice}-{i}]`,
/// the same length for the backend's rows and the raw ones.
fn create_key(run: &str, conc: usize, slice: usize, t: usize, i: usize) -> String {
    format!("/registry/leases/bench-{run}-c{conc}/t{t}-{slice}-{i}")
}

fn update_key(run: &str, conc: usize, t: usize) -> String {
    format!("/registry/leases/bench-{run}-u{conc}/t{t}")
}

/// A row through the storage interface, its keys seeded. `Get` reads the keys an `Update`
/// row of the same run and concurrency wrote (or [`etcd_round`] seeded).
async fn store_row(store: Arc<dyn Storage>, op: Op, conc: usize, run: &str) -> Runner {
    let r = run.to_string();
    match op {
        Op::Create => runner(conc, move |slice, t, i| {
            let s = store.clone();
            let key = create_key(&r, conc, slice, t, i);
            async move {
                s.create(&key, value("c"), None).await.expect("create");
            }
        }),
        Op::Update => {
            for t in 0..conc {
                store
                    .guaranteed_update(&update_key(run, conc, t), true, &|_| {
                        Ok(Update::Set(value("u0")))
                    })
                    .await
                    .expect("seed");
            }
            runner(conc, move |_, t, _| {
                let s = store.clone();
                let key = update_key(&r, conc, t);
                async move {
                    s.guaranteed_update(&key, false, &|_| Ok(Update::Set(value("u"))))
                        .await
                        .expect("update");
                }
            })
        }
        Op::Get => runner(conc, move |_, t, _| {
            let s = store.clone();
            let key = update_key(&r, conc, t);
            async move {
                s.get(&key).await.expect("get");
            }
        }),
    }
}

/// The same row as raw etcd-client requests of the shape the etcd backend sends.
async fn raw_row(client: &etcd_client::Client, op: Op, conc: usize, run: &str) -> Runner {
    use etcd_client::{Compare, CompareOp, Txn, TxnOp};
    let c = client.clone();
    let r = run.to_string();
    match op {
        Op::Create => runner(conc, move |slice, t, i| {
            let mut kv = c.kv_client();
            let key = create_key(&r, conc, slice, t, i);
            async move {
                let txn = Txn::new()
                    .when([Compare::mod_revision(key.as_str(), CompareOp::Equal, 0)])
                    .and_then([TxnOp::put(key.as_str(), value("c").to_vec(), None)]);
                assert!(kv.txn(txn).await.expect("txn").succeeded());
            }
        }),
        Op::Update => {
            // Each task's key and the mod revision its last write returned.
            let mut seeded = Vec::new();
            for t in 0..conc {
                let resp = c
                    .kv_client()
                    .put(update_key(run, conc, t), value("u0").to_vec(), None)
                    .await
                    .expect("seed");
                let rev = resp.header().expect("header").revision();
                seeded.push(std::sync::atomic::AtomicI64::new(rev));
            }
            let revs = Arc::new(seeded);
            runner(conc, move |_, t, _| {
                let mut kv = c.kv_client();
                let key = update_key(&r, conc, t);
                let revs = revs.clone();
                async move {
                    let rev = &revs[t];
                    let expected = rev.load(std::sync::atomic::Ordering::Relaxed);
                    let txn = Txn::new()
                        .when([Compare::mod_revision(
                            key.as_str(),
                            CompareOp::Equal,
                            expected,
                        )])
                        .and_then([TxnOp::put(key.as_str(), value("u").to_vec(), None)])
                        .or_else([TxnOp::get(key.as_str(), None)]);
                    let resp = kv.txn(txn).await.expect("txn");
                    assert!(resp.succeeded());
                    let now = resp.header().expect("header").revision();
                    rev.store(now, std::sync::atomic::Ordering::Relaxed);
                }
            })
        }
        Op::Get => runner(conc, move |_, t, _| {
            let mut kv = c.kv_client();
            let key = update_key(&r, conc, t);
            async move {
                let resp = kv.get(key, None).await.expect("get");
                assert_eq!(resp.kvs().len(), 1);
            }
        }),
    }
}

/// Runs a raw reference and the backend's row of the same shape in alternating slices of
/// about a second (raw, backend, backend, raw, raw, ...; the other way round on odd rounds),
/// so that both meet the same load from the rest of the machine and the same etcd size.
async fn paired(out: &mut Rounds, op: Op, conc: usize, raw: Runner, ours: Runner, round: usize) {
    let slices = secs().as_secs().max(1) as usize;
    let time = secs() / slices as u32;
    let (mut a, mut b) = (Sample::default(), Sample::default());
    for slice in 0..slices {
        if slice.is_multiple_of(2) == round.is_multiple_of(2) {
            a.add(raw(slice, time).await);
            b.add(ours(slice, time).await);
        } else {
            b.add(ours(slice, time).await);
            a.add(raw(slice, time).await);
        }
    }
    let (name, raw_name) = op.names();
    out.add(RAW, raw_name, conc, a.stats());
    out.add(ETCD, name, conc, b.stats());
}

/// One round on etcd: raw puts, then each operation at each concurrency on the raw client
/// and on the backend, interleaved (see [`paired`]).
async fn etcd_round(
    out: &mut Rounds,
    client: &etcd_client::Client,
    store: Arc<dyn Storage>,
    round: usize,
) {
    for conc in CONCURRENCY {
        let c = client.clone();
        let puts = runner(conc, move |_, t, i| {
            let mut kv = c.kv_client();
            async move {
                kv.put(
                    format!("/raw/r{round}/c{conc}/t{t}-{i}"),
                    value("raw").to_vec(),
                    None,
                )
                .await
                .expect("put");
            }
        });
        out.add(RAW, "put", conc, puts(0, secs()).await.stats());
    }
    let (raw_run, our_run) = (format!("r{round}"), format!("x{round}"));
    for op in [Op::Create, Op::Update] {
        for conc in CONCURRENCY {
            let raw = raw_row(client, op, conc, &raw_run).await;
            let ours = store_row(store.clone(), op, conc, &our_run).await;
            paired(out, op, conc, raw, ours, round).await;
        }
    }
    // Both get rows read the same keys, so that their requests are the same bytes: with each
    // side reading the keys its own update row wrote, the backend's gets came out at 78-91%
    // of raw at c=16 and 64 in two runs, and at 101% in a 12-round check on shared keys.
    let shared = format!("g{round}");
    for conc in CONCURRENCY {
        for t in 0..conc {
            client
                .kv_client()
                .put(update_key(&shared, conc, t), value("g").to_vec(), None)
                .await
                .expect("seed");
        }
        let raw = raw_row(client, Op::Get, conc, &shared).await;
        let ours = store_row(store.clone(), Op::Get, conc, &shared).await;
        paired(out, Op::Get, conc, raw, ours, round).await;
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
        "| embedded + cache | 1 write → 1,000 watchers | - | {:.0} deliveries/s | {} | {} | - | - |",
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
    ETCD_PID.store(child.id(), std::sync::atomic::Ordering::Relaxed);
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
            "Storage benchmark: {} s per row, {} round(s), {VALUE_SIZE}-byte values",
            secs().as_secs(),
            rounds()
        );
        println!("before: {}", machine::conditions());
        println!();
        println!("| backend | operation | concurrency | ops/s, median (min-max) | p50 | p99 | bench process CPU µs/op | etcd CPU µs/op |");
        println!("|---|---|---|---|---|---|---|---|");
        let dir = tempfile::tempdir().expect("tempdir");
        let embedded: Arc<dyn Storage> =
            Arc::new(EmbeddedStore::open(dir.path(), Duration::ZERO).expect("open"));
        let etcd = start_etcd().await;
        let etcd_store: Option<Arc<dyn Storage>> = match &etcd {
            Some(etcd) => Some(Arc::new(
                EtcdStore::connect(
                    std::slice::from_ref(&etcd.url),
                    &EtcdTls::default(),
                    Duration::from_secs(2),
                )
                .await
                .expect("etcd"),
            )),
            None => None,
        };
        let raw = match &etcd {
            Some(etcd) => Some(
                etcd_client::Client::connect([etcd.url.as_str()], None)
                    .await
                    .expect("connect"),
            ),
            None => None,
        };
        let mut out = Rounds::default();
        for round in 0..rounds() {
            if let (Some(raw), Some(store)) = (&raw, &etcd_store) {
                etcd_round(&mut out, raw, store.clone(), round).await;
            }
            for op in [Op::Create, Op::Update] {
                for conc in CONCURRENCY {
                    let run = format!("e{round}");
                    let row = store_row(embedded.clone(), op, conc, &run).await;
                    out.add("embedded", op.names().0, conc, row(0, secs()).await.stats());
                }
            }
        }
        out.print();
        if etcd.is_none() {
            println!("| etcd | skipped: no `etcd` on PATH | - | - | - | - |");
        }
        let cached: Arc<dyn Storage> = Arc::new(Cacher::new(
            embedded.clone(),
            "/registry",
            CacherOptions::default(),
        ));
        list_from_cache(cached.clone()).await;
        fan_out(cached).await;
        if etcd.is_some() {
            out.print_etcd_ratios();
        }
    });
}
