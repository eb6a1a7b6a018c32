//! The `storage-readiness` hook (k8s.io/apiserver `server/storage_readiness_hook.go`): keeps
//! readiness red until storage answers LISTs of the core resources through the real API
//! path, polling every 100ms; after the timeout it logs a warning and lets readiness pass
//! anyway, so it can delay readiness but never fail the server.

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::ListParams;
use kube::{Api, Client};
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

const POLL: Duration = Duration::from_millis(100);

async fn all_ready(client: &Client) -> bool {
    let lp = ListParams::default().limit(1);
    let (ns, cm, leases) = (
        Api::<Namespace>::all(client.clone()),
        Api::<ConfigMap>::all(client.clone()),
        Api::<Lease>::all(client.clone()),
    );
    let (a, b, c) = tokio::join!(ns.list(&lp), cm.list(&lp), leases.list(&lp));
    a.is_ok() && b.is_ok() && c.is_ok()
}

/// Waits until storage serves lists, at most `timeout` (the hook body).
pub(crate) async fn wait(client: Client, timeout: Duration, cancel: CancellationToken) {
    let deadline = Instant::now() + timeout;
    loop {
        if all_ready(&client).await {
            info!("Storage is ready for all registered resources");
            return;
        }
        if Instant::now() >= deadline {
            warn!(timeout = ?timeout, "storage did not become ready in time; continuing");
            return;
        }
        tokio::select! {
            () = cancel.cancelled() => return,
            () = tokio::time::sleep(POLL) => {}
        }
    }
}
