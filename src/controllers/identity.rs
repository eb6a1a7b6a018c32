//! API server identity: the ID derivation of k8s.io/apiserver `server/config.go` and the
//! identity Lease heartbeat of `component-helpers/apimachinery/lease/controller.go` as used
//! by kube-apiserver's hook `start-kube-apiserver-identity-lease-controller`, plus the
//! pre-shutdown hook that stops renewing and deletes the lease (so a cleanly stopped server
//! leaves no ghost). May use: nothing internal besides the controllers' helpers.

use super::util::{self, Backoff};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{DeleteParams, PostParams};
use kube::{Api, Client};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

pub(crate) use crate::api::well_known::{
    HOSTNAME_LABEL, IDENTITY_LABEL, KUBE_APISERVER, KUBE_SYSTEM, PEER_ADDRESS_ANNOTATION,
};

const MAX_UPDATE_RETRIES: usize = 5;
const JITTER_FACTOR: f64 = 0.04;

/// The API server ID for `hostname`: `apiserver-` + lowercase unpadded base32 of the first
/// 16 bytes of SHA-256(u16be(len(hostname)) ‖ hostname ‖ u16be(14) ‖ "kube-apiserver").
pub fn apiserver_id(hostname: &str) -> String {
    let mut buf = Vec::with_capacity(hostname.len() + KUBE_APISERVER.len() + 4);
    // Go's cryptobyte length prefix; hostnames are at most 253 bytes, so this never saturates.
    let len = u16::try_from(hostname.len()).unwrap_or(u16::MAX);
    buf.extend_from_slice(&len.to_be_bytes());
    buf.extend_from_slice(hostname.as_bytes());
    let comp_len = u16::try_from(KUBE_APISERVER.len()).unwrap_or(u16::MAX);
    buf.extend_from_slice(&comp_len.to_be_bytes());
    buf.extend_from_slice(KUBE_APISERVER.as_bytes());
    let hash = Sha256::digest(&buf);
    let encoded = data_encoding::BASE32_NOPAD.encode(&hash[..16]);
    format!("apiserver-{}", encoded.to_lowercase())
}

/// Settings of one server's identity lease.
#[derive(Debug, Clone)]
pub(crate) struct IdentitySettings {
    /// Lease name: the apiserver ID.
    pub(crate) lease_name: String,
    /// `<id>_<uuid>`, written only on create.
    pub(crate) holder: String,
    /// `spec.leaseDurationSeconds`.
    pub(crate) duration_seconds: i32,
    /// Renew period (jittered by 4%).
    pub(crate) renew_interval: Duration,
    /// Value of the `kubernetes.io/hostname` label.
    pub(crate) hostname: String,
    /// `ip:port` for the peer annotation, when peer proxying is on.
    pub(crate) peer_address: Option<String>,
}

struct Running {
    client: Client,
    stop: CancellationToken,
    task: JoinHandle<()>,
}

/// The identity lease controller; the post-start half runs the loop, the pre-shutdown half
/// stops it and deletes the lease.
#[derive(Clone)]
pub(crate) struct IdentityLease {
    settings: Arc<IdentitySettings>,
    running: Arc<Mutex<Option<Running>>>,
}

impl IdentityLease {
    /// A controller for `settings`, not yet started.
    pub(crate) fn new(settings: IdentitySettings) -> Self {
        Self {
            settings: Arc::new(settings),
            running: Arc::new(Mutex::new(None)),
        }
    }

    /// Starts the renew loop on `ctx.tasks` (post-start hook body).
    pub(crate) fn start(&self, ctx: &crate::server::hooks::HookContext) {
        let stop = ctx.cancel.child_token();
        let heart = Heartbeat {
            api: Api::namespaced(ctx.client.clone(), KUBE_SYSTEM),
            settings: self.settings.clone(),
            stop: stop.clone(),
            cached: None,
        };
        let task = ctx.tasks.spawn(heart.run());
        let previous = self
            .running
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .replace(Running {
                client: ctx.client.clone(),
                stop,
                task,
            });
        if let Some(old) = previous {
            old.stop.cancel();
        }
    }

    /// Stops renewing and deletes this server's lease (pre-shutdown hook body).
    ///
    /// # Errors
    /// The DELETE failed for another reason than NotFound.
    pub(crate) async fn stop_and_delete(&self) -> Result<(), kube::Error> {
        let running = self
            .running
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        let Some(running) = running else {
            return Ok(());
        };
        running.stop.cancel();
        // The loop may be mid-write; wait for it so it cannot recreate the lease afterwards.
        if tokio::time::timeout(Duration::from_secs(5), running.task)
            .await
            .is_err()
        {
            warn!("identity lease renew loop did not stop within 5s");
        }
        let api: Api<Lease> = Api::namespaced(running.client, KUBE_SYSTEM);
        match api
            .delete(&self.settings.lease_name, &DeleteParams::default())
            .await
        {
            Ok(_) => {
                info!(lease = %self.settings.lease_name, "deleted identity lease");
                Ok(())
            }
            Err(e) if util::is_not_found(&e) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

/// The renew loop's state (the `controller` struct of component-helpers' lease package).
struct Heartbeat {
    api: Api<Lease>,
    settings: Arc<IdentitySettings>,
    stop: CancellationToken,
    /// The lease from the last successful write, for optimistic updates without a GET.
    cached: Option<Lease>,
}

impl Heartbeat {
    async fn run(mut self) {
        info!(lease = %self.settings.lease_name, holder = %self.settings.holder,
            "starting identity lease controller");
        loop {
            self.sync().await;
            let wait = util::jitter(self.settings.renew_interval, JITTER_FACTOR);
            if !util::sleep_or_cancel(wait, &self.stop).await {
                break;
            }
        }
        debug!(lease = %self.settings.lease_name, "identity lease controller stopped");
    }

    async fn sync(&mut self) {
        if let Some(latest) = self.cached.take() {
            if self.retry_update(latest).await {
                return;
            }
            debug!("failed to update lease using latest lease, fallback to ensure lease");
        }
        let Some((lease, created)) = self.backoff_ensure().await else {
            return;
        };
        if created {
            self.cached = Some(lease);
        } else if !self.retry_update(lease).await {
            warn!(lease = %self.settings.lease_name, "failed {MAX_UPDATE_RETRIES} attempts to update lease");
        }
    }

    /// GET the lease, CREATE it when missing; retries with backoff (200ms doubling to 7s)
    /// until it succeeds. None only when stopped.
    async fn backoff_ensure(&mut self) -> Option<(Lease, bool)> {
        let mut backoff = Backoff::new(Duration::from_millis(200), Duration::from_secs(7));
        loop {
            match self.ensure().await {
                Ok(found) => return Some(found),
                Err(e) => {
                    warn!(error = %util::Brief(&e), "failed to ensure identity lease exists, will retry")
                }
            }
            if !util::sleep_or_cancel(backoff.next_delay(), &self.stop).await {
                return None;
            }
        }
    }

    async fn ensure(&self) -> Result<(Lease, bool), kube::Error> {
        match self.api.get(&self.settings.lease_name).await {
            Ok(lease) => Ok((lease, false)),
            Err(e) if util::is_not_found(&e) => {
                let lease = new_lease(&self.settings, None);
                let created = self.api.create(&PostParams::default(), &lease).await?;
                info!(lease = %self.settings.lease_name, "created identity lease");
                Ok((created, true))
            }
            Err(e) => Err(e),
        }
    }

    /// UPDATE from `base` with a fresh renewTime; on Conflict re-GET and retry. True on success.
    async fn retry_update(&mut self, mut base: Lease) -> bool {
        for _ in 0..MAX_UPDATE_RETRIES {
            if self.stop.is_cancelled() {
                return false;
            }
            let lease = new_lease(&self.settings, Some(base.clone()));
            match self
                .api
                .replace(&self.settings.lease_name, &PostParams::default(), &lease)
                .await
            {
                Ok(updated) => {
                    self.cached = Some(updated);
                    crate::metrics::global().control.identity_renewal(true);
                    return true;
                }
                Err(e) if util::is_conflict(&e) || util::is_not_found(&e) => {
                    debug!(error = %util::Brief(&e), "identity lease changed underneath us, refetching");
                    match self.backoff_ensure().await {
                        Some((fresh, true)) => {
                            self.cached = Some(fresh);
                            return true;
                        }
                        Some((fresh, false)) => base = fresh,
                        None => return false,
                    }
                }
                Err(e) => {
                    crate::metrics::global().control.identity_renewal(false);
                    warn!(error = %util::Brief(&e), "failed to update identity lease")
                }
            }
        }
        false
    }
}

/// The desired lease: a fresh object on create (holder set only here), else a copy of
/// `base`; renewTime = now, duration, labels and annotation applied (the heartbeat
/// post-process function of server.go).
pub(crate) fn new_lease(settings: &IdentitySettings, base: Option<Lease>) -> Lease {
    let mut lease = base.unwrap_or_else(|| Lease {
        metadata: ObjectMeta {
            name: Some(settings.lease_name.clone()),
            namespace: Some(KUBE_SYSTEM.to_string()),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some(settings.holder.clone()),
            ..LeaseSpec::default()
        }),
    });
    let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
    spec.lease_duration_seconds = Some(settings.duration_seconds);
    spec.renew_time = Some(util::micro_now());
    let labels = lease.metadata.labels.get_or_insert_with(BTreeMap::new);
    labels.insert(IDENTITY_LABEL.to_string(), KUBE_APISERVER.to_string());
    labels.insert(HOSTNAME_LABEL.to_string(), settings.hostname.clone());
    if let Some(addr) = settings.peer_address.as_deref().filter(|a| !a.is_empty()) {
        lease
            .metadata
            .annotations
            .get_or_insert_with(BTreeMap::new)
            .insert(PEER_ADDRESS_ANNOTATION.to_string(), addr.to_string());
    }
    lease
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_matches_reference_vectors() {
        assert_eq!(
            apiserver_id("node-1"),
            "apiserver-lgabes5ywnaqeagh5dny4zlzs4"
        );
        assert_eq!(
            apiserver_id("localhost"),
            "apiserver-l2yubf4cvcl5c7a3wrubrwqdve"
        );
        assert_eq!(
            apiserver_id("kind-control-plane"),
            "apiserver-c7uylvfxlbqccnk6myfkwetzze"
        );
        assert_eq!(apiserver_id("x").len(), 36);
    }

    fn settings(peer: Option<&str>) -> IdentitySettings {
        IdentitySettings {
            lease_name: apiserver_id("node-1"),
            holder: format!("{}_1234", apiserver_id("node-1")),
            duration_seconds: 3600,
            renew_interval: Duration::from_secs(10),
            hostname: "node-1".into(),
            peer_address: peer.map(str::to_string),
        }
    }

    #[test]
    fn new_lease_shape() {
        let lease = new_lease(&settings(None), None);
        let json = serde_json::to_value(&lease).unwrap();
        assert_eq!(
            json["metadata"]["name"],
            "apiserver-lgabes5ywnaqeagh5dny4zlzs4"
        );
        assert_eq!(json["metadata"]["namespace"], "kube-system");
        assert_eq!(json["metadata"]["labels"][IDENTITY_LABEL], "kube-apiserver");
        assert_eq!(json["metadata"]["labels"][HOSTNAME_LABEL], "node-1");
        assert!(json["metadata"].get("annotations").is_none());
        assert_eq!(
            json["spec"]["holderIdentity"],
            "apiserver-lgabes5ywnaqeagh5dny4zlzs4_1234"
        );
        assert_eq!(json["spec"]["leaseDurationSeconds"], 3600);
        let renew = json["spec"]["renewTime"].as_str().unwrap();
        assert_eq!(renew.len(), "2025-01-02T03:04:05.123456Z".len(), "{renew}");
        assert!(json["spec"].get("acquireTime").is_none());
        assert!(json["spec"].get("leaseTransitions").is_none());
    }

    #[test]
    fn renewal_keeps_holder_and_adds_peer_annotation() {
        let mut base = new_lease(&settings(None), None);
        base.spec.as_mut().unwrap().holder_identity = Some("previous-process".into());
        base.spec.as_mut().unwrap().lease_duration_seconds = Some(1);
        let lease = new_lease(&settings(Some("10.0.0.1:6443")), Some(base));
        let spec = lease.spec.unwrap();
        assert_eq!(spec.holder_identity.as_deref(), Some("previous-process"));
        assert_eq!(spec.lease_duration_seconds, Some(3600));
        assert_eq!(
            lease.metadata.annotations.unwrap()[PEER_ADDRESS_ANNOTATION],
            "10.0.0.1:6443"
        );
    }
}
