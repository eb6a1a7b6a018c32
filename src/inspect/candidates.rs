//! `kapi candidates`: LeaseCandidates (coordinated leader election) joined with their Lease.
//!
//! The version is picked through discovery: `coordination.k8s.io/v1beta1`, else `v1alpha2`, else
//! `v1alpha1` (whose `preferredStrategies[0]` stands in for `strategy`). When none serves
//! `leasecandidates` the command fails with exit 3 and the CoordinatedLeaderElection hint.
//!
//! # JSON / YAML shape (stable)
//! ```text
//! { "apiVersion": "coordination.k8s.io/v1beta1",
//!   "candidates": [ {
//!       "namespace": "kube-system", "name": "kcm-node-1", "leaseName": "kube-controller-manager",
//!       "binaryVersion": "1.33.0", "emulationVersion": "1.33.0" | null,
//!       "strategy": "OldestEmulationVersion" | null,
//!       "renewTime": "2026-01-02T03:04:05.123456Z" | null, "pingTime": "…" | null,
//!       "pingPending": false,           // pingTime set and renewTime older than it
//!       "leader": true,                 // the Lease's holderIdentity names this candidate
//!       "preferred": false } ],         // the Lease's preferredHolder names it
//!   "leases": [ { "namespace": "…", "name": "…", "holderIdentity": "…" | null,
//!                 "preferredHolder": "…" | null, "strategy": "…" | null,
//!                 "renewTime": "…" | null, "leaseDurationSeconds": 5 | null } ] }
//! ```
//! Table columns: NAMESPACE, LEASE, CANDIDATE, BINARY, EMULATION, STRATEGY, RENEWED, PINGED
//! (`3s (pending)` while an ack is outstanding), LEADER (`*`), PREFERRED (`*`); `-o wide` adds
//! HOLDER (the Lease's holderIdentity). `-o name`: `leasecandidate.coordination.k8s.io/<ns>/<name>`.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use kube::core::GroupVersionKind;
use serde::Serialize;
use serde_json::Value;

use super::leases::to_chrono;
use super::{Cluster, Error, Result};
use crate::output::{human_duration, Cell, Tabular, Tone};

/// API group of LeaseCandidate.
pub(crate) const GROUP: &str = "coordination.k8s.io";
/// Versions tried, preferred first.
pub(crate) const VERSIONS: [&str; 3] = ["v1beta1", "v1alpha2", "v1alpha1"];

/// What to list.
#[derive(Debug, Clone, Default)]
pub(crate) struct Query {
    /// `-n`: one namespace; `None` = all namespaces.
    pub namespace: Option<String>,
    /// `--lease`: only candidates for this Lease name.
    pub lease: Option<String>,
}

/// One candidate joined with its lease.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Candidate {
    /// metadata.namespace.
    pub namespace: String,
    /// metadata.name.
    pub name: String,
    /// spec.leaseName.
    pub lease_name: String,
    /// spec.binaryVersion.
    pub binary_version: Option<String>,
    /// spec.emulationVersion.
    pub emulation_version: Option<String>,
    /// spec.strategy (v1alpha1: `preferredStrategies[0]`).
    pub strategy: Option<String>,
    /// spec.renewTime.
    pub renew_time: Option<DateTime<Utc>>,
    /// spec.pingTime.
    pub ping_time: Option<DateTime<Utc>>,
    /// A ping is waiting for the candidate's ack.
    pub ping_pending: bool,
    /// The lease's holderIdentity is this candidate.
    pub leader: bool,
    /// The lease's preferredHolder is this candidate.
    pub preferred: bool,
}

/// The lease a candidate competes for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LeaseSummary {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// spec.holderIdentity.
    pub holder_identity: Option<String>,
    /// spec.preferredHolder.
    pub preferred_holder: Option<String>,
    /// spec.strategy.
    pub strategy: Option<String>,
    /// spec.renewTime.
    pub renew_time: Option<DateTime<Utc>>,
    /// spec.leaseDurationSeconds.
    pub lease_duration_seconds: Option<i32>,
}

/// The `kapi candidates` view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CandidatesView {
    /// The LeaseCandidate API version read.
    pub api_version: String,
    /// Candidates sorted by namespace, lease, name.
    pub candidates: Vec<Candidate>,
    /// The leases they compete for (only those that exist).
    pub leases: Vec<LeaseSummary>,
    /// Observation time for ages.
    #[serde(skip)]
    pub now: DateTime<Utc>,
}

/// Finds the served LeaseCandidate version through discovery.
///
/// # Errors
/// [`Error::NotServed`] with the CoordinatedLeaderElection hint when no version serves it.
pub(crate) async fn served_version(cluster: &Cluster) -> Result<&'static str> {
    let groups = cluster
        .within("API discovery (/apis)", cluster.client().list_api_groups())
        .await?;
    let served: Vec<String> = groups
        .groups
        .iter()
        .filter(|g| g.name == GROUP)
        .flat_map(|g| g.versions.iter().map(|v| v.version.clone()))
        .collect();
    for version in VERSIONS {
        if !served.iter().any(|v| v == version) {
            continue;
        }
        let gv = format!("{GROUP}/{version}");
        let resources = cluster
            .within(
                &format!("discovery of {gv}"),
                cluster.client().list_api_group_resources(&gv),
            )
            .await?;
        if resources
            .resources
            .iter()
            .any(|r| r.name == "leasecandidates")
        {
            return Ok(version);
        }
    }
    Err(Error::NotServed {
        server: cluster.server().to_string(),
        what: "leasecandidates (coordination.k8s.io v1beta1, v1alpha2, v1alpha1)".into(),
        hint: "coordinated leader election is off; start the apiserver with --feature-gates=CoordinatedLeaderElection=true and --runtime-config=coordination.k8s.io/v1beta1=true".into(),
    })
}

/// Lists candidates and the leases they name.
///
/// # Errors
/// Classified [`Error`]s, including [`Error::NotServed`] when the API is absent.
pub(crate) async fn collect(cluster: &Cluster, query: &Query) -> Result<CandidatesView> {
    let version = served_version(cluster).await?;
    let gvk = GroupVersionKind::gvk(GROUP, version, "LeaseCandidate");
    let ar = ApiResource::from_gvk_with_plural(&gvk, "leasecandidates");
    let client = cluster.client().clone();
    let api: Api<DynamicObject> = match &query.namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &ar),
        None => Api::all_with(client.clone(), &ar),
    };
    let list = cluster
        .within("leasecandidates", api.list(&ListParams::default()))
        .await?;
    let mut candidates: Vec<Candidate> = list
        .items
        .iter()
        .map(from_object)
        .filter(|c| query.lease.as_ref().is_none_or(|l| &c.lease_name == l))
        .collect();
    let mut leases = BTreeMap::new();
    for c in &candidates {
        let key = (c.namespace.clone(), c.lease_name.clone());
        if leases.contains_key(&key) {
            continue;
        }
        let api: Api<Lease> = Api::namespaced(client.clone(), &c.namespace);
        let what = format!("lease {}/{}", c.namespace, c.lease_name);
        let lease = cluster.within(&what, api.get_opt(&c.lease_name)).await?;
        leases.insert(key, lease.map(|l| summarize(&l)));
    }
    let leases: Vec<LeaseSummary> = leases.into_values().flatten().collect();
    join(&mut candidates, &leases);
    candidates.sort_by(|a, b| {
        (&a.namespace, &a.lease_name, &a.name).cmp(&(&b.namespace, &b.lease_name, &b.name))
    });
    Ok(CandidatesView {
        api_version: format!("{GROUP}/{version}"),
        candidates,
        leases,
        now: Utc::now(),
    })
}

/// Marks each candidate's leader/preferred flags from its lease.
pub(crate) fn join(candidates: &mut [Candidate], leases: &[LeaseSummary]) {
    for c in candidates {
        let lease = leases
            .iter()
            .find(|l| l.namespace == c.namespace && l.name == c.lease_name);
        c.leader = lease.is_some_and(|l| l.holder_identity.as_deref() == Some(&c.name));
        c.preferred = lease.is_some_and(|l| l.preferred_holder.as_deref() == Some(&c.name));
    }
}

fn summarize(lease: &Lease) -> LeaseSummary {
    let spec = lease.spec.clone().unwrap_or_default();
    LeaseSummary {
        namespace: lease.metadata.namespace.clone().unwrap_or_default(),
        name: lease.metadata.name.clone().unwrap_or_default(),
        holder_identity: spec.holder_identity.filter(|s| !s.is_empty()),
        preferred_holder: spec.preferred_holder.filter(|s| !s.is_empty()),
        strategy: spec.strategy.filter(|s| !s.is_empty()),
        renew_time: spec.renew_time.as_ref().and_then(|t| to_chrono(&t.0)),
        lease_duration_seconds: spec.lease_duration_seconds,
    }
}

/// Flattens a LeaseCandidate of any served version.
pub(crate) fn from_object(obj: &DynamicObject) -> Candidate {
    let spec = obj.data.get("spec").cloned().unwrap_or(Value::Null);
    let text = |k: &str| {
        spec.get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(String::from)
    };
    let time = |k: &str| {
        spec.get(k)
            .and_then(Value::as_str)
            .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
            .map(|t| t.to_utc())
    };
    let strategy = text("strategy").or_else(|| {
        spec.get("preferredStrategies")
            .and_then(|v| v.get(0))
            .and_then(Value::as_str)
            .map(String::from)
    });
    let renew_time = time("renewTime");
    let ping_time = time("pingTime");
    Candidate {
        namespace: obj.metadata.namespace.clone().unwrap_or_default(),
        name: obj.metadata.name.clone().unwrap_or_default(),
        lease_name: text("leaseName").unwrap_or_default(),
        binary_version: text("binaryVersion"),
        emulation_version: text("emulationVersion"),
        strategy,
        renew_time,
        ping_time,
        ping_pending: match (ping_time, renew_time) {
            (Some(p), Some(r)) => r < p,
            (Some(_), None) => true,
            _ => false,
        },
        leader: false,
        preferred: false,
    }
}

impl Tabular for CandidatesView {
    fn headers(&self, wide: bool) -> Vec<&'static str> {
        let mut h = vec![
            "NAMESPACE",
            "LEASE",
            "CANDIDATE",
            "BINARY",
            "EMULATION",
            "STRATEGY",
            "RENEWED",
            "PINGED",
            "LEADER",
            "PREFERRED",
        ];
        if wide {
            h.push("HOLDER");
        }
        h
    }

    fn rows(&self, wide: bool) -> Vec<Vec<Cell>> {
        let age = |t: Option<DateTime<Utc>>| {
            t.map_or_else(|| "<none>".to_string(), |t| human_duration(self.now - t))
        };
        let opt = |v: &Option<String>| Cell::plain(v.clone().unwrap_or_else(|| "<none>".into()));
        let mark = |b: bool, tone| {
            if b {
                Cell::toned("*", tone)
            } else {
                Cell::plain("")
            }
        };
        self.candidates
            .iter()
            .map(|c| {
                let pinged = if c.ping_pending {
                    Cell::toned(format!("{} (pending)", age(c.ping_time)), Tone::Warn)
                } else {
                    Cell::plain(age(c.ping_time))
                };
                let mut r = vec![
                    Cell::plain(&c.namespace),
                    Cell::plain(&c.lease_name),
                    Cell::plain(&c.name),
                    opt(&c.binary_version),
                    opt(&c.emulation_version),
                    opt(&c.strategy),
                    Cell::plain(age(c.renew_time)),
                    pinged,
                    mark(c.leader, Tone::Good),
                    mark(c.preferred, Tone::Warn),
                ];
                if wide {
                    let lease = self
                        .leases
                        .iter()
                        .find(|l| l.namespace == c.namespace && l.name == c.lease_name);
                    r.push(opt(&lease.and_then(|l| l.holder_identity.clone())));
                }
                r
            })
            .collect()
    }

    fn names(&self) -> Vec<String> {
        self.candidates
            .iter()
            .map(|c| {
                format!(
                    "leasecandidate.coordination.k8s.io/{}/{}",
                    c.namespace, c.name
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::{render, Format, Options};

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().to_utc()
    }

    fn obj(v: Value) -> DynamicObject {
        serde_json::from_value(v).unwrap()
    }

    fn view() -> CandidatesView {
        let a = obj(serde_json::json!({
            "apiVersion": "coordination.k8s.io/v1beta1", "kind": "LeaseCandidate",
            "metadata": {"name": "kcm-a", "namespace": "kube-system"},
            "spec": {"leaseName": "kube-controller-manager", "binaryVersion": "1.33.0",
                     "emulationVersion": "1.32.0", "strategy": "OldestEmulationVersion",
                     "renewTime": "2026-01-01T00:00:00.000000Z", "pingTime": "2026-01-01T00:00:08.000000Z"}}));
        let b = obj(serde_json::json!({
            "apiVersion": "coordination.k8s.io/v1alpha1", "kind": "LeaseCandidate",
            "metadata": {"name": "kcm-b", "namespace": "kube-system"},
            "spec": {"leaseName": "kube-controller-manager", "binaryVersion": "1.33.0",
                     "preferredStrategies": ["OldestEmulationVersion"],
                     "renewTime": "2025-12-31T23:57:00.000000Z"}}));
        let mut candidates = vec![from_object(&a), from_object(&b)];
        let leases = vec![LeaseSummary {
            namespace: "kube-system".into(),
            name: "kube-controller-manager".into(),
            holder_identity: Some("kcm-b".into()),
            preferred_holder: Some("kcm-a".into()),
            strategy: Some("OldestEmulationVersion".into()),
            renew_time: Some(at("2026-01-01T00:00:09Z")),
            lease_duration_seconds: Some(5),
        }];
        join(&mut candidates, &leases);
        CandidatesView {
            api_version: "coordination.k8s.io/v1beta1".into(),
            candidates,
            leases,
            now: at("2026-01-01T00:00:10Z"),
        }
    }

    fn out(v: &CandidatesView, f: Format) -> String {
        let mut buf = Vec::new();
        render(v, f, Options::default(), &mut buf).unwrap();
        String::from_utf8(buf).unwrap()
    }

    #[test]
    fn flattening() {
        let v = view();
        assert!(v.candidates[0].ping_pending);
        assert!(v.candidates[0].preferred && !v.candidates[0].leader);
        assert!(v.candidates[1].leader && !v.candidates[1].preferred);
        assert_eq!(
            v.candidates[1].strategy.as_deref(),
            Some("OldestEmulationVersion")
        );
        assert_eq!(v.candidates[1].emulation_version, None);
    }

    #[test]
    fn table_and_wide() {
        assert_eq!(
            out(&view(), Format::Table),
            "NAMESPACE     LEASE                     CANDIDATE   BINARY   EMULATION   STRATEGY                 RENEWED   PINGED         LEADER   PREFERRED\n\
             kube-system   kube-controller-manager   kcm-a       1.33.0   1.32.0      OldestEmulationVersion   10s       2s (pending)            *\n\
             kube-system   kube-controller-manager   kcm-b       1.33.0   <none>      OldestEmulationVersion   3m10s     <none>         *\n"
        );
        let wide = out(&view(), Format::Wide);
        assert!(
            wide.lines().next().unwrap().ends_with("PREFERRED   HOLDER"),
            "{wide}"
        );
        assert!(
            wide.lines().nth(1).unwrap().ends_with("*           kcm-b"),
            "{wide}"
        );
    }

    #[test]
    fn json_shape_and_name() {
        let got: Value = serde_json::from_str(&out(&view(), Format::Json)).unwrap();
        assert_eq!(got["apiVersion"], "coordination.k8s.io/v1beta1");
        assert_eq!(
            got["candidates"][0],
            serde_json::json!({"namespace": "kube-system", "name": "kcm-a",
                "leaseName": "kube-controller-manager", "binaryVersion": "1.33.0",
                "emulationVersion": "1.32.0", "strategy": "OldestEmulationVersion",
                "renewTime": "2026-01-01T00:00:00Z", "pingTime": "2026-01-01T00:00:08Z",
                "pingPending": true, "leader": false, "preferred": true})
        );
        assert_eq!(
            got["leases"][0],
            serde_json::json!({"namespace": "kube-system", "name": "kube-controller-manager",
                "holderIdentity": "kcm-b", "preferredHolder": "kcm-a",
                "strategy": "OldestEmulationVersion", "renewTime": "2026-01-01T00:00:09Z",
                "leaseDurationSeconds": 5})
        );
        assert_eq!(
            out(&view(), Format::Name),
            "leasecandidate.coordination.k8s.io/kube-system/kcm-a\nleasecandidate.coordination.k8s.io/kube-system/kcm-b\n"
        );
    }
}
