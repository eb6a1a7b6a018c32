//! The process metrics Prometheus's Go client exports, read from /proc at each scrape:
//! process_cpu_seconds_total, process_resident_memory_bytes, process_virtual_memory_bytes,
//! process_open_fds, process_max_fds and process_start_time_seconds.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

/// Reads the process's figures when scraped.
#[derive(Debug)]
pub(super) struct Process;

/// What the scrape reads of the process.
#[derive(Default)]
struct Figures {
    cpu_seconds: f64,
    virtual_bytes: f64,
    resident_bytes: f64,
    open_fds: f64,
    max_fds: f64,
    started: f64,
}

/// The process's figures from /proc (zero where they cannot be read).
fn figures() -> Figures {
    use procfs::process::{LimitValue, Process as Proc};
    let Ok(me) = Proc::myself() else {
        return Figures::default();
    };
    let mut f = Figures::default();
    if let Ok(stat) = me.stat() {
        let ticks = procfs::ticks_per_second().max(1) as f64;
        f.cpu_seconds = (stat.utime + stat.stime) as f64 / ticks;
        f.virtual_bytes = stat.vsize as f64;
        f.resident_bytes = (stat.rss * procfs::page_size()) as f64;
        if let Ok(boot) = procfs::boot_time_secs() {
            f.started = boot as f64 + stat.starttime as f64 / ticks;
        }
    }
    f.open_fds = me.fd_count().map_or(0.0, |n| n as f64);
    if let Ok(limits) = me.limits() {
        f.max_fds = match limits.max_open_files.soft_limit {
            LimitValue::Value(v) => v as f64,
            LimitValue::Unlimited => f64::INFINITY,
        };
    }
    f
}

impl Collector for Process {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let f = figures();
        let cpu = ConstCounter::new(f.cpu_seconds);
        cpu.encode(encoder.encode_descriptor(
            "process_cpu_seconds",
            "Total user and system CPU time spent in seconds",
            None,
            cpu.metric_type(),
        )?)?;
        for (name, help, value) in [
            (
                "process_resident_memory_bytes",
                "Resident memory size in bytes",
                f.resident_bytes,
            ),
            (
                "process_virtual_memory_bytes",
                "Virtual memory size in bytes",
                f.virtual_bytes,
            ),
            (
                "process_open_fds",
                "Number of open file descriptors",
                f.open_fds,
            ),
            (
                "process_max_fds",
                "Maximum number of open file descriptors",
                f.max_fds,
            ),
            (
                "process_start_time_seconds",
                "Start time of the process since unix epoch in seconds",
                f.started,
            ),
        ] {
            let gauge = ConstGauge::new(value);
            gauge.encode(encoder.encode_descriptor(name, help, None, gauge.metric_type())?)?;
        }
        Ok(())
    }
}
