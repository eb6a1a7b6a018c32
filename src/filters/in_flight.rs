//! Max-in-flight limits (WithMaxInFlightLimit in k8s): separate budgets for mutating and
//! read-only requests; long-running requests and `system:masters` are exempt, as upstream.
//! Over the limit → 429 Status with Retry-After. May use: api.

use crate::api::{RequestInfo, Status, UserInfo};
use std::sync::Arc;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The budget of the request's kind is exhausted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TooManyRequests;

impl TooManyRequests {
    /// The 429 Status (with Retry-After) to answer.
    pub(crate) fn to_status(self) -> Status {
        Status::too_many_requests()
    }
}

/// The two in-flight budgets.
#[derive(Debug, Clone)]
pub(crate) struct MaxInFlight {
    read_only: Arc<Semaphore>,
    mutating: Arc<Semaphore>,
    /// The budgets, as given.
    limits: (usize, usize),
}

impl MaxInFlight {
    /// Budgets of `read_only` and `mutating` concurrent requests.
    pub(crate) fn new(read_only: usize, mutating: usize) -> Self {
        MaxInFlight {
            read_only: Arc::new(Semaphore::new(read_only)),
            mutating: Arc::new(Semaphore::new(mutating)),
            limits: (read_only, mutating),
        }
    }

    /// The (read-only, mutating) slots taken now.
    pub(crate) fn in_use(&self) -> (usize, usize) {
        (
            self.limits
                .0
                .saturating_sub(self.read_only.available_permits()),
            self.limits
                .1
                .saturating_sub(self.mutating.available_permits()),
        )
    }

    /// Takes a slot for the request (held until the response is produced), `Ok(None)` when
    /// exempt, or [`TooManyRequests`].
    pub(crate) fn try_acquire(
        &self,
        info: &RequestInfo,
        user: &UserInfo,
    ) -> Result<Option<OwnedSemaphorePermit>, TooManyRequests> {
        if info.is_long_running() || user.groups.iter().any(|g| g == "system:masters") {
            return Ok(None);
        }
        let budget = if info.is_mutating() {
            &self.mutating
        } else {
            &self.read_only
        };
        match budget.clone().try_acquire_owned() {
            Ok(permit) => Ok(Some(permit)),
            Err(_) => Err(TooManyRequests),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn over_limit_is_429_and_masters_exempt() {
        let limits = MaxInFlight::new(1, 1);
        let info = RequestInfo::parse(&http::Method::GET, "/api/v1/pods", None);
        let user = UserInfo {
            name: "u".into(),
            ..Default::default()
        };
        let held = limits.try_acquire(&info, &user).unwrap();
        assert!(held.is_some());
        assert_eq!(
            limits
                .try_acquire(&info, &user)
                .unwrap_err()
                .to_status()
                .code,
            429
        );
        let admin = UserInfo {
            groups: vec!["system:masters".into()],
            ..user.clone()
        };
        assert!(limits.try_acquire(&info, &admin).unwrap().is_none());
        drop(held);
        assert!(limits.try_acquire(&info, &user).unwrap().is_some());
    }
}
