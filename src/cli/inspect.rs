//! Arguments of the inspect commands (leases, candidates, hooks, health, top). Types only.
//! May use: output (Format, ColorChoice).

use std::path::PathBuf;
use std::time::Duration;

use crate::output::{ColorChoice, Format};

/// Long help of `kapi leases`: columns, JSON shape, exit codes.
const LEASES_HELP: &str = concat!(
    "Lists the apiserver identity leases of kube-system (label apiserver.kubernetes.io/identity): \
who is alive. Columns: NAME, COMPONENT, HOLDER, HOSTNAME, RENEWED (age), EXPIRES (in/ago), STATE \
(Live, Expired, Free = a lock without holder); -o wide adds PEER-ADDRESS, DURATION, TRANSITIONS; \
--all adds the other leases of kube-system with TYPE after NAME and STRATEGY, PREFERRED-HOLDER \
after STATE.\n\n",
    "JSON/YAML shape (stable; times RFC 3339 UTC, absent values null):\n",
    "  {\"leases\": [{\"namespace\", \"name\", \"type\": \"identity\"|\"leader-election\", \"component\",\n",
    "    \"holder\", \"hostname\", \"peerAddress\", \"renewTime\", \"expireTime\", \"leaseDurationSeconds\",\n",
    "    \"leaseTransitions\", \"acquireTime\", \"strategy\", \"preferredHolder\",\n",
    "    \"state\": \"Live\"|\"Expired\"|\"Free\"}]}\n",
    "With --watch, -o json/yaml print one such lease object per change.\n\n",
    exit_codes!()
);

/// Long help of `kapi candidates`.
const CANDIDATES_HELP: &str = concat!(
    "Lists LeaseCandidates (coordinated leader election) joined with the Lease they compete for. \
Uses coordination.k8s.io/v1beta1, else v1alpha2, else v1alpha1, as discovery shows; when none is \
served it exits 3 (the CoordinatedLeaderElection feature gate is off). Columns: NAMESPACE, LEASE, \
CANDIDATE, BINARY, EMULATION, STRATEGY, RENEWED, PINGED (\"(pending)\" while a ping waits for its \
ack), LEADER (* = the lease's holderIdentity), PREFERRED (* = its preferredHolder); -o wide adds \
HOLDER.\n\n",
    "JSON/YAML shape (stable):\n",
    "  {\"apiVersion\": \"coordination.k8s.io/v1beta1\",\n",
    "   \"candidates\": [{\"namespace\", \"name\", \"leaseName\", \"binaryVersion\", \"emulationVersion\",\n",
    "     \"strategy\", \"renewTime\", \"pingTime\", \"pingPending\": bool, \"leader\": bool,\n",
    "     \"preferred\": bool}],\n",
    "   \"leases\": [{\"namespace\", \"name\", \"holderIdentity\", \"preferredHolder\", \"strategy\",\n",
    "     \"renewTime\", \"leaseDurationSeconds\"}]}\n\n",
    exit_codes!()
);

/// Long help of `kapi hooks`.
const HOOKS_HELP: &str = concat!(
    "Lists the post-start hooks of the apiserver from /readyz?verbose. STATUS is ok, pending (the \
hook has not finished) or failed; REASON is read from /readyz/poststarthook/<name> for the hooks \
that are not ok. Exits 1 when any hook is not ok. --all-apiservers asks every replica through the \
peer addresses of the identity leases (annotation kubernetes.io/peer-advertise-address) and \
reports the replicas that cannot be reached.\n\n",
    "JSON/YAML shape (stable):\n",
    "  {\"apiservers\": [{\"apiserver\": URL, \"identity\": lease name|null,\n",
    "     \"hooks\": [{\"name\", \"status\": \"ok\"|\"pending\"|\"failed\", \"reason\": string|null}]}],\n",
    "   \"unreachable\": [{\"apiserver\", \"identity\", \"error\"}]}\n\n",
    exit_codes!()
);

/// Long help of `kapi health`.
const HEALTH_HELP: &str = concat!(
    "Shows every check of /readyz (default), /livez, /healthz or all three, read from ?verbose, as \
CHECK and STATUS (ok, failed, excluded); the verdict goes to stderr. --wait polls every second \
until healthy (exit 0) or until --timeout (exit 1 when the server answered unhealthy, 3 when it \
never answered), with a spinner and the failing checks when stderr is a terminal. Example: \
kapi health readyz --wait --timeout 60s && deploy\n\n",
    "JSON/YAML shape (stable):\n",
    "  {\"healthy\": bool,\n",
    "   \"results\": [{\"apiserver\": URL, \"identity\": lease name|null, \"endpoint\": \"readyz\",\n",
    "     \"httpStatus\": 200, \"healthy\": bool,\n",
    "     \"checks\": [{\"name\", \"status\": \"ok\"|\"failed\"|\"excluded\"}], \"warnings\": [string]}],\n",
    "   \"unreachable\": [{\"apiserver\", \"identity\", \"error\"}]}\n\n",
    exit_codes!()
);

/// Long help of `kapi top`.
const TOP_HELP: &str = concat!(
    "Shows request rates, latencies and in-flight requests of an apiserver from its /metrics \
(kube-apiserver's metric names, so it works on kube-apiserver too), refreshing every --interval \
like top. Rates are the difference of two reads of /metrics one interval apart, so the first \
sample comes after one interval. A row is a verb on a resource: REQ/S, 5XX/S, and the P50/P99 \
latency estimated from apiserver_request_duration_seconds as Prometheus' histogram_quantile does; \
-o wide adds 4XX/S and P90. Above the rows, per apiserver: in-flight read-only and mutating \
requests, long-running requests, resident memory, CPU (100% = one core). On a terminal the table \
is redrawn in place until Ctrl-C (exit 0; 130 when --count/--once had not finished); otherwise, \
and with -o json/yaml, one document per sample is printed. Exits 3 when /metrics cannot be read at the start, or when \
the last sample reached no apiserver. Reading /metrics takes the system:monitoring ClusterRole: \
kubectl create clusterrolebinding kapi-top --clusterrole=system:monitoring --user=NAME\n\n",
    "JSON/YAML shape (stable; one document per sample, YAML documents start with ---):\n",
    "  {\"time\": RFC 3339,\n",
    "   \"apiservers\": [{\"apiserver\": URL, \"identity\": lease name|null, \"intervalSeconds\",\n",
    "     \"inFlight\": {\"readOnly\", \"mutating\"}, \"longRunning\", \"residentMemoryBytes\",\n",
    "     \"cpuPercent\", \"requestsPerSecond\", \"serverErrorsPerSecond\",\n",
    "     \"requests\": [{\"verb\", \"group\", \"resource\", \"subresource\", \"requestsPerSecond\",\n",
    "       \"clientErrorsPerSecond\", \"serverErrorsPerSecond\", \"p50Seconds\", \"p90Seconds\",\n",
    "       \"p99Seconds\"}]}],\n",
    "   \"unreachable\": [{\"apiserver\", \"identity\", \"error\"}]}\n",
    "Values the server does not expose, and latencies without observations, are null.\n\n",
    exit_codes!()
);

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
#[command(after_help = super::EXIT_CODES_HELP, after_long_help = LEASES_HELP)]
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
#[command(after_help = super::EXIT_CODES_HELP, after_long_help = CANDIDATES_HELP)]
pub struct CandidatesArgs {
    /// Cluster access.
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Output.
    #[command(flatten)]
    pub out: OutputArgs,
    /// Only candidates in this namespace.
    #[arg(
        short = 'n',
        long,
        value_name = "NAMESPACE",
        conflicts_with = "all_namespaces"
    )]
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
#[command(after_help = super::EXIT_CODES_HELP, after_long_help = HOOKS_HELP)]
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
#[command(after_help = super::EXIT_CODES_HELP, after_long_help = HEALTH_HELP)]
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

/// The output formats of `kapi top`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum TopFormat {
    /// Tables, redrawn in place on a terminal.
    #[default]
    Table,
    /// The tables with 4XX/S and P90 appended.
    Wide,
    /// One JSON document per sample.
    Json,
    /// One YAML document per sample.
    Yaml,
}

/// The order of the rows of `kapi top`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum TopSort {
    /// Requests per second, highest first.
    #[default]
    Rate,
    /// 99th percentile latency, slowest first.
    P99,
    /// 5xx per second (then 4xx per second), highest first.
    Errors,
}

/// `kapi top`.
#[derive(Debug, clap::Args)]
#[command(after_help = super::EXIT_CODES_HELP, after_long_help = TOP_HELP)]
pub struct TopArgs {
    /// Cluster access.
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Output format: table, wide (with 4XX/S and P90), json, yaml (one document per sample).
    #[arg(short = 'o', long = "output", value_enum, default_value_t = TopFormat::Table)]
    pub output: TopFormat,
    /// Leave out the header lines of the tables.
    #[arg(long)]
    pub no_headers: bool,
    /// Colour error rates: auto (only on a terminal, and not when NO_COLOR is set), always, never.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto, value_name = "WHEN")]
    pub color: ColorChoice,
    /// Time between two reads of /metrics: the window every rate is computed over (e.g. 2s, 1m).
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = parse_interval)]
    pub interval: Duration,
    /// Stop after this many samples (default: until Ctrl-C).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub count: Option<u64>,
    /// Print one sample and exit (the same as --count 1).
    #[arg(long, conflicts_with = "count")]
    pub once: bool,
    /// Row order: rate (requests/s), p99 (latency) or errors (5xx/s), highest first.
    #[arg(long, value_enum, default_value_t = TopSort::Rate)]
    pub sort: TopSort,
    /// Show at most N rows per apiserver (default: all; on a terminal, as many as fit).
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Reach every apiserver through the peer addresses published in identity leases.
    #[arg(long)]
    pub all_apiservers: bool,
}

/// A positive duration of at least 100ms: shorter windows hold too few requests to rate.
fn parse_interval(text: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(text).map_err(|e| e.to_string())?;
    if d < Duration::from_millis(100) {
        return Err("must be at least 100ms".into());
    }
    Ok(d)
}
