//! `kapi serve`: flags → options (validated) → server config → generic server with hooks →
//! run until SIGINT/SIGTERM (a second signal exits at once).

use crate::audit::{self, Auditor};
use crate::cli::serve::ServeArgs;
use crate::controllers;
use crate::exit::{CodedError, ExitCode};
use crate::options::ServerOptions;
use crate::server::{hooks, otel, Config, GenericServer};
use crate::storage::{self, KeyValue, Storage, Update};
use anyhow::Context;
use bytes::Bytes;
use futures::future::BoxFuture;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How long pending spans may take to reach the collector at shutdown.
const TRACING_FLUSH_DEADLINE: Duration = Duration::from_secs(3);

/// Runs the API server to completion.
pub(super) fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let options = args.into_options();
    let errors = options.validate();
    if !errors.is_empty() {
        for err in &errors[..errors.len() - 1] {
            note!("kapi: error: {err}");
        }
        let last = errors.last().cloned().unwrap_or_default();
        return Err(CodedError::new(ExitCode::Usage, last).into());
    }
    let auditor = load_audit(&options)?;
    let tracing_config = load_tracing(&options)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("while starting the async runtime")?;
    let tracing = match tracing_config {
        Some(config) => {
            // The exporter's gRPC channel runs on the runtime.
            let _entered = runtime.enter();
            let id = crate::apiserver_id(&hostname(&options));
            Some(otel::Tracing::install(&config, &id).context("while setting up tracing")?)
        }
        None => None,
    };
    runtime.block_on(serve(options, auditor, tracing))?;
    Ok(ExitCode::Ok)
}

/// Reads and checks `--tracing-config-file` before anything else is done: a file that
/// cannot be read or is not a valid TracingConfiguration is a usage error (exit 2), named
/// with its field in one line.
fn load_tracing(
    options: &ServerOptions,
) -> anyhow::Result<Option<crate::options::TracingConfiguration>> {
    let Some(path) = &options.tracing.config_file else {
        return Ok(None);
    };
    otel::load(path).map(Some).map_err(|err| {
        let message = format!("{:#}", anyhow::Error::from(err));
        CodedError::new(ExitCode::Usage, message).into()
    })
}

/// The host name the apiserver ID is made of (`--hostname-override`, else the OS's).
fn hostname(options: &ServerOptions) -> String {
    options
        .controllers
        .hostname_override
        .clone()
        .unwrap_or_else(|| {
            hostname::get()
                .map(|h| h.to_string_lossy().into_owned())
                .unwrap_or_default()
        })
}

/// Loads the audit policy and opens the audit log before anything else is done, as options
/// are checked: a policy that does not parse is a usage error (exit 2); a log that cannot be
/// opened stops the start like any file that cannot be opened.
fn load_audit(options: &ServerOptions) -> anyhow::Result<Option<Arc<Auditor>>> {
    // The endpoints' decoder; the envelope of a protobuf body names its kind.
    let protobuf = |body: &[u8]| {
        crate::endpoints::protobuf::decode(body, &crate::api::GroupVersionKind::default()).ok()
    };
    match Auditor::load(&options.audit, protobuf) {
        Ok(auditor) => Ok(auditor),
        Err(err @ audit::Error::Policy(_)) => {
            let message = format!("{:#}", anyhow::Error::from(err));
            Err(CodedError::new(ExitCode::Usage, message).into())
        }
        Err(err) => Err(err.into()),
    }
}

async fn serve(
    options: ServerOptions,
    auditor: Option<Arc<Auditor>>,
    tracing: Option<otel::Tracing>,
) -> anyhow::Result<()> {
    let debug_hooks = options.controllers.debug_failing_hooks.clone();
    let options_for_controllers = options.clone();
    let mut config = Config::load(options)
        .await
        .context("while loading the server configuration")?;
    config.set_auditor(auditor.clone());
    note!("export KUBECONFIG={}", config.kubeconfig_path().display());
    let controllers = controllers_config(&options_for_controllers, &config)?;
    let storage = config.storage();
    let mut server = config
        .complete()
        .context("while completing the server configuration")?
        .new_server();
    register_hooks(&mut server, &debug_hooks)?;
    register_controllers(&mut server, &controllers)?;
    let prepared = server.prepare_run();

    let cancel = CancellationToken::new();
    let signals = tokio::spawn(watch_signals(cancel.clone()));
    let result = prepared.run(cancel).await;
    signals.abort();
    // Requests are drained and hooks stopped: the store stops cleanly (tasks still holding
    // it end with the runtime, after this returns).
    if let Err(err) = tokio::task::spawn_blocking(move || storage.close()).await {
        ::tracing::error!(error = %err, "closing the store failed");
    }
    if let Some(auditor) = &auditor {
        auditor.shutdown().await;
    }
    if let Some(tracing) = tracing {
        // Pending spans get a short deadline: a collector that is down must not hold the
        // exit up.
        let flush = tokio::task::spawn_blocking(move || tracing.shutdown(TRACING_FLUSH_DEADLINE));
        if let Err(err) = flush.await {
            ::tracing::warn!(error = %err, "flushing spans failed");
        }
    }
    result.context("while serving")?;
    Ok(())
}

/// Hooks every `kapi serve` registers (controllers add theirs here).
fn register_hooks(server: &mut GenericServer, debug_hooks: &[(String, u32)]) -> anyhow::Result<()> {
    for (name, failures) in debug_hooks {
        server
            .add_post_start_hook(name, hooks::failing_hook(*failures))
            .with_context(|| format!("while registering --debug-failing-hook {name}"))?;
    }
    Ok(())
}

/// The controllers' settings: options plus what the loaded server knows.
fn controllers_config(
    options: &ServerOptions,
    config: &Config,
) -> anyhow::Result<controllers::Config> {
    let local = config.local_addr();
    let advertise = options
        .serving
        .advertise_address
        .unwrap_or_else(|| local.ip());
    let mut cc = controllers::Config::new(&options.controllers, advertise, local.port())
        .context("while configuring the controllers")?;
    let rh = config.request_header();
    cc.auth = controllers::AuthInfo {
        client_ca_pem: Some(controllers::pem_bundle(&config.client_ca_ders())),
        client_ca_file: None,
        request_header: Some(controllers::RequestHeaderInfo {
            ca_pem: rh.ca_pem.clone(),
            username_headers: rh.username_headers.clone(),
            uid_headers: rh.uid_headers.clone(),
            group_headers: rh.group_headers.clone(),
            extra_headers_prefix: rh.extra_headers_prefix.clone(),
            allowed_names: rh.allowed_names.clone(),
        }),
    };
    cc.rbac = options
        .serving
        .authorization_modes
        .contains(&crate::options::AuthorizationMode::Rbac);
    cc.tokens = Some(controllers::TokenSigner {
        issuer: config.token_issuer(),
        root_ca: config.serving_ca_pem().as_bytes().to_vec(),
    });
    cc.peer_store = Some(Arc::new(StoragePeerStore {
        storage: config.storage(),
        prefix: options.storage.prefix.trim_end_matches('/').to_string(),
    }));
    Ok(cc)
}

/// Registers apiextensions-apiserver's hooks, then the control-plane controllers
/// (pkg/controlplane/apiserver/server.go), in kube-apiserver's order.
fn register_controllers(
    server: &mut GenericServer,
    config: &controllers::Config,
) -> anyhow::Result<()> {
    let (informers, synced) = server.apiextensions_hooks();
    for (name, hook) in [
        ("generic-apiserver-start-informers", server.informers_hook()),
        ("start-apiextensions-informers", informers),
        (
            "start-apiextensions-controllers",
            controllers::apiextensions_controllers(),
        ),
        ("crd-informer-synced", synced),
    ] {
        server
            .add_post_start_hook(name, hook)
            .with_context(|| format!("while registering post-start hook {name}"))?;
    }
    let hooks = controllers::hooks(config);
    for (name, hook) in hooks.post_start {
        server
            .add_post_start_hook(&name, hook)
            .with_context(|| format!("while registering post-start hook {name}"))?;
    }
    let mut aggregation = server.aggregator_hooks();
    if config.options.gate("UnknownVersionInteroperabilityProxy") {
        let peer_ca = match &config.options.peer_ca_file {
            Some(path) => Some(
                std::fs::read(path)
                    .with_context(|| format!("cannot read --peer-ca-file {}", path.display()))?,
            ),
            None => None,
        };
        aggregation.extend(server.peer_proxy(config.apiserver_id.clone(), peer_ca));
    }
    for (name, hook) in aggregation {
        server
            .add_post_start_hook(name, hook)
            .with_context(|| format!("while registering post-start hook {name}"))?;
    }
    for (name, hook) in hooks.pre_shutdown {
        server
            .add_pre_shutdown_hook(&name, hook)
            .with_context(|| format!("while registering pre-shutdown hook {name}"))?;
    }
    Ok(())
}

/// Peer endpoints written straight to storage with a TTL, as kube-apiserver does in etcd.
struct StoragePeerStore {
    storage: Arc<dyn Storage>,
    prefix: String,
}

impl controllers::PeerEndpointStore for StoragePeerStore {
    fn set(
        &self,
        key: &str,
        value: Vec<u8>,
        ttl: Duration,
    ) -> BoxFuture<'static, Result<(), controllers::PeerStoreError>> {
        let (storage, key) = (self.storage.clone(), format!("{}/{key}", self.prefix));
        Box::pin(async move {
            let value = Bytes::from(value);
            let update = move |_: Option<&KeyValue>| Ok(Update::SetWithTtl(value.clone(), ttl));
            storage.guaranteed_update(&key, true, &update).await?;
            Ok(())
        })
    }

    fn delete(&self, key: &str) -> BoxFuture<'static, Result<(), controllers::PeerStoreError>> {
        let (storage, key) = (self.storage.clone(), format!("{}/{key}", self.prefix));
        Box::pin(async move {
            match storage.delete(&key, &|_: &KeyValue| Ok(())).await {
                Ok(_) | Err(storage::Error::NotFound { .. }) => Ok(()),
                Err(e) => Err(e.into()),
            }
        })
    }
}

/// First SIGINT/SIGTERM cancels `cancel`; a second one exits at once (SetupSignalContext).
async fn watch_signals(cancel: CancellationToken) {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::error!("cannot install signal handlers");
        return;
    };
    let mut received = 0;
    loop {
        let name = tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        };
        received += 1;
        if received > 1 {
            tracing::warn!(signal = name, "second signal received, exiting immediately");
            std::process::exit(1);
        }
        cancel.cancel();
        tracing::info!(signal = name, "signal received, shutting down gracefully");
    }
}
