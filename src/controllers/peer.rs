//! Peer endpoint reconciler (k8s.io/apiserver `reconcilers/peer_endpoint_lease.go`, hook
//! `peer-endpoint-reconciler-controller`, gate UnknownVersionInteroperabilityProxy): keeps
//! this server's `ip:port` under `peerserverleases/<apiserver ID>` with a 15 s TTL. Like
//! kube-apiserver this writes storage directly, not through the API, so the storage side is
//! a trait object the composition root implements; this module owns the object and timing.

use super::util;
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{EndpointAddress, EndpointPort, EndpointSubset, Endpoints};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

/// TTL of a peer endpoint entry.
pub(crate) const PEER_TTL: Duration = Duration::from_secs(15);
/// Reconcile interval (kube-apiserver's default).
pub(super) const PEER_INTERVAL: Duration = Duration::from_secs(10);
/// Key prefix (relative to the storage prefix) of the peer entries.
pub(crate) const PEER_KEY_PREFIX: &str = "peerserverleases/";

/// Error from a [`PeerEndpointStore`].
pub(crate) type PeerStoreError = Box<dyn std::error::Error + Send + Sync>;

/// Where peer endpoints live: storage keys with a TTL (an etcd lease on etcd). The
/// composition root implements it over the server's storage.
pub(crate) trait PeerEndpointStore: Send + Sync {
    /// Writes `value` under `key` (relative to the storage prefix), expiring after `ttl`.
    fn set(
        &self,
        key: &str,
        value: Vec<u8>,
        ttl: Duration,
    ) -> BoxFuture<'static, Result<(), PeerStoreError>>;
    /// Removes `key`; a missing key is success.
    fn delete(&self, key: &str) -> BoxFuture<'static, Result<(), PeerStoreError>>;
}

/// The stored object: an Endpoints with label `apiserverIdentity`, one address and port
/// `https`, and a generation bumped on every write.
pub(crate) fn endpoints(id: &str, address: &str, generation: i64) -> Option<Endpoints> {
    let addr: std::net::SocketAddr = address.parse().ok()?;
    Some(Endpoints {
        metadata: ObjectMeta {
            name: Some(id.to_string()),
            labels: Some(BTreeMap::from([(
                "apiserverIdentity".to_string(),
                id.to_string(),
            )])),
            generation: Some(generation),
            ..ObjectMeta::default()
        },
        subsets: Some(vec![EndpointSubset {
            addresses: Some(vec![EndpointAddress {
                ip: addr.ip().to_string(),
                ..Default::default()
            }]),
            ports: Some(vec![EndpointPort {
                name: Some("https".to_string()),
                port: i32::from(addr.port()),
                protocol: Some("TCP".to_string()),
                ..Default::default()
            }]),
            ..Default::default()
        }]),
    })
}

/// Runs the reconciler: waits for this server's /readyz, then refreshes the entry every
/// interval until `cancel` fires.
pub(crate) async fn run(
    client: kube::Client,
    store: Arc<dyn PeerEndpointStore>,
    id: String,
    address: String,
    cancel: CancellationToken,
) {
    let key = format!("{PEER_KEY_PREFIX}{id}");
    loop {
        let req = http::Request::get("/readyz").body(Vec::new());
        let ready = match req {
            Ok(r) => client.request_text(r).await.is_ok(),
            Err(_) => false,
        };
        if ready {
            break;
        }
        if !util::sleep_or_cancel(Duration::from_millis(100), &cancel).await {
            return;
        }
    }
    info!(key = %key, address = %address, "publishing peer endpoint");
    let mut generation = 0;
    loop {
        generation += 1;
        match endpoints(&id, &address, generation).map(|e| serde_json::to_vec(&e)) {
            Some(Ok(bytes)) => {
                if let Err(e) = store.set(&key, bytes, PEER_TTL).await {
                    warn!(error = %e, "writing peer endpoint failed");
                }
            }
            _ => {
                warn!(address = %address, "peer address is not ip:port; not publishing");
                return;
            }
        }
        if !util::sleep_or_cancel(PEER_INTERVAL, &cancel).await {
            return;
        }
    }
}

/// Removes this server's entry (pre-shutdown), giving up after two intervals.
pub(crate) async fn remove(store: Arc<dyn PeerEndpointStore>, id: &str) {
    let key = format!("{PEER_KEY_PREFIX}{id}");
    match tokio::time::timeout(PEER_INTERVAL * 2, store.delete(&key)).await {
        Ok(Ok(())) => debug!(key = %key, "removed peer endpoint"),
        Ok(Err(e)) => warn!(error = %e, "removing peer endpoint failed"),
        Err(_) => warn!("removing peer endpoint timed out"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_shape() {
        let e = endpoints("apiserver-x", "10.0.0.1:6443", 3).unwrap();
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(v["metadata"]["labels"]["apiserverIdentity"], "apiserver-x");
        assert_eq!(v["metadata"]["generation"], 3);
        assert_eq!(v["subsets"][0]["addresses"][0]["ip"], "10.0.0.1");
        assert_eq!(v["subsets"][0]["ports"][0]["name"], "https");
        assert_eq!(v["subsets"][0]["ports"][0]["port"], 6443);
        assert_eq!(v["subsets"][0]["ports"][0]["protocol"], "TCP");
        assert!(endpoints("id", "[::1]:443", 1).is_some());
        assert!(endpoints("id", "nonsense", 1).is_none());
    }
}
