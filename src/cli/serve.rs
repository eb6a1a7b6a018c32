//! Flags of `kapi serve`, with kube-apiserver's names and defaults where kube-apiserver has them,
//! converted once into [`crate::options::ServerOptions`].

use crate::options::{
    AuditLogFormat, AuditLogMode, AuditLogPath, AuditOptions, AuthorizationMode, Backend,
    ControllerOptions, RequestHeaderOptions, RuntimeConfig, ServerOptions, ServiceAccountOptions,
    ServingOptions, ShutdownOptions, StorageOptions, TracingOptions, DEFAULT_BATCH_BUFFER_SIZE,
    REMOTE_EXTRA_PREFIX, REMOTE_GROUP_HEADER, REMOTE_UID_HEADER, REMOTE_USER_HEADER,
};
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

fn authorization_mode(s: &str) -> Result<AuthorizationMode, String> {
    AuthorizationMode::ALL
        .iter()
        .find(|(name, _)| *name == s)
        .map(|(_, m)| *m)
        .ok_or_else(|| {
            let known: Vec<&str> = AuthorizationMode::ALL.iter().map(|(n, _)| *n).collect();
            format!("unknown mode {s:?} (known: {})", known.join(", "))
        })
}

fn duration(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s)
        .map_err(|e| format!("{e} (expected a duration such as 500ms, 10s, 1m0s)"))
}

/// `kapi serve` flags.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Storage: the embedded durable store under --data-dir is the default; \
--etcd-servers switches to a real etcd v3 cluster, so several replicas form one control plane."
)]
pub struct ServeArgs {
    /// IP address to listen on.
    #[arg(long, default_value = "127.0.0.1", help_heading = "Serving")]
    pub bind_address: IpAddr,
    /// HTTPS port; 0 picks a free port (the admin kubeconfig records the real one).
    #[arg(long, default_value_t = 6443, help_heading = "Serving")]
    pub secure_port: u16,
    /// IP announced to the cluster (identity lease, serving certificate SAN).
    #[arg(long, help_heading = "Serving")]
    pub advertise_address: Option<IpAddr>,
    /// Directory for the embedded store, generated PKI and admin.kubeconfig.
    #[arg(long, default_value = "./kapi-data", help_heading = "Serving")]
    pub data_dir: PathBuf,
    /// Directory of the generated CA and serving certificate [default: <data-dir>/pki].
    // The doc comment is the flag's --help text, where `<data-dir>` is a placeholder, not HTML.
    #[allow(rustdoc::invalid_html_tags)]
    #[arg(long, help_heading = "Serving")]
    pub cert_dir: Option<PathBuf>,
    /// Serving certificate (PEM, leaf first); without it kapi generates one in --cert-dir.
    /// Reloaded when it or its key changes (new connections get the new pair).
    #[arg(long, help_heading = "Serving")]
    pub tls_cert_file: Option<PathBuf>,
    /// Private key of --tls-cert-file (PEM).
    #[arg(long, help_heading = "Serving")]
    pub tls_private_key_file: Option<PathBuf>,
    /// Serve HTTP/1.1 only (no h2 in ALPN).
    #[arg(long, help_heading = "Serving")]
    pub disable_http2_serving: bool,
    /// HTTP/2 concurrent streams per connection (0 = 100).
    #[arg(long, default_value_t = 0, help_heading = "Serving")]
    pub http2_max_streams_per_connection: u32,
    /// Limit of non-mutating requests in flight; over it requests get 429.
    #[arg(long, default_value_t = 400, help_heading = "Serving")]
    pub max_requests_inflight: usize,
    /// Limit of mutating requests in flight; over it requests get 429.
    #[arg(long, default_value_t = 200, help_heading = "Serving")]
    pub max_mutating_requests_inflight: usize,
    /// Timeout of non-long-running requests; also bounds draining at shutdown.
    #[arg(long, default_value = "60s", value_parser = duration, help_heading = "Serving")]
    pub request_timeout: Duration,
    /// Watch requests time out at a random point in [x, 2x) unless timeoutSeconds is given.
    #[arg(long, default_value = "1800s", value_parser = duration, help_heading = "Serving")]
    pub min_request_timeout: Duration,
    /// During this time after start, unfinished post-start hooks count as healthy in /livez.
    #[arg(long, default_value = "0s", value_parser = duration, help_heading = "Serving")]
    pub livez_grace_period: Duration,

    /// CA bundle for client certificates (CN = user, O = groups), in addition to kapi's own client CA.
    #[arg(long, help_heading = "Authentication")]
    pub client_ca_file: Option<PathBuf>,
    /// Static bearer tokens, CSV lines: token,user,uid,"group1,group2".
    #[arg(long, help_heading = "Authentication")]
    pub token_auth_file: Option<PathBuf>,
    /// Let requests without credentials in as system:anonymous (health and version endpoints only).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, help_heading = "Authentication")]
    pub anonymous_auth: bool,
    /// Issuer of service-account tokens (repeatable: the first one goes into new tokens, all
    /// are accepted). Default: https://<advertise address>:<port>.
    #[arg(long = "service-account-issuer", help_heading = "Authentication")]
    pub service_account_issuer: Vec<String>,
    /// PEM private key (ECDSA P-256 or RSA) that signs service-account tokens. Default: a key
    /// generated on first start as <cert-dir>/sa.key, shared by replicas that share --cert-dir.
    #[arg(long, help_heading = "Authentication")]
    pub service_account_signing_key_file: Option<PathBuf>,
    /// More PEM keys (public or private) service-account tokens are verified with (repeatable).
    #[arg(long = "service-account-key-file", help_heading = "Authentication")]
    pub service_account_key_file: Vec<PathBuf>,
    /// Audiences a token must name to reach the API (comma-separated). Default: the issuers.
    #[arg(long, value_delimiter = ',', help_heading = "Authentication")]
    pub api_audiences: Vec<String>,
    /// Longest lifetime a TokenRequest may ask for (at least 1h). Default: no limit.
    #[arg(long, value_parser = duration, help_heading = "Authentication")]
    pub service_account_max_token_expiration: Option<Duration>,
    /// The jwks_uri of the issuer's discovery document. Default: https://<advertise address>:<port>/openid/v1/jwks.
    #[arg(long, help_heading = "Authentication")]
    pub service_account_jwks_uri: Option<String>,
    /// CA bundle of front proxies: a request whose client certificate it signed (and whose CN
    /// --requestheader-allowed-names allows) is the user named by the --requestheader-*
    /// headers. Default: a front-proxy CA generated as <cert-dir>/front-proxy-ca.crt, with
    /// the client certificate <cert-dir>/front-proxy-client.crt it signs.
    #[allow(rustdoc::invalid_html_tags)] // `<...>` are placeholders in --help, not HTML
    #[arg(long, help_heading = "Front-proxy authentication")]
    pub requestheader_client_ca_file: Option<PathBuf>,
    /// Client-certificate common names that may send identity headers (comma-separated;
    /// empty = any certificate the request-header CA signed). Default: front-proxy-client with
    /// the generated CA, any name with --requestheader-client-ca-file.
    #[arg(
        long,
        value_delimiter = ',',
        help_heading = "Front-proxy authentication"
    )]
    pub requestheader_allowed_names: Option<Vec<String>>,
    /// Request headers checked in order for the user name (comma-separated; the first one
    /// with a value wins).
    #[arg(long, value_delimiter = ',', default_value = REMOTE_USER_HEADER, help_heading = "Front-proxy authentication")]
    pub requestheader_username_headers: Vec<String>,
    /// Request headers checked in order for the user's UID (comma-separated; kube-apiserver
    /// reads none unless told, kapi reads the one kube-aggregator sends).
    #[arg(long, value_delimiter = ',', default_value = REMOTE_UID_HEADER, help_heading = "Front-proxy authentication")]
    pub requestheader_uid_headers: Vec<String>,
    /// Request headers whose every value is a group of the user (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = REMOTE_GROUP_HEADER, help_heading = "Front-proxy authentication")]
    pub requestheader_group_headers: Vec<String>,
    /// Header-name prefixes of the user's extra attributes (comma-separated): each header
    /// <prefix><key> adds its values to extra <key>, lower-cased then percent-decoded.
    #[allow(rustdoc::invalid_html_tags)] // `<...>` are placeholders in --help, not HTML
    #[arg(long, value_delimiter = ',', default_value = REMOTE_EXTRA_PREFIX, help_heading = "Front-proxy authentication")]
    pub requestheader_extra_headers_prefix: Vec<String>,
    /// Client certificate (PEM) kapi presents when it proxies a request to an extension API
    /// server with the caller's identity in X-Remote-* headers; signed by a CA in
    /// --requestheader-client-ca-file. Default: the generated <cert-dir>/front-proxy-client.crt.
    #[allow(rustdoc::invalid_html_tags)] // `<...>` are placeholders in --help, not HTML
    #[arg(long, help_heading = "Front-proxy authentication")]
    pub proxy_client_cert_file: Option<PathBuf>,
    /// Private key of --proxy-client-cert-file (PEM).
    #[arg(long, help_heading = "Front-proxy authentication")]
    pub proxy_client_key_file: Option<PathBuf>,
    /// Authorizers asked in order, comma-separated: RBAC, AlwaysAllow, AlwaysDeny. Members of
    /// system:masters are always allowed first.
    #[arg(long, value_delimiter = ',', default_value = "RBAC", value_parser = authorization_mode, help_heading = "Authorization")]
    pub authorization_mode: Vec<AuthorizationMode>,

    /// etcd v3 endpoints (http(s)://host:port, comma-separated); unset = embedded store.
    #[arg(long, value_delimiter = ',', help_heading = "Storage")]
    pub etcd_servers: Vec<String>,
    /// Key prefix of every object in storage.
    #[arg(long, default_value = "/registry", help_heading = "Storage")]
    pub etcd_prefix: String,
    /// CA bundle to verify etcd's serving certificate.
    #[arg(long, help_heading = "Storage")]
    pub etcd_cafile: Option<PathBuf>,
    /// Client certificate for etcd.
    #[arg(long, help_heading = "Storage")]
    pub etcd_certfile: Option<PathBuf>,
    /// Client key for etcd.
    #[arg(long, help_heading = "Storage")]
    pub etcd_keyfile: Option<PathBuf>,
    /// How often old revisions are compacted (0 disables).
    #[arg(long, alias = "etcd-compaction-interval", default_value = "5m", value_parser = duration, help_heading = "Storage")]
    pub compaction_interval: Duration,
    /// Serve lists and watches from an in-memory cache fed by one backend watch per resource.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, help_heading = "Storage")]
    pub watch_cache: bool,
    /// Timeout of the etcd health check.
    #[arg(long, default_value = "2s", value_parser = duration, help_heading = "Storage")]
    pub etcd_healthcheck_timeout: Duration,
    /// How often the objects of each resource are counted and the database's size read
    /// for the metrics apiserver_storage_objects and apiserver_storage_size_bytes (0
    /// disables).
    #[arg(long, default_value = "1m", value_parser = duration, help_heading = "Storage")]
    pub etcd_count_metric_poll_period: Duration,

    /// Feature gates, e.g. CoordinatedLeaderElection=true,APIServerIdentity=false.
    #[arg(long, value_delimiter = ',', value_parser = parse_gate, help_heading = "Control plane")]
    pub feature_gates: Vec<(String, bool)>,
    /// Hostname used for the apiserver ID and the kubernetes.io/hostname label.
    #[arg(long, help_heading = "Control plane")]
    pub hostname_override: Option<String>,
    /// Duration of this server's identity lease.
    #[arg(long, default_value_t = 3600, help_heading = "Control plane")]
    pub identity_lease_duration_seconds: i32,
    /// How often the identity lease is renewed.
    #[arg(long, default_value = "10s", value_parser = duration, help_heading = "Control plane")]
    pub identity_lease_renew_interval: Duration,
    /// How often expired identity leases are garbage-collected.
    #[arg(long, default_value = "1h", value_parser = duration, help_heading = "Control plane")]
    pub identity_lease_gc_period: Duration,
    /// How often expired LeaseCandidates are garbage-collected.
    #[arg(long, default_value = "30m", value_parser = duration, help_heading = "Control plane")]
    pub lease_candidate_gc_period: Duration,
    /// Lease duration of the coordinated-leader-election controller's own election.
    #[arg(long, default_value = "15s", value_parser = duration, help_heading = "Control plane")]
    pub coordinated_leadership_lease_duration: Duration,
    /// Renew deadline of that election.
    #[arg(long, default_value = "10s", value_parser = duration, help_heading = "Control plane")]
    pub coordinated_leadership_renew_deadline: Duration,
    /// Retry period of that election (also the re-election period).
    #[arg(long, default_value = "2s", value_parser = duration, help_heading = "Control plane")]
    pub coordinated_leadership_retry_period: Duration,
    /// IP peers use to reach this server; publishes a peer endpoint (UnknownVersionInteroperabilityProxy).
    #[arg(long, help_heading = "Control plane")]
    pub peer_advertise_ip: Option<IpAddr>,
    /// Port for --peer-advertise-ip [default: the secure port].
    #[arg(long, help_heading = "Control plane")]
    pub peer_advertise_port: Option<u16>,
    /// CA bundle (PEM) that signs the peers' serving certificates, for the mixed-version peer
    /// proxy [default: this server's serving CA, which replicas share through --cert-dir].
    #[arg(long, help_heading = "Control plane")]
    pub peer_ca_file: Option<PathBuf>,
    /// API group/versions (or resources) to turn on or off: api/all, api/ga, api/beta,
    /// api/alpha, <group>/<version> (v1 or api/v1 for core) or <group>/<version>/<resource>,
    /// each =true or =false, e.g. coordination.k8s.io/v1beta1=false. Replicas may serve
    /// different sets; with UnknownVersionInteroperabilityProxy a replica forwards requests
    /// for what it does not serve to a peer that does.
    #[arg(long, value_delimiter = ',', value_parser = parse_runtime_config, help_heading = "Control plane")]
    pub runtime_config: Vec<String>,
    /// How often the system namespaces are checked and recreated.
    #[arg(long, default_value = "60s", value_parser = duration, help_heading = "Control plane")]
    pub system_namespaces_period: Duration,
    /// Testing aid: make post-start hook NAME fail COUNT times before running (NAME=COUNT).
    #[arg(long, value_parser = parse_failing_hook, hide = true)]
    pub debug_failing_hook: Vec<(String, u32)>,

    /// After SIGTERM keep serving this long while /readyz fails, so load balancers drain.
    #[arg(long, default_value = "0s", value_parser = duration, help_heading = "Shutdown")]
    pub shutdown_delay_duration: Duration,

    /// Audit policy (audit.k8s.io/v1 Policy, YAML or JSON): which requests are audited at
    /// which level. Without it, nothing is audited.
    #[arg(long, help_heading = "Audit")]
    pub audit_policy_file: Option<PathBuf>,
    /// File the audit events are appended to, one per line; - means standard output.
    /// Without it, nothing is audited.
    #[arg(long, help_heading = "Audit")]
    pub audit_log_path: Option<PathBuf>,
    /// Days to keep rotated audit log files, by the timestamp in their names (0 = no limit).
    #[arg(long, default_value_t = 0, help_heading = "Audit")]
    pub audit_log_maxage: u32,
    /// Rotated audit log files to keep (0 = all).
    #[arg(long, default_value_t = 0, help_heading = "Audit")]
    pub audit_log_maxbackup: u32,
    /// Size in megabytes at which the audit log file is rotated to
    /// <name>-<timestamp>.<ext> (0 = 100).
    #[allow(rustdoc::invalid_html_tags)] // `<...>` are placeholders in --help, not HTML
    #[arg(long, default_value_t = 0, help_heading = "Audit")]
    pub audit_log_maxsize: u32,
    /// Format of the audit log: json (one audit.k8s.io/v1 Event per line) or legacy (a
    /// one-line text summary per event).
    #[arg(long, value_enum, default_value_t = AuditFormatArg::Json, help_heading = "Audit")]
    pub audit_log_format: AuditFormatArg,
    /// blocking: a request waits until its events are written (a failed write is counted in
    /// apiserver_audit_error_total and the event's summary logged to stderr); blocking-strict:
    /// as blocking, but a request whose first event cannot be written fails with 500; batch:
    /// events are queued and written in the background, and dropped (and counted) when the
    /// queue is full.
    #[arg(long, value_enum, default_value_t = AuditModeArg::Blocking, help_heading = "Audit")]
    pub audit_log_mode: AuditModeArg,
    /// Events the batch mode's queue holds before it drops new ones.
    #[arg(long, default_value_t = DEFAULT_BATCH_BUFFER_SIZE, help_heading = "Audit")]
    pub audit_log_batch_buffer_size: usize,

    /// Request tracing (apiserver.config.k8s.io TracingConfiguration, YAML or JSON: endpoint,
    /// the host:port of an OpenTelemetry collector's OTLP gRPC receiver, default
    /// localhost:4317; samplingRatePerMillion, default 0). Spans of the handler chain,
    /// storage and webhooks are sent there; a request with a sampled W3C traceparent from
    /// system:masters or system:monitoring is traced as part of that trace. Without it,
    /// nothing is traced.
    #[arg(long, help_heading = "Tracing")]
    pub tracing_config_file: Option<PathBuf>,
}

/// `--audit-log-format` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AuditFormatArg {
    /// One audit.k8s.io/v1 Event as JSON per line.
    Json,
    /// A one-line text summary per event.
    Legacy,
}

/// `--audit-log-mode` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AuditModeArg {
    /// Requests wait for their events to be written.
    Blocking,
    /// As blocking; a failed first write fails the request.
    BlockingStrict,
    /// Events are queued and written in the background.
    Batch,
}

/// A comma-list flag as pflag's StringSlice reads it: `--flag=` is the empty list.
fn flag_list(values: Vec<String>) -> Vec<String> {
    if values.len() == 1 && values[0].is_empty() {
        Vec::new()
    } else {
        values
    }
}

fn parse_gate(s: &str) -> Result<(String, bool), String> {
    let (name, value) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?} is not Name=true|false"))?;
    let name = name.strip_prefix("kube:").unwrap_or(name);
    let value = value
        .parse::<bool>()
        .map_err(|_| format!("{s:?}: value must be true or false"))?;
    Ok((name.to_string(), value))
}

/// One `--runtime-config` entry, checked (the options parse the list again).
fn parse_runtime_config(s: &str) -> Result<String, String> {
    RuntimeConfig::parse([s]).map_err(|e| e.to_string())?;
    Ok(s.to_string())
}

fn parse_failing_hook(s: &str) -> Result<(String, u32), String> {
    let (name, count) = s
        .rsplit_once('=')
        .ok_or_else(|| format!("{s:?} is not NAME=COUNT"))?;
    let count = count
        .parse()
        .map_err(|_| format!("{s:?}: COUNT must be a number"))?;
    Ok((name.to_string(), count))
}

impl ServeArgs {
    /// Converts the flags into plain options (defaults resolved, nothing validated yet).
    pub fn into_options(self) -> ServerOptions {
        let cert_dir = self
            .cert_dir
            .clone()
            .unwrap_or_else(|| self.data_dir.join("pki"));
        let backend = if self.etcd_servers.is_empty() {
            Backend::Embedded
        } else {
            Backend::Etcd {
                servers: self.etcd_servers,
                ca_file: self.etcd_cafile,
                cert_file: self.etcd_certfile,
                key_file: self.etcd_keyfile,
            }
        };
        ServerOptions {
            serving: ServingOptions {
                bind_address: self.bind_address,
                secure_port: self.secure_port,
                advertise_address: self.advertise_address,
                data_dir: self.data_dir.clone(),
                cert_dir,
                tls_cert_file: self.tls_cert_file,
                tls_private_key_file: self.tls_private_key_file,
                client_ca_file: self.client_ca_file,
                token_auth_file: self.token_auth_file,
                anonymous_auth: self.anonymous_auth,
                authorization_modes: self.authorization_mode,
                service_accounts: ServiceAccountOptions {
                    issuers: self.service_account_issuer,
                    signing_key_file: self.service_account_signing_key_file,
                    key_files: self.service_account_key_file,
                    api_audiences: self.api_audiences,
                    max_token_expiration: self.service_account_max_token_expiration,
                    jwks_uri: self.service_account_jwks_uri,
                },
                request_header: RequestHeaderOptions {
                    client_ca_file: self.requestheader_client_ca_file,
                    allowed_names: self.requestheader_allowed_names.map(flag_list),
                    username_headers: flag_list(self.requestheader_username_headers),
                    uid_headers: flag_list(self.requestheader_uid_headers),
                    group_headers: flag_list(self.requestheader_group_headers),
                    extra_headers_prefix: flag_list(self.requestheader_extra_headers_prefix),
                    proxy_client_cert_file: self.proxy_client_cert_file,
                    proxy_client_key_file: self.proxy_client_key_file,
                },
                max_requests_inflight: self.max_requests_inflight,
                max_mutating_requests_inflight: self.max_mutating_requests_inflight,
                request_timeout: self.request_timeout,
                min_request_timeout: self.min_request_timeout,
                livez_grace_period: self.livez_grace_period,
                disable_http2: self.disable_http2_serving,
                http2_max_streams: self.http2_max_streams_per_connection,
            },
            storage: StorageOptions {
                backend,
                prefix: self.etcd_prefix,
                data_dir: self.data_dir,
                compaction_interval: self.compaction_interval,
                watch_cache: self.watch_cache,
                healthcheck_timeout: self.etcd_healthcheck_timeout,
                count_metric_poll_period: self.etcd_count_metric_poll_period,
            },
            controllers: ControllerOptions {
                feature_gates: self.feature_gates.into_iter().collect(),
                hostname_override: self.hostname_override,
                identity_lease_duration_seconds: self.identity_lease_duration_seconds,
                identity_lease_renew_interval: self.identity_lease_renew_interval,
                identity_lease_gc_period: self.identity_lease_gc_period,
                lease_candidate_gc_period: self.lease_candidate_gc_period,
                cle_lease_duration: self.coordinated_leadership_lease_duration,
                cle_renew_deadline: self.coordinated_leadership_renew_deadline,
                cle_retry_period: self.coordinated_leadership_retry_period,
                peer_advertise_ip: self.peer_advertise_ip,
                peer_advertise_port: self.peer_advertise_port,
                peer_ca_file: self.peer_ca_file,
                runtime_config: RuntimeConfig::parse(
                    self.runtime_config.iter().map(String::as_str),
                )
                .unwrap_or_default(),
                system_namespaces_period: self.system_namespaces_period,
                debug_failing_hooks: self.debug_failing_hook,
            },
            shutdown: ShutdownOptions {
                delay: self.shutdown_delay_duration,
            },
            audit: AuditOptions {
                policy_file: self.audit_policy_file,
                log_path: self.audit_log_path.map(|p| {
                    if p.as_os_str() == "-" {
                        AuditLogPath::Stdout
                    } else {
                        AuditLogPath::File(p)
                    }
                }),
                max_age_days: self.audit_log_maxage,
                max_backups: self.audit_log_maxbackup,
                max_size_mb: self.audit_log_maxsize,
                format: match self.audit_log_format {
                    AuditFormatArg::Json => AuditLogFormat::Json,
                    AuditFormatArg::Legacy => AuditLogFormat::Legacy,
                },
                mode: match self.audit_log_mode {
                    AuditModeArg::Blocking => AuditLogMode::Blocking,
                    AuditModeArg::BlockingStrict => AuditLogMode::BlockingStrict,
                    AuditModeArg::Batch => AuditLogMode::Batch,
                },
                batch_buffer_size: self.audit_log_batch_buffer_size,
            },
            tracing: TracingOptions {
                config_file: self.tracing_config_file,
            },
        }
    }
}
