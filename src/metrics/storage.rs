//! Storage metrics under kube-apiserver's names (k8s.io/apiserver pkg/storage/etcd3/metrics):
//! every request the registry makes of the store, by operation, group and resource
//! (etcd_request_duration_seconds, etcd_requests_total, etcd_request_errors_total, for the
//! embedded store as for etcd), the objects stored per resource (apiserver_storage_objects,
//! apiserver_resource_objects) and the size of the database (apiserver_storage_size_bytes,
//! and apiserver_storage_db_total_size_in_bytes as kube-apiserver wrote it until 1.28); plus
//! the embedded store's own: how long its fsyncs take and how many writes each commits.

use super::{GroupResource, Histograms, DURATION_BUCKETS};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::future::Future;
use std::sync::OnceLock;
use std::time::Instant;

/// What the registry asks of the store (etcd3/store.go's operation names).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Operation {
    /// Create-if-absent.
    Create,
    /// Read one key.
    Get,
    /// Read a range.
    List,
    /// Read-modify-write (GuaranteedUpdate).
    Update,
    /// Delete.
    Delete,
}

impl Operation {
    const ALL: usize = 5;

    fn name(self) -> &'static str {
        match self {
            Operation::Create => "create",
            Operation::Get => "get",
            Operation::List => "list",
            Operation::Update => "update",
            Operation::Delete => "delete",
        }
    }
}

/// The etcd request metrics' labels.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OperationLabels {
    operation: &'static str,
    group: String,
    resource: String,
}

/// apiserver_storage_objects's label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResourceLabel {
    resource: String,
}

/// apiserver_storage_size_bytes's label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ClusterLabel {
    storage_cluster_id: &'static str,
}

/// apiserver_storage_db_total_size_in_bytes's label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EndpointLabel {
    endpoint: String,
}

fn duration_histogram() -> Histogram {
    Histogram::new(DURATION_BUCKETS)
}

/// The storage metrics.
pub(crate) struct StorageMetrics {
    durations: Histograms<OperationLabels>,
    requests: Family<OperationLabels, Counter>,
    errors: Family<OperationLabels, Counter>,
    objects: Family<ResourceLabel, Gauge>,
    resource_objects: Family<GroupResource, Gauge>,
    size: Family<ClusterLabel, Gauge>,
    db_total: Family<EndpointLabel, Gauge>,
    fsync: Histogram,
    batch: Histogram,
}

impl StorageMetrics {
    pub(super) fn register(registry: &mut Registry) -> StorageMetrics {
        let m = StorageMetrics {
            durations: Family::new_with_constructor(duration_histogram as fn() -> Histogram),
            requests: Family::default(),
            errors: Family::default(),
            objects: Family::default(),
            resource_objects: Family::default(),
            size: Family::default(),
            db_total: Family::default(),
            // 100 µs .. ~1.6 s.
            fsync: Histogram::new(exponential_buckets(0.0001, 2.0, 15)),
            // 1 .. 4096 writes.
            batch: Histogram::new(exponential_buckets(1.0, 2.0, 13)),
        };
        registry.register(
            "etcd_request_duration_seconds",
            "Etcd request latency in seconds for each operation and object type.",
            m.durations.clone(),
        );
        registry.register(
            "etcd_requests",
            "Etcd request counts for each operation and object type.",
            m.requests.clone(),
        );
        registry.register(
            "etcd_request_errors",
            "Etcd failed request counts for each operation and object type.",
            m.errors.clone(),
        );
        registry.register(
            "apiserver_storage_objects",
            "[DEPRECATED, consider using apiserver_resource_objects instead] Number of stored objects at the time of last check split by kind. In case of a fetching error, the value will be -1.",
            m.objects.clone(),
        );
        registry.register(
            "apiserver_resource_objects",
            "Number of stored objects at the time of last check split by kind. In case of a fetching error, the value will be -1.",
            m.resource_objects.clone(),
        );
        registry.register(
            "apiserver_storage_size_bytes",
            "Size of the storage database file physically allocated in bytes.",
            m.size.clone(),
        );
        registry.register(
            "apiserver_storage_db_total_size_in_bytes",
            "Total size of the storage database file physically allocated in bytes.",
            m.db_total.clone(),
        );
        registry.register(
            "kapi_storage_fsync_duration_seconds",
            "How long the embedded store's fsyncs of its write-ahead log take, in seconds.",
            m.fsync.clone(),
        );
        registry.register(
            "kapi_storage_commit_batch_size",
            "How many writes the embedded store commits with one fsync.",
            m.batch.clone(),
        );
        m
    }

    /// The meter of one resource's store requests.
    pub(crate) fn meter(&self, group: &str, resource: &str) -> Meter {
        Meter {
            durations: self.durations.clone(),
            requests: self.requests.clone(),
            errors: self.errors.clone(),
            group: group.to_string(),
            resource: resource.to_string(),
            ops: Default::default(),
        }
    }

    /// Records the objects stored of a resource; -1 when counting failed (as upstream).
    pub(crate) fn set_objects(&self, group: &str, resource: &str, count: i64) {
        self.objects
            .get_or_create(&ResourceLabel {
                resource: if group.is_empty() {
                    resource.to_string()
                } else {
                    format!("{resource}.{group}")
                },
            })
            .set(count);
        self.resource_objects
            .get_or_create(&GroupResource {
                group: group.to_string(),
                resource: resource.to_string(),
            })
            .set(count);
    }

    /// Records the size of the database file (`endpoint`: etcd's, or the embedded file).
    pub(crate) fn set_size(&self, endpoint: &str, bytes: i64) {
        self.size
            .get_or_create(&ClusterLabel {
                storage_cluster_id: "etcd-0",
            })
            .set(bytes);
        self.db_total
            .get_or_create(&EndpointLabel {
                endpoint: endpoint.to_string(),
            })
            .set(bytes);
    }

    /// One fsync of the embedded store's log.
    pub(crate) fn fsync(&self, seconds: f64) {
        self.fsync.observe(seconds);
    }

    /// One commit of the embedded store, of `writes` writes.
    pub(crate) fn batch(&self, writes: usize) {
        self.batch.observe(writes as f64);
    }
}

/// The metrics of one operation of one resource.
struct OperationMetrics {
    duration: Histogram,
    requests: Counter,
    errors: Counter,
}

/// Records one resource's store requests; each operation's metrics are looked up once.
pub(crate) struct Meter {
    durations: Histograms<OperationLabels>,
    requests: Family<OperationLabels, Counter>,
    errors: Family<OperationLabels, Counter>,
    group: String,
    resource: String,
    ops: [OnceLock<OperationMetrics>; Operation::ALL],
}

impl Meter {
    fn of(&self, op: Operation) -> &OperationMetrics {
        self.ops[op as usize].get_or_init(|| {
            let labels = OperationLabels {
                operation: op.name(),
                group: self.group.clone(),
                resource: self.resource.clone(),
            };
            OperationMetrics {
                duration: self.durations.get_or_create(&labels).clone(),
                requests: self.requests.get_or_create(&labels).clone(),
                errors: self.errors.get_or_create(&labels).clone(),
            }
        })
    }

    /// Runs one request of the store and records it; `failed` tells a failure of the store
    /// (unreachable, I/O) from an answer (not found, already exists, a conflict), which
    /// upstream does not count as an error either.
    pub(crate) async fn time<T, E>(
        &self,
        op: Operation,
        request: impl Future<Output = Result<T, E>>,
        failed: impl Fn(&E) -> bool,
    ) -> Result<T, E> {
        if !super::recording() {
            return request.await;
        }
        let started = Instant::now();
        let result = request.await;
        let m = self.of(op);
        m.duration.observe(started.elapsed().as_secs_f64());
        m.requests.inc();
        if result.as_ref().is_err_and(failed) {
            m.errors.inc();
        }
        result
    }
}
