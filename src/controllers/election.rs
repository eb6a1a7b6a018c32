//! The pure decisions of coordinated leader election (`pkg/controlplane/controller/
//! leaderelection/election.go` and the reconcile of `leaderelection_controller.go`):
//! candidate ordering for `OldestEmulationVersion`, the strategy vote, whether an election
//! is needed, the ping/ack state of a candidate and the Lease change an election makes.
//! Everything takes `now` so it is testable without clocks.

use super::gc::candidate_expired;
use super::util;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::coordination::v1beta1::LeaseCandidate;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use std::cmp::Ordering;
use std::time::Duration;

/// The only strategy the controller elects holders for.
pub(crate) const OLDEST_EMULATION_VERSION: &str = "OldestEmulationVersion";
/// How long a candidate has to answer a ping (k8s `electionDuration`).
pub(crate) const ELECTION_DURATION: Duration = Duration::from_secs(5);
/// Re-evaluation period of a key (k8s `defaultRequeueInterval`).
pub(crate) const REQUEUE: Duration = Duration::from_secs(5);
/// `leaseDurationSeconds` written on an elected lease (k8s `defaultLeaseDurationSeconds`).
pub(crate) const LEASE_DURATION_SECONDS: i32 = 5;
/// A candidate not renewed for this long forces a re-election (half the validity).
pub(crate) const CANDIDATE_STALE: Duration = Duration::from_secs(15 * 60);

/// Why no strategy could be chosen.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum Error {
    /// Two candidates at the highest binary version disagree on the strategy.
    #[error("candidates {a:?}, {b:?} at same binary version but received differing strategies {sa}, {sb}")]
    DifferingStrategies {
        /// First candidate.
        a: String,
        /// Second candidate.
        b: String,
        /// Its strategy.
        sa: String,
        /// The other strategy.
        sb: String,
    },
    /// No candidate answered its ping.
    #[error("no available candidates")]
    NoAvailableCandidates,
}

/// Parses a version like Go's `semver.ParseTolerant`: trims spaces and a leading `v`, and
/// pads a missing minor/patch with `.0`.
pub(crate) fn parse_version(raw: &str) -> Option<semver::Version> {
    let v = raw.trim();
    let v = v.strip_prefix('v').unwrap_or(v);
    let split = v.find(['-', '+']).unwrap_or(v.len());
    let (core, rest) = v.split_at(split);
    let parts = core.split('.').count();
    let padded = match parts {
        1 => format!("{core}.0.0{rest}"),
        2 => format!("{core}.0{rest}"),
        _ => v.to_string(),
    };
    semver::Version::parse(&padded).ok()
}

fn versions(c: &LeaseCandidate) -> Option<(semver::Version, semver::Version)> {
    let spec = c.spec.as_ref()?;
    let emulation = parse_version(spec.emulation_version.as_deref()?)?;
    let binary = parse_version(&spec.binary_version)?;
    Some((emulation, binary))
}

/// `OldestEmulationVersion` order: lower emulation version, then lower binary version, then
/// older creation; the name breaks a last tie so the choice is deterministic.
fn compare(
    a: &LeaseCandidate,
    av: &(semver::Version, semver::Version),
    b: &LeaseCandidate,
    bv: &(semver::Version, semver::Version),
) -> Ordering {
    av.0.cmp(&bv.0)
        .then_with(|| av.1.cmp(&bv.1))
        .then_with(|| {
            let at = a.metadata.creation_timestamp.as_ref().map(|t| t.0);
            let bt = b.metadata.creation_timestamp.as_ref().map(|t| t.0);
            match (at, bt) {
                (Some(x), Some(y)) => x.cmp(&y),
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (None, None) => Ordering::Equal,
            }
        })
        .then_with(|| a.name_any().cmp(&b.name_any()))
}

/// The best candidate under `OldestEmulationVersion`; candidates with unparsable versions are
/// skipped.
pub(crate) fn best_candidate(candidates: &[LeaseCandidate]) -> Option<&LeaseCandidate> {
    candidates
        .iter()
        .filter_map(|c| versions(c).map(|v| (c, v)))
        .min_by(|(a, av), (b, bv)| compare(a, av, b, bv))
        .map(|(c, _)| c)
}

/// The strategy of the candidate with the highest binary version (unparsable = 0.0.0); two
/// such candidates with different strategies are an error.
pub(crate) fn pick_strategy(candidates: &[LeaseCandidate]) -> Result<Option<String>, Error> {
    let zero = semver::Version::new(0, 0, 0);
    let mut best: Option<(&LeaseCandidate, semver::Version)> = None;
    for c in candidates {
        let Some(spec) = c.spec.as_ref() else {
            continue;
        };
        let v = parse_version(&spec.binary_version).unwrap_or_else(|| zero.clone());
        match &best {
            Some((b, bv)) if *bv == v => {
                let bs = b
                    .spec
                    .as_ref()
                    .map(|s| s.strategy.as_str())
                    .unwrap_or_default();
                if bs != spec.strategy {
                    return Err(Error::DifferingStrategies {
                        a: b.name_any(),
                        b: c.name_any(),
                        sa: bs.to_string(),
                        sb: spec.strategy.clone(),
                    });
                }
            }
            Some((_, bv)) if *bv > v => {}
            _ => best = Some((c, v)),
        }
    }
    Ok(best.and_then(|(c, _)| c.spec.as_ref().map(|s| s.strategy.clone())))
}

/// Candidates for `lease_name` that are not expired (renewed within 30 minutes).
pub(crate) fn valid_candidates(
    all: Vec<LeaseCandidate>,
    lease_name: &str,
    now: Timestamp,
) -> Vec<LeaseCandidate> {
    all.into_iter()
        .filter(|c| c.spec.as_ref().is_some_and(|s| s.lease_name == lease_name))
        .filter(|c| !candidate_expired(c, now))
        .collect()
}

fn lease_expired(lease: &Lease, now: Timestamp) -> bool {
    let spec = lease.spec.as_ref();
    util::lease_expired(
        spec.and_then(|s| s.renew_time.as_ref()),
        spec.and_then(|s| s.lease_duration_seconds),
        now,
    )
}

fn holder(lease: &Lease) -> Option<&str> {
    lease
        .spec
        .as_ref()
        .and_then(|s| s.holder_identity.as_deref())
        .filter(|h| !h.is_empty())
}

/// Whether the key needs an election (step 2). Unlike upstream, a `preferredHolder` that
/// no longer names the best candidate also triggers one, so a deleted/expired preferred
/// holder is replaced within one requeue period (k8s PR 138066).
pub(crate) fn election_needed(
    lease: Option<&Lease>,
    candidates: &[LeaseCandidate],
    now: Timestamp,
) -> Result<bool, Error> {
    let Some(lease) = lease else { return Ok(true) };
    if lease_expired(lease, now) || holder(lease).is_none() {
        return Ok(true);
    }
    let stale = candidates.iter().any(|c| {
        c.spec
            .as_ref()
            .and_then(|s| s.renew_time.as_ref())
            .is_some_and(|r| util::add(r.0, CANDIDATE_STALE) < now)
    });
    if stale {
        return Ok(true);
    }
    if pick_strategy(candidates)?.as_deref() != Some(OLDEST_EMULATION_VERSION) {
        return Ok(false);
    }
    let Some(best) = best_candidate(candidates) else {
        return Ok(false);
    };
    let best = best.name_any();
    let preferred = lease
        .spec
        .as_ref()
        .and_then(|s| s.preferred_holder.as_deref());
    let best = Some(best.as_str());
    let holder_wrong = holder(lease) != best && preferred != best;
    let preference_wrong = preferred.is_some() && preferred != best;
    Ok(holder_wrong || preference_wrong)
}

/// Where a candidate stands in the ping/ack handshake (step 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ping {
    /// A ping is outstanding and still inside its window: wait for the ack.
    Pending,
    /// Renewed within the election window: counts as acked.
    Fresh,
    /// Needs a ping (never pinged, or the last ping was acked long ago).
    Send,
    /// Its ping timed out unanswered: neither re-pinged nor waited for.
    TimedOut,
}

/// The ping state of `c` at `now`.
pub(crate) fn ping_state(c: &LeaseCandidate, now: Timestamp) -> Ping {
    let spec = c.spec.as_ref();
    let ping = spec.and_then(|s| s.ping_time.as_ref()).map(|t| t.0);
    let renew = spec.and_then(|s| s.renew_time.as_ref()).map(|t| t.0);
    let acked = |p: Timestamp| renew.is_some_and(|r| r >= p);
    if let Some(p) = ping {
        if util::add(p, ELECTION_DURATION) > now && !acked(p) {
            return Ping::Pending;
        }
    }
    if renew.is_some_and(|r| util::add(r, ELECTION_DURATION) > now) {
        return Ping::Fresh;
    }
    match ping {
        None => Ping::Send,
        Some(p) if acked(p) => Ping::Send,
        Some(_) => Ping::TimedOut,
    }
}

/// The candidate with `pingTime = now` (the ping write of step 3c).
pub(crate) fn pinged(mut c: LeaseCandidate, now: Timestamp) -> LeaseCandidate {
    if let Some(spec) = c.spec.as_mut() {
        spec.ping_time = Some(MicroTime(now));
    }
    c
}

/// Candidates that acked within the election window (step 5).
pub(crate) fn acked(candidates: &[LeaseCandidate], now: Timestamp) -> Vec<LeaseCandidate> {
    candidates
        .iter()
        .filter(|c| ping_state(c, now) == Ping::Fresh)
        .cloned()
        .collect()
}

/// The Lease an election creates (step 6): strategy, 5 s duration, renewTime now and, for
/// `OldestEmulationVersion`, the elected holder.
pub(crate) fn desired_spec(strategy: &str, holder: Option<&str>, now: Timestamp) -> LeaseSpec {
    LeaseSpec {
        strategy: Some(strategy.to_string()),
        lease_duration_seconds: Some(LEASE_DURATION_SECONDS),
        renew_time: Some(MicroTime(now)),
        holder_identity: holder.map(str::to_string),
        ..LeaseSpec::default()
    }
}

/// Applies an election to an existing Lease (step 8); None when nothing changes.
/// A free or expired lease gets the new holder directly; a live lease held by someone else
/// only gets `preferredHolder`, and a stale `preferredHolder` is corrected or cleared.
pub(crate) fn apply_election(
    existing: &Lease,
    strategy: &str,
    new_holder: Option<&str>,
    now: Timestamp,
) -> Option<Lease> {
    let mut lease = existing.clone();
    let expired = lease_expired(existing, now);
    let current = holder(existing).map(str::to_string);
    let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
    let mut changed = false;
    if spec.strategy.as_deref() != Some(strategy) {
        spec.strategy = Some(strategy.to_string());
        changed = true;
    }
    if let Some(new) = new_holder {
        if current.is_none() || (expired && current.as_deref() != Some(new)) {
            spec.preferred_holder = None;
            spec.holder_identity = Some(new.to_string());
            spec.renew_time = Some(MicroTime(now));
            spec.lease_duration_seconds = Some(LEASE_DURATION_SECONDS);
            spec.acquire_time = None;
            changed = true;
        } else if current.as_deref() != Some(new) {
            if spec.preferred_holder.as_deref() != Some(new) {
                spec.preferred_holder = Some(new.to_string());
                changed = true;
            }
        } else if spec.preferred_holder.is_some() {
            // The best candidate already holds the lease: a leftover preference would make it
            // give the lease up for nothing.
            spec.preferred_holder = None;
            changed = true;
        }
    }
    changed.then_some(lease)
}

#[cfg(test)]
#[path = "election_tests.rs"]
mod tests;
