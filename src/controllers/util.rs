//! Small helpers shared by the controllers: object keys, wall-clock MicroTime, expiry math,
//! API error classification, cancellable sleeps with jitter and the capped backoff of client-go's
//! `wait.Backoff`. May use: nothing internal.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use rand::Rng;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// An object's `namespace/name` (`/name` for a cluster-scoped one), as work queues and
/// caches key objects.
pub(crate) fn object_key(o: &impl kube::ResourceExt) -> String {
    format!("{}/{}", o.namespace().unwrap_or_default(), o.name_any())
}

/// Now, truncated to microseconds (what a MicroTime can carry), so that a value we write and
/// the value we read back compare equal.
pub(crate) fn now() -> Timestamp {
    truncate_micros(Timestamp::now())
}

/// A timestamp truncated to microsecond precision.
pub(crate) fn truncate_micros(ts: Timestamp) -> Timestamp {
    Timestamp::from_microsecond(ts.as_microsecond()).unwrap_or(ts)
}

/// Now as a MicroTime (RFC 3339 with exactly 6 fractional digits on the wire).
pub(crate) fn micro_now() -> MicroTime {
    MicroTime(now())
}

/// `ts + d`, saturating instead of overflowing.
pub(crate) fn add(ts: Timestamp, d: Duration) -> Timestamp {
    let sd = SignedDuration::try_from(d).unwrap_or(SignedDuration::MAX);
    ts.checked_add(sd).unwrap_or(Timestamp::MAX)
}

/// The identity-lease expiry rule of k8s (apiserverleasegc, leaderelection): a lease without
/// renewTime or duration is expired, else it is when `renewTime + duration < now`.
pub(crate) fn lease_expired(
    renew_time: Option<&MicroTime>,
    duration_seconds: Option<i32>,
    now: Timestamp,
) -> bool {
    match (renew_time, duration_seconds) {
        (Some(renew), Some(secs)) => {
            add(
                renew.0,
                Duration::from_secs(u64::try_from(secs).unwrap_or(0)),
            ) < now
        }
        _ => true,
    }
}

/// HTTP status code of an API error, if the server answered with a Status.
pub(crate) fn api_code(err: &kube::Error) -> Option<u16> {
    match err {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}

/// 404 NotFound.
pub(crate) fn is_not_found(err: &kube::Error) -> bool {
    api_code(err) == Some(404)
}

/// 409 with reason AlreadyExists.
pub(crate) fn is_already_exists(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(s) if s.code == 409 && s.reason == "AlreadyExists")
}

/// 409 Conflict (not AlreadyExists).
pub(crate) fn is_conflict(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(s) if s.code == 409 && s.reason != "AlreadyExists")
}

/// `d` plus a uniform random extra of up to `factor * d` (wait.Jitter in k8s).
pub(crate) fn jitter(d: Duration, factor: f64) -> Duration {
    if factor <= 0.0 {
        return d;
    }
    let extra = rand::thread_rng().gen_range(0.0..=factor);
    d + d.mul_f64(extra)
}

/// Sleeps for `d` unless `cancel` fires first; returns false when cancelled.
pub(crate) async fn sleep_or_cancel(d: Duration, cancel: &CancellationToken) -> bool {
    tokio::select! {
        () = cancel.cancelled() => false,
        () = tokio::time::sleep(d) => true,
    }
}

/// Exponential backoff: starts at `initial`, doubles, capped at `cap`.
#[derive(Debug, Clone)]
pub(crate) struct Backoff {
    next: Duration,
    cap: Duration,
}

impl Backoff {
    /// A backoff starting at `initial` and never exceeding `cap`.
    pub(crate) fn new(initial: Duration, cap: Duration) -> Self {
        Self { next: initial, cap }
    }

    /// The delay to wait now; the following one doubles.
    pub(crate) fn next_delay(&mut self) -> Duration {
        let d = self.next;
        self.next = (self.next * 2).min(self.cap);
        d
    }
}

/// Displays a kube error in one line for logs: the API's message and code rather than the
/// client's debug dump of the whole Status.
pub(crate) struct Brief<'a>(pub(crate) &'a kube::Error);

impl std::fmt::Display for Brief<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            kube::Error::Api(status) => write!(f, "{} ({})", status.message, status.code),
            other => write!(f, "{other}"),
        }
    }
}

/// The loop of a controller that recomputes everything when anything changes: after a
/// change (`Ok(true)` from `changes`; `Ok(false)` is an event that changes nothing, such as
/// the start of a relist) it waits `settle` for more, then runs `pass`; a failed pass is
/// logged with `what` and run again `retry` later. Returns when `cancel` fires or `changes`
/// ends.
pub(crate) async fn on_changes<S, F, Fut, E>(
    mut changes: S,
    settle: Duration,
    retry: Duration,
    cancel: &CancellationToken,
    what: &str,
    mut pass: F,
) where
    S: futures::Stream<Item = Result<bool, String>> + Unpin,
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(), E>>,
    E: std::fmt::Display,
{
    use futures::StreamExt;
    let mut dirty = false;
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            change = changes.next() => match change {
                None => return,
                Some(Ok(changed)) => dirty |= changed,
                Some(Err(e)) => tracing::warn!(error = %e, "watching for {what} failed"),
            },
            () = tokio::time::sleep(settle), if dirty => match pass().await {
                Ok(()) => dirty = false,
                Err(e) => {
                    tracing::warn!(error = %e, "{what} failed, retrying");
                    if !sleep_or_cancel(retry, cancel).await {
                        return;
                    }
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn expiry_math() {
        let renew = MicroTime(ts("2025-01-02T03:04:05.123456Z"));
        assert!(!lease_expired(
            Some(&renew),
            Some(10),
            ts("2025-01-02T03:04:15.123456Z")
        ));
        assert!(lease_expired(
            Some(&renew),
            Some(10),
            ts("2025-01-02T03:04:15.123457Z")
        ));
        assert!(lease_expired(None, Some(10), ts("2025-01-02T03:04:05Z")));
        assert!(lease_expired(
            Some(&renew),
            None,
            ts("2025-01-02T03:04:05Z")
        ));
        let far = MicroTime(Timestamp::MAX);
        assert!(
            !lease_expired(Some(&far), Some(i32::MAX), Timestamp::MAX),
            "saturates"
        );
    }

    #[test]
    fn micro_time_serialises_with_six_digits() {
        let t = MicroTime(truncate_micros(ts("2025-01-02T03:04:05.123456789Z")));
        assert_eq!(
            serde_json::to_string(&t).unwrap(),
            "\"2025-01-02T03:04:05.123456Z\""
        );
        let whole = MicroTime(ts("2025-01-02T03:04:05Z"));
        assert_eq!(
            serde_json::to_string(&whole).unwrap(),
            "\"2025-01-02T03:04:05.000000Z\""
        );
    }

    #[test]
    fn backoff_doubles_and_caps() {
        let mut b = Backoff::new(Duration::from_millis(200), Duration::from_secs(7));
        let seq: Vec<u128> = (0..7).map(|_| b.next_delay().as_millis()).collect();
        assert_eq!(seq, [200, 400, 800, 1600, 3200, 6400, 7000]);
    }

    #[test]
    fn jitter_stays_in_range() {
        for _ in 0..100 {
            let d = jitter(Duration::from_secs(10), 0.04);
            assert!(d >= Duration::from_secs(10) && d <= Duration::from_millis(10_400));
        }
    }
}
