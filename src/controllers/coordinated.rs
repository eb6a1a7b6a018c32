//! The coordinated-leader-election controller (`pkg/controlplane/controller/leaderelection/
//! leaderelection_controller.go`): watches Leases and LeaseCandidates, keys work by
//! `namespace/leaseName`, pings candidates, waits for their acks and writes the elected
//! holder (free or expired lease) or only `preferredHolder` (live lease). Decisions live in
//! `election.rs`; this file does the I/O and the work queue.
//!
//! Better than upstream: every key that has candidates is re-evaluated every requeue period
//! and all candidate keys are swept periodically, so a deleted or expired preferred holder
//! is replaced without waiting for an unrelated event (the stall of k8s PR 138066).

use super::election::{self, Ping, OLDEST_EMULATION_VERSION, REQUEUE};
use super::informer::SharedWatch;
use super::util;
use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::coordination::v1beta1::LeaseCandidate;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{ListParams, PostParams};
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, Client, ResourceExt};
use std::collections::{HashMap, HashSet};
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, info_span, warn, Instrument};

/// Every candidate key is re-listed this often even without events.
const SWEEP: Duration = Duration::from_secs(30);

/// What a reconcile failed on.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    /// Listing the candidates of a key failed.
    #[error("listing lease candidates failed")]
    ListCandidates(#[source] kube::Error),
    /// Reading the lease failed.
    #[error("reading lease failed")]
    GetLease(#[source] kube::Error),
    /// Writing `pingTime` on a candidate failed.
    #[error("pinging lease candidate {0:?} failed")]
    Ping(String, #[source] kube::Error),
    /// Creating or updating the lease failed.
    #[error("writing lease failed")]
    WriteLease(#[source] kube::Error),
    /// The candidates disagree or none answered.
    #[error(transparent)]
    Election(#[from] election::Error),
}

/// A de-duplicating delay queue of keys (client-go workqueue, one worker).
#[derive(Default)]
struct WorkQueue {
    due: HashMap<String, Instant>,
}

impl WorkQueue {
    fn add_after(&mut self, key: String, delay: Duration) {
        let at = Instant::now() + delay;
        self.due
            .entry(key)
            .and_modify(|t| *t = (*t).min(at))
            .or_insert(at);
    }

    fn add(&mut self, key: String) {
        self.add_after(key, Duration::ZERO);
    }

    fn pop_ready(&mut self) -> Option<String> {
        let now = Instant::now();
        let key = self
            .due
            .iter()
            .filter(|(_, t)| **t <= now)
            .min_by_key(|(_, t)| **t)?
            .0
            .clone();
        self.due.remove(&key);
        Some(key)
    }

    fn next_deadline(&self) -> Option<Instant> {
        self.due.values().min().copied()
    }
}

fn candidate_key(c: &LeaseCandidate) -> Option<String> {
    let spec = c.spec.as_ref()?;
    Some(format!(
        "{}/{}",
        c.namespace().unwrap_or_default(),
        spec.lease_name
    ))
}

/// Our own ping writes (ack pending) do not enqueue; everything else does.
fn ack_pending(c: &LeaseCandidate) -> bool {
    let Some(spec) = c.spec.as_ref() else {
        return false;
    };
    match (&spec.ping_time, &spec.renew_time) {
        (Some(p), Some(r)) => r.0 < p.0,
        (Some(_), None) => true,
        _ => false,
    }
}

/// Runs the controller until `cancel` fires. Leases come from the watch shared with the
/// garbage collector; only their names matter here (reconcile reads the lease itself).
pub(crate) async fn run(client: Client, cancel: CancellationToken, leases: SharedWatch) {
    info!("starting coordinated leader election controller");
    let leases = leases.subscribe(&client);
    let cands = watcher(
        Api::<LeaseCandidate>::all(client.clone()),
        watcher::Config::default(),
    )
    .default_backoff()
    .boxed();
    let mut leases = leases.fuse();
    let mut cands = cands.fuse();
    let mut queue = WorkQueue::default();
    let mut known: HashSet<String> = HashSet::new();
    let mut sweep = tokio::time::interval(SWEEP);
    let ctl = Reconciler { client };
    // One timer for the queue's next deadline and one cancellation waiter for the whole loop:
    // a new `sleep_until` per event would register and drop a timer for every lease update.
    let cancelled = cancel.cancelled();
    tokio::pin!(cancelled);
    let timer = tokio::time::sleep(SWEEP);
    tokio::pin!(timer);
    loop {
        while let Some(key) = queue.pop_ready() {
            if cancel.is_cancelled() {
                return;
            }
            let span = info_span!("reconcile", controller = "leader-election", key = %key);
            match ctl.reconcile(&key).instrument(span).await {
                Ok(Some(after)) => queue.add_after(key, after),
                Ok(None) => {
                    known.remove(&key);
                }
                Err(e) => {
                    warn!(key = %key, error = %format!("{e:#}"), "coordinated leader election failed");
                    queue.add_after(key, REQUEUE);
                }
            }
        }
        match queue.next_deadline() {
            Some(at) if at != timer.deadline() => timer.as_mut().reset(at),
            // Nothing queued: the sweep wakes the loop; the timer only must not stay elapsed.
            None if timer.is_elapsed() => timer.as_mut().reset(Instant::now() + SWEEP),
            _ => {}
        }
        tokio::select! {
            () = &mut cancelled => return,
            Some(ev) = leases.next() => match ev {
                watcher::Event::Apply(l) | watcher::Event::InitApply(l) | watcher::Event::Delete(l) => {
                    // Most leases have no candidates: skip the key for those clusters.
                    if !known.is_empty() {
                        let key = util::object_key(&l);
                        if known.contains(&key) {
                            queue.add(key);
                        }
                    }
                }
                watcher::Event::Init | watcher::Event::InitDone => {}
            },
            Some(ev) = cands.next() => match ev {
                Ok(watcher::Event::Apply(c) | watcher::Event::InitApply(c)) if !ack_pending(&c) => {
                    if let Some(key) = candidate_key(&c) {
                        known.insert(key.clone());
                        queue.add(key);
                    }
                }
                Ok(watcher::Event::Delete(c)) => {
                    if let Some(key) = candidate_key(&c) {
                        queue.add(key);
                    }
                }
                Ok(_) => {}
                Err(e) => debug!(error = %e, "lease candidate watch error"),
            },
            () = &mut timer => {}
            _ = sweep.tick() => {
                match Api::<LeaseCandidate>::all(ctl.client.clone()).list(&ListParams::default()).await {
                    Ok(list) => for key in list.items.iter().filter_map(candidate_key) {
                        known.insert(key.clone());
                        queue.add(key);
                    },
                    Err(e) => debug!(error = %util::Brief(&e), "sweeping lease candidates failed"),
                }
            }
        }
    }
}

struct Reconciler {
    client: Client,
}

impl Reconciler {
    /// Reconciles one `namespace/leaseName`; Some(delay) requeues.
    async fn reconcile(&self, key: &str) -> Result<Option<Duration>, Error> {
        let Some((ns, name)) = key.split_once('/') else {
            return Ok(None);
        };
        let cand_api: Api<LeaseCandidate> = Api::namespaced(self.client.clone(), ns);
        let lease_api: Api<Lease> = Api::namespaced(self.client.clone(), ns);
        let all = cand_api
            .list(&ListParams::default())
            .await
            .map_err(Error::ListCandidates)?;
        let now = util::now();
        let candidates = election::valid_candidates(all.items, name, now);
        if candidates.is_empty() {
            return Ok(None);
        }
        let lease = lease_api.get_opt(name).await.map_err(Error::GetLease)?;
        if !election::election_needed(lease.as_ref(), &candidates, now)? {
            return Ok(Some(REQUEUE));
        }
        // Ping phase.
        let mut wait = false;
        for c in &candidates {
            match election::ping_state(c, now) {
                Ping::Pending => wait = true,
                Ping::Send => {
                    let pinged = election::pinged(c.clone(), now);
                    cand_api
                        .replace(&c.name_any(), &PostParams::default(), &pinged)
                        .await
                        .map_err(|e| Error::Ping(c.name_any(), e))?;
                    debug!(candidate = %c.name_any(), "pinged lease candidate");
                    wait = true;
                }
                Ping::Fresh | Ping::TimedOut => {}
            }
        }
        if wait {
            return Ok(Some(REQUEUE.min(Duration::from_secs(1))));
        }
        let acked = election::acked(&candidates, now);
        if acked.is_empty() {
            return Err(election::Error::NoAvailableCandidates.into());
        }
        let strategy = election::pick_strategy(&acked)?
            .unwrap_or_else(|| OLDEST_EMULATION_VERSION.to_string());
        let holder = (strategy == OLDEST_EMULATION_VERSION)
            .then(|| election::best_candidate(&acked).map(ResourceExt::name_any))
            .flatten();
        let desired = Lease {
            metadata: ObjectMeta {
                name: Some(name.to_string()),
                namespace: Some(ns.to_string()),
                ..ObjectMeta::default()
            },
            spec: Some(election::desired_spec(&strategy, holder.as_deref(), now)),
        };
        match lease_api.create(&PostParams::default(), &desired).await {
            Ok(_) => {
                info!(lease = %key, holder = ?holder, "elected lease holder");
                return Ok(Some(REQUEUE));
            }
            Err(e) if util::is_already_exists(&e) => {}
            Err(e) => return Err(Error::WriteLease(e)),
        }
        let existing = lease_api.get(name).await.map_err(Error::GetLease)?;
        let Some(updated) =
            election::apply_election(&existing, &strategy, holder.as_deref(), util::now())
        else {
            return Ok(Some(REQUEUE));
        };
        lease_api
            .replace(name, &PostParams::default(), &updated)
            .await
            .map_err(Error::WriteLease)?;
        let spec = updated.spec.unwrap_or_default();
        info!(lease = %key, holder = ?spec.holder_identity, preferred = ?spec.preferred_holder,
            "updated lease after election");
        Ok(Some(REQUEUE))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::coordination::v1beta1::LeaseCandidateSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;

    #[test]
    fn queue_dedupes_and_orders() {
        let mut q = WorkQueue::default();
        q.add_after("b".into(), Duration::from_secs(5));
        q.add("a".into());
        q.add("a".into());
        assert_eq!(q.pop_ready().as_deref(), Some("a"));
        assert_eq!(q.pop_ready(), None, "b is not due yet");
        q.add_after("b".into(), Duration::from_secs(60));
        let deadline = q.next_deadline().unwrap();
        assert!(
            deadline <= Instant::now() + Duration::from_secs(5),
            "earlier deadline kept"
        );
        q.add("b".into());
        assert_eq!(q.pop_ready().as_deref(), Some("b"));
        assert!(q.next_deadline().is_none());
    }

    #[test]
    fn keys_and_ack_filter() {
        let t = |s: i64| MicroTime(k8s_openapi::jiff::Timestamp::from_second(s).unwrap());
        let mut c = LeaseCandidate {
            metadata: ObjectMeta {
                namespace: Some("ns".into()),
                ..ObjectMeta::default()
            },
            spec: Some(LeaseCandidateSpec {
                lease_name: "lock".into(),
                renew_time: Some(t(10)),
                ..LeaseCandidateSpec::default()
            }),
        };
        assert_eq!(candidate_key(&c).as_deref(), Some("ns/lock"));
        assert!(!ack_pending(&c));
        c.spec.as_mut().unwrap().ping_time = Some(t(11));
        assert!(ack_pending(&c));
        c.spec.as_mut().unwrap().renew_time = Some(t(11));
        assert!(!ack_pending(&c));
    }
}
