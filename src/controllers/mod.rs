//! In-process controllers of the control plane (kube-apiserver's
//! `pkg/controlplane/apiserver/server.go`), registered as post-start hooks with
//! kube-apiserver's names. They are clients: they reach data only through the hook
//! context's loopback client, so they behave the same on every storage backend. The one
//! exception mirrors upstream: peer endpoints are written to storage directly, through the
//! [`PeerEndpointStore`] the composition root supplies.
//!
//! Hooks ([`hooks`]), in server.go order:
//! `start-system-namespaces-controller`,
//! `start-kube-apiserver-coordinated-leader-election-controller` (gate
//! CoordinatedLeaderElection), `peer-endpoint-reconciler-controller` (gate
//! UnknownVersionInteroperabilityProxy + `--peer-advertise-ip` + a store),
//! `start-cluster-authentication-info-controller`,
//! `start-kube-apiserver-identity-lease-controller` and
//! `start-kube-apiserver-identity-lease-garbage-collector` (gate APIServerIdentity),
//! `storage-readiness` (gate WatchCacheInitializationPostStartHook),
//! `start-legacy-token-tracking-controller`, `rbac/bootstrap-roles` (RBAC mode only), and
//! kapi's `start-namespace-finalizer-controller`, `start-garbage-collector-controller`,
//! `start-clusterrole-aggregation-controller`,
//! `start-validatingadmissionpolicy-status-controller`, `start-service-account-controller` and
//! `start-service-account-token-controller` (kube-controller-manager's namespace,
//! garbage-collector, ClusterRole aggregation, ValidatingAdmissionPolicy status,
//! service-account and tokens controllers, which kapi runs in-process).
//! Pre-shutdown: `stop-kube-apiserver-identity-lease-controller` (stops renewing and deletes
//! the identity lease) and `peer-endpoint-reconciler-controller`.
//!
//! May use: api, server::hooks (types only), options (their settings), serviceaccount (the
//! tokens controller signs legacy tokens), metrics (the identity lease's renewals), the
//! registry's policy type checker (a pure function of an expression and a schema).

mod apiextensions;
mod auth_trust;
mod coordinated;
mod election;
mod garbage_collector;
mod gc;
mod identity;
mod informer;
mod leader;
mod meta_only;
mod namespace;
mod peer;
mod policy_status;
mod rbac;
mod readiness;
mod service_account_tokens;
mod service_accounts;
mod system_namespaces;
mod token_tracking;
mod util;

pub(crate) use auth_trust::{pem_bundle, AuthInfo, RequestHeaderInfo};
pub use identity::apiserver_id;
pub(crate) use identity::{IDENTITY_LABEL, KUBE_APISERVER};
pub(crate) use peer::{PeerEndpointStore, PeerStoreError};
pub(crate) use service_account_tokens::Signer as TokenSigner;

use crate::options::ControllerOptions;
use crate::server::hooks::{HookContext, HookError, PostStartHookFn, PreShutdownHookFn};
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

/// Name of the lease the coordinated-leader-election controller itself is elected through.
pub(crate) const CLE_LOCK_LEASE: &str = "leader-election-controller";
/// How long `storage-readiness` may hold readiness back (`--storage-initialization-timeout`).
const STORAGE_READINESS_TIMEOUT: Duration = Duration::from_secs(60);

/// Everything the controllers need: the operator's controller options plus what the server
/// knows (addresses, CA material, peer store).
#[derive(Clone)]
pub(crate) struct Config {
    /// `--feature-gates`, timers and peer flags.
    pub options: ControllerOptions,
    /// `--hostname-override` or the OS hostname.
    pub hostname: String,
    /// The apiserver ID ([`apiserver_id`] of `hostname`).
    pub apiserver_id: String,
    /// The advertised address (`--advertise-address` or the detected one).
    pub advertise_address: IpAddr,
    /// The secure port actually bound.
    pub secure_port: u16,
    /// Client CA and request-header settings published in
    /// `kube-system/extension-apiserver-authentication`.
    pub auth: AuthInfo,
    /// Storage for peer endpoints; without it the peer reconciler is not started.
    pub peer_store: Option<Arc<dyn PeerEndpointStore>>,
    /// RBAC is an authorization mode: the bootstrap policy is reconciled.
    pub rbac: bool,
    /// What legacy service-account tokens are signed with; without it the tokens controller
    /// is not started.
    pub tokens: Option<TokenSigner>,
}

/// Why a [`Config`] could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum Error {
    /// No `--hostname-override` and the OS hostname could not be read.
    #[error("reading the OS hostname failed")]
    Hostname(#[source] std::io::Error),
    /// The OS hostname is not UTF-8.
    #[error("the OS hostname is not valid UTF-8")]
    HostnameEncoding,
}

impl Config {
    /// Resolves the hostname (override, else OS) and the apiserver ID; no CA, no peer store.
    ///
    /// # Errors
    /// The OS hostname could not be read while no override was given.
    pub(crate) fn new(
        options: &ControllerOptions,
        advertise_address: IpAddr,
        secure_port: u16,
    ) -> Result<Self, Error> {
        let hostname = match options
            .hostname_override
            .as_deref()
            .filter(|h| !h.is_empty())
        {
            Some(h) => h.to_string(),
            None => hostname::get()
                .map_err(Error::Hostname)?
                .into_string()
                .map_err(|_| Error::HostnameEncoding)?,
        };
        Ok(Self {
            options: options.clone(),
            apiserver_id: apiserver_id(&hostname),
            hostname,
            advertise_address,
            secure_port,
            auth: AuthInfo::default(),
            peer_store: None,
            rbac: false,
            tokens: None,
        })
    }

    /// The peer address `ip:port`: `--peer-advertise-ip`:(`--peer-advertise-port` or the
    /// secure port) when set, else advertise address:secure port (getPeerAddress in k8s).
    pub(crate) fn peer_address(&self) -> String {
        let o = &self.options;
        let addr = match o.peer_advertise_ip {
            Some(ip) => SocketAddr::new(ip, o.peer_advertise_port.unwrap_or(self.secure_port)),
            None => SocketAddr::new(self.advertise_address, self.secure_port),
        };
        addr.to_string()
    }
}

/// The hooks to register on the server, in registration order.
pub(crate) struct Hooks {
    /// `(name, hook)` post-start hooks.
    pub post_start: Vec<(String, PostStartHookFn)>,
    /// `(name, hook)` pre-shutdown hooks.
    pub pre_shutdown: Vec<(String, PreShutdownHookFn)>,
}

fn post_start<F, Fut>(f: F) -> PostStartHookFn
where
    F: Fn(HookContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), HookError>> + Send + 'static,
{
    Arc::new(move |ctx| Box::pin(f(ctx)))
}

/// A post-start hook that spawns `body` on the hook's task tracker and returns at once.
fn spawning<F, Fut>(body: F) -> PostStartHookFn
where
    F: Fn(HookContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let body = Arc::new(body);
    post_start(move |ctx: HookContext| {
        let body = body.clone();
        async move {
            ctx.tasks.spawn(body(ctx.clone()));
            Ok(())
        }
    })
}

/// [`spawning`], where the spawned task first waits for the system namespaces (it writes into
/// kube-system) and does nothing if the server stops first.
fn after<F, Fut>(kube_system: &system_namespaces::Ready, body: F) -> PostStartHookFn
where
    F: Fn(HookContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let body = Arc::new(body);
    let kube_system = kube_system.clone();
    spawning(move |ctx: HookContext| {
        let (body, kube_system) = (body.clone(), kube_system.clone());
        async move {
            if kube_system.wait(&ctx.cancel).await {
                body(ctx).await;
            }
        }
    })
}

fn pre_shutdown<F, Fut>(f: F) -> PreShutdownHookFn
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), HookError>> + Send + 'static,
{
    Arc::new(move || Box::pin(f()))
}

/// `start-apiextensions-controllers`: the CRD naming, API-approval, NonStructuralSchema and
/// finalizing controllers (registered by the composition root between the server's
/// `start-apiextensions-informers` and `crd-informer-synced`, as upstream orders them).
pub(crate) fn apiextensions_controllers() -> PostStartHookFn {
    spawning(|ctx: HookContext| {
        apiextensions::run(ctx.client.clone(), ctx.cancel.clone(), ctx.tasks.clone())
    })
}

/// Builds every hook `config` enables.
pub(crate) fn hooks(config: &Config) -> Hooks {
    let mut h = Hooks {
        post_start: Vec::new(),
        pre_shutdown: Vec::new(),
    };
    let o = &config.options;
    // One watch of every Lease for the controllers that follow them all.
    let leases = informer::SharedWatch::new(kube::api::ApiResource::erase::<
        k8s_openapi::api::coordination::v1::Lease,
    >(&()));

    // Set by the system namespaces controller; what writes into kube-system waits for it.
    let kube_system = system_namespaces::Ready::new();
    let period = o.system_namespaces_period;
    let namespaces_made = kube_system.clone();
    h.post_start.push((
        "start-system-namespaces-controller".into(),
        // Better than upstream: the hook (and so /readyz) completes only once the system
        // namespaces exist, so a client that waits for readiness can use `default` at once.
        post_start(move |ctx: HookContext| {
            let made = namespaces_made.clone();
            async move {
                let api: kube::Api<k8s_openapi::api::core::v1::Namespace> =
                    kube::Api::all(ctx.client.clone());
                system_namespaces::sync(&api)
                    .await
                    .map_err(|e| Box::new(e) as HookError)?;
                made.set();
                ctx.tasks
                    .spawn(system_namespaces::run(ctx.client, period, ctx.cancel));
                Ok(())
            }
        }),
    ));

    if o.gate("CoordinatedLeaderElection") {
        let (start, stop) = cle_hooks(config, leases.clone(), kube_system.clone());
        h.post_start.push((
            "start-kube-apiserver-coordinated-leader-election-controller".into(),
            start,
        ));
        h.pre_shutdown.push((
            "stop-kube-apiserver-coordinated-leader-election-controller".into(),
            stop,
        ));
    }

    let peer_on = o.gate("UnknownVersionInteroperabilityProxy");
    if let (true, Some(_), Some(store)) = (peer_on, o.peer_advertise_ip, &config.peer_store) {
        let (id, addr) = (config.apiserver_id.clone(), config.peer_address());
        let run_store = store.clone();
        h.post_start.push((
            "peer-endpoint-reconciler-controller".into(),
            spawning(move |ctx| {
                peer::run(
                    ctx.client,
                    run_store.clone(),
                    id.clone(),
                    addr.clone(),
                    ctx.cancel,
                )
            }),
        ));
        let (store, id) = (store.clone(), config.apiserver_id.clone());
        h.pre_shutdown.push((
            "peer-endpoint-reconciler-controller".into(),
            pre_shutdown(move || {
                let (store, id) = (store.clone(), id.clone());
                async move {
                    peer::remove(store, &id).await;
                    Ok(())
                }
            }),
        ));
    }

    let auth = config.auth.clone();
    h.post_start.push((
        "start-cluster-authentication-info-controller".into(),
        after(&kube_system, move |ctx| {
            auth_trust::run(ctx.client, auth.clone(), ctx.cancel)
        }),
    ));

    if o.gate("APIServerIdentity") {
        identity_hooks(config, &mut h, &kube_system);
    }

    if o.gate("WatchCacheInitializationPostStartHook") {
        h.post_start.push((
            "storage-readiness".into(),
            post_start(|ctx: HookContext| async move {
                readiness::wait(ctx.client, STORAGE_READINESS_TIMEOUT, ctx.cancel).await;
                Ok(())
            }),
        ));
    }

    h.post_start.push((
        "start-legacy-token-tracking-controller".into(),
        after(&kube_system, |ctx| {
            token_tracking::run(ctx.client, ctx.cancel)
        }),
    ));
    if config.rbac {
        h.post_start.push((
            "rbac/bootstrap-roles".into(),
            post_start(|ctx: HookContext| async move {
                rbac::bootstrap::run(ctx.client)
                    .await
                    .map_err(|e| Box::new(e) as HookError)
            }),
        ));
    }
    h.post_start.push((
        "start-namespace-finalizer-controller".into(),
        spawning(|ctx| namespace::run(ctx.client, ctx.cancel)),
    ));
    h.post_start.push((
        "start-garbage-collector-controller".into(),
        spawning(move |ctx| garbage_collector::run(ctx.client, ctx.cancel, leases.clone())),
    ));
    h.post_start.push((
        "start-clusterrole-aggregation-controller".into(),
        spawning(|ctx| rbac::aggregation::run(ctx.client, ctx.cancel)),
    ));
    h.post_start.push((
        "start-validatingadmissionpolicy-status-controller".into(),
        spawning(|ctx| policy_status::run(ctx.client, ctx.cancel)),
    ));
    let namespaces_exist = kube_system.clone();
    h.post_start.push((
        "start-service-account-controller".into(),
        post_start(move |ctx: HookContext| {
            let namespaces_exist = namespaces_exist.clone();
            async move {
                if !namespaces_exist.wait(&ctx.cancel).await {
                    return Err("the server is stopping".into());
                }
                service_accounts::sync_once(&ctx.client)
                    .await
                    .map_err(|e| Box::new(e) as HookError)?;
                ctx.tasks
                    .spawn(service_accounts::run(ctx.client, ctx.cancel));
                Ok(())
            }
        }),
    ));
    if let Some(signer) = config.tokens.clone() {
        h.post_start.push((
            "start-service-account-token-controller".into(),
            spawning(move |ctx| {
                service_account_tokens::run(ctx.client, signer.clone(), ctx.cancel)
            }),
        ));
    }
    h
}

fn identity_hooks(config: &Config, h: &mut Hooks, kube_system: &system_namespaces::Ready) {
    let o = &config.options;
    let peer_address =
        (o.gate("UnknownVersionInteroperabilityProxy")).then(|| config.peer_address());
    let lease = identity::IdentityLease::new(identity::IdentitySettings {
        lease_name: config.apiserver_id.clone(),
        holder: format!("{}_{}", config.apiserver_id, crate::api::new_uuid()),
        duration_seconds: o.identity_lease_duration_seconds,
        renew_interval: o.identity_lease_renew_interval,
        hostname: config.hostname.clone(),
        peer_address,
    });
    let starter = lease.clone();
    h.post_start.push((
        "start-kube-apiserver-identity-lease-controller".into(),
        after(kube_system, move |ctx| {
            starter.start(&ctx);
            async {}
        }),
    ));
    h.pre_shutdown.push((
        "stop-kube-apiserver-identity-lease-controller".into(),
        pre_shutdown(move || {
            let lease = lease.clone();
            async move {
                lease
                    .stop_and_delete()
                    .await
                    .map_err(|e| Box::new(e) as HookError)
            }
        }),
    ));
    let selector = format!("{IDENTITY_LABEL}={KUBE_APISERVER}");
    let gc_period = o.identity_lease_gc_period;
    h.post_start.push((
        "start-kube-apiserver-identity-lease-garbage-collector".into(),
        after(kube_system, move |ctx| {
            gc::run_identity_lease_gc(ctx.client, selector.clone(), gc_period, ctx.cancel)
        }),
    ));
}

/// The running CLE election: its token and a receiver that fires once it has stopped (and
/// released the lock lease).
type RunningElection = (
    tokio_util::sync::CancellationToken,
    tokio::sync::oneshot::Receiver<()>,
);

/// The CLE controller hook and its pre-shutdown stop. Stopping before the server stops
/// accepting requests lets the lock lease `leader-election-controller` be released through the
/// API, so another replica takes over at once instead of after a lease duration.
fn cle_hooks(
    config: &Config,
    leases: informer::SharedWatch,
    kube_system: system_namespaces::Ready,
) -> (PostStartHookFn, PreShutdownHookFn) {
    let o = &config.options;
    let election = leader::ElectionConfig {
        namespace: identity::KUBE_SYSTEM.to_string(),
        name: CLE_LOCK_LEASE.to_string(),
        identity: format!("{}_{}", config.hostname, crate::api::new_uuid()),
        lease_duration: o.cle_lease_duration,
        renew_deadline: o.cle_renew_deadline,
        retry_period: o.cle_retry_period,
    };
    let gc_period = o.lease_candidate_gc_period;
    let running: Arc<std::sync::Mutex<Option<RunningElection>>> = Arc::default();
    let started = running.clone();
    let start = post_start(move |ctx: HookContext| {
        let (election, started) = (election.clone(), started.clone());
        let (leases, kube_system) = (leases.clone(), kube_system.clone());
        async move {
            let token = ctx.cancel.child_token();
            let (done_tx, done_rx) = tokio::sync::oneshot::channel();
            if let Ok(mut slot) = started.lock() {
                *slot = Some((token.clone(), done_rx));
            }
            let client = ctx.client.clone();
            ctx.tasks.spawn(async move {
                if !kube_system.wait(&token).await {
                    let _ = done_tx.send(());
                    return;
                }
                leader::run(client.clone(), election, token, move |leading| {
                    let (client, leases) = (client.clone(), leases.clone());
                    async move {
                        tokio::join!(
                            coordinated::run(client.clone(), leading.clone(), leases.clone()),
                            gc::run_candidate_gc(client, gc_period, leading),
                        );
                    }
                })
                .await;
                let _ = done_tx.send(());
            });
            Ok(())
        }
    });
    let stop = pre_shutdown(move || {
        let taken = running.lock().ok().and_then(|mut slot| slot.take());
        async move {
            if let Some((token, done)) = taken {
                token.cancel();
                let _ = tokio::time::timeout(Duration::from_secs(5), done).await;
            }
            Ok(())
        }
    });
    (start, stop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn options() -> ControllerOptions {
        ControllerOptions {
            feature_gates: BTreeMap::new(),
            hostname_override: Some("node-1".into()),
            identity_lease_duration_seconds: 3600,
            identity_lease_renew_interval: Duration::from_secs(10),
            identity_lease_gc_period: Duration::from_secs(3600),
            lease_candidate_gc_period: Duration::from_secs(1800),
            cle_lease_duration: Duration::from_secs(15),
            cle_renew_deadline: Duration::from_secs(10),
            cle_retry_period: Duration::from_secs(2),
            peer_advertise_ip: None,
            peer_advertise_port: None,
            peer_ca_file: None,
            runtime_config: Default::default(),
            system_namespaces_period: Duration::from_secs(60),
            debug_failing_hooks: Vec::new(),
        }
    }

    fn names(v: &[(String, impl Sized)]) -> Vec<&str> {
        v.iter().map(|(n, _)| n.as_str()).collect()
    }

    struct NoStore;
    impl PeerEndpointStore for NoStore {
        fn set(
            &self,
            _: &str,
            _: Vec<u8>,
            _: Duration,
        ) -> futures::future::BoxFuture<'static, Result<(), PeerStoreError>> {
            Box::pin(async { Ok(()) })
        }
        fn delete(
            &self,
            _: &str,
        ) -> futures::future::BoxFuture<'static, Result<(), PeerStoreError>> {
            Box::pin(async { Ok(()) })
        }
    }

    #[test]
    fn default_hooks_have_kube_apiserver_names() {
        let mut cfg = Config::new(&options(), "10.0.0.1".parse().unwrap(), 6443).unwrap();
        assert_eq!(cfg.apiserver_id, "apiserver-lgabes5ywnaqeagh5dny4zlzs4");
        cfg.rbac = true;
        cfg.tokens = Some(TokenSigner {
            issuer: std::sync::Arc::new(crate::serviceaccount::Issuer::for_tests("https://k")),
            root_ca: Vec::new(),
        });
        let h = hooks(&cfg);
        assert_eq!(
            names(&h.post_start),
            [
                "start-system-namespaces-controller",
                "start-kube-apiserver-coordinated-leader-election-controller",
                "start-cluster-authentication-info-controller",
                "start-kube-apiserver-identity-lease-controller",
                "start-kube-apiserver-identity-lease-garbage-collector",
                "storage-readiness",
                "start-legacy-token-tracking-controller",
                "rbac/bootstrap-roles",
                "start-namespace-finalizer-controller",
                "start-garbage-collector-controller",
                "start-clusterrole-aggregation-controller",
                "start-validatingadmissionpolicy-status-controller",
                "start-service-account-controller",
                "start-service-account-token-controller",
            ]
        );
        assert_eq!(
            names(&h.pre_shutdown),
            [
                "stop-kube-apiserver-coordinated-leader-election-controller",
                "stop-kube-apiserver-identity-lease-controller"
            ]
        );
    }

    #[test]
    fn gates_switch_hooks() {
        let mut o = options();
        o.feature_gates
            .insert("CoordinatedLeaderElection".into(), false);
        o.feature_gates.insert("APIServerIdentity".into(), false);
        o.feature_gates
            .insert("UnknownVersionInteroperabilityProxy".into(), true);
        o.peer_advertise_ip = Some("192.168.1.5".parse().unwrap());
        let mut cfg = Config::new(&o, "10.0.0.1".parse().unwrap(), 6443).unwrap();
        assert_eq!(cfg.peer_address(), "192.168.1.5:6443");
        assert!(!names(&hooks(&cfg).post_start).contains(&"peer-endpoint-reconciler-controller"));
        cfg.peer_store = Some(Arc::new(NoStore));
        let h = hooks(&cfg);
        let post = names(&h.post_start);
        assert!(post.contains(&"peer-endpoint-reconciler-controller"));
        assert!(!post
            .iter()
            .any(|n| n.contains("identity") || n.contains("coordinated")));
        assert_eq!(
            names(&h.pre_shutdown),
            ["peer-endpoint-reconciler-controller"]
        );
    }

    #[test]
    fn peer_address_defaults_to_advertise() {
        let mut o = options();
        let cfg = Config::new(&o, "::1".parse().unwrap(), 6443).unwrap();
        assert_eq!(cfg.peer_address(), "[::1]:6443");
        o.peer_advertise_ip = Some("10.1.1.1".parse().unwrap());
        o.peer_advertise_port = Some(7443);
        let cfg = Config::new(&o, "::1".parse().unwrap(), 6443).unwrap();
        assert_eq!(cfg.peer_address(), "10.1.1.1:7443");
    }
}
