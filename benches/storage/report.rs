//! The storage benchmark's figures: per-row statistics (rate, latency percentiles, CPU) and
//! the table of medians over rounds with the etcd ratios.

use super::*;

pub(crate) struct Stats {
    pub(crate) ops_per_sec: f64,
    pub(crate) p50: Duration,
    pub(crate) p99: Duration,
    /// CPU time per operation of this process (loader and, for the embedded store, the store).
    pub(crate) self_us: f64,
    /// CPU time per operation of the etcd process.
    pub(crate) etcd_us: f64,
}

/// The PID of the etcd the bench started (0 = none).
pub(crate) static ETCD_PID: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// CPU seconds (user + system) a process has used, from /proc/<pid>/stat; 0 if unreadable.
pub(crate) fn cpu_secs(pid: &str) -> f64 {
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
pub(crate) fn cpu_now() -> (f64, f64) {
    let etcd = ETCD_PID.load(std::sync::atomic::Ordering::Relaxed);
    let etcd = if etcd == 0 {
        0.0
    } else {
        cpu_secs(&etcd.to_string())
    };
    (cpu_secs("self"), etcd)
}

pub(crate) fn stats(lat: Vec<Duration>, elapsed: Duration) -> Stats {
    stats_with_cpu(lat, elapsed, (0.0, 0.0))
}

pub(crate) fn stats_with_cpu(mut lat: Vec<Duration>, elapsed: Duration, cpu: (f64, f64)) -> Stats {
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

pub(crate) fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

pub(crate) fn row(backend: &str, op: &str, conc: usize, s: &Stats) {
    println!(
        "| {backend} | {op} | {conc} | {:.0} | {} | {} | - | - |",
        s.ops_per_sec,
        ms(s.p50),
        ms(s.p99)
    );
}

pub(crate) fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Which row: (backend, operation, concurrency).
pub(crate) type RowId = (&'static str, &'static str, usize);

/// The write rows of every round: one Stats per round for each row.
#[derive(Default)]
pub(crate) struct Rounds {
    pub(crate) rows: Vec<(RowId, Vec<Stats>)>,
}

impl Rounds {
    pub(crate) fn add(&mut self, backend: &'static str, op: &'static str, conc: usize, st: Stats) {
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

    pub(crate) fn get(&self, backend: &str, op: &str, conc: usize) -> Option<&[Stats]> {
        self.rows
            .iter()
            .find(|((b, o, c), _)| *b == backend && *o == op && *c == conc)
            .map(|(_, v)| v.as_slice())
    }

    /// One row per measurement, grouped by backend: medians over the rounds, and the range of
    /// ops/s.
    pub(crate) fn print(&self) {
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
    pub(crate) fn print_ratios(&self, title: &str, pairs: &[(&str, &str)], bar: Option<f64>) {
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
    pub(crate) fn print_etcd_ratios(&self) {
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
