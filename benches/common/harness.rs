//! What the API-level benches share besides the server and the loader: their timing from the
//! environment, order statistics, the per-run and bar columns of their tables, and creating
//! objects as the admin.

use super::Res;
use serde_json::Value;
use std::time::Duration;

/// A number from the environment variable `name`, else `default`.
pub(crate) fn env_num(name: &str, default: f64) -> f64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// How long and how often a bench measures: `KAPI_BENCH_SECS` per cell (default 5) after a
/// 1 s warm-up, `KAPI_BENCH_RUNS` runs (default `runs`). The smoke pass (without `--bench`,
/// under `cargo test --benches`) is one run of 0.3 s.
pub(crate) struct Timing {
    pub secs: f64,
    pub warmup: Duration,
    pub runs: usize,
}

impl Timing {
    pub(crate) fn from_env(smoke: bool, runs: usize) -> Timing {
        if smoke {
            return Timing {
                secs: 0.3,
                warmup: Duration::from_millis(100),
                runs: 1,
            };
        }
        Timing {
            secs: env_num("KAPI_BENCH_SECS", 5.0),
            warmup: Duration::from_millis(1000),
            runs: (env_num("KAPI_BENCH_RUNS", runs as f64) as usize).max(1),
        }
    }
}

/// The `p` quantile (nearest rank) of `sorted`; NaN when empty.
pub(crate) fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// Median of `v`, NaNs left out (NaN when nothing is left).
pub(crate) fn median(mut v: Vec<f64>) -> f64 {
    v.retain(|x| !x.is_nan());
    v.sort_by(|a, b| a.total_cmp(b));
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// `v` scaled, each with `digits` decimals and `unit`, comma-separated.
pub(crate) fn per_run(v: &[f64], unit: &str, scale: f64, digits: usize) -> String {
    v.iter()
        .map(|x| format!("{:.*}{unit}", digits, x * scale))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The last column of a bar's row.
pub(crate) fn met(ok: bool) -> &'static str {
    if ok {
        "met"
    } else {
        "NOT met"
    }
}

/// POSTs `body` to `path`; a 409 counts as present.
pub(crate) async fn post(client: &reqwest::Client, url: &str, path: &str, body: &Value) -> Res<()> {
    let resp = client
        .post(format!("{url}{path}"))
        .json(body)
        .send()
        .await?;
    let status = resp.status();
    if !status.is_success() && status != 409 {
        return Err(format!("POST {path}: {status}: {}", resp.text().await?).into());
    }
    Ok(())
}
