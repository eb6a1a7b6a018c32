//! Prometheus metrics with kube-apiserver's names, labels and buckets
//! (staging/src/k8s.io/apiserver/pkg/endpoints/metrics): what requests the server answered,
//! how long they took and how large the answers were, the requests in flight and the
//! long-running ones, the watches ([`watch`]), the store ([`storage`]), admission
//! ([`admission`]), authentication, authorization and the server's own controllers
//! ([`control`]), the audit log, and the process's own figures, on the prometheus-client
//! crate. One set of metrics per process ([`global`]), recorded where the work happens;
//! `/metrics` encodes it in the Prometheus text format, or OpenMetrics when the scraper asks
//! for it. May use: api.

pub(crate) mod admission;
mod audit;
pub(crate) mod control;
mod process;
pub(crate) mod storage;
pub(crate) mod watch;

use audit::{AuditMetrics, LevelLabel, PluginLabel};

use crate::api::RequestInfo;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock};

/// apiserver_request_duration_seconds buckets (requestLatencies).
pub(super) const DURATION_BUCKETS: [f64; 23] = [
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0,
    10.0, 15.0, 20.0, 30.0, 45.0, 60.0,
];

/// What identifies a resource request in the request metrics (without the code).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct RequestLabels {
    verb: &'static str,
    dry_run: &'static str,
    group: String,
    version: String,
    resource: String,
    subresource: String,
    scope: &'static str,
    component: &'static str,
}

/// [`RequestLabels`] with the response code.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CodeLabels {
    #[prometheus(flatten)]
    labels: RequestLabels,
    code: u16,
}

/// apiserver_current_inflight_requests's label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabel {
    request_kind: &'static str,
}

type Histograms<L> = Family<L, Histogram, fn() -> Histogram>;

/// A counter under a name without the `_total` suffix the encoder gives counters, for the
/// few kube-apiserver counters named that way (authentication_attempts,
/// apiserver_admission_webhook_rejection_count): written as an untyped sample, so the name
/// is kube-apiserver's.
#[derive(Clone, Debug, Default)]
pub(crate) struct PlainCounter(Counter);

impl PlainCounter {
    /// Adds one.
    pub(crate) fn inc(&self) {
        self.0.inc();
    }
}

impl prometheus_client::metrics::TypedMetric for PlainCounter {
    const TYPE: prometheus_client::metrics::MetricType =
        prometheus_client::metrics::MetricType::Unknown;
}

impl prometheus_client::encoding::EncodeMetric for PlainCounter {
    fn encode(
        &self,
        mut encoder: prometheus_client::encoding::MetricEncoder,
    ) -> Result<(), std::fmt::Error> {
        encoder.encode_gauge(&(self.0.get() as i64))
    }

    fn metric_type(&self) -> prometheus_client::metrics::MetricType {
        prometheus_client::metrics::MetricType::Unknown
    }
}

/// A group and resource (the watch cache's and the object counts' labels).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GroupResource {
    group: String,
    resource: String,
}

/// The scope label of a request (CleanScope).
fn scope(info: &RequestInfo) -> &'static str {
    if !info.name.is_empty() || info.verb == "create" {
        "resource"
    } else if !info.namespace.is_empty() {
        "namespace"
    } else {
        "cluster"
    }
}

/// The metrics of one label set, looked up once and kept: a request then costs one hash of
/// its labels (no allocation) and a few atomic updates.
pub(crate) struct Recorder {
    labels: RequestLabels,
    duration: Histogram,
    size: Histogram,
    /// apiserver_request_total per response code (few per label set).
    codes: RwLock<Vec<(u16, Counter)>>,
    family: Family<CodeLabels, Counter>,
}

impl Recorder {
    /// Records the answer: its code, how long it took and its size (when known).
    pub(crate) fn observe(&self, code: u16, seconds: f64, size: Option<u64>) {
        let counted = self.codes.read().is_ok_and(|codes| {
            codes
                .iter()
                .find(|(k, _)| *k == code)
                .map(|(_, c)| c.inc())
                .is_some()
        });
        if !counted {
            let counter = self
                .family
                .get_or_create(&CodeLabels {
                    labels: self.labels.clone(),
                    code,
                })
                .clone();
            counter.inc();
            if let Ok(mut codes) = self.codes.write() {
                codes.push((code, counter));
            }
        }
        self.duration.observe(seconds);
        if let (Some(size), false) = (size, self.labels.verb == "WATCH") {
            self.size.observe(size as f64);
        }
    }
}

/// Label sets seen, by the hash of their borrowed parts.
type Recorders = RwLock<HashMap<u64, Vec<Arc<Recorder>>>>;

/// The server's metrics.
pub(crate) struct Metrics {
    registry: Registry,
    requests: Family<CodeLabels, Counter>,
    durations: Histograms<RequestLabels>,
    sizes: Histograms<RequestLabels>,
    in_flight: Family<KindLabel, Gauge>,
    recorders: Recorders,
    audit: AuditMetrics,
    /// Watchers, long-running requests and the watch cache.
    pub(crate) watch: watch::WatchMetrics,
    /// Requests of the store, objects stored, the database's size.
    pub(crate) storage: storage::StorageMetrics,
    /// Admission steps, webhooks and policies.
    pub(crate) admission: admission::AdmissionMetrics,
    /// Authentication, authorization, hooks and the identity lease.
    pub(crate) control: control::ControlMetrics,
}

fn duration_histogram() -> Histogram {
    Histogram::new(DURATION_BUCKETS)
}

fn size_histogram() -> Histogram {
    // ExponentialBuckets(1000, 10.0, 7).
    Histogram::new(prometheus_client::metrics::histogram::exponential_buckets(
        1000.0, 10.0, 7,
    ))
}

impl Metrics {
    fn new() -> Metrics {
        let mut registry = Registry::default();
        let requests = Family::<CodeLabels, Counter>::default();
        registry.register(
            "apiserver_request",
            "Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.",
            requests.clone(),
        );
        let durations: Histograms<RequestLabels> =
            Family::new_with_constructor(duration_histogram as fn() -> Histogram);
        registry.register(
            "apiserver_request_duration_seconds",
            "Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.",
            durations.clone(),
        );
        let sizes: Histograms<RequestLabels> =
            Family::new_with_constructor(size_histogram as fn() -> Histogram);
        registry.register(
            "apiserver_response_sizes",
            "Response size distribution in bytes for each group, version, verb, resource, subresource, scope and component.",
            sizes.clone(),
        );
        let in_flight = Family::<KindLabel, Gauge>::default();
        registry.register(
            "apiserver_current_inflight_requests",
            "Maximal number of currently used inflight request limit of this apiserver per request kind in last second.",
            in_flight.clone(),
        );
        let audit = AuditMetrics::register(&mut registry);
        let watch = watch::WatchMetrics::register(&mut registry);
        let storage = storage::StorageMetrics::register(&mut registry);
        let admission = admission::AdmissionMetrics::register(&mut registry);
        let control = control::ControlMetrics::register(&mut registry);
        registry.register_collector(Box::new(process::Process));
        Metrics {
            registry,
            requests,
            durations,
            sizes,
            in_flight,
            recorders: RwLock::default(),
            audit,
            watch,
            storage,
            admission,
            control,
        }
    }

    /// The recorder of a resource request, None for anything else (health, discovery roots,
    /// /metrics itself), which kube-apiserver does not count either.
    pub(crate) fn recorder(
        &self,
        info: &RequestInfo,
        apply: bool,
        dry_run: bool,
    ) -> Option<Arc<Recorder>> {
        if !info.is_resource_request || info.resource.is_empty() || !recording() {
            return None;
        }
        let verb = match info.verb.as_str() {
            "get" => "GET",
            "list" => "LIST",
            "watch" => "WATCH",
            "create" => "POST",
            "update" => "PUT",
            "patch" if apply => "APPLY",
            "patch" => "PATCH",
            "delete" => "DELETE",
            "deletecollection" => "DELETECOLLECTION",
            _ => "other",
        };
        let scope = scope(info);
        let dry_run = if dry_run { "All" } else { "" };
        let parts = [
            verb,
            dry_run,
            info.api_group.as_str(),
            info.api_version.as_str(),
            info.resource.as_str(),
            info.subresource.as_str(),
            scope,
        ];
        let key = {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            parts.hash(&mut h);
            h.finish()
        };
        let same = |r: &Arc<Recorder>| {
            let l = &r.labels;
            [
                l.verb,
                l.dry_run,
                &l.group,
                &l.version,
                &l.resource,
                &l.subresource,
                l.scope,
            ] == parts
        };
        if let Ok(seen) = self.recorders.read() {
            if let Some(r) = seen.get(&key).and_then(|v| v.iter().find(|r| same(r))) {
                return Some(r.clone());
            }
        }
        let labels = RequestLabels {
            verb,
            dry_run,
            group: info.api_group.clone(),
            version: info.api_version.clone(),
            resource: info.resource.clone(),
            subresource: info.subresource.clone(),
            scope,
            component: "apiserver",
        };
        let recorder = Arc::new(Recorder {
            duration: self.durations.get_or_create(&labels).clone(),
            size: self.sizes.get_or_create(&labels).clone(),
            codes: RwLock::default(),
            family: self.requests.clone(),
            labels,
        });
        let mut seen = self.recorders.write().ok()?;
        let list = seen.entry(key).or_default();
        if let Some(r) = list.iter().find(|r| same(r)) {
            return Some(r.clone());
        }
        list.push(recorder.clone());
        Some(recorder)
    }

    /// Sets apiserver_current_inflight_requests.
    pub(crate) fn set_in_flight(&self, read_only: i64, mutating: i64) {
        self.in_flight
            .get_or_create(&KindLabel {
                request_kind: "readOnly",
            })
            .set(read_only);
        self.in_flight
            .get_or_create(&KindLabel {
                request_kind: "mutating",
            })
            .set(mutating);
    }

    /// Counts an audit event sent to the backend (apiserver_audit_event_total).
    pub(crate) fn audit_event(&self) {
        self.audit.events.inc();
    }

    /// Counts audit events a backend plugin lost (apiserver_audit_error_total).
    pub(crate) fn audit_error(&self, plugin: &'static str, events: u64) {
        self.audit
            .errors
            .get_or_create(&PluginLabel { plugin })
            .inc_by(events);
    }

    /// The audit events a plugin lost so far.
    #[cfg(test)]
    pub(crate) fn audit_errors(&self, plugin: &'static str) -> u64 {
        self.audit
            .errors
            .get_or_create(&PluginLabel { plugin })
            .get()
    }

    /// Counts the policy level of an audited request (apiserver_audit_level_total).
    pub(crate) fn audit_level(&self, level: &'static str) {
        self.audit.levels.get_or_create(&LevelLabel { level }).inc();
    }

    /// Counts a request refused because its audit event could not be stored
    /// (apiserver_audit_requests_rejected_total).
    pub(crate) fn audit_rejected(&self) {
        self.audit.rejected.inc();
    }

    /// The metrics in the Prometheus text format (0.0.4), or OpenMetrics text: (content
    /// type, body).
    pub(crate) fn encode(&self, openmetrics: bool) -> (&'static str, String) {
        let mut out = String::with_capacity(16 << 10);
        if openmetrics {
            // Writing to a String cannot fail.
            let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
            (
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
                out,
            )
        } else {
            let _ = prometheus_client::encoding::prometheus_text::encode(&mut out, &self.registry);
            (
                prometheus_client::encoding::prometheus_text::CONTENT_TYPE,
                out,
            )
        }
    }
}

/// Whether requests are recorded: always, unless the environment sets
/// `KAPI_METRICS_RECORDING=off`, which only the metrics benchmark does, to measure what
/// recording costs (`benches/metrics.rs`).
pub(crate) fn recording() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var("KAPI_METRICS_RECORDING").map_or(true, |v| v != "off"))
}

/// The process's metrics.
pub(crate) fn global() -> &'static Arc<Metrics> {
    static METRICS: OnceLock<Arc<Metrics>> = OnceLock::new();
    METRICS.get_or_init(|| Arc::new(Metrics::new()))
}
