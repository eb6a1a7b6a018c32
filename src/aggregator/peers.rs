//! The mixed-version peer proxy (k8s.io/apiserver pkg/util/peerproxy, gate
//! UnknownVersionInteroperabilityProxy): replicas of one control plane may serve different
//! group/versions (`--runtime-config`, versions during an upgrade). Each replica learns its
//! peers from the identity leases (their peer-advertise address annotation) and what each
//! serves from its aggregated discovery (`profile=nopeer`: its own resources only); a
//! resource request for a group/version/resource this replica does not serve goes to a peer
//! that does, with the caller's identity in the request headers over the front-proxy client
//! certificate and `x-kubernetes-peer-proxied: true`, which the peer serves locally whatever
//! it finds. CRD and remote APIService group/versions are never proxied. The peers' groups
//! are added to this replica's aggregated discovery, so clients find them.

use super::proxy::{Client, Trust, Via};
use super::ProxyIdentity;
use crate::api::well_known::{IDENTITY_LABEL, KUBE_APISERVER, PEER_ADDRESS_ANNOTATION};
use crate::api::{Body, RequestContext};
use bytes::Bytes;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::ListParams;
use kube::Api;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// Set on proxied requests; the receiving replica serves them locally.
pub(crate) const PEER_PROXIED_HEADER: &str = "x-kubernetes-peer-proxied";
/// How often peers and their discovery are refreshed.
const RESYNC: Duration = Duration::from_secs(5);
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// Aggregated discovery of the peer's own resources (discovery.AcceptV2NoPeer).
const ACCEPT_NO_PEER: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;profile=nopeer";

/// One peer and what it serves.
struct Peer {
    address: String,
    client: Client,
    /// Its APIGroupDiscovery items (core under the name "").
    groups: Vec<Value>,
    /// (group, version, resource) it serves.
    served: BTreeSet<(String, String, String)>,
}

/// The peer proxy of one replica.
pub(crate) struct PeerProxy {
    /// This replica's identity lease name.
    self_id: String,
    /// CA bundle the peers' serving certificates are verified with.
    ca_pem: Vec<u8>,
    identity: Option<ProxyIdentity>,
    /// The runtime that serves clients, where connections to peers run.
    serving: tokio::runtime::Handle,
    peers: RwLock<Arc<BTreeMap<String, Peer>>>,
    /// Whether `peers` is not empty, read on every request without the lock.
    any: std::sync::atomic::AtomicBool,
    synced: std::sync::atomic::AtomicBool,
    notify: Notify,
}

impl PeerProxy {
    pub(crate) fn new(
        self_id: String,
        ca_pem: Vec<u8>,
        identity: Option<ProxyIdentity>,
        serving: tokio::runtime::Handle,
    ) -> Self {
        PeerProxy {
            self_id,
            ca_pem,
            identity,
            serving,
            peers: RwLock::default(),
            any: Default::default(),
            synced: Default::default(),
            notify: Notify::new(),
        }
    }

    /// Whether any live peer is known.
    pub(crate) fn has_peers(&self) -> bool {
        self.any.load(std::sync::atomic::Ordering::Acquire)
    }

    fn peers(&self) -> Arc<BTreeMap<String, Peer>> {
        self.peers.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Waits until the peers' discovery was read once.
    pub(crate) async fn wait_synced(&self) {
        use std::sync::atomic::Ordering;
        loop {
            let notified = self.notify.notified();
            if self.synced.load(Ordering::Acquire) {
                return;
            }
            notified.await;
        }
    }

    /// `peer-discovery-cache-sync`: refreshes the peers and their discovery until `cancel`.
    pub(crate) async fn run(self: Arc<Self>, client: kube::Client, cancel: CancellationToken) {
        use std::sync::atomic::Ordering;
        loop {
            match self.refresh(&client).await {
                Ok(()) => {
                    self.synced.store(true, Ordering::Release);
                    self.notify.notify_waiters();
                }
                Err(e) => tracing::debug!(error = %e, "cannot list the identity leases"),
            }
            tokio::select! {
                () = cancel.cancelled() => return,
                () = tokio::time::sleep(RESYNC) => {}
            }
        }
    }

    async fn refresh(&self, client: &kube::Client) -> Result<(), kube::Error> {
        let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-system");
        let list = leases
            .list(&ListParams::default().labels(&format!("{IDENTITY_LABEL}={KUBE_APISERVER}")))
            .await?;
        let now = jiff::Timestamp::now();
        let old = self.peers();
        let mut peers = BTreeMap::new();
        for lease in list.items {
            let Some(id) = lease.metadata.name.clone() else {
                continue;
            };
            if id == self.self_id || expired(&lease, now) {
                continue;
            }
            let Some(address) = lease
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(PEER_ADDRESS_ANNOTATION))
                .cloned()
            else {
                continue;
            };
            let client = match old.get(&id).filter(|p| p.address == address) {
                Some(p) => p.client.clone(),
                None => {
                    let host = host_of(&address);
                    let trust = Trust {
                        ca_bundle: &self.ca_pem,
                        insecure: false,
                    };
                    match Client::with(host, trust, self.identity.as_ref(), &self.serving) {
                        Ok(c) => c,
                        Err(e) => {
                            tracing::warn!(peer = %id, error = %e, "cannot build a client for the peer");
                            continue;
                        }
                    }
                }
            };
            let mut groups = Vec::new();
            for path in ["/api", "/apis"] {
                let Ok(resp) = client
                    .get(&address, path, ACCEPT_NO_PEER, FETCH_TIMEOUT)
                    .await
                else {
                    continue;
                };
                let doc: Value = serde_json::from_slice(resp.body()).unwrap_or(Value::Null);
                if let Some(items) = doc.get("items").and_then(Value::as_array) {
                    groups.extend(items.iter().cloned());
                }
            }
            if groups.is_empty() {
                // Unreachable now: keep what it served, so requests get a 503, not a 404.
                if let Some(p) = old.get(&id) {
                    groups.clone_from(&p.groups);
                }
            }
            let served = served_by(&groups);
            peers.insert(
                id,
                Peer {
                    address,
                    client,
                    groups,
                    served,
                },
            );
        }
        self.any
            .store(!peers.is_empty(), std::sync::atomic::Ordering::Release);
        *self.peers.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(peers);
        Ok(())
    }

    /// Proxies a resource request this replica does not serve to a peer that does; None when
    /// no peer serves it (or it was proxied here already).
    pub(crate) async fn serve(
        &self,
        req: &http::Request<Bytes>,
        ctx: &RequestContext,
    ) -> Option<http::Response<Body>> {
        let info = &ctx.info;
        if !info.is_resource_request || req.headers().contains_key(PEER_PROXIED_HEADER) {
            return None;
        }
        let key = (
            info.api_group.clone(),
            info.api_version.clone(),
            info.resource.clone(),
        );
        let peers = self.peers();
        let serving: Vec<&Peer> = peers.values().filter(|p| p.served.contains(&key)).collect();
        if serving.is_empty() {
            return None;
        }
        let peer = serving[rand::random::<usize>() % serving.len()];
        Some(
            peer.client
                .forward(Via::Peer, &peer.address, req, &ctx.user)
                .await,
        )
    }

    /// The peers' groups and versions this replica does not serve (`local`), as
    /// APIGroupDiscovery items to add to aggregated discovery: `core` for `/api`.
    pub(crate) fn extra_groups(
        &self,
        core: bool,
        local: &dyn Fn(&str, &str) -> bool,
        excluded: &dyn Fn(&str, &str) -> bool,
    ) -> Vec<Value> {
        let mut out: Vec<Value> = Vec::new();
        for peer in self.peers().values() {
            for g in &peer.groups {
                let name = g
                    .pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if name.is_empty() != core {
                    continue;
                }
                let versions: Vec<Value> = g
                    .get("versions")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter(|v| {
                        let version = v.get("version").and_then(Value::as_str).unwrap_or("");
                        !local(name, version) && !excluded(name, version)
                    })
                    .cloned()
                    .collect();
                for v in versions {
                    let entry = match out
                        .iter_mut()
                        .find(|e| e.pointer("/metadata/name").and_then(Value::as_str) == Some(name))
                    {
                        Some(e) => e,
                        None => {
                            out.push(serde_json::json!({
                                "metadata": { "name": name, "creationTimestamp": null },
                                "versions": [],
                            }));
                            out.last_mut().expect("just pushed")
                        }
                    };
                    let version = v.get("version").cloned();
                    if let Some(list) = entry.get_mut("versions").and_then(Value::as_array_mut) {
                        if !list.iter().any(|x| x.get("version") == version.as_ref()) {
                            list.push(v);
                        }
                    }
                }
            }
        }
        out
    }
}

/// Whether an aggregated discovery request asks for this server's own resources only.
pub(crate) fn no_peer(headers: &http::HeaderMap) -> bool {
    headers
        .get_all(http::header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("profile=nopeer"))
}

/// `resp` (this server's aggregated `/api` or `/apis`) with `extra` groups added: versions
/// of groups it has join them, other groups follow.
pub(crate) async fn merge(resp: http::Response<Body>, extra: Vec<Value>) -> http::Response<Body> {
    if extra.is_empty() || resp.status() != http::StatusCode::OK {
        return resp;
    }
    super::discovery::edit_json(resp, |doc| {
        let Some(items) = doc.get_mut("items").and_then(Value::as_array_mut) else {
            return;
        };
        for g in extra {
            let name = g.pointer("/metadata/name").cloned();
            match items
                .iter_mut()
                .find(|i| i.pointer("/metadata/name") == name.as_ref())
            {
                Some(have) => {
                    let add = g.get("versions").and_then(Value::as_array).cloned();
                    if let (Some(list), Some(add)) =
                        (have.get_mut("versions").and_then(Value::as_array_mut), add)
                    {
                        list.extend(add);
                    }
                }
                None => items.push(g),
            }
        }
    })
    .await
}

/// (group, version, resource) of discovery items.
fn served_by(groups: &[Value]) -> BTreeSet<(String, String, String)> {
    let mut out = BTreeSet::new();
    for g in groups {
        let name = g
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        for v in g
            .get("versions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let version = v.get("version").and_then(Value::as_str).unwrap_or("");
            for r in v
                .get("resources")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(resource) = r.get("resource").and_then(Value::as_str) {
                    out.insert((name.to_string(), version.to_string(), resource.to_string()));
                }
            }
        }
    }
    out
}

/// Whether the lease was not renewed within its duration.
fn expired(lease: &Lease, now: jiff::Timestamp) -> bool {
    let Some(spec) = &lease.spec else { return true };
    let (Some(renew), Some(secs)) = (&spec.renew_time, spec.lease_duration_seconds) else {
        return true;
    };
    let renewed = renew.0.as_second();
    renewed + i64::from(secs) < now.as_second()
}

/// The host of `host:port` (without IPv6 brackets).
fn host_of(address: &str) -> &str {
    let host = address.rsplit_once(':').map_or(address, |(h, _)| h);
    host.trim_start_matches('[').trim_end_matches(']')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn proxy_with(groups: Vec<Value>) -> PeerProxy {
        let serving = tokio::runtime::Handle::current();
        let p = PeerProxy::new("self".into(), Vec::new(), None, serving.clone());
        let client = Client::with(
            "127.0.0.1",
            Trust {
                ca_bundle: b"",
                insecure: true,
            },
            None,
            &serving,
        )
        .unwrap();
        let served = served_by(&groups);
        let peers = BTreeMap::from([(
            "other".to_string(),
            Peer {
                address: "127.0.0.1:1".into(),
                client,
                groups,
                served,
            },
        )]);
        *p.peers.write().unwrap() = Arc::new(peers);
        p
    }

    #[tokio::test]
    async fn peer_groups_fill_in_only_what_is_not_served_here() {
        let p = proxy_with(vec![
            json!({"metadata": {"name": "coordination.k8s.io"}, "versions": [
                {"version": "v1", "resources": [{"resource": "leases"}]},
                {"version": "v1beta1", "resources": [{"resource": "leasecandidates"}]}]}),
            json!({"metadata": {"name": "example.com"}, "versions": [
                {"version": "v1", "resources": [{"resource": "widgets"}]}]}),
        ]);
        let local = |g: &str, v: &str| g == "coordination.k8s.io" && v == "v1";
        let excluded = |g: &str, _: &str| g == "example.com";
        let extra = p.extra_groups(false, &local, &excluded);
        assert_eq!(extra.len(), 1, "{extra:?}");
        assert_eq!(extra[0]["versions"][0]["version"], "v1beta1");
        assert!(p.extra_groups(true, &local, &excluded).is_empty());
        assert!(p.peers()["other"].served.contains(&(
            "coordination.k8s.io".into(),
            "v1beta1".into(),
            "leasecandidates".into()
        )));
    }

    #[test]
    fn hosts_of_peer_addresses() {
        assert_eq!(host_of("10.0.0.1:6443"), "10.0.0.1");
        assert_eq!(host_of("[fd00::1]:6443"), "fd00::1");
    }
}
