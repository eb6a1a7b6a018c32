//! `kapi leases`: apiserver identity leases (kube-system, label `apiserver.kubernetes.io/identity`)
//! and, with `--all`, the other Leases of kube-system (leader-election locks).
//!
//! # JSON / YAML shape (stable)
//! ```text
//! { "leases": [ {
//!     "namespace": "kube-system",
//!     "name": "apiserver-lgabes5ywnaqeagh5dny4zlzs4",
//!     "type": "identity" | "leader-election",
//!     "component": "kube-apiserver" | null,      // label apiserver.kubernetes.io/identity
//!     "holder": "apiserver-…_<uuid>" | null,     // spec.holderIdentity
//!     "hostname": "node-1" | null,               // label kubernetes.io/hostname
//!     "peerAddress": "10.0.0.1:6443" | null,     // annotation kubernetes.io/peer-advertise-address
//!     "renewTime": "2026-01-02T03:04:05.123456Z" | null,
//!     "expireTime": "…" | null,                  // renewTime + leaseDurationSeconds
//!     "leaseDurationSeconds": 3600 | null,
//!     "leaseTransitions": 0 | null,
//!     "acquireTime": "…" | null,
//!     "strategy": "OldestEmulationVersion" | null,
//!     "preferredHolder": "…" | null,
//!     "state": "Live" | "Expired" | "Free"       // Free: a lock with no holder
//! } ] }
//! ```
//! Times are RFC 3339 UTC. Table columns: NAME, COMPONENT, HOLDER, HOSTNAME, RENEWED, EXPIRES,
//! STATE; `-o wide` adds PEER-ADDRESS, DURATION, TRANSITIONS; `--all` adds TYPE after NAME and
//! STRATEGY, PREFERRED-HOLDER after STATE.

use chrono::{DateTime, Utc};
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, ListParams};
use serde::Serialize;

use super::{Cluster, Result};
use crate::output::{human_duration, relative_time, Cell, Tabular, Tone};

pub(crate) use crate::api::well_known::{
    HOSTNAME_LABEL, IDENTITY_LABEL, KUBE_SYSTEM as NAMESPACE, PEER_ADDRESS_ANNOTATION,
};

/// What to list.
#[derive(Debug, Clone, Default)]
pub(crate) struct Query {
    /// Include the non-identity leases of kube-system.
    pub all: bool,
    /// `-l`: an extra label selector.
    pub selector: Option<String>,
    /// `--component`: only identity leases of this component.
    pub component: Option<String>,
}

impl Query {
    /// The label selector sent to the server.
    pub(crate) fn label_selector(&self) -> Option<String> {
        let mut parts = Vec::new();
        match (&self.component, self.all) {
            (Some(c), _) => parts.push(format!("{IDENTITY_LABEL}={c}")),
            (None, false) => parts.push(IDENTITY_LABEL.to_string()),
            (None, true) => {}
        }
        parts.extend(self.selector.clone().filter(|s| !s.is_empty()));
        (!parts.is_empty()).then(|| parts.join(","))
    }
}

/// The kind of a lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum LeaseType {
    /// An apiserver identity lease.
    Identity,
    /// Any other lease (a leader-election lock).
    LeaderElection,
}

/// Liveness of a lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) enum LeaseState {
    /// Renewed within its duration.
    Live,
    /// Not renewed within its duration (or no renew time / duration).
    Expired,
    /// A lock with no holder.
    Free,
}

/// One lease, flattened.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LeaseRow {
    /// metadata.namespace.
    pub namespace: String,
    /// metadata.name.
    pub name: String,
    /// identity or leader-election.
    #[serde(rename = "type")]
    pub lease_type: LeaseType,
    /// Component label.
    pub component: Option<String>,
    /// spec.holderIdentity.
    pub holder: Option<String>,
    /// Hostname label.
    pub hostname: Option<String>,
    /// Peer address annotation.
    pub peer_address: Option<String>,
    /// spec.renewTime.
    pub renew_time: Option<DateTime<Utc>>,
    /// renewTime + leaseDurationSeconds.
    pub expire_time: Option<DateTime<Utc>>,
    /// spec.leaseDurationSeconds.
    pub lease_duration_seconds: Option<i32>,
    /// spec.leaseTransitions.
    pub lease_transitions: Option<i32>,
    /// spec.acquireTime.
    pub acquire_time: Option<DateTime<Utc>>,
    /// spec.strategy.
    pub strategy: Option<String>,
    /// spec.preferredHolder.
    pub preferred_holder: Option<String>,
    /// Live / Expired / Free at observation time.
    pub state: LeaseState,
}

/// The `kapi leases` view.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct LeasesView {
    /// The leases, sorted by type (identity first) then name.
    pub leases: Vec<LeaseRow>,
    /// Whether TYPE/STRATEGY/PREFERRED-HOLDER columns are shown (`--all`).
    #[serde(skip)]
    pub all: bool,
    /// When the leases were observed; ages are computed against it.
    #[serde(skip)]
    pub now: DateTime<Utc>,
}

impl LeasesView {
    /// True when any lease is expired.
    pub(crate) fn any_expired(&self) -> bool {
        self.leases.iter().any(|l| l.state == LeaseState::Expired)
    }
}

/// Lists the leases.
///
/// # Errors
/// Classified [`super::Error`]s; a missing Lease API is [`super::Error::NotServed`].
pub(crate) async fn collect(cluster: &Cluster, query: &Query) -> Result<LeasesView> {
    let api: Api<Lease> = Api::namespaced(cluster.client().clone(), NAMESPACE);
    let mut params = ListParams::default();
    if let Some(sel) = query.label_selector() {
        params = params.labels(&sel);
    }
    let list = cluster
        .within("leases in kube-system", api.list(&params))
        .await?;
    let now = Utc::now();
    let mut leases: Vec<LeaseRow> = list
        .items
        .iter()
        .map(|l| LeaseRow::from_lease(l, now))
        .collect();
    sort(&mut leases);
    Ok(LeasesView {
        leases,
        all: query.all,
        now,
    })
}

/// Orders rows: identity leases first, then by name.
pub(crate) fn sort(rows: &mut [LeaseRow]) {
    rows.sort_by(|a, b| {
        (a.lease_type != LeaseType::Identity, &a.name)
            .cmp(&(b.lease_type != LeaseType::Identity, &b.name))
    });
}

/// Converts an API timestamp.
pub(crate) fn to_chrono(ts: &k8s_openapi::jiff::Timestamp) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp(ts.as_second(), u32::try_from(ts.subsec_nanosecond()).ok()?)
}

impl LeaseRow {
    /// Flattens a Lease as seen at `now`.
    pub(crate) fn from_lease(lease: &Lease, now: DateTime<Utc>) -> Self {
        let meta = &lease.metadata;
        let label = |k: &str| meta.labels.as_ref().and_then(|m| m.get(k)).cloned();
        let component = label(IDENTITY_LABEL);
        let spec = lease.spec.clone().unwrap_or_default();
        let renew_time = spec.renew_time.as_ref().and_then(|t| to_chrono(&t.0));
        let expire_time = match (renew_time, spec.lease_duration_seconds) {
            (Some(r), Some(d)) => Some(r + chrono::TimeDelta::seconds(i64::from(d))),
            _ => None,
        };
        let holder = spec.holder_identity.filter(|h| !h.is_empty());
        let state = if component.is_none() && holder.is_none() {
            LeaseState::Free
        } else if expire_time.is_some_and(|e| e >= now) {
            LeaseState::Live
        } else {
            LeaseState::Expired
        };
        LeaseRow {
            namespace: meta.namespace.clone().unwrap_or_default(),
            name: meta.name.clone().unwrap_or_default(),
            lease_type: if component.is_some() {
                LeaseType::Identity
            } else {
                LeaseType::LeaderElection
            },
            component,
            holder,
            hostname: label(HOSTNAME_LABEL),
            peer_address: meta
                .annotations
                .as_ref()
                .and_then(|m| m.get(PEER_ADDRESS_ANNOTATION))
                .cloned(),
            renew_time,
            expire_time,
            lease_duration_seconds: spec.lease_duration_seconds,
            lease_transitions: spec.lease_transitions,
            acquire_time: spec.acquire_time.as_ref().and_then(|t| to_chrono(&t.0)),
            strategy: spec.strategy.filter(|s| !s.is_empty()),
            preferred_holder: spec.preferred_holder.filter(|s| !s.is_empty()),
            state,
        }
    }

    /// The table cells of this row.
    pub(crate) fn cells(&self, all: bool, wide: bool, now: DateTime<Utc>) -> Vec<Cell> {
        let opt = |v: &Option<String>| Cell::plain(v.clone().unwrap_or_else(|| "<none>".into()));
        let mut cells = vec![Cell::plain(&self.name)];
        if all {
            cells.push(Cell::plain(match self.lease_type {
                LeaseType::Identity => "identity",
                LeaseType::LeaderElection => "leader-election",
            }));
        }
        cells.push(opt(&self.component));
        cells.push(opt(&self.holder));
        cells.push(opt(&self.hostname));
        cells.push(Cell::plain(match self.renew_time {
            Some(t) => human_duration(now - t),
            None => "<none>".into(),
        }));
        cells.push(Cell::plain(relative_time(self.expire_time, now)));
        cells.push(match self.state {
            LeaseState::Live => Cell::toned("Live", Tone::Good),
            LeaseState::Expired => Cell::toned("Expired", Tone::Bad),
            LeaseState::Free => Cell::toned("Free", Tone::Warn),
        });
        if all {
            cells.push(opt(&self.strategy));
            cells.push(opt(&self.preferred_holder));
        }
        if wide {
            cells.push(opt(&self.peer_address));
            cells.push(Cell::plain(match self.lease_duration_seconds {
                Some(d) => human_duration(chrono::TimeDelta::seconds(i64::from(d))),
                None => "<none>".into(),
            }));
            cells.push(Cell::plain(self.lease_transitions.unwrap_or(0).to_string()));
        }
        cells
    }
}

/// Headers for the given column set.
pub(crate) fn headers(all: bool, wide: bool) -> Vec<&'static str> {
    let mut h = vec!["NAME"];
    if all {
        h.push("TYPE");
    }
    h.extend([
        "COMPONENT",
        "HOLDER",
        "HOSTNAME",
        "RENEWED",
        "EXPIRES",
        "STATE",
    ]);
    if all {
        h.extend(["STRATEGY", "PREFERRED-HOLDER"]);
    }
    if wide {
        h.extend(["PEER-ADDRESS", "DURATION", "TRANSITIONS"]);
    }
    h
}

impl Tabular for LeasesView {
    fn headers(&self, wide: bool) -> Vec<&'static str> {
        headers(self.all, wide)
    }

    fn rows(&self, wide: bool) -> Vec<Vec<Cell>> {
        self.leases
            .iter()
            .map(|l| l.cells(self.all, wide, self.now))
            .collect()
    }

    fn names(&self) -> Vec<String> {
        self.leases
            .iter()
            .map(|l| format!("lease.coordination.k8s.io/{}", l.name))
            .collect()
    }
}

/// One change seen by [`watch`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Change {
    /// A lease was added or changed (renewed, new holder, ...).
    Updated(LeaseRow),
    /// A lease was deleted.
    Deleted(LeaseRow),
    /// The watch failed and is being retried (one line).
    Retrying(String),
}

/// Watches the leases of `query`, yielding only real changes relative to `known` (the rows
/// already shown) — relists after a dropped watch do not repeat unchanged rows.
///
/// # Cancellation
/// Dropping the stream ends the watch.
pub(crate) fn watch(
    cluster: &Cluster,
    query: &Query,
    known: Vec<LeaseRow>,
) -> impl futures::Stream<Item = Change> + use<> {
    use futures::StreamExt;
    use kube::runtime::{watcher, WatchStreamExt};
    let api: Api<Lease> = Api::namespaced(cluster.client().clone(), NAMESPACE);
    let mut config = watcher::Config::default();
    if let Some(sel) = query.label_selector() {
        config = config.labels(&sel);
    }
    let known: std::collections::HashMap<String, LeaseRow> =
        known.into_iter().map(|r| (r.name.clone(), r)).collect();
    watcher::watcher(api, config)
        .default_backoff()
        .scan(known, |known, event| {
            let change = match event {
                Ok(watcher::Event::Apply(l) | watcher::Event::InitApply(l)) => {
                    let row = LeaseRow::from_lease(&l, Utc::now());
                    if known.get(&row.name) == Some(&row) {
                        None
                    } else {
                        known.insert(row.name.clone(), row.clone());
                        Some(Change::Updated(row))
                    }
                }
                Ok(watcher::Event::Delete(l)) => {
                    let row = LeaseRow::from_lease(&l, Utc::now());
                    known.remove(&row.name);
                    Some(Change::Deleted(row))
                }
                Ok(watcher::Event::Init | watcher::Event::InitDone) => None,
                Err(e) => Some(Change::Retrying(super::one_line(&e.to_string()))),
            };
            futures::future::ready(Some(change))
        })
        .filter_map(futures::future::ready)
}

#[cfg(test)]
#[path = "leases_tests.rs"]
mod tests;
