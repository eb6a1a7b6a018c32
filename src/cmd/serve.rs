//! `kapi serve`: flags → options (validated) → server config → generic server with hooks →
//! run until SIGINT/SIGTERM (a second signal exits at once).

use crate::cli::serve::ServeArgs;
use crate::exit::{CodedError, ExitCode};
use crate::options::ServerOptions;
use crate::server::{hooks, Config, GenericServer};
use anyhow::Context;
use tokio_util::sync::CancellationToken;

/// Runs the API server to completion.
pub fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let options = args.into_options();
    let errors = options.validate();
    if !errors.is_empty() {
        for err in &errors[..errors.len() - 1] {
            eprintln!("kapi: error: {err}");
        }
        let last = errors.last().cloned().unwrap_or_default();
        return Err(CodedError::new(ExitCode::Usage, last).into());
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("while starting the async runtime")?;
    runtime.block_on(serve(options))?;
    Ok(ExitCode::Ok)
}

async fn serve(options: ServerOptions) -> anyhow::Result<()> {
    let debug_hooks = options.controllers.debug_failing_hooks.clone();
    let config = Config::load(options).await.context("while loading the server configuration")?;
    eprintln!("export KUBECONFIG={}", config.kubeconfig_path().display());
    let mut server = config.complete().context("while completing the server configuration")?.new_server();
    register_hooks(&mut server, &debug_hooks)?;
    let prepared = server.prepare_run();

    let cancel = CancellationToken::new();
    let signals = tokio::spawn(watch_signals(cancel.clone()));
    let result = prepared.run(cancel).await;
    signals.abort();
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

/// First SIGINT/SIGTERM cancels `cancel`; a second one exits at once (SetupSignalContext).
async fn watch_signals(cancel: CancellationToken) {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) else {
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
        tracing::info!(signal = name, "signal received, shutting down gracefully");
        cancel.cancel();
    }
}
