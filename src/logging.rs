//! tracing-subscriber set-up: stderr only, `-v` levels, text or JSON. May use: nothing internal.

use tracing_subscriber::EnvFilter;

/// Log line format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// Installs the global subscriber. `verbosity` 0 = info, 1-3 = debug, 4+ = trace;
/// `RUST_LOG` overrides it when set. `quiet_default` lowers the default to warn (inspect commands).
pub fn init(verbosity: u8, format: LogFormat, quiet_default: bool) {
    let level = match (verbosity, quiet_default) {
        (0, true) => "warn",
        (0, false) => "info",
        (1..=3, _) => "debug",
        _ => "trace",
    };
    let mut default = format!("{level},h2=warn,hyper=warn,rustls=warn,tower=warn,kube=warn");
    if quiet_default && verbosity == 0 {
        // The inspect commands report client failures themselves, as one line each.
        default.push_str(",kube_client=off,kube_runtime=off");
    }
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        // A log line that cannot be written (stderr is a closed pipe: the reader of `kapi
        // serve 2>&1 | tee log` went away) is dropped. By default tracing-subscriber reports
        // it with `eprintln!`, which panics on that very stderr, in whichever task logged:
        // the signal watcher's panic left SIGTERM without effect.
        .log_internal_errors(false);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}
