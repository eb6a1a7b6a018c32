//! Running and graceful shutdown (RunWithContext in pkg/server/genericapiserver.go), in this
//! order: ShutdownInitiated (/readyz fails) → `--shutdown-delay-duration` elapses while the
//! pre-shutdown hooks run → NotAcceptingNewRequest (listener closed, watches told to end) →
//! in-flight requests drain (bounded by `--request-timeout`) → hook contexts cancelled and
//! hook tasks awaited → exit. One info line per phase.
//! May use: options, filters, endpoints, registry, storage, api.

use super::chain::{self, Chain};
use super::hooks::{HookContext, Hooks};
use super::listener::{self, HttpSettings};
use super::CompletedConfig;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Why the server stopped other than by request.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum Error {
    /// The accept loop ended on its own.
    #[error("stopped listening on {0} unexpectedly")]
    ServeEnded(
        std::net::SocketAddr,
        #[source] Option<tokio::task::JoinError>,
    ),
}

/// A server with health endpoints installed, ready to run.
pub(crate) struct PreparedServer {
    completed: CompletedConfig,
    hooks: Hooks,
    chain: Arc<Chain>,
    shutdown_initiated: CancellationToken,
    watch_shutdown: CancellationToken,
}

impl PreparedServer {
    pub(super) fn new(
        completed: CompletedConfig,
        hooks: Hooks,
        chain: Arc<Chain>,
        shutdown_initiated: CancellationToken,
        watch_shutdown: CancellationToken,
    ) -> Self {
        PreparedServer {
            completed,
            hooks,
            chain,
            shutdown_initiated,
            watch_shutdown,
        }
    }

    /// Serves until `cancel` fires, then shuts down gracefully.
    ///
    /// # Errors
    /// Only when the accept loop ends on its own; a requested stop returns `Ok`.
    pub(crate) async fn run(self, cancel: CancellationToken) -> Result<(), Error> {
        let PreparedServer {
            completed,
            mut hooks,
            chain,
            shutdown_initiated,
            watch_shutdown,
        } = self;
        let CompletedConfig {
            config,
            control,
            loopback,
            tls,
            serving_cert,
            ..
        } = completed;
        let opts = config.options;
        let addr = config.local_addr;

        let stop_serving = CancellationToken::new();
        let handler_chain = chain.clone();
        let handler: listener::Handler =
            Arc::new(move |req| Box::pin(chain::handle(handler_chain.clone(), req)));
        let settings = HttpSettings {
            disable_http2: opts.serving.disable_http2,
            http2_max_streams: opts.serving.http2_max_streams,
        };
        let mut serving = tokio::spawn(listener::serve(
            config.listener,
            tls,
            settings,
            handler,
            stop_serving.clone(),
            opts.serving.request_timeout,
        ));
        tracing::info!(address = %addr, "serving securely");
        // DynamicServingCertificateController: a rotated `--tls-cert-file` pair is served to
        // new connections without a restart. Not joined: it ends with `stop_serving`.
        if let (Some(cert), Some(key)) = (
            opts.serving.tls_cert_file.clone(),
            opts.serving.tls_private_key_file.clone(),
        ) {
            tokio::spawn(super::cert_reload::watch(
                (cert, key),
                serving_cert,
                stop_serving.clone(),
            ));
        }

        let hook_cancel = CancellationToken::new();
        let hook_tasks = TaskTracker::new();
        hooks.start(
            &HookContext {
                client: loopback,
                cancel: hook_cancel.clone(),
                tasks: hook_tasks.clone(),
            },
            &control.handle(),
        );
        hook_tasks.spawn(super::storage_metrics::observe(
            config.api.registry().clone(),
            config.storage.clone(),
            opts.storage.count_metric_poll_period,
            hook_cancel.clone(),
        ));

        let ended = tokio::select! {
            _ = cancel.cancelled() => None,
            res = &mut serving => Some(res),
        };
        if let Some(res) = ended {
            hook_cancel.cancel();
            return Err(Error::ServeEnded(addr, res.err()));
        }

        shutdown_initiated.cancel();
        tracing::info!(delay = ?opts.shutdown.delay, "[graceful-termination] shutdown initiated, /readyz now fails");
        let delay = async {
            tokio::time::sleep(opts.shutdown.delay).await;
            tracing::info!("[graceful-termination] shutdown delay elapsed");
        };
        tokio::join!(delay, hooks.run_pre_shutdown());
        tracing::info!(
            "[graceful-termination] pre-shutdown hooks done, no longer accepting new requests"
        );

        watch_shutdown.cancel();
        stop_serving.cancel();
        if let Err(err) = serving.await {
            tracing::error!(error = %err, "serving task failed");
        }
        tracing::info!("[graceful-termination] in-flight requests drained");

        hook_cancel.cancel();
        hook_tasks.close();
        if tokio::time::timeout(opts.serving.request_timeout, hook_tasks.wait())
            .await
            .is_err()
        {
            tracing::warn!("post-start hook tasks did not stop in time");
        }
        tracing::info!("[graceful-termination] hooks stopped, apiserver is exiting");
        drop(control);
        drop(config.storage);
        Ok(())
    }
}
