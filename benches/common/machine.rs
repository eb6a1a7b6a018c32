//! The machine a bench ran on, printed at its start by both benches.

/// The machine's cores, CPU model and load: figures from different CPU models do not compare
/// (the same code's UPDATE cost 89-98 µs of server CPU on one 2-core machine, 58-65 on another).
pub(crate) fn conditions() -> String {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name")?.split_once(':'))
        .map_or("unknown", |(_, m)| m.trim());
    format!(
        "cores: {cores} ({model}); load average: {}",
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    )
}
