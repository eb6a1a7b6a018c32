//! Watch metrics: the events each watcher was sent and their sizes
//! (apiserver_watch_events_total, apiserver_watch_events_sizes), the watchers and long-running
//! requests open now (apiserver_registered_watchers, apiserver_longrunning_requests), and what
//! the watch cache did (apiserver_watch_cache_events_dispatched_total,
//! apiserver_terminated_watchers_total). Names, labels and buckets of
//! k8s.io/apiserver pkg/endpoints/metrics and pkg/storage/cacher/metrics;
//! apiserver_registered_watchers is the gauge kube-apiserver kept until 1.2x.

use super::{GroupResource, Histograms};
use crate::api::RequestInfo;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::collections::HashMap;
use std::sync::RwLock;

/// apiserver_watch_events_total's labels.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EventLabels {
    group: String,
    version: String,
    resource: String,
}

/// apiserver_registered_watchers's labels.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    group: String,
    version: String,
    kind: String,
}

/// apiserver_longrunning_requests's labels.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LongRunningLabels {
    verb: &'static str,
    group: String,
    version: String,
    resource: String,
    subresource: String,
    scope: &'static str,
    component: &'static str,
}

fn event_size_histogram() -> Histogram {
    // ExponentialBuckets(1024, 2.0, 8): 1K .. 128K.
    Histogram::new(exponential_buckets(1024.0, 2.0, 8))
}

/// The watch metrics.
pub(crate) struct WatchMetrics {
    events: Family<EventLabels, Counter>,
    sizes: Histograms<EventLabels>,
    registered: Family<KindLabels, Gauge>,
    longrunning: Family<LongRunningLabels, Gauge>,
    dispatched: Family<GroupResource, Counter>,
    terminated: Family<GroupResource, Counter>,
    /// Storage key prefix (`/registry/configmaps/`) → its group and resource, for the watch
    /// cache, which knows keys only.
    resources: RwLock<HashMap<String, GroupResource>>,
}

impl WatchMetrics {
    pub(super) fn register(registry: &mut Registry) -> WatchMetrics {
        let m = WatchMetrics {
            events: Family::default(),
            sizes: Family::new_with_constructor(event_size_histogram as fn() -> Histogram),
            registered: Family::default(),
            longrunning: Family::default(),
            dispatched: Family::default(),
            terminated: Family::default(),
            resources: RwLock::default(),
        };
        registry.register(
            "apiserver_watch_events",
            "Number of events sent in watch clients",
            m.events.clone(),
        );
        registry.register(
            "apiserver_watch_events_sizes",
            "Watch event size distribution in bytes",
            m.sizes.clone(),
        );
        registry.register(
            "apiserver_registered_watchers",
            "Number of currently registered watchers for a given resources",
            m.registered.clone(),
        );
        registry.register(
            "apiserver_longrunning_requests",
            "Gauge of all active long-running apiserver requests broken out by verb, group, version, resource, scope and component. Not all requests are tracked this way.",
            m.longrunning.clone(),
        );
        registry.register(
            "apiserver_watch_cache_events_dispatched",
            "Counter of events dispatched in watch cache broken by resource type.",
            m.dispatched.clone(),
        );
        registry.register(
            "apiserver_terminated_watchers",
            "Counter of watchers closed due to unresponsiveness broken by resource type.",
            m.terminated.clone(),
        );
        m
    }

    /// Names the resource stored under `prefix` (done by the registry for every resource it
    /// serves, before its watch cache starts).
    pub(crate) fn name_prefix(&self, prefix: &str, group: &str, resource: &str) {
        if let Ok(mut map) = self.resources.write() {
            map.insert(
                prefix.to_string(),
                GroupResource {
                    group: group.to_string(),
                    resource: resource.to_string(),
                },
            );
        }
    }

    /// The group and resource stored under `prefix`: the named one, else the prefix's last
    /// segment as the resource of the core group.
    fn resource_of(&self, prefix: &str) -> GroupResource {
        if let Some(gr) = self
            .resources
            .read()
            .ok()
            .and_then(|m| m.get(prefix).cloned())
        {
            return gr;
        }
        let resource = prefix
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or("");
        GroupResource {
            group: String::new(),
            resource: resource.to_string(),
        }
    }

    /// The counter of events the watch cache of `prefix` dispatched: resolved once per cache,
    /// then one atomic add per event.
    pub(crate) fn dispatched(&self, prefix: &str) -> Counter {
        self.dispatched
            .get_or_create(&self.resource_of(prefix))
            .clone()
    }

    /// Counts a watcher of `prefix` closed for being unresponsive.
    pub(crate) fn terminated(&self, prefix: &str) {
        self.terminated
            .get_or_create(&self.resource_of(prefix))
            .inc();
    }

    /// A watch request starts: counted as a registered watcher and a long-running request
    /// until the returned [`Watcher`] is dropped (when its stream ends).
    pub(crate) fn watcher(&self, info: &RequestInfo, kind: &str) -> Watcher {
        let gvr = EventLabels {
            group: info.api_group.clone(),
            version: info.api_version.clone(),
            resource: info.resource.clone(),
        };
        let registered = self
            .registered
            .get_or_create(&KindLabels {
                group: info.api_group.clone(),
                version: info.api_version.clone(),
                kind: kind.to_string(),
            })
            .clone();
        let longrunning = self
            .longrunning
            .get_or_create(&LongRunningLabels {
                verb: "WATCH",
                group: info.api_group.clone(),
                version: info.api_version.clone(),
                resource: info.resource.clone(),
                subresource: info.subresource.clone(),
                scope: super::scope(info),
                component: "apiserver",
            })
            .clone();
        registered.inc();
        longrunning.inc();
        Watcher {
            events: self.events.get_or_create(&gvr).clone(),
            sizes: self.sizes.get_or_create(&gvr).clone(),
            registered,
            longrunning,
        }
    }
}

/// One open watch: counts what it sends; uncounts itself when dropped.
pub(crate) struct Watcher {
    events: Counter,
    sizes: Histogram,
    registered: Gauge,
    longrunning: Gauge,
}

impl Watcher {
    /// An event of `bytes` bytes was sent.
    pub(crate) fn sent(&self, bytes: usize) {
        self.events.inc();
        self.sizes.observe(bytes as f64);
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.registered.dec();
        self.longrunning.dec();
    }
}
