//! Arguments of the inspect commands (leases, candidates, hooks, health). Types only.
//! May use: output (Format, ColorChoice).

use std::path::PathBuf;
use std::time::Duration;

use crate::output::{ColorChoice, Format};

/// How to reach the cluster, as kubectl does.
#[derive(Debug, Clone, clap::Args)]
pub struct ClusterArgs {
    /// Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster).
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use (default: the current context).
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
    /// How long to wait for each request before giving up (e.g. 5s, 1m).
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = humantime::parse_duration)]
    pub request_timeout: Duration,
}

/// How to print the result.
#[derive(Debug, Clone, clap::Args)]
pub struct OutputArgs {
    /// Output format: table, wide (more columns), json, yaml (stable documented shapes), name.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Format::Table)]
    pub output: Format,
    /// Leave out the header line of tables.
    #[arg(long)]
    pub no_headers: bool,
    /// Colour status cells: auto (only on a terminal, and not when NO_COLOR is set), always, never.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto, value_name = "WHEN")]
    pub color: ColorChoice,
}

/// `kapi leases`.
#[derive(Debug, clap::Args)]
#[command(after_help = super::EXIT_CODES_HELP)]
pub struct LeasesArgs {
    /// Cluster access.
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Output.
    #[command(flatten)]
    pub out: OutputArgs,
    /// Also list the other Leases of kube-system (leader-election locks), with a TYPE column.
    #[arg(long)]
    pub all: bool,
    /// Label selector to filter leases (e.g. kubernetes.io/hostname=node-1).
    #[arg(short = 'l', long = "selector", value_name = "SELECTOR")]
    pub selector: Option<String>,
    /// Only identity leases of this component (value of label apiserver.kubernetes.io/identity).
    #[arg(long, value_name = "NAME")]
    pub component: Option<String>,
    /// After listing, keep watching and print a row whenever a lease changes.
    #[arg(short = 'w', long)]
    pub watch: bool,
    /// Exit 1 when any listed lease is expired.
    #[arg(long)]
    pub fail_on_expired: bool,
}

/// `kapi candidates`.
#[derive(Debug, clap::Args)]
#[command(after_help = super::EXIT_CODES_HELP)]
pub struct CandidatesArgs {
    /// Cluster access.
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Output.
    #[command(flatten)]
    pub out: OutputArgs,
    /// Only candidates in this namespace.
    #[arg(short = 'n', long, value_name = "NAMESPACE", conflicts_with = "all_namespaces")]
    pub namespace: Option<String>,
    /// Candidates in all namespaces (the default).
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
    /// Only candidates for this Lease name.
    #[arg(long, value_name = "NAME")]
    pub lease: Option<String>,
}

/// `kapi hooks`.
#[derive(Debug, clap::Args)]
#[command(after_help = super::EXIT_CODES_HELP)]
pub struct HooksArgs {
    /// Cluster access.
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Output.
    #[command(flatten)]
    pub out: OutputArgs,
    /// Show only the hooks that are not ok.
    #[arg(long)]
    pub failing: bool,
    /// Reach every apiserver through the peer addresses published in identity leases.
    #[arg(long)]
    pub all_apiservers: bool,
}

/// Which health endpoint `kapi health` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum HealthEndpoint {
    /// /livez: is the process alive.
    Livez,
    /// /readyz: is it ready to serve (the default).
    #[default]
    Readyz,
    /// /healthz: the legacy combined endpoint.
    Healthz,
    /// All three, one after the other.
    All,
}

/// `kapi health`.
#[derive(Debug, clap::Args)]
#[command(after_help = super::EXIT_CODES_HELP)]
pub struct HealthArgs {
    /// Cluster access.
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Output.
    #[command(flatten)]
    pub out: OutputArgs,
    /// The endpoint to check.
    #[arg(value_enum, default_value_t = HealthEndpoint::Readyz)]
    pub endpoint: HealthEndpoint,
    /// Skip a check by its exact name (repeatable; sent as ?exclude=).
    #[arg(long, value_name = "CHECK")]
    pub exclude: Vec<String>,
    /// Poll until healthy (exit 0) or until --timeout passes (exit 1, or 3 if never reached).
    #[arg(long)]
    pub wait: bool,
    /// How long --wait polls (e.g. 60s, 2m).
    #[arg(long, value_name = "DURATION", default_value = "2m", value_parser = humantime::parse_duration)]
    pub timeout: Duration,
    /// Print nothing; only set the exit code.
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// Reach every apiserver through the peer addresses published in identity leases.
    #[arg(long)]
    pub all_apiservers: bool,
}
