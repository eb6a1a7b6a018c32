//! Lease-based leader election, the client-go `tools/leaderelection` algorithm with a
//! LeaseLock: `try_acquire_or_renew` is one step; `run` acquires (retrying every retry
//! period), runs the leader's work under a child token while renewing, gives it up when a
//! renewal does not succeed within the renew deadline, and releases the lease on
//! cancellation (`ReleaseOnCancel`). Expiry of someone else's lease is judged by when this
//! process last SAW the record change (observedTime), not by the writer's clock.

use super::util;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::PostParams;
use kube::{Api, Client};
use std::future::Future;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

/// Timers and identity of one leader election.
#[derive(Debug, Clone)]
pub(crate) struct ElectionConfig {
    /// Namespace of the lock lease.
    pub(crate) namespace: String,
    /// Name of the lock lease.
    pub(crate) name: String,
    /// This participant's identity (`<hostname>_<uuid>`).
    pub(crate) identity: String,
    /// How long a non-renewed lease stays valid.
    pub(crate) lease_duration: Duration,
    /// How long the leader keeps retrying a renewal before giving up leadership.
    pub(crate) renew_deadline: Duration,
    /// Pause between attempts.
    pub(crate) retry_period: Duration,
}

/// One participant's view of the lock.
pub(crate) struct Elector {
    api: Api<Lease>,
    config: ElectionConfig,
    /// The last record seen and when it was first seen in that state.
    observed: Option<(Lease, Instant)>,
}

impl Elector {
    /// A participant using `client`.
    pub(crate) fn new(client: Client, config: ElectionConfig) -> Self {
        let api = Api::namespaced(client, &config.namespace);
        Self {
            api,
            config,
            observed: None,
        }
    }

    fn observe(&mut self, lease: Lease) {
        let changed = self
            .observed
            .as_ref()
            .is_none_or(|(old, _)| old.spec != lease.spec);
        if changed {
            self.observed = Some((lease, Instant::now()));
        } else if let Some((old, _)) = self.observed.as_mut() {
            // Same record, newer resourceVersion (e.g. a label edit): keep the observed time.
            *old = lease;
        }
    }

    /// Whether the last observed record names this participant.
    pub(crate) fn is_leader(&self) -> bool {
        self.observed
            .as_ref()
            .is_some_and(|(l, _)| holder(l) == Some(&self.config.identity))
    }

    /// One acquire-or-renew step; Ok(true) when this participant holds the lease now.
    ///
    /// # Errors
    /// The GET, CREATE or UPDATE failed (a Conflict means someone else wrote first).
    pub(crate) async fn try_acquire_or_renew(&mut self) -> Result<bool, kube::Error> {
        let now = util::micro_now();
        let secs = i32::try_from(self.config.lease_duration.as_secs())
            .unwrap_or(i32::MAX)
            .max(1);
        let Some(old) = self.api.get_opt(&self.config.name).await? else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.config.name.clone()),
                    namespace: Some(self.config.namespace.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(LeaseSpec {
                    holder_identity: Some(self.config.identity.clone()),
                    lease_duration_seconds: Some(secs),
                    acquire_time: Some(now.clone()),
                    renew_time: Some(now),
                    lease_transitions: Some(0),
                    ..LeaseSpec::default()
                }),
            };
            let created = self.api.create(&PostParams::default(), &lease).await?;
            self.observe(created);
            return Ok(true);
        };
        self.observe(old.clone());
        let old_holder = holder(&old).map(str::to_string);
        let mine = old_holder.as_deref() == Some(self.config.identity.as_str());
        if let (Some(_), false) = (&old_holder, mine) {
            let record_secs = old.spec.as_ref().and_then(|s| s.lease_duration_seconds);
            let valid_for = record_secs
                .and_then(|s| u64::try_from(s).ok())
                .map_or(self.config.lease_duration, Duration::from_secs);
            let seen_at = self
                .observed
                .as_ref()
                .map_or_else(Instant::now, |(_, t)| *t);
            if seen_at + valid_for > Instant::now() {
                return Ok(false);
            }
        }
        let mut lease = old.clone();
        let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
        if !mine {
            spec.acquire_time = Some(now.clone());
            spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
            spec.preferred_holder = None;
        }
        spec.holder_identity = Some(self.config.identity.clone());
        spec.lease_duration_seconds = Some(secs);
        spec.renew_time = Some(now);
        let updated = self
            .api
            .replace(&self.config.name, &PostParams::default(), &lease)
            .await?;
        self.observe(updated);
        Ok(true)
    }

    /// Gives the lease up if held: empty holder, 1 s duration (client-go `release`).
    pub(crate) async fn release(&mut self) {
        if !self.is_leader() {
            return;
        }
        let Some((mut lease, _)) = self.observed.take() else {
            return;
        };
        let now = util::micro_now();
        let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
        spec.holder_identity = None;
        spec.lease_duration_seconds = Some(1);
        spec.renew_time = Some(now.clone());
        spec.acquire_time = Some(now);
        let pp = PostParams::default();
        let write = self.api.replace(&self.config.name, &pp, &lease);
        match tokio::time::timeout(Duration::from_secs(2), write).await {
            Ok(Ok(_)) => info!(lease = %self.config.name, "released leader lease"),
            Ok(Err(e)) => debug!(error = %util::Brief(&e), "failed to release leader lease"),
            Err(_) => debug!("releasing the leader lease timed out"),
        }
    }
}

fn holder(lease: &Lease) -> Option<&str> {
    lease
        .spec
        .as_ref()
        .and_then(|s| s.holder_identity.as_deref())
        .filter(|h| !h.is_empty())
}

/// Runs `lead` whenever this participant holds the lock, until `cancel` fires; re-enters the
/// election after losing it.
///
/// # Cancellation
/// The leader's token is cancelled, its work awaited, and the lease released.
pub(crate) async fn run<F, Fut>(
    client: Client,
    config: ElectionConfig,
    cancel: CancellationToken,
    lead: F,
) where
    F: Fn(CancellationToken) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let mut elector = Elector::new(client, config.clone());
    loop {
        // Acquire.
        loop {
            match elector.try_acquire_or_renew().await {
                Ok(true) => break,
                Ok(false) => {}
                Err(e) => {
                    debug!(error = %util::Brief(&e), lease = %config.name, "failed to acquire lease")
                }
            }
            let wait = util::jitter(config.retry_period, 1.2);
            if !util::sleep_or_cancel(wait, &cancel).await {
                return;
            }
        }
        info!(lease = %config.name, identity = %config.identity, "successfully acquired lease");
        let leading = cancel.child_token();
        let work = tokio::spawn(lead(leading.clone()));
        renew_until_lost(&mut elector, &config, &cancel).await;
        leading.cancel();
        if let Err(e) = work.await {
            warn!(error = %e, "leader work ended abnormally");
        }
        if cancel.is_cancelled() {
            elector.release().await;
            return;
        }
        warn!(lease = %config.name, "leader election lost");
    }
}

/// Renews every retry period; returns when a renewal has not succeeded within the renew
/// deadline, when someone else holds the lease, or on cancellation.
async fn renew_until_lost(
    elector: &mut Elector,
    config: &ElectionConfig,
    cancel: &CancellationToken,
) {
    let mut last_renew = Instant::now();
    loop {
        if !util::sleep_or_cancel(config.retry_period, cancel).await {
            return;
        }
        let attempt = tokio::time::timeout(config.renew_deadline, elector.try_acquire_or_renew());
        match attempt.await {
            Ok(Ok(true)) => last_renew = Instant::now(),
            Ok(Ok(false)) => return,
            Ok(Err(e)) => debug!(error = %util::Brief(&e), "failed to renew lease"),
            Err(_) => debug!("renewing the lease timed out"),
        }
        if last_renew.elapsed() >= config.renew_deadline {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;

    fn lease(holder: Option<&str>) -> Lease {
        Lease {
            spec: Some(LeaseSpec {
                holder_identity: holder.map(str::to_string),
                renew_time: Some(MicroTime(util::now())),
                ..LeaseSpec::default()
            }),
            ..Lease::default()
        }
    }

    #[test]
    fn holder_ignores_empty() {
        assert_eq!(holder(&lease(Some(""))), None);
        assert_eq!(holder(&lease(Some("a"))), Some("a"));
        assert_eq!(holder(&Lease::default()), None);
    }
}
