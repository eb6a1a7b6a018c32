//! One read of an apiserver's `/metrics` for `kapi top`: a GET of the Prometheus text
//! exposition, parsed with the prometheus-parse crate, of which only the series `kapi top`
//! shows are kept. The names are kube-apiserver's (k8s.io/apiserver pkg/endpoints/metrics and
//! the Prometheus process collector), which kapi serves too:
//!
//! - `apiserver_request_total` (counter; verb, dry_run, group, version, resource, subresource,
//!   scope, component, code)
//! - `apiserver_request_duration_seconds` (histogram; the same labels without code)
//! - `apiserver_current_inflight_requests{request_kind="readOnly"|"mutating"}` (gauge)
//! - `apiserver_longrunning_requests` (gauge per request kind; summed; absent on some servers)
//! - `process_resident_memory_bytes` (gauge) and `process_cpu_seconds_total` (counter)
//!
//! Lines of other metrics are dropped before parsing: a kube-apiserver exposes several MB of
//! them. The parser skips lines it cannot read (such as a label value holding a comma), so a
//! strange series costs its own line, never the scrape.

use std::collections::HashMap;

use tokio::time::Instant;

use super::{Cluster, Error, Result};

/// apiserver_request_total.
pub(crate) const REQUESTS: &str = "apiserver_request_total";
/// apiserver_request_duration_seconds (the histogram's base name).
pub(crate) const DURATIONS: &str = "apiserver_request_duration_seconds";
/// apiserver_current_inflight_requests.
pub(crate) const IN_FLIGHT: &str = "apiserver_current_inflight_requests";
/// apiserver_longrunning_requests.
pub(crate) const LONG_RUNNING: &str = "apiserver_longrunning_requests";
/// process_resident_memory_bytes.
pub(crate) const RESIDENT_MEMORY: &str = "process_resident_memory_bytes";
/// process_cpu_seconds_total.
pub(crate) const CPU_SECONDS: &str = "process_cpu_seconds_total";

/// The sample names kept; `apiserver_request_duration_seconds` keeps only its buckets.
const KEPT: [&str; 6] = [
    REQUESTS,
    "apiserver_request_duration_seconds_bucket",
    IN_FLIGHT,
    LONG_RUNNING,
    RESIDENT_MEMORY,
    CPU_SECONDS,
];

/// A series' labels sorted by name: what identifies a counter from one scrape to the next.
pub(crate) type Labels = Vec<(String, String)>;

/// The cumulative buckets of one histogram series: (upper bound `le`, count), by bound.
pub(crate) type Buckets = Vec<(f64, f64)>;

/// What one read of `/metrics` holds for `kapi top`. Every absent gauge is `None`.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Scrape {
    /// apiserver_request_total per full label set.
    pub(crate) requests: HashMap<Labels, f64>,
    /// apiserver_request_duration_seconds buckets per label set (without `le`).
    pub(crate) durations: HashMap<Labels, Buckets>,
    /// apiserver_current_inflight_requests{request_kind="readOnly"}.
    pub(crate) in_flight_read_only: Option<f64>,
    /// apiserver_current_inflight_requests{request_kind="mutating"}.
    pub(crate) in_flight_mutating: Option<f64>,
    /// The sum of every apiserver_longrunning_requests series.
    pub(crate) long_running: Option<f64>,
    /// process_resident_memory_bytes.
    pub(crate) resident_memory_bytes: Option<f64>,
    /// process_cpu_seconds_total.
    pub(crate) cpu_seconds: Option<f64>,
}

impl Scrape {
    /// Reads the series `kapi top` needs from a Prometheus text exposition.
    pub(crate) fn parse(text: &str) -> Scrape {
        let lines = text
            .lines()
            .filter(|l| l.starts_with("# TYPE ") || is_kept(l))
            .map(|l| Ok(l.to_string()));
        // Lines come from memory, so reading them cannot fail.
        let Ok(parsed) = prometheus_parse::Scrape::parse(lines) else {
            return Scrape::default();
        };
        let mut scrape = Scrape::default();
        for sample in parsed.samples {
            let labels = sorted(&sample.labels);
            let value = match sample.value {
                prometheus_parse::Value::Histogram(buckets) => {
                    if sample.metric == DURATIONS {
                        let mut buckets: Buckets =
                            buckets.iter().map(|b| (b.less_than, b.count)).collect();
                        buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
                        scrape.durations.insert(labels, buckets);
                    }
                    continue;
                }
                prometheus_parse::Value::Summary(_) => continue,
                prometheus_parse::Value::Counter(v)
                | prometheus_parse::Value::Gauge(v)
                | prometheus_parse::Value::Untyped(v) => v,
            };
            match sample.metric.as_str() {
                REQUESTS => {
                    scrape.requests.insert(labels, value);
                }
                IN_FLIGHT => match sample.labels.get("request_kind") {
                    Some("readOnly") => scrape.in_flight_read_only = Some(value),
                    Some("mutating") => scrape.in_flight_mutating = Some(value),
                    _ => {}
                },
                LONG_RUNNING => *scrape.long_running.get_or_insert(0.0) += value,
                RESIDENT_MEMORY => scrape.resident_memory_bytes = Some(value),
                CPU_SECONDS => scrape.cpu_seconds = Some(value),
                _ => {}
            }
        }
        scrape
    }
}

/// Whether a line is a sample of a kept metric (name followed by labels or a space).
fn is_kept(line: &str) -> bool {
    KEPT.iter().any(|name| {
        line.strip_prefix(name)
            .is_some_and(|rest| rest.starts_with(['{', ' ']))
    })
}

fn sorted(labels: &prometheus_parse::Labels) -> Labels {
    let mut out: Labels = labels.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    out.sort();
    out
}

/// GETs and parses `/metrics` of one apiserver; the instant is when the answer arrived, the
/// clock the rates are computed on.
///
/// # Errors
/// No answer; [`Error::MetricsForbidden`] on 403 (the user lacks `system:monitoring`); 401;
/// [`Error::NotServed`] on 404; [`Error::Failed`] on any other status but 200.
///
/// # Cancellation
/// Dropping the future abandons the request; nothing is kept.
pub(crate) async fn fetch(cluster: &Cluster) -> Result<(Scrape, Instant)> {
    let (code, body) = match cluster.get_text("/metrics").await {
        Err(Error::Forbidden { server, .. }) => return Err(Error::MetricsForbidden { server }),
        other => other?,
    };
    let at = Instant::now();
    if code != 200 {
        return Err(Error::from_status(
            code,
            &body,
            cluster.server(),
            "/metrics",
        ));
    }
    Ok((Scrape::parse(&body), at))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// kapi's exposition (prometheus-client: the TYPE line names the family without `_total`).
    const KAPI: &str = r#"# HELP apiserver_request Counter of apiserver requests.
# TYPE apiserver_request counter
apiserver_request_total{verb="GET",dry_run="",group="",version="v1",resource="configmaps",subresource="",scope="resource",component="apiserver",code="200"} 3
apiserver_request_total{verb="GET",dry_run="",group="",version="v1",resource="configmaps",subresource="",scope="resource",component="apiserver",code="404"} 1
# TYPE apiserver_request_duration_seconds histogram
apiserver_request_duration_seconds_sum{verb="GET",dry_run="",group="",version="v1",resource="configmaps",subresource="",scope="resource",component="apiserver"} 0.01
apiserver_request_duration_seconds_count{verb="GET",dry_run="",group="",version="v1",resource="configmaps",subresource="",scope="resource",component="apiserver"} 4
apiserver_request_duration_seconds_bucket{le="0.025",verb="GET",dry_run="",group="",version="v1",resource="configmaps",subresource="",scope="resource",component="apiserver"} 4
apiserver_request_duration_seconds_bucket{le="0.005",verb="GET",dry_run="",group="",version="v1",resource="configmaps",subresource="",scope="resource",component="apiserver"} 3
apiserver_request_duration_seconds_bucket{le="+Inf",verb="GET",dry_run="",group="",version="v1",resource="configmaps",subresource="",scope="resource",component="apiserver"} 4
# TYPE apiserver_response_sizes histogram
apiserver_response_sizes_bucket{le="+Inf",verb="GET",dry_run="",group="",version="v1",resource="configmaps",subresource="",scope="resource",component="apiserver"} 4
# TYPE apiserver_current_inflight_requests gauge
apiserver_current_inflight_requests{request_kind="readOnly"} 2
apiserver_current_inflight_requests{request_kind="mutating"} 1
# TYPE process_cpu_seconds counter
process_cpu_seconds_total 1.5
# TYPE process_resident_memory_bytes gauge
process_resident_memory_bytes 52428800
process_resident_memory_bytes_extra 7
# EOF
"#;

    #[test]
    fn reads_the_series_top_needs() {
        let s = Scrape::parse(KAPI);
        assert_eq!(s.requests.len(), 2);
        let get_200 = s
            .requests
            .iter()
            .find(|(l, _)| l.contains(&("code".into(), "200".into())))
            .map(|(_, v)| *v);
        assert_eq!(get_200, Some(3.0));
        assert_eq!(s.durations.len(), 1, "response sizes are not kept");
        let (labels, buckets) = s.durations.iter().next().unwrap();
        assert!(labels.contains(&("resource".into(), "configmaps".into())));
        assert!(!labels.iter().any(|(k, _)| k == "le"));
        assert_eq!(
            buckets,
            &vec![(0.005, 3.0), (0.025, 4.0), (f64::INFINITY, 4.0)]
        );
        assert_eq!(s.in_flight_read_only, Some(2.0));
        assert_eq!(s.in_flight_mutating, Some(1.0));
        assert_eq!(s.long_running, None);
        assert_eq!(s.resident_memory_bytes, Some(52428800.0));
        assert_eq!(s.cpu_seconds, Some(1.5));
    }

    /// kube-apiserver's exposition (client_golang): labels sorted, `le` among them, HELP
    /// lines with stability levels, values in exponent notation.
    const KUBE_APISERVER: &str = r#"# HELP apiserver_current_inflight_requests [STABLE] Maximal number of currently used inflight request limit of this apiserver per request kind in last second.
# TYPE apiserver_current_inflight_requests gauge
apiserver_current_inflight_requests{request_kind="mutating"} 0
apiserver_current_inflight_requests{request_kind="readOnly"} 1
# HELP apiserver_request_duration_seconds [STABLE] Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.
# TYPE apiserver_request_duration_seconds histogram
apiserver_request_duration_seconds_bucket{component="apiserver",dry_run="",group="apps",resource="deployments",scope="cluster",subresource="",verb="LIST",version="v1",le="0.005"} 2
apiserver_request_duration_seconds_bucket{component="apiserver",dry_run="",group="apps",resource="deployments",scope="cluster",subresource="",verb="LIST",version="v1",le="0.025"} 5
apiserver_request_duration_seconds_bucket{component="apiserver",dry_run="",group="apps",resource="deployments",scope="cluster",subresource="",verb="LIST",version="v1",le="60"} 6
apiserver_request_duration_seconds_bucket{component="apiserver",dry_run="",group="apps",resource="deployments",scope="cluster",subresource="",verb="LIST",version="v1",le="+Inf"} 6
apiserver_request_duration_seconds_sum{component="apiserver",dry_run="",group="apps",resource="deployments",scope="cluster",subresource="",verb="LIST",version="v1"} 0.123
apiserver_request_duration_seconds_count{component="apiserver",dry_run="",group="apps",resource="deployments",scope="cluster",subresource="",verb="LIST",version="v1"} 6
# HELP apiserver_request_total [STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="apps",resource="deployments",scope="cluster",subresource="",verb="LIST",version="v1"} 6
# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total 1234.56
# HELP process_resident_memory_bytes Resident memory size in bytes.
# TYPE process_resident_memory_bytes gauge
process_resident_memory_bytes 3.4603008e+08
"#;

    #[test]
    fn reads_kube_apiserver_too() {
        let s = Scrape::parse(KUBE_APISERVER);
        let (labels, buckets) = s.durations.iter().next().unwrap();
        assert!(labels.contains(&("group".into(), "apps".into())));
        assert_eq!(
            buckets,
            &vec![
                (0.005, 2.0),
                (0.025, 5.0),
                (60.0, 6.0),
                (f64::INFINITY, 6.0)
            ]
        );
        assert_eq!(s.requests.values().copied().collect::<Vec<_>>(), [6.0]);
        assert_eq!(s.in_flight_read_only, Some(1.0));
        assert_eq!(s.in_flight_mutating, Some(0.0));
        assert_eq!(s.resident_memory_bytes, Some(346_030_080.0));
        assert_eq!(s.cpu_seconds, Some(1234.56));
    }

    #[test]
    fn kube_apiserver_long_running_requests_are_summed() {
        let text = "# TYPE apiserver_longrunning_requests gauge\n\
            apiserver_longrunning_requests{component=\"apiserver\",group=\"\",resource=\"pods\",scope=\"cluster\",subresource=\"\",verb=\"WATCH\",version=\"v1\"} 3\n\
            apiserver_longrunning_requests{component=\"apiserver\",group=\"apps\",resource=\"deployments\",scope=\"cluster\",subresource=\"\",verb=\"WATCH\",version=\"v1\"} 2\n";
        assert_eq!(Scrape::parse(text).long_running, Some(5.0));
        assert_eq!(Scrape::parse("").long_running, None);
    }

    #[test]
    fn other_metrics_and_garbage_are_ignored() {
        let text = "apiserver_request_total_other 5\nnot a metric line\n\
            apiserver_request_total{verb=\"LIST\",code=\"200\"} 7\n";
        let s = Scrape::parse(text);
        assert_eq!(s.requests.len(), 1);
        assert_eq!(s, {
            let mut want = Scrape::default();
            want.requests.insert(
                vec![
                    ("code".into(), "200".into()),
                    ("verb".into(), "LIST".into()),
                ],
                7.0,
            );
            want
        });
    }
}
