//! The Available condition of APIServices and the remote discovery documents:
//! `apiservice-status-local-available-controller` (Local ones are always available),
//! `apiservice-status-remote-available-controller` (kube-aggregator's remote
//! AvailableConditionController: the Service exists and listens on the port, a headless one
//! has a ready endpoint, and `GET /apis/<group>/<version>` answers 2xx within 5 s as
//! `system:kube-aggregator` in `system:masters`; conditions, reasons and messages as its) and
//! `apiservice-discovery-controller` (each available backend's aggregated discovery). Each
//! runs on every change of the APIServices and every [`RESYNC`].

use super::discovery::{self, AGGREGATED};
use super::{Aggregator, ApiService, Remote, GROUP};
use crate::registry::services::{self as resolve, ResolveError};
use kube::api::{DynamicObject, Patch, PatchParams};
use kube::Api;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How often every APIService is checked besides changes.
const RESYNC: Duration = Duration::from_secs(30);
/// A check that found something unsettled runs again this soon, doubling while it stays so,
/// up to [`RESYNC`] (upstream requeues a failed APIService with its work queue's rate
/// limiter: 5 ms, doubling, at most 30 s).
const RETRY: Duration = Duration::from_millis(5);
/// How long a backend's discovery check may take (upstream's client timeout).
pub(super) const CHECK_TIMEOUT: Duration = Duration::from_secs(5);

/// The Available condition an APIService should have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Condition {
    pub status: &'static str,
    pub reason: &'static str,
    pub message: String,
}

/// Runs `check` over the APIServices on every change and every [`RESYNC`], until `cancel`;
/// sooner ([`RETRY`], doubling) while `check` says something is not settled (a backend that
/// did not answer, a Service not seen yet), so one failed probe does not leave an APIService
/// unavailable for a whole resync.
pub(super) async fn each_change<F, Fut>(agg: &Aggregator, cancel: &CancellationToken, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    agg.wait_synced().await;
    let mut failures = 0u32;
    loop {
        let changed = agg.changed();
        failures = if check().await { 0 } else { failures + 1 };
        let wait = match failures {
            0 => RESYNC,
            n => RETRY.saturating_mul(1 << (n - 1).min(20)).min(RESYNC),
        };
        tokio::select! {
            () = cancel.cancelled() => return,
            () = changed => {}
            () = tokio::time::sleep(wait) => {}
        }
    }
}

/// Writes `want` as the Available condition of `api` when it differs from what is stored
/// (the transition time changes only with the status).
async fn set_condition(client: &kube::Client, name: &str, stored: &Value, want: &Condition) {
    let current = stored
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| {
            cs.iter()
                .find(|c| c.get("type").and_then(Value::as_str) == Some("Available"))
        });
    let field = |k: &str| current.and_then(|c| c.get(k)).and_then(Value::as_str);
    if field("status") == Some(want.status)
        && field("reason") == Some(want.reason)
        && field("message") == Some(want.message.as_str())
    {
        return;
    }
    let since = match field("status") {
        Some(s) if s == want.status => field("lastTransitionTime").map(str::to_string),
        _ => None,
    }
    .unwrap_or_else(|| {
        jiff::Timestamp::now()
            .strftime("%Y-%m-%dT%H:%M:%SZ")
            .to_string()
    });
    let patch = json!({
        "apiVersion": format!("{GROUP}/v1"),
        "kind": "APIService",
        "status": { "conditions": [{
            "type": "Available",
            "status": want.status,
            "lastTransitionTime": since,
            "reason": want.reason,
            "message": want.message,
        }]},
    });
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &super::api_resource());
    if let Err(e) = api
        .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        tracing::warn!(apiservice = %name, error = %e, "cannot update the APIService's status");
    }
}

/// The stored APIService `name`, as JSON.
async fn stored(client: &kube::Client, name: &str) -> Option<Value> {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &super::api_resource());
    let obj = api.get_opt(name).await.ok()??;
    serde_json::to_value(obj).ok()
}

/// `apiservice-status-local-available-controller`.
pub(crate) async fn run_local(
    agg: Arc<Aggregator>,
    client: kube::Client,
    cancel: CancellationToken,
) {
    let want = Condition {
        status: "True",
        reason: "Local",
        message: "Local APIServices are always available".into(),
    };
    each_change(&agg, &cancel, || async {
        let writes = agg
            .api_services()
            .into_iter()
            .filter(|a| a.service.is_none() && !a.available)
            .map(|a| {
                let (client, want) = (&client, &want);
                async move {
                    if let Some(obj) = stored(client, &a.name).await {
                        set_condition(client, &a.name, &obj, want).await;
                    }
                }
            });
        futures::future::join_all(writes).await;
        true
    })
    .await;
}

/// `apiservice-status-remote-available-controller`.
pub(crate) async fn run_remote(
    agg: Arc<Aggregator>,
    client: kube::Client,
    cancel: CancellationToken,
) {
    each_change(&agg, &cancel, || async {
        let checks = agg.remotes().into_iter().map(|r| {
            let (agg, client) = (agg.clone(), client.clone());
            async move {
                let want = check(&agg, &r).await;
                if let Some(obj) = stored(&client, &r.api.name).await {
                    set_condition(&client, &r.api.name, &obj, &want).await;
                }
                want.status == "True"
            }
        });
        let available = futures::future::join_all(checks).await;
        available.into_iter().all(|a| a)
    })
    .await;
}

/// What the remote availability check finds for `r`.
pub(crate) async fn check(agg: &Aggregator, r: &Remote) -> Condition {
    let api = &r.api;
    let Some(svc) = &api.service else {
        return Condition {
            status: "True",
            reason: "Local",
            message: "Local APIServices are always available".into(),
        };
    };
    let false_because = |reason, message| Condition {
        status: "False",
        reason,
        message,
    };
    let Some(service) = agg.services.service(svc) else {
        return false_because(
            "ServiceNotFound",
            format!("service/{} in {:?} is not present", svc.name, svc.namespace),
        );
    };
    let spec = service.get("spec").unwrap_or(&Value::Null);
    let kind = spec
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP");
    if kind == "ClusterIP" {
        let Ok(port_name) = resolve::service_port_name(spec, svc) else {
            return false_because(
                "ServicePortError",
                format!(
                    "service/{} in {:?} is not listening on port {}",
                    svc.name, svc.namespace, svc.port
                ),
            );
        };
        let slices = agg.services.slices(svc);
        if slices.is_empty() {
            return false_because(
                "EndpointsNotFound",
                format!(
                    "cannot find endpointslices for service/{} in {:?}",
                    svc.name, svc.namespace
                ),
            );
        }
        if resolve::endpoints(&slices, &port_name).is_empty() {
            return false_because(
                "MissingEndpoints",
                format!(
                    "endpointslices for service/{} in {:?} have no addresses with port name {:?}",
                    svc.name, svc.namespace, port_name
                ),
            );
        }
    }
    match probe(agg, r).await {
        Ok(()) => Condition {
            status: "True",
            reason: "Passed",
            message: "all checks passed".into(),
        },
        Err(message) => false_because("FailedDiscoveryCheck", message),
    }
}

/// GETs the group/version's discovery document from the backend (`/api/v1` for `v1.`).
async fn probe(agg: &Aggregator, r: &Remote) -> Result<(), String> {
    let client = r.client.as_ref().map_err(Clone::clone)?;
    let Some(svc) = &r.api.service else {
        return Ok(());
    };
    let target = agg
        .services
        .resolve(svc)
        .map_err(|e: ResolveError| e.to_string())?;
    let path = discovery_path(&r.api);
    let url = format!("https://{target}{path}");
    match client
        .get(&target, &path, "application/json", CHECK_TIMEOUT)
        .await
    {
        Ok(resp) if resp.status().is_success() => Ok(()),
        Ok(resp) => Err(format!(
            "failing or missing response from {url}: bad status from {url}: {}",
            resp.status().as_u16()
        )),
        Err(e) => Err(format!("failing or missing response from {url}: {e}")),
    }
}

fn discovery_path(api: &ApiService) -> String {
    if api.name == "v1." {
        format!("/api/{}", api.version)
    } else {
        format!("/apis/{}/{}", api.group, api.version)
    }
}

/// `apiservice-discovery-controller`: fetches each available remote group/version's
/// discovery (aggregated, else the legacy resource list) into the aggregator's cache.
pub(crate) async fn run_discovery(agg: Arc<Aggregator>, cancel: CancellationToken) {
    each_change(&agg, &cancel, || async {
        agg.discovery.retain(&agg.table().all);
        let fetches = agg.remotes().into_iter().map(|r| {
            let agg = agg.clone();
            async move {
                let doc = fetch_version(&agg, &r).await;
                // Only an available backend's document is expected.
                let settled = doc.is_some() || !r.api.available;
                match doc {
                    Some(doc) => agg.discovery.fresh(&r.api.name, doc),
                    None => agg.discovery.stale(&r.api.name),
                }
                settled
            }
        });
        let fetched = futures::future::join_all(fetches).await;
        fetched.into_iter().all(|f| f)
    })
    .await;
}

async fn fetch_version(agg: &Aggregator, r: &Remote) -> Option<Value> {
    let client = r.client.as_ref().ok()?;
    let svc = r.api.service.as_ref()?;
    let target = agg.services.resolve(svc).ok()?;
    let json = |resp: http::Response<bytes::Bytes>| -> Option<Value> {
        if !resp.status().is_success() {
            return None;
        }
        serde_json::from_slice(resp.body()).ok()
    };
    // The backend's OpenAPI v3 document of the group/version, for /openapi/v3.
    let key = format!("apis/{}/{}", r.api.group, r.api.version);
    let index = client
        .get(&target, "/openapi/v3", "application/json", CHECK_TIMEOUT)
        .await
        .ok()
        .and_then(json);
    match index
        .as_ref()
        .and_then(|i| i.pointer(&format!("/paths/{}", key.replace('/', "~1"))))
        .and_then(|p| p.get("serverRelativeURL"))
        .and_then(Value::as_str)
    {
        Some(url) => agg.discovery.openapi(&r.api.name, Some(url.to_string())),
        None => agg.discovery.openapi(&r.api.name, None),
    }
    let aggregated = client
        .get(&target, "/apis", AGGREGATED, CHECK_TIMEOUT)
        .await
        .ok()
        .and_then(json);
    if let Some(doc) = aggregated {
        if doc.get("kind").and_then(Value::as_str) == Some("APIGroupDiscoveryList") {
            return discovery::version_from_aggregated(&doc, &r.api.group, &r.api.version);
        }
    }
    let list = client
        .get(
            &target,
            &discovery_path(&r.api),
            "application/json",
            CHECK_TIMEOUT,
        )
        .await
        .ok()
        .and_then(json)?;
    discovery::version_from_legacy(&list, &r.api.version)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    /// A check that finds something unsettled runs again within milliseconds, backing off,
    /// not a whole resync later; once settled it waits for a change or the resync.
    #[tokio::test(start_paused = true)]
    async fn an_unsettled_check_is_retried_soon_with_backoff() {
        let agg = Aggregator::new(None, Arc::default(), tokio::runtime::Handle::current());
        for kind in super::super::Kind::ALL {
            agg.synced.mark(kind as usize);
        }
        let (calls, cancel) = (AtomicU32::new(0), CancellationToken::new());
        let start = tokio::time::Instant::now();
        let mut at = Vec::new();
        each_change(&agg, &cancel, || {
            let n = calls.fetch_add(1, Ordering::SeqCst);
            at.push(start.elapsed());
            if n == 4 {
                cancel.cancel();
            }
            async move { n >= 3 }
        })
        .await;
        let ms: Vec<u128> = at.iter().map(Duration::as_millis).collect();
        // Three failures: 5, 10, 20 ms apart; then settled: the resync.
        assert_eq!(ms, [0, 5, 15, 35, 30_035]);
    }
}
