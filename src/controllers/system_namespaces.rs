//! System namespaces controller (`pkg/controlplane/controller/systemnamespaces`, hook
//! `start-system-namespaces-controller`): every period (first pass at once) creates each
//! system namespace that does not exist. It never updates or deletes namespaces.

use super::util;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{ListParams, PostParams};
use kube::{Api, Client, ResourceExt};
use std::collections::HashSet;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

/// A failed pass is retried this soon (an informer would relist), not a whole period later.
const RETRY: Duration = Duration::from_secs(2);

/// kube-apiserver's system namespaces (generic list + `kube-node-lease`).
pub(crate) const SYSTEM_NAMESPACES: &[&str] =
    &["kube-system", "kube-public", "default", "kube-node-lease"];

/// Set once every system namespace exists. Controllers that write into kube-system wait for
/// it instead of failing (and logging) until the namespace is there.
#[derive(Clone)]
pub(crate) struct Ready(tokio::sync::watch::Sender<bool>);

impl Ready {
    /// Not set yet.
    pub(crate) fn new() -> Self {
        Ready(tokio::sync::watch::channel(false).0)
    }

    /// Marks the system namespaces as present (and wakes every waiter).
    pub(crate) fn set(&self) {
        self.0.send_replace(true);
    }

    /// Waits until [`Self::set`]; false when `cancel` fired first.
    pub(crate) async fn wait(&self, cancel: &CancellationToken) -> bool {
        let mut rx = self.0.subscribe();
        tokio::select! {
            set = rx.wait_for(|set| *set) => set.is_ok(),
            () = cancel.cancelled() => false,
        }
    }
}

/// Runs the controller every `period` until `cancel` fires.
pub(crate) async fn run(client: Client, period: Duration, cancel: CancellationToken) {
    let api: Api<Namespace> = Api::all(client);
    loop {
        let wait = match sync(&api).await {
            Ok(()) => period,
            Err(e) => {
                warn!(error = %util::Brief(&e), "system namespaces sync failed, retrying");
                period.min(RETRY)
            }
        };
        if !util::sleep_or_cancel(wait, &cancel).await {
            return;
        }
    }
}

/// One pass: creates every missing system namespace (AlreadyExists counts as success).
///
/// # Errors
/// Listing namespaces or creating a missing one failed (retried by the caller).
pub(crate) async fn sync(api: &Api<Namespace>) -> Result<(), kube::Error> {
    let existing: HashSet<String> = api
        .list(&ListParams::default())
        .await?
        .items
        .iter()
        .map(ResourceExt::name_any)
        .collect();
    let mut failed = None;
    for name in SYSTEM_NAMESPACES.iter().filter(|n| !existing.contains(**n)) {
        let ns = Namespace {
            metadata: ObjectMeta {
                name: Some((*name).to_string()),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        };
        match api.create(&PostParams::default(), &ns).await {
            Ok(_) => info!(namespace = name, "created system namespace"),
            Err(e) if util::is_already_exists(&e) => {}
            Err(e) => failed = Some(e),
        }
    }
    failed.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn waiters_wake_when_set_and_give_up_when_cancelled() {
        let ready = Ready::new();
        let cancel = CancellationToken::new();
        let waiter = tokio::spawn({
            let (ready, cancel) = (ready.clone(), cancel.clone());
            async move { ready.wait(&cancel).await }
        });
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        ready.set();
        assert!(waiter.await.unwrap());
        // Once set, later waiters return at once.
        assert!(ready.wait(&cancel).await);

        let unset = Ready::new();
        cancel.cancel();
        assert!(!unset.wait(&cancel).await);
    }
}
