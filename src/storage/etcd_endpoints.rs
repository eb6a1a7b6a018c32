//! Which etcd members get requests (clientv3's health balancer, in small). etcd-client spreads
//! calls over every `--etcd-servers` endpoint and goes on picking one whose member is dead (the
//! call fails with "connection refused") or stopped (the call hangs until its time limit), so
//! one bad member of three made a third of all requests fail. A monitor probes each endpoint
//! on its own connection (a serializable read of the key `health`, which a running member
//! answers at once, even while the cluster elects a leader: a linearizable read made every
//! member look dead during elections), takes the endpoints that do not answer out of the
//! shared client's balance and puts them back once they answer again. When no endpoint answers, all of them stay in: a
//! whole-cluster outage must leave the client something to reconnect to. The monitor also logs
//! etcd going away and coming back.
//!
//! May use: the storage module only.

use super::{Chain, Error, Result};
use etcd_client::{Client, ConnectOptions, GetOptions};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How often every endpoint is probed.
const PROBE_EVERY: Duration = Duration::from_secs(1);

/// One endpoint, probed on a connection of its own.
struct Endpoint {
    url: String,
    /// A client of this endpoint alone (connections are made lazily, so this cannot fail
    /// because the member is down).
    probe: Option<Client>,
    /// Whether the shared client sends requests to it.
    in_balance: bool,
}

/// Probes `urls` until `stop` fires, adjusting the balance of `shared` (a client of all of
/// them, built with `opts`). Logs what it finds; returns nothing.
pub(super) async fn monitor(
    shared: Client,
    urls: Vec<String>,
    opts: ConnectOptions,
    timeout: Duration,
    stop: CancellationToken,
) {
    let servers = urls.join(",");
    let mut endpoints: Vec<Endpoint> = urls
        .into_iter()
        .map(|url| Endpoint {
            url,
            probe: None,
            in_balance: true,
        })
        .collect();
    let mut reachable = true;
    loop {
        for ep in endpoints.iter_mut().filter(|e| e.probe.is_none()) {
            ep.probe = Client::connect([&ep.url], Some(opts.clone())).await.ok();
        }
        let results = futures::future::join_all(endpoints.iter().map(|ep| async {
            match &ep.probe {
                Some(c) => probe_serializable(c, timeout).await,
                None => Err(Error::unavailable("cannot build a client")),
            }
        }))
        .await;
        let healthy = results.iter().filter(|r| r.is_ok()).count();
        for (ep, result) in endpoints.iter_mut().zip(&results) {
            // With nothing healthy every endpoint goes (back) in.
            let want = result.is_ok() || healthy == 0;
            if want == ep.in_balance {
                continue;
            }
            let changed = if want {
                shared.add_endpoint(&ep.url).await
            } else {
                shared.remove_endpoint(&ep.url).await
            };
            match (changed, result) {
                (Err(e), _) => {
                    tracing::warn!(endpoint = %ep.url, error = %Chain(&e), "cannot change the etcd client's endpoints");
                    continue;
                }
                (Ok(()), Err(e)) => {
                    tracing::warn!(endpoint = %ep.url, error = %Chain(e), "etcd member does not answer; sending requests to the others")
                }
                (Ok(()), Ok(())) if healthy == 0 => {}
                (Ok(()), Ok(())) => {
                    tracing::info!(endpoint = %ep.url, "etcd member answers again; sending it requests")
                }
            }
            ep.in_balance = want;
        }
        match (healthy, reachable) {
            (0, true) => {
                if let Some(Err(e)) = results.first() {
                    tracing::error!(servers = %servers, error = %Chain(e), "etcd is unreachable; retrying");
                }
                reachable = false;
            }
            (n, false) if n > 0 => {
                tracing::info!(servers = %servers, "etcd is reachable again");
                reachable = true;
            }
            _ => {}
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(PROBE_EVERY) => {}
        }
    }
}

/// A serializable read of the key `health`: answered by any running member.
async fn probe_serializable(client: &Client, timeout: Duration) -> Result<()> {
    let mut kv = client.kv_client();
    let opts = GetOptions::new().with_serializable().with_count_only();
    let get = kv.get("health", Some(opts));
    match tokio::time::timeout(timeout, get).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(Error::unavailable("etcd health probe failed").caused_by(e)),
        Err(_) => Err(Error::unavailable(format!(
            "etcd did not answer within {timeout:?}"
        ))),
    }
}
