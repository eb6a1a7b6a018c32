//! `kapi top`: request rates, latencies and in-flight counts of one apiserver or of every
//! replica, from the difference of two reads of `/metrics` (see [`super::scrape`]) one
//! interval apart, so the first sample comes one interval after the start.
//!
//! A row is a verb on a resource, summed over API versions, scopes, components, dry runs and
//! response codes. Its requests/s, 4xx/s and 5xx/s come from the increase of
//! `apiserver_request_total` divided by the time between the two reads; its p50, p90 and p99
//! latency from the increase of the `apiserver_request_duration_seconds` buckets, estimated
//! as Prometheus' `histogram_quantile` does: linear interpolation inside the bucket the rank
//! falls into, and the highest finite bound (60s on kube-apiserver) when it falls beyond. A
//! counter that went down was restarted with its apiserver, so its whole value is the
//! increase, as in Prometheus' `rate()`; a series that appears counts from zero. Only rows
//! with requests in the interval are shown. CPU is the increase of
//! `process_cpu_seconds_total` over the interval, in percent of one core.
//!
//! # JSON / YAML shape (stable; one document per sample)
//! ```text
//! { "time": "2026-01-02T03:04:05.123456Z",  // when the sample was taken, RFC 3339 UTC
//!   "apiservers": [ {
//!       "apiserver": "https://127.0.0.1:6443",
//!       "identity": "apiserver-…" | null,    // with --all-apiservers
//!       "intervalSeconds": 2.003,            // between the two reads of /metrics
//!       "inFlight": { "readOnly": 1 | null, "mutating": 0 | null },
//!       "longRunning": 3 | null,             // null when the server has no such metric
//!       "residentMemoryBytes": 52428800 | null,
//!       "cpuPercent": 2.5 | null,            // 100 = one core
//!       "requestsPerSecond": 12.5,           // every row, before --limit
//!       "serverErrorsPerSecond": 0.0,        // 5xx, every row
//!       "requests": [ {
//!           "verb": "LIST", "group": "" | "apps", "resource": "configmaps",
//!           "subresource": "" | "status",
//!           "requestsPerSecond": 12.5, "clientErrorsPerSecond": 0.0,   // 4xx
//!           "serverErrorsPerSecond": 0.0,                              // 5xx
//!           "p50Seconds": 0.0025 | null, "p90Seconds": 0.0045 | null,  // null: no
//!           "p99Seconds": 0.00495 | null } ] } ],                     //   durations
//!   "unreachable": [ { "apiserver": "…", "identity": "…" | null, "error": "…" } ] }
//! ```
//! Rows are sorted by `--sort` (requests/s, p99 or 5xx/s, descending) and cut to `--limit`
//! per apiserver. A replica that answered once but not twice yet (it was unreachable at the
//! start) is left out until its second answer.
//!
//! Tables: a summary with APISERVER, INFLIGHT-RO, INFLIGHT-MUT, LONGRUNNING, RSS, CPU, REQ/S,
//! 5XX/S; then the rows with VERB, RESOURCE (`resource.group/subresource`), REQ/S, 5XX/S, P50,
//! P99, APISERVER first with `--all-apiservers`; `-o wide` appends 4XX/S and P90.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde::Serialize;
use tokio::time::Instant;

use super::peers::{self, Target, Unreachable};
use super::promql::{histogram_increase, increase, quantile};
use super::scrape::{self, Buckets, Labels, Scrape};
use super::{Cluster, Result};

/// The order of the rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum SortBy {
    /// Requests per second, highest first.
    #[default]
    Rate,
    /// 99th percentile latency, slowest first.
    P99,
    /// 5xx per second, then 4xx per second, highest first.
    Errors,
}

/// What to show.
#[derive(Debug, Clone, Default)]
pub(crate) struct Query {
    /// Ask every replica found through identity leases.
    pub all_apiservers: bool,
    /// Row order.
    pub sort: SortBy,
    /// At most this many rows per apiserver.
    pub limit: Option<usize>,
}

/// In-flight requests by kind.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InFlight {
    /// apiserver_current_inflight_requests{request_kind="readOnly"}.
    pub read_only: Option<u64>,
    /// apiserver_current_inflight_requests{request_kind="mutating"}.
    pub mutating: Option<u64>,
}

/// One verb on one resource.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RequestRow {
    /// GET, LIST, WATCH, POST, PUT, PATCH, APPLY, DELETE, …
    pub verb: String,
    /// API group, empty for the core group.
    pub group: String,
    /// Resource (plural), empty for non-resource paths.
    pub resource: String,
    /// Subresource (or the path of a non-resource request), may be empty.
    pub subresource: String,
    /// Requests per second.
    pub requests_per_second: f64,
    /// 4xx answers per second.
    pub client_errors_per_second: f64,
    /// 5xx answers per second.
    pub server_errors_per_second: f64,
    /// Median latency.
    pub p50_seconds: Option<f64>,
    /// 90th percentile latency.
    pub p90_seconds: Option<f64>,
    /// 99th percentile latency.
    pub p99_seconds: Option<f64>,
}

/// One sample of one apiserver.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ApiserverTop {
    /// The replica's URL.
    pub apiserver: String,
    /// Its identity lease name, with `--all-apiservers`.
    pub identity: Option<String>,
    /// Seconds between the two reads the rates come from.
    pub interval_seconds: f64,
    /// In-flight requests at the second read.
    pub in_flight: InFlight,
    /// Long-running requests (watches, …) at the second read.
    pub long_running: Option<u64>,
    /// Resident memory at the second read.
    pub resident_memory_bytes: Option<u64>,
    /// CPU used over the interval, 100 = one core.
    pub cpu_percent: Option<f64>,
    /// Requests per second, all rows.
    pub requests_per_second: f64,
    /// 5xx per second, all rows.
    pub server_errors_per_second: f64,
    /// The rows, sorted and limited.
    pub requests: Vec<RequestRow>,
}

/// One `kapi top` sample.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct TopView {
    /// When the sample was taken.
    pub time: DateTime<Utc>,
    /// Per replica with two reads.
    pub apiservers: Vec<ApiserverTop>,
    /// Replicas whose `/metrics` could not be read this time.
    pub unreachable: Vec<Unreachable>,
    /// Show the APISERVER column in the rows.
    #[serde(skip)]
    pub multi_server: bool,
}

/// A replica and its last read of `/metrics`.
#[derive(Debug)]
struct Replica {
    target: Target,
    last: Option<(Scrape, Instant)>,
}

/// The sampler: the replicas and their last reads; every [`Top::sample`] reads them again.
#[derive(Debug)]
pub(crate) struct Top {
    query: Query,
    replicas: Vec<Replica>,
    /// Identity leases without a usable peer address: reported in every sample.
    lost: Vec<Unreachable>,
    /// The replicas that did not answer the first read.
    failed: Vec<Unreachable>,
    note: Option<String>,
}

impl Top {
    /// Finds the apiservers (with `--all-apiservers`, through identity leases) and reads the
    /// `/metrics` of each once: the start of the first interval.
    ///
    /// # Errors
    /// Without `--all-apiservers`, when `/metrics` cannot be read (see [`scrape::fetch`]); with
    /// it, only when the identity leases cannot be listed (see [`Top::unanswered`]).
    ///
    /// # Cancellation
    /// Dropping the future abandons the discovery and the reads in flight.
    pub(crate) async fn start(cluster: &Cluster, query: Query) -> Result<Self> {
        let targets = if query.all_apiservers {
            peers::discover(cluster).await?
        } else {
            peers::single(cluster)
        };
        let mut top = Top {
            query,
            replicas: targets
                .reachable
                .into_iter()
                .map(|target| Replica { target, last: None })
                .collect(),
            lost: targets.unreachable,
            failed: Vec::new(),
            note: targets.note,
        };
        let reads = top.read_all().await;
        for (replica, read) in top.replicas.iter_mut().zip(reads) {
            match read {
                Ok(read) => replica.last = Some(read),
                Err(e) if !top.query.all_apiservers => return Err(e),
                Err(e) => top.failed.push(unreachable(&replica.target, &e)),
            }
        }
        Ok(top)
    }

    /// A remark for stderr about how the replicas were found.
    pub(crate) fn note(&self) -> Option<&str> {
        self.note.as_deref()
    }

    /// The replicas whose first read failed, and those that cannot be reached at all.
    pub(crate) fn unanswered(&self) -> Vec<Unreachable> {
        let mut all = self.lost.clone();
        all.extend(self.failed.iter().cloned());
        all
    }

    /// Whether any replica answered the first read; if none did, there is nothing to show.
    pub(crate) fn answered(&self) -> bool {
        self.replicas.iter().any(|r| r.last.is_some())
    }

    /// Reads every replica again and compares with its previous read. Replicas that do not
    /// answer are listed as unreachable; their next answer is compared with their last one.
    ///
    /// # Cancellation
    /// Dropping the future drops the reads in flight and keeps the previous reads.
    pub(crate) async fn sample(&mut self) -> TopView {
        let reads = self.read_all().await;
        let mut view = TopView {
            time: Utc::now(),
            apiservers: Vec::new(),
            unreachable: self.lost.clone(),
            multi_server: self.query.all_apiservers,
        };
        for (replica, read) in self.replicas.iter_mut().zip(reads) {
            match read {
                Ok((scrape, at)) => {
                    if let Some((prev, prev_at)) = &replica.last {
                        let seconds = at.duration_since(*prev_at).as_secs_f64();
                        let mut top = compare(prev, &scrape, seconds, &self.query);
                        top.apiserver.clone_from(&replica.target.apiserver);
                        top.identity.clone_from(&replica.target.identity);
                        view.apiservers.push(top);
                    }
                    replica.last = Some((scrape, at));
                }
                Err(e) => view.unreachable.push(unreachable(&replica.target, &e)),
            }
        }
        view
    }

    async fn read_all(&self) -> Vec<Result<(Scrape, Instant)>> {
        let reads = self
            .replicas
            .iter()
            .map(|r| scrape::fetch(&r.target.cluster));
        futures::future::join_all(reads).await
    }
}

fn unreachable(target: &Target, err: &super::Error) -> Unreachable {
    Unreachable {
        apiserver: target.apiserver.clone(),
        identity: target.identity.clone(),
        error: err.to_string(),
    }
}

/// What identifies a row: the verb and the resource.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct RowKey {
    group: String,
    resource: String,
    subresource: String,
    verb: String,
}

impl RowKey {
    fn of(labels: &Labels) -> RowKey {
        let get = |name: &str| {
            labels
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
                .unwrap_or_default()
        };
        RowKey {
            group: get("group"),
            resource: get("resource"),
            subresource: get("subresource"),
            verb: get("verb"),
        }
    }
}

#[derive(Debug, Default)]
struct Totals {
    requests: f64,
    client_errors: f64,
    server_errors: f64,
    buckets: Buckets,
}

/// One apiserver's sample from two reads `seconds` apart (name and identity left empty).
pub(crate) fn compare(prev: &Scrape, cur: &Scrape, seconds: f64, query: &Query) -> ApiserverTop {
    let mut rows: HashMap<RowKey, Totals> = HashMap::new();
    for (labels, &value) in &cur.requests {
        let n = increase(prev.requests.get(labels).copied(), value);
        if n <= 0.0 {
            continue;
        }
        let t = rows.entry(RowKey::of(labels)).or_default();
        t.requests += n;
        let code = labels.iter().find(|(k, _)| k == "code").map(|(_, v)| v);
        match code.and_then(|c| c.chars().next()) {
            Some('4') => t.client_errors += n,
            Some('5') => t.server_errors += n,
            _ => {}
        }
    }
    for (labels, buckets) in &cur.durations {
        let key = RowKey::of(labels);
        let Some(t) = rows.get_mut(&key) else {
            continue;
        };
        for (le, n) in histogram_increase(prev.durations.get(labels), buckets) {
            match t.buckets.iter_mut().find(|b| b.0.total_cmp(&le).is_eq()) {
                Some(b) => b.1 += n,
                None => t.buckets.push((le, n)),
            }
        }
    }
    let per_second = |n: f64| if seconds > 0.0 { n / seconds } else { 0.0 };
    let mut requests: Vec<RequestRow> = rows
        .into_iter()
        .map(|(key, mut t)| {
            t.buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
            RequestRow {
                requests_per_second: round(per_second(t.requests), 3),
                client_errors_per_second: round(per_second(t.client_errors), 3),
                server_errors_per_second: round(per_second(t.server_errors), 3),
                p50_seconds: quantile(0.5, &t.buckets).map(|s| round(s, 6)),
                p90_seconds: quantile(0.9, &t.buckets).map(|s| round(s, 6)),
                p99_seconds: quantile(0.99, &t.buckets).map(|s| round(s, 6)),
                verb: key.verb,
                group: key.group,
                resource: key.resource,
                subresource: key.subresource,
            }
        })
        .collect();
    let total = |f: fn(&RequestRow) -> f64| round(requests.iter().map(f).sum(), 3);
    let requests_per_second = total(|r| r.requests_per_second);
    let server_errors_per_second = total(|r| r.server_errors_per_second);
    sort(&mut requests, query.sort);
    if let Some(limit) = query.limit {
        requests.truncate(limit);
    }
    let gauge = |v: Option<f64>| v.map(|v| v.max(0.0).round() as u64);
    let cpu = match (prev.cpu_seconds, cur.cpu_seconds) {
        (p, Some(c)) if seconds > 0.0 => Some(round(increase(p, c) / seconds * 100.0, 2)),
        _ => None,
    };
    ApiserverTop {
        apiserver: String::new(),
        identity: None,
        interval_seconds: round(seconds, 3),
        in_flight: InFlight {
            read_only: gauge(cur.in_flight_read_only),
            mutating: gauge(cur.in_flight_mutating),
        },
        long_running: gauge(cur.long_running),
        resident_memory_bytes: gauge(cur.resident_memory_bytes),
        cpu_percent: cpu,
        requests_per_second,
        server_errors_per_second,
        requests,
    }
}

fn sort(rows: &mut [RequestRow], by: SortBy) {
    let name = |r: &RequestRow| {
        (
            r.group.clone(),
            r.resource.clone(),
            r.subresource.clone(),
            r.verb.clone(),
        )
    };
    rows.sort_by(|a, b| {
        let first = match by {
            SortBy::Rate => std::cmp::Ordering::Equal,
            // Rows without durations last.
            SortBy::P99 => b
                .p99_seconds
                .unwrap_or(-1.0)
                .total_cmp(&a.p99_seconds.unwrap_or(-1.0)),
            SortBy::Errors => b
                .server_errors_per_second
                .total_cmp(&a.server_errors_per_second)
                .then(
                    b.client_errors_per_second
                        .total_cmp(&a.client_errors_per_second),
                ),
        };
        first
            .then(b.requests_per_second.total_cmp(&a.requests_per_second))
            .then_with(|| name(a).cmp(&name(b)))
    });
}

fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(got: Option<f64>, want: f64) {
        let got = got.expect("a quantile");
        assert!((got - want).abs() < 1e-9, "got {got}, want {want}");
    }

    fn series(verb: &str, resource: &str, scope: &str, code: &str, n: u32) -> String {
        format!(
            "apiserver_request_total{{verb=\"{verb}\",dry_run=\"\",group=\"\",version=\"v1\",\
             resource=\"{resource}\",subresource=\"\",scope=\"{scope}\",component=\"apiserver\",\
             code=\"{code}\"}} {n}\n"
        )
    }

    fn buckets(verb: &str, resource: &str, scope: &str, counts: [u32; 3]) -> String {
        ["0.005", "0.025", "+Inf"]
            .iter()
            .zip(counts)
            .map(|(le, n)| {
                format!(
                    "apiserver_request_duration_seconds_bucket{{verb=\"{verb}\",dry_run=\"\",\
                     group=\"\",version=\"v1\",resource=\"{resource}\",subresource=\"\",\
                     scope=\"{scope}\",component=\"apiserver\",le=\"{le}\"}} {n}\n"
                )
            })
            .collect()
    }

    fn scrape(parts: &[String], cpu: f64) -> Scrape {
        let text = format!(
            "# TYPE apiserver_request_duration_seconds histogram\n{}\
             process_cpu_seconds_total {cpu}\nprocess_resident_memory_bytes 1048576\n\
             apiserver_current_inflight_requests{{request_kind=\"readOnly\"}} 2\n",
            parts.concat()
        );
        Scrape::parse(&text)
    }

    /// GET configmaps: 10 → 30 ok plus 4 new 404s; LIST configmaps unchanged in one scope,
    /// 6 more in another; PUT configmaps: 1 → 3 answered 500; two seconds apart.
    fn two_scrapes() -> (Scrape, Scrape) {
        let prev = scrape(
            &[
                series("GET", "configmaps", "resource", "200", 10),
                buckets("GET", "configmaps", "resource", [10, 10, 10]),
                series("LIST", "configmaps", "namespace", "200", 5),
                series("LIST", "configmaps", "cluster", "200", 1),
                series("PUT", "configmaps", "resource", "500", 1),
            ],
            1.0,
        );
        let cur = scrape(
            &[
                series("GET", "configmaps", "resource", "200", 30),
                series("GET", "configmaps", "resource", "404", 4),
                buckets("GET", "configmaps", "resource", [10, 30, 34]),
                series("LIST", "configmaps", "namespace", "200", 5),
                series("LIST", "configmaps", "cluster", "200", 7),
                series("PUT", "configmaps", "resource", "500", 3),
            ],
            1.5,
        );
        (prev, cur)
    }

    #[test]
    fn rates_from_two_scrapes() {
        let (prev, cur) = two_scrapes();
        let top = compare(&prev, &cur, 2.0, &Query::default());
        let rows: Vec<(&str, f64, f64, f64)> = top
            .requests
            .iter()
            .map(|r| {
                (
                    r.verb.as_str(),
                    r.requests_per_second,
                    r.client_errors_per_second,
                    r.server_errors_per_second,
                )
            })
            .collect();
        assert_eq!(
            rows,
            [
                ("GET", 12.0, 2.0, 0.0),
                ("LIST", 3.0, 0.0, 0.0),
                ("PUT", 1.0, 0.0, 1.0)
            ]
        );
        let get = &top.requests[0];
        assert_eq!(get.resource, "configmaps");
        // 24 new observations: 0 up to 5ms, 20 up to 25ms, 4 beyond.
        close(get.p50_seconds, 0.005 + 0.02 * 12.0 / 20.0);
        close(get.p99_seconds, 0.025);
        assert_eq!(top.requests[1].p50_seconds, None, "no durations exposed");
        assert_eq!(top.requests_per_second, 16.0);
        assert_eq!(top.server_errors_per_second, 1.0);
        assert_eq!(top.cpu_percent, Some(25.0));
        assert_eq!(top.in_flight.read_only, Some(2));
        assert_eq!(top.in_flight.mutating, None);
        assert_eq!(top.long_running, None);
        assert_eq!(top.resident_memory_bytes, Some(1 << 20));
        assert_eq!(top.interval_seconds, 2.0);
    }

    #[test]
    fn rows_sort_and_limit() {
        let (prev, cur) = two_scrapes();
        let verbs = |q: Query| -> Vec<String> {
            compare(&prev, &cur, 2.0, &q)
                .requests
                .into_iter()
                .map(|r| r.verb)
                .collect()
        };
        let q = |sort, limit| Query {
            sort,
            limit,
            ..Query::default()
        };
        assert_eq!(verbs(q(SortBy::Errors, None)), ["PUT", "GET", "LIST"]);
        assert_eq!(verbs(q(SortBy::P99, None)), ["GET", "LIST", "PUT"]);
        assert_eq!(verbs(q(SortBy::Rate, Some(1))), ["GET"]);
        let limited = compare(&prev, &cur, 2.0, &q(SortBy::Rate, Some(1)));
        assert_eq!(limited.requests_per_second, 16.0, "totals count every row");
    }

    #[test]
    fn a_restarted_apiserver_counts_from_zero() {
        let (prev, _) = two_scrapes();
        let restarted = scrape(
            &[
                series("GET", "configmaps", "resource", "200", 2),
                buckets("GET", "configmaps", "resource", [2, 2, 2]),
            ],
            0.25,
        );
        let top = compare(&prev, &restarted, 2.0, &Query::default());
        assert_eq!(top.requests.len(), 1);
        assert_eq!(top.requests[0].requests_per_second, 1.0);
        close(top.requests[0].p99_seconds, 0.005 * 0.99);
        assert_eq!(top.cpu_percent, Some(12.5));
    }
}
