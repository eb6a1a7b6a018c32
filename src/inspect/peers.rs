//! `--all-apiservers`: finds every apiserver replica through the peer addresses published in
//! identity leases (annotation `kubernetes.io/peer-advertise-address`, gate
//! UnknownVersionInteroperabilityProxy) and builds a client for each with the same credentials.

use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, ListParams};
use serde::Serialize;

use super::leases::{IDENTITY_LABEL, NAMESPACE, PEER_ADDRESS_ANNOTATION};
use super::{Cluster, Result};

/// A replica that could not be asked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Unreachable {
    /// The replica's URL, or its identity lease name when it published no address.
    pub apiserver: String,
    /// The identity lease name, when known.
    pub identity: Option<String>,
    /// Why it could not be asked, one line.
    pub error: String,
}

/// One replica to ask.
#[derive(Debug)]
pub(crate) struct Target {
    /// The replica's URL (for display).
    pub(crate) apiserver: String,
    /// The identity lease name, when known.
    pub(crate) identity: Option<String>,
    /// The client aimed at it.
    pub(crate) cluster: Cluster,
}

/// The replicas to ask, the ones that cannot be asked, and a note for stderr.
#[derive(Debug, Default)]
pub(crate) struct Targets {
    pub(crate) reachable: Vec<Target>,
    pub(crate) unreachable: Vec<Unreachable>,
    pub(crate) note: Option<String>,
}

/// Without `--all-apiservers`: just the server of the kubeconfig.
pub(crate) fn single(cluster: &Cluster) -> Targets {
    Targets {
        reachable: vec![Target {
            apiserver: cluster.server().to_string(),
            identity: None,
            cluster: cluster.clone(),
        }],
        ..Targets::default()
    }
}

/// Lists identity leases and turns their peer addresses into targets. Identity leases without an
/// address are reported as unreachable; when no lease has one, falls back to the kubeconfig server.
///
/// # Errors
/// Listing the identity leases failed.
pub(crate) async fn discover(cluster: &Cluster) -> Result<Targets> {
    let api: Api<Lease> = Api::namespaced(cluster.client().clone(), NAMESPACE);
    let list = cluster
        .within(
            "identity leases",
            api.list(&ListParams::default().labels(IDENTITY_LABEL)),
        )
        .await?;
    let mut out = Targets::default();
    let mut names: Vec<(String, Option<String>)> = list
        .items
        .iter()
        .map(|l| {
            let addr = l
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(PEER_ADDRESS_ANNOTATION))
                .filter(|a| !a.is_empty())
                .cloned();
            (l.metadata.name.clone().unwrap_or_default(), addr)
        })
        .collect();
    names.sort();
    if names.iter().all(|(_, addr)| addr.is_none()) {
        let mut t = single(cluster);
        t.note = Some(format!(
            "no identity lease publishes {PEER_ADDRESS_ANNOTATION}; showing only {} (enable the UnknownVersionInteroperabilityProxy gate to publish peer addresses)",
            cluster.server()
        ));
        return Ok(t);
    }
    for (name, addr) in names {
        match addr.map(|a| (cluster.for_peer(&a), a)) {
            Some((Ok(peer), _)) => out.reachable.push(Target {
                apiserver: peer.server().to_string(),
                identity: Some(name),
                cluster: peer,
            }),
            Some((Err(e), a)) => out.unreachable.push(Unreachable {
                apiserver: a,
                identity: Some(name),
                error: e.to_string(),
            }),
            None => out.unreachable.push(Unreachable {
                apiserver: name.clone(),
                identity: Some(name),
                error: format!("no {PEER_ADDRESS_ANNOTATION} annotation on its identity lease"),
            }),
        }
    }
    Ok(out)
}
