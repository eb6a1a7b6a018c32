//! Garbage collectors of expired coordination objects: identity leases
//! (`pkg/controlplane/controller/apiserverleasegc`, hook
//! `start-kube-apiserver-identity-lease-garbage-collector`) and LeaseCandidates
//! (`leaderelection/leasecandidategc_controller.go`, run by the coordinated-leader-election
//! leader). Both list, then re-GET each expired object and delete it with a uid +
//! resourceVersion precondition, so a lease renewed in between is never removed.

use super::util;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::coordination::v1beta1::LeaseCandidate;
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, ListParams, Preconditions};
use kube::{Api, Client, Resource, ResourceExt};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

/// A failed pass is retried this soon instead of a whole (possibly hour-long) period later.
const RETRY: Duration = Duration::from_secs(5);

/// A LeaseCandidate not renewed for this long is expired (k8s `leaseCandidateValidDuration`).
pub(crate) const CANDIDATE_VALID: Duration = Duration::from_secs(30 * 60);

/// Whether an identity lease is expired (renewTime/duration missing, or renewTime + duration
/// before now).
pub(crate) fn identity_lease_expired(lease: &Lease, now: Timestamp) -> bool {
    let spec = lease.spec.as_ref();
    util::lease_expired(
        spec.and_then(|s| s.renew_time.as_ref()),
        spec.and_then(|s| s.lease_duration_seconds),
        now,
    )
}

/// Whether a LeaseCandidate is expired: no renewTime, or renewTime + 30 min before now.
pub(crate) fn candidate_expired(candidate: &LeaseCandidate, now: Timestamp) -> bool {
    match candidate.spec.as_ref().and_then(|s| s.renew_time.as_ref()) {
        Some(renew) => util::add(renew.0, CANDIDATE_VALID) < now,
        None => true,
    }
}

/// Runs the identity lease GC in namespace kube-system every `period` (first pass at once).
pub(crate) async fn run_identity_lease_gc(
    client: Client,
    selector: String,
    period: Duration,
    cancel: CancellationToken,
) {
    let api: Api<Lease> = Api::namespaced(client, super::identity::KUBE_SYSTEM);
    loop {
        let wait = match gc_pass(&api, &selector, identity_lease_expired).await {
            Ok(n) => {
                if n > 0 {
                    info!(deleted = n, "garbage-collected expired identity leases");
                }
                period
            }
            Err(e) => {
                warn!(error = %util::Brief(&e), "identity lease garbage collection failed");
                period.min(RETRY)
            }
        };
        if !util::sleep_or_cancel(wait, &cancel).await {
            return;
        }
    }
}

/// Runs the LeaseCandidate GC over all namespaces every `period` until `cancel` fires.
pub(crate) async fn run_candidate_gc(client: Client, period: Duration, cancel: CancellationToken) {
    let api: Api<LeaseCandidate> = Api::all(client.clone());
    loop {
        let listed = api.list(&ListParams::default()).await;
        let wait = if listed.is_ok() {
            period
        } else {
            period.min(RETRY)
        };
        match listed {
            Ok(list) => {
                let now = util::now();
                for c in list.items.iter().filter(|c| candidate_expired(c, now)) {
                    let ns = c.namespace().unwrap_or_default();
                    let scoped: Api<LeaseCandidate> = Api::namespaced(client.clone(), &ns);
                    match delete_if_still(&scoped, &c.name_any(), candidate_expired).await {
                        Ok(true) => info!(namespace = %ns, candidate = %c.name_any(),
                            "garbage-collected expired lease candidate"),
                        Ok(false) => {}
                        Err(e) => {
                            warn!(error = %util::Brief(&e), "deleting an expired lease candidate failed")
                        }
                    }
                }
            }
            Err(e) => {
                warn!(error = %util::Brief(&e), "listing lease candidates for garbage collection failed")
            }
        }
        if !util::sleep_or_cancel(wait, &cancel).await {
            return;
        }
    }
}

/// One pass: list by `selector`, delete every object still expired after a re-GET.
async fn gc_pass<K>(
    api: &Api<K>,
    selector: &str,
    expired: fn(&K, Timestamp) -> bool,
) -> Result<usize, kube::Error>
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let list = api.list(&ListParams::default().labels(selector)).await?;
    let now = util::now();
    let mut deleted = 0;
    for obj in list.items.iter().filter(|o| expired(o, now)) {
        if delete_if_still(api, &obj.name_any(), expired).await? {
            deleted += 1;
        }
    }
    Ok(deleted)
}

/// Re-GETs `name`; if it is still expired, deletes exactly that version. True when deleted.
async fn delete_if_still<K>(
    api: &Api<K>,
    name: &str,
    expired: fn(&K, Timestamp) -> bool,
) -> Result<bool, kube::Error>
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let Some(fresh) = api.get_opt(name).await? else {
        return Ok(false);
    };
    if !expired(&fresh, util::now()) {
        debug!(name, "object was renewed since listing; keeping it");
        return Ok(false);
    }
    let dp = DeleteParams {
        preconditions: Some(Preconditions {
            uid: fresh.meta().uid.clone(),
            resource_version: fresh.meta().resource_version.clone(),
        }),
        ..DeleteParams::default()
    };
    match api.delete(name, &dp).await {
        Ok(_) => Ok(true),
        Err(e) if util::is_not_found(&e) || util::is_conflict(&e) => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::coordination::v1::LeaseSpec;
    use k8s_openapi::api::coordination::v1beta1::LeaseCandidateSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn identity_expiry() {
        let lease = |renew: Option<&str>, dur: Option<i32>| Lease {
            spec: Some(LeaseSpec {
                renew_time: renew.map(|r| MicroTime(ts(r))),
                lease_duration_seconds: dur,
                ..LeaseSpec::default()
            }),
            ..Lease::default()
        };
        let now = ts("2025-01-01T01:00:00Z");
        assert!(identity_lease_expired(
            &lease(Some("2025-01-01T00:00:00Z"), Some(3599)),
            now
        ));
        assert!(!identity_lease_expired(
            &lease(Some("2025-01-01T00:00:00Z"), Some(3600)),
            now
        ));
        assert!(identity_lease_expired(&lease(None, Some(3600)), now));
        assert!(identity_lease_expired(
            &lease(Some("2025-01-01T00:59:59Z"), None),
            now
        ));
        assert!(identity_lease_expired(&Lease::default(), now));
    }

    #[test]
    fn candidate_expiry() {
        let cand = |renew: Option<&str>| LeaseCandidate {
            spec: Some(LeaseCandidateSpec {
                renew_time: renew.map(|r| MicroTime(ts(r))),
                ..LeaseCandidateSpec::default()
            }),
            ..LeaseCandidate::default()
        };
        let now = ts("2025-01-01T01:00:00Z");
        assert!(candidate_expired(&cand(None), now));
        assert!(candidate_expired(&cand(Some("2025-01-01T00:29:59Z")), now));
        assert!(!candidate_expired(&cand(Some("2025-01-01T00:30:00Z")), now));
    }
}
