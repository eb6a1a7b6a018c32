//! The clap definition of the whole command line: the single source of `--help`, man pages
//! and shell completions. Types only, no I/O. May use: options, logging (LogFormat).

/// The exit-code paragraph as a literal, so `concat!` can append it to the pages of the
/// inspect commands; [`EXIT_CODES_HELP`] is the same text as a constant.
macro_rules! exit_codes {
    () => {
        "Exit codes:\n  0  ok\n  1  the cluster answered and something is wrong (a failing check or hook, an expired lease with --fail-on-expired)\n  2  usage error\n  3  no answer (no kubeconfig, unreachable, TLS failure, 401/403, timeout, API not served)"
    };
}

pub mod generate;
pub mod inspect;
pub mod serve;

use clap::{Parser, Subcommand};

/// Top-level command line.
#[derive(Debug, Parser)]
#[command(
    name = "kapi",
    version,
    about = "A Kubernetes-compatible control-plane API server, and an inspector for live control planes",
    long_about = None,
    after_help = EXIT_CODES_HELP,
    propagate_version = true
)]
pub struct Cli {
    /// Log verbosity: -v debug, -vvvv trace (also --v=N as in kube-apiserver).
    #[arg(short = 'v', long = "v", global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Log line format on stderr.
    #[arg(long, global = true, value_enum, default_value_t = crate::logging::LogFormat::Text)]
    pub log_format: crate::logging::LogFormat,
    /// The subcommand to run.
    #[command(subcommand)]
    pub command: Command,
}

/// Exit codes, shown in every `--help` and man page.
pub const EXIT_CODES_HELP: &str = exit_codes!();

/// kapi's subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a Kubernetes-compatible control-plane API server.
    Serve(Box<serve::ServeArgs>),
    /// Show apiserver identity leases (who is alive) and, with --all, the other kube-system leases.
    Leases(inspect::LeasesArgs),
    /// Show LeaseCandidates joined with their Lease (who is elected, who is preferred).
    Candidates(inspect::CandidatesArgs),
    /// Show the post-start hooks of an apiserver and why the failing ones fail.
    Hooks(inspect::HooksArgs),
    /// Show the health checks of an apiserver; --wait polls until healthy.
    Health(inspect::HealthArgs),
    /// Show request rates, latencies and in-flight requests from /metrics, refreshing like top.
    Top(inspect::TopArgs),
    /// Print a shell completion script.
    Completions(generate::CompletionsArgs),
    /// Write man pages (one per subcommand) into a directory.
    Man(generate::ManArgs),
}
