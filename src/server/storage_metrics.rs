//! What kube-apiserver reads from etcd on a period (`--etcd-count-metric-poll-period`,
//! upstream's startObservingCount and the storage size monitor): how many objects each
//! resource has (apiserver_storage_objects, apiserver_resource_objects) and how large the
//! database is (apiserver_storage_size_bytes).

use crate::registry::{Registry, Resource};
use crate::storage::Storage;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Counts and measures every `period` (the first time at once) until `stop`.
pub(super) async fn observe(
    registry: Arc<Registry>,
    storage: Arc<dyn Storage>,
    period: Duration,
    stop: CancellationToken,
) {
    if period.is_zero() {
        return;
    }
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.cancelled() => return,
        }
        let resources = registry.resources();
        // The versions of a resource share its objects: count them once.
        let mut counted = HashSet::new();
        for resource in resources.iter() {
            if let Resource::Stored(store) = resource.as_ref() {
                let info = store.strategy().info();
                if counted.insert((info.group.clone(), info.resource.clone())) {
                    store.record_count().await;
                }
            }
        }
        match storage.db_size().await {
            Ok(Some((endpoint, bytes))) => {
                crate::metrics::global().storage.set_size(&endpoint, bytes)
            }
            Ok(None) => {}
            Err(e) => tracing::debug!(error = %e, "reading the storage size failed"),
        }
    }
}
