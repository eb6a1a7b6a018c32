//! kube-aggregator's hooks and check, as its apiserver.go and kube-apiserver's aggregator.go
//! register them: `start-kube-aggregator-informers` (APIServices, Services, EndpointSlices),
//! `apiservice-registration-controller` (done once the APIServices are listed: requests
//! route by them from then on), `apiservice-status-local-available-controller`,
//! `apiservice-status-remote-available-controller`, `apiservice-discovery-controller`,
//! `apiservice-openapi-controller` (the remote OpenAPI v2 documents),
//! `kube-apiserver-autoregistration`, and the boot-sequence check `autoregister-completion`.
//! May use: registry.

use super::health::{CheckFn, HealthCheck};
use super::hooks::{HookContext, PostStartHookFn};
use super::informers::retrying;
use crate::aggregator::peers::PeerProxy;
use crate::aggregator::{available, openapi, register, Aggregator, Kind};
use crate::registry::Registry;
use std::future::Future;
use std::sync::Arc;

/// A hook that starts `task` (given the aggregator and the hook's context) and is done at
/// once.
fn spawning<F, Fut>(agg: &Arc<Aggregator>, task: F) -> PostStartHookFn
where
    F: Fn(Arc<Aggregator>, &HookContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let agg = agg.clone();
    Arc::new(move |ctx: HookContext| {
        ctx.tasks.spawn(task(agg.clone(), &ctx));
        Box::pin(async { Ok(()) })
    })
}

/// The hooks, in upstream's order, and the `autoregister-completion` check.
pub(crate) fn hooks(
    registry: Arc<Registry>,
    agg: Arc<Aggregator>,
) -> (Vec<(&'static str, PostStartHookFn)>, HealthCheck) {
    let informers: PostStartHookFn = {
        let (registry, agg) = (registry.clone(), agg.clone());
        Arc::new(move |ctx: HookContext| {
            for kind in Kind::ALL {
                let (registry, agg) = (registry.clone(), agg.clone());
                ctx.tasks.spawn(retrying(
                    "following APIServices, Services and EndpointSlices",
                    ctx.cancel.clone(),
                    move || {
                        let (registry, agg) = (registry.clone(), agg.clone());
                        async move { agg.follow(&registry, kind).await }
                    },
                ));
            }
            Box::pin(async { Ok(()) })
        })
    };
    let registration: PostStartHookFn = {
        let agg = agg.clone();
        Arc::new(move |ctx: HookContext| {
            let agg = agg.clone();
            Box::pin(async move {
                tokio::select! {
                    () = agg.wait_synced() => Ok(()),
                    () = ctx.cancel.cancelled() => Err("the server is stopping".into()),
                }
            })
        })
    };
    let completion = Arc::new(register::Completion::default());
    let autoregistration = {
        let completion = completion.clone();
        spawning(&agg, move |agg, ctx| {
            register::run(
                registry.clone(),
                agg,
                completion.clone(),
                ctx.client.clone(),
                ctx.cancel.clone(),
            )
        })
    };
    let hooks = vec![
        ("start-kube-aggregator-informers", informers),
        ("apiservice-registration-controller", registration),
        (
            "apiservice-status-local-available-controller",
            spawning(&agg, |agg, ctx| {
                available::run_local(agg, ctx.client.clone(), ctx.cancel.clone())
            }),
        ),
        (
            "apiservice-status-remote-available-controller",
            spawning(&agg, |agg, ctx| {
                available::run_remote(agg, ctx.client.clone(), ctx.cancel.clone())
            }),
        ),
        (
            "apiservice-discovery-controller",
            spawning(&agg, |agg, ctx| {
                available::run_discovery(agg, ctx.cancel.clone())
            }),
        ),
        (
            "apiservice-openapi-controller",
            spawning(&agg, |agg, ctx| openapi::run(agg, ctx.cancel.clone())),
        ),
        ("kube-apiserver-autoregistration", autoregistration),
    ];
    let check: CheckFn = Arc::new(move || {
        let result = completion.check();
        Box::pin(async move { result })
    });
    (hooks, HealthCheck::new("autoregister-completion", check))
}

/// The mixed-version proxy's hooks (server.go, gate UnknownVersionInteroperabilityProxy):
/// `local-discovery-cache-sync` (this server's discovery is read from its registry, so it is
/// current at once), `peer-discovery-cache-sync` (follows the peers, done once they were read)
/// and `mixed-version-proxy-handler` (done once requests can be routed to peers).
pub(crate) fn peer_hooks(peers: Arc<PeerProxy>) -> Vec<(&'static str, PostStartHookFn)> {
    let local: PostStartHookFn = Arc::new(|_ctx: HookContext| Box::pin(async { Ok(()) }));
    let discovery: PostStartHookFn = {
        let peers = peers.clone();
        Arc::new(move |ctx: HookContext| {
            ctx.tasks
                .spawn(peers.clone().run(ctx.client.clone(), ctx.cancel.clone()));
            Box::pin(async { Ok(()) })
        })
    };
    let handler: PostStartHookFn = Arc::new(move |ctx: HookContext| {
        let peers = peers.clone();
        Box::pin(async move {
            tokio::select! {
                () = peers.wait_synced() => Ok(()),
                () = ctx.cancel.cancelled() => Err("the server is stopping".into()),
            }
        })
    });
    vec![
        ("local-discovery-cache-sync", local),
        ("peer-discovery-cache-sync", discovery),
        ("mixed-version-proxy-handler", handler),
    ]
}
