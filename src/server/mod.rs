//! The generic API server (k8s.io/apiserver pkg/server): config, handler chain, TLS serving,
//! health, supervised hooks, graceful shutdown.
//!
//! Pipeline (as the generic control-plane sample): [`Config::load`] → [`Config::complete`] →
//! [`CompletedConfig::new_server`] → [`GenericServer`] (hooks are added here) →
//! [`GenericServer::prepare_run`] (installs /healthz /livez /readyz, `shutdown` last) →
//! [`PreparedServer::run`] until the cancellation token fires.
//! May use: options, filters, endpoints, registry, storage, api, serviceaccount.

mod aggregator;
mod apiextensions;
mod cert_reload;
mod chain;
pub(crate) mod config;
mod control_runtime;
mod date;
pub(crate) mod front_proxy;
pub(crate) mod health;
pub(crate) mod hooks;
mod informers;
mod lifecycle;
pub(crate) mod listener;
mod loopback;
pub(crate) mod otel;
pub(crate) mod pki;
mod service_accounts;
mod storage_metrics;

pub(crate) use config::{CompletedConfig, Config};
pub(crate) use lifecycle::PreparedServer;

use crate::aggregator::peers::PeerProxy;
use crate::api::authorizer::Authorizer;
use crate::filters::authn::Authenticator;
use crate::filters::authz::{AlwaysAllow, AlwaysDeny, Union};
use crate::filters::in_flight::MaxInFlight;
use crate::filters::request_header::{HeaderNames, RequestHeaderAuthenticator};
use crate::filters::sa_tokens::ServiceAccountTokens;
use crate::options::AuthorizationMode;
use health::{CheckFn, Health, HealthCheck};
use hooks::{Hooks, PostStartHookFn, PreShutdownHookFn};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// A server with its configuration complete; hooks may still be added.
pub(crate) struct GenericServer {
    completed: CompletedConfig,
    hooks: Hooks,
    /// Checks of /healthz, /livez (after the grace period) and /readyz besides the hooks'.
    boot_checks: Vec<HealthCheck>,
    /// The mixed-version peer proxy, when on.
    peers: Option<Arc<PeerProxy>>,
}

impl GenericServer {
    fn new(completed: CompletedConfig) -> Self {
        GenericServer {
            completed,
            hooks: Hooks::default(),
            boot_checks: Vec::new(),
            peers: None,
        }
    }

    /// Registers a post-start hook; it runs, supervised, once the listener accepts connections.
    pub(crate) fn add_post_start_hook(
        &mut self,
        name: &str,
        hook: PostStartHookFn,
    ) -> Result<(), hooks::Error> {
        self.hooks.add_post_start_hook(name, hook)
    }

    /// The server's own apiextensions hooks: `start-apiextensions-informers` (serves the
    /// stored CRDs' resources and follows them) and `crd-informer-synced`.
    pub(crate) fn apiextensions_hooks(&self) -> (PostStartHookFn, PostStartHookFn) {
        apiextensions::hooks(self.completed.config.api.registry().clone())
    }

    /// The `generic-apiserver-start-informers` hook: follows the RBAC objects the
    /// authorizer reads, done once they are listed.
    pub(crate) fn informers_hook(&self) -> PostStartHookFn {
        informers::hook(self.completed.config.api.registry().clone())
    }

    /// kube-aggregator's hooks, in upstream's order; registers its `autoregister-completion`
    /// check (AddBootSequenceHealthChecks: healthz, livez after the grace period, readyz).
    pub(crate) fn aggregator_hooks(&mut self) -> Vec<(&'static str, PostStartHookFn)> {
        let cfg = &self.completed.config;
        let (hooks, check) = aggregator::hooks(cfg.api.registry().clone(), cfg.aggregator.clone());
        self.boot_checks.push(check);
        hooks
    }

    /// Turns the mixed-version peer proxy on for the replica `self_id` (its identity lease
    /// name), trusting peers signed by `peer_ca_pem`; returns its hooks, in upstream's order.
    pub(crate) fn peer_proxy(
        &mut self,
        self_id: String,
        peer_ca_pem: Option<Vec<u8>>,
    ) -> Vec<(&'static str, PostStartHookFn)> {
        let cfg = &self.completed.config;
        let ca = peer_ca_pem.unwrap_or_else(|| cfg.pki.serving_ca_pem.as_bytes().to_vec());
        let peers = Arc::new(PeerProxy::new(
            self_id,
            ca,
            cfg.aggregator.identity(),
            cfg.aggregator.serving(),
        ));
        self.peers = Some(peers.clone());
        aggregator::peer_hooks(peers)
    }

    /// Registers a pre-shutdown hook; it runs once when shutdown begins.
    pub(crate) fn add_pre_shutdown_hook(
        &mut self,
        name: &str,
        hook: PreShutdownHookFn,
    ) -> Result<(), hooks::Error> {
        self.hooks.add_pre_shutdown_hook(name, hook)
    }

    /// Installs the health endpoints (checks frozen from here on, `shutdown` last in readyz)
    /// and builds the handler chain.
    pub(crate) fn prepare_run(self) -> PreparedServer {
        let GenericServer {
            completed,
            hooks,
            boot_checks,
            peers,
        } = self;
        let cfg = &completed.config;
        let opts = &cfg.options;
        let storage_check = |name: &str| {
            let storage = cfg.storage.clone();
            let limit = opts.storage.healthcheck_timeout;
            let check: CheckFn = Arc::new(move || {
                let storage = storage.clone();
                Box::pin(async move {
                    match tokio::time::timeout(limit, storage.check_health()).await {
                        Ok(Ok(())) => Ok(()),
                        Ok(Err(err)) => Err(error_chain(&err)),
                        Err(_) => Err(format!("health check timed out after {limit:?}")),
                    }
                })
            });
            HealthCheck::new(name, check)
        };
        let log: CheckFn = Arc::new(|| Box::pin(async { Ok(()) }));
        let base = vec![
            HealthCheck::ping(),
            HealthCheck::new("log", log),
            storage_check("etcd"),
        ];
        let mut hook_checks = hooks.health_checks();
        hook_checks.extend(boot_checks);
        let grace_deadline = tokio::time::Instant::now() + opts.serving.livez_grace_period;

        let shutdown_initiated = CancellationToken::new();
        let initiated = shutdown_initiated.clone();
        let shutdown_check: CheckFn = Arc::new(move || {
            let down = initiated.is_cancelled();
            Box::pin(async move {
                if down {
                    Err("process is shutting down".into())
                } else {
                    Ok(())
                }
            })
        });

        let mut healthz = base.clone();
        healthz.extend(hook_checks.iter().cloned());
        let mut livez = base.clone();
        livez.extend(
            hook_checks
                .iter()
                .cloned()
                .map(|c| c.delayed_until(grace_deadline)),
        );
        let mut readyz = base;
        readyz.push(storage_check("etcd-readiness"));
        readyz.extend(hook_checks);
        readyz.push(HealthCheck::new("shutdown", shutdown_check));
        let health = Arc::new(Health::new(healthz, livez, readyz));

        let registry = cfg.api.registry();
        let modes = opts
            .serving
            .authorization_modes
            .iter()
            .map(|mode| -> Arc<dyn Authorizer> {
                match mode {
                    AuthorizationMode::AlwaysAllow => Arc::new(AlwaysAllow),
                    AuthorizationMode::AlwaysDeny => Arc::new(AlwaysDeny),
                    AuthorizationMode::Rbac => registry.rbac().clone(),
                }
            })
            .collect();
        let authz: Arc<dyn Authorizer> = Arc::new(Union::new(modes));
        registry.set_authorizer(authz.clone());
        // Server-side apply's merge, for MutatingAdmissionPolicy's apply configurations.
        registry
            .admission()
            .set_merge(Arc::new(crate::endpoints::apply::PolicyMerge));

        let authn = Arc::new(
            Authenticator::new(
                cfg.tokens.clone(),
                Some(completed.verifier.clone()),
                opts.serving.anonymous_auth,
            )
            .with_service_accounts(ServiceAccountTokens::new(
                cfg.issuer.clone(),
                registry.subjects().clone(),
            ))
            .with_request_header(request_header_authenticator(&completed)),
        );
        registry.set_token_reviewer(authn.clone());

        let watch_shutdown = CancellationToken::new();
        let chain = Arc::new(chain::Chain {
            authn: authn.clone(),
            authz,
            in_flight: MaxInFlight::new(
                opts.serving.max_requests_inflight,
                opts.serving.max_mutating_requests_inflight,
            ),
            request_timeout: opts.serving.request_timeout,
            health,
            api: cfg.api.clone(),
            aggregator: cfg.aggregator.clone(),
            peers,
            shutdown: watch_shutdown.clone(),
            audit: cfg.audit.clone(),
            tracer: opts
                .tracing
                .config_file
                .is_some()
                .then(otel::RequestTracer::new),
        });
        // Set once, here; a second prepare_run cannot happen (it consumes the server).
        let _ = completed.chain.set(chain.clone());
        PreparedServer::new(completed, hooks, chain, shutdown_initiated, watch_shutdown)
    }
}

pub(crate) use crate::api::error_chain;

/// The front-proxy authenticator of the configured request-header CAs, names and headers.
fn request_header_authenticator(completed: &CompletedConfig) -> RequestHeaderAuthenticator {
    let rh = completed.config.request_header();
    RequestHeaderAuthenticator::new(
        completed.request_header_verifier.clone(),
        rh.allowed_names.clone(),
        HeaderNames {
            username: rh.username_headers.clone(),
            uid: rh.uid_headers.clone(),
            group: rh.group_headers.clone(),
            extra_prefix: rh.extra_headers_prefix.clone(),
        },
    )
}
