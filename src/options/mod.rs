//! What the operator asked for: plain data converted once from the command line, plus
//! `validate()` that reports every problem at once (apiserver options.Validate).
//! No I/O here. May use: nothing internal.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

mod audit;
mod runtime_config;
mod tracing;
pub(crate) use self::tracing::{
    ParseError as TracingParseError, TracingConfiguration, TracingOptions,
};
pub(crate) use audit::{
    AuditLogFormat, AuditLogMode, AuditLogPath, AuditOptions, DEFAULT_BATCH_BUFFER_SIZE,
};
pub(crate) use runtime_config::{RuntimeConfig, RuntimeConfigError};

/// All options of `kapi serve`.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// Listening, TLS, authentication and request limits.
    pub serving: ServingOptions,
    /// Storage backend.
    pub storage: StorageOptions,
    /// Controllers, leases and feature gates.
    pub controllers: ControllerOptions,
    /// Graceful shutdown.
    pub shutdown: ShutdownOptions,
    /// Audit policy and log.
    pub audit: AuditOptions,
    /// Request tracing.
    pub tracing: TracingOptions,
}

/// One `--authorization-mode` authorizer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthorizationMode {
    /// Everything is allowed, for everyone.
    AlwaysAllow,
    /// Nothing is allowed (except to system:masters, as with every mode).
    AlwaysDeny,
    /// Role-based access control (rbac.authorization.k8s.io).
    Rbac,
}

impl AuthorizationMode {
    /// Every mode with its flag spelling.
    pub const ALL: [(&'static str, AuthorizationMode); 3] = [
        ("AlwaysAllow", AuthorizationMode::AlwaysAllow),
        ("AlwaysDeny", AuthorizationMode::AlwaysDeny),
        ("RBAC", AuthorizationMode::Rbac),
    ];

    /// Its flag spelling.
    pub fn name(self) -> &'static str {
        AuthorizationMode::ALL
            .iter()
            .find(|(_, m)| *m == self)
            .map_or("", |(n, _)| n)
    }
}

/// Service-account token options (ServiceAccountAuthenticationOptions in k8s).
#[derive(Debug, Clone, Default)]
pub struct ServiceAccountOptions {
    /// `--service-account-issuer` (the first one goes into new tokens; default
    /// `https://<advertise address>:<port>`).
    pub issuers: Vec<String>,
    /// `--service-account-signing-key-file` (default: a key generated in the cert dir).
    pub signing_key_file: Option<PathBuf>,
    /// `--service-account-key-file`: more keys tokens are verified with.
    pub key_files: Vec<PathBuf>,
    /// `--api-audiences` (default: the issuers).
    pub api_audiences: Vec<String>,
    /// `--service-account-max-token-expiration`.
    pub max_token_expiration: Option<Duration>,
    /// `--service-account-jwks-uri`.
    pub jwks_uri: Option<String>,
}

/// The user-name header kube-aggregator sends (client-go `SetAuthProxyHeaders`), also the
/// default of `--requestheader-username-headers`.
pub(crate) const REMOTE_USER_HEADER: &str = "X-Remote-User";
/// The UID header kube-aggregator sends (gate RemoteRequestHeaderUID, on since 1.33).
pub(crate) const REMOTE_UID_HEADER: &str = "X-Remote-Uid";
/// The group header kube-aggregator sends, once per group.
pub(crate) const REMOTE_GROUP_HEADER: &str = "X-Remote-Group";
/// The prefix of the extra-attribute headers kube-aggregator sends.
pub(crate) const REMOTE_EXTRA_PREFIX: &str = "X-Remote-Extra-";
/// Common name of the generated front-proxy client certificate (kubeadm's name), the one
/// allowed name when the front-proxy CA is generated.
pub(crate) const FRONT_PROXY_CLIENT_NAME: &str = "front-proxy-client";

/// Front-proxy authentication (RequestHeaderAuthenticationOptions and `--proxy-client-*` in
/// k8s). Without `client_ca_file` kapi generates a front-proxy CA and client certificate in
/// the cert dir, as kubeadm does for kube-apiserver.
#[derive(Debug, Clone, Default)]
pub struct RequestHeaderOptions {
    /// `--requestheader-client-ca-file`.
    pub client_ca_file: Option<PathBuf>,
    /// `--requestheader-allowed-names` (None: `front-proxy-client` with the generated CA, any
    /// name with an operator's CA; empty: any name).
    pub allowed_names: Option<Vec<String>>,
    /// `--requestheader-username-headers`.
    pub username_headers: Vec<String>,
    /// `--requestheader-uid-headers`.
    pub uid_headers: Vec<String>,
    /// `--requestheader-group-headers`.
    pub group_headers: Vec<String>,
    /// `--requestheader-extra-headers-prefix`.
    pub extra_headers_prefix: Vec<String>,
    /// `--proxy-client-cert-file`.
    pub proxy_client_cert_file: Option<PathBuf>,
    /// `--proxy-client-key-file`.
    pub proxy_client_key_file: Option<PathBuf>,
}

impl RequestHeaderOptions {
    fn validate(&self, errs: &mut Vec<String>) {
        if self.proxy_client_cert_file.is_some() != self.proxy_client_key_file.is_some() {
            errs.push(
                "--proxy-client-cert-file and --proxy-client-key-file must be given together"
                    .into(),
            );
        } else if self.proxy_client_cert_file.is_some() && self.client_ca_file.is_none() {
            errs.push("--proxy-client-cert-file needs --requestheader-client-ca-file, the CA that signed it (extension servers are told to trust that CA)".into());
        }
        let lists = [
            ("--requestheader-username-headers", &self.username_headers),
            ("--requestheader-uid-headers", &self.uid_headers),
            ("--requestheader-group-headers", &self.group_headers),
            (
                "--requestheader-extra-headers-prefix",
                &self.extra_headers_prefix,
            ),
        ];
        let allowed = self.allowed_names.as_ref();
        let lists = lists
            .into_iter()
            .chain(allowed.map(|names| ("--requestheader-allowed-names", names)));
        for (flag, values) in lists {
            // checkForWhiteSpaceOnly in k8s.
            if values.iter().any(|v| v.trim().is_empty()) {
                errs.push(format!(
                    "{flag}: empty value in the list (remove the extra comma)"
                ));
            }
        }
    }
}

/// Serving options (SecureServingOptions + authentication in k8s).
#[derive(Debug, Clone)]
pub struct ServingOptions {
    /// `--bind-address`.
    pub bind_address: IpAddr,
    /// `--secure-port` (0 picks a free port).
    pub secure_port: u16,
    /// `--advertise-address`.
    pub advertise_address: Option<IpAddr>,
    /// `--data-dir`.
    pub data_dir: PathBuf,
    /// `--cert-dir` (default `<data-dir>/pki`).
    pub cert_dir: PathBuf,
    /// `--tls-cert-file`.
    pub tls_cert_file: Option<PathBuf>,
    /// `--tls-private-key-file`.
    pub tls_private_key_file: Option<PathBuf>,
    /// `--client-ca-file`.
    pub client_ca_file: Option<PathBuf>,
    /// `--token-auth-file`.
    pub token_auth_file: Option<PathBuf>,
    /// `--anonymous-auth`.
    pub anonymous_auth: bool,
    /// `--authorization-mode`, in order.
    pub authorization_modes: Vec<AuthorizationMode>,
    /// Service-account token flags.
    pub service_accounts: ServiceAccountOptions,
    /// Front-proxy (request-header) authentication flags.
    pub request_header: RequestHeaderOptions,
    /// `--max-requests-inflight`.
    pub max_requests_inflight: usize,
    /// `--max-mutating-requests-inflight`.
    pub max_mutating_requests_inflight: usize,
    /// `--request-timeout`.
    pub request_timeout: Duration,
    /// `--min-request-timeout` (watch timeouts are randomised in [x, 2x)).
    pub min_request_timeout: Duration,
    /// `--livez-grace-period`.
    pub livez_grace_period: Duration,
    /// `--disable-http2-serving`.
    pub disable_http2: bool,
    /// `--http2-max-streams-per-connection` (0 = 100).
    pub http2_max_streams: u32,
}

/// Which storage backend to use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backend {
    /// The embedded durable store under `<data-dir>`.
    Embedded,
    /// A real etcd v3 cluster.
    Etcd {
        /// `--etcd-servers`.
        servers: Vec<String>,
        /// `--etcd-cafile`.
        ca_file: Option<PathBuf>,
        /// `--etcd-certfile`.
        cert_file: Option<PathBuf>,
        /// `--etcd-keyfile`.
        key_file: Option<PathBuf>,
    },
}

/// Storage options (EtcdOptions in k8s).
#[derive(Debug, Clone)]
pub struct StorageOptions {
    /// Backend chosen by the presence of `--etcd-servers`.
    pub backend: Backend,
    /// `--etcd-prefix`.
    pub prefix: String,
    /// `--data-dir` (the embedded store lives in `<data-dir>/store`).
    pub data_dir: PathBuf,
    /// `--compaction-interval` (0 disables).
    pub compaction_interval: Duration,
    /// `--watch-cache`.
    pub watch_cache: bool,
    /// `--etcd-healthcheck-timeout`.
    pub healthcheck_timeout: Duration,
    /// `--etcd-count-metric-poll-period` (0 disables).
    pub count_metric_poll_period: Duration,
}

/// Controller, lease and feature-gate options.
#[derive(Debug, Clone)]
pub struct ControllerOptions {
    /// `--feature-gates`, parsed: name → enabled. Unknown names are rejected by validate().
    pub feature_gates: std::collections::BTreeMap<String, bool>,
    /// `--hostname-override` (else the OS hostname).
    pub hostname_override: Option<String>,
    /// `--identity-lease-duration-seconds`.
    pub identity_lease_duration_seconds: i32,
    /// `--identity-lease-renew-interval`.
    pub identity_lease_renew_interval: Duration,
    /// `--identity-lease-gc-period`.
    pub identity_lease_gc_period: Duration,
    /// `--lease-candidate-gc-period`.
    pub lease_candidate_gc_period: Duration,
    /// `--coordinated-leadership-lease-duration`.
    pub cle_lease_duration: Duration,
    /// `--coordinated-leadership-renew-deadline`.
    pub cle_renew_deadline: Duration,
    /// `--coordinated-leadership-retry-period`.
    pub cle_retry_period: Duration,
    /// `--peer-advertise-ip`.
    pub peer_advertise_ip: Option<IpAddr>,
    /// `--peer-advertise-port`.
    pub peer_advertise_port: Option<u16>,
    /// `--peer-ca-file`: signs the peers' serving certificates (default: the serving CA).
    pub peer_ca_file: Option<PathBuf>,
    /// `--runtime-config`: group/versions and resources turned on or off.
    pub runtime_config: RuntimeConfig,
    /// `--system-namespaces-period` (how often deleted system namespaces are recreated).
    pub system_namespaces_period: Duration,
    /// Hooks that must fail N times before succeeding, for tests: `--debug-failing-hook name=N`.
    pub debug_failing_hooks: Vec<(String, u32)>,
}

/// Graceful shutdown options.
#[derive(Debug, Clone)]
pub struct ShutdownOptions {
    /// `--shutdown-delay-duration`.
    pub delay: Duration,
}

/// The feature gates kapi knows, with their defaults in kapi.
pub(crate) const FEATURE_GATES: &[(&str, bool)] = &[
    ("APIServerIdentity", true),
    ("CoordinatedLeaderElection", true),
    ("MutatingAdmissionPolicy", false),
    ("UnknownVersionInteroperabilityProxy", true),
    ("WatchCacheInitializationPostStartHook", true),
    ("WatchList", true),
];

impl ControllerOptions {
    /// Whether a feature gate is on (explicit setting, else kapi's default).
    pub fn gate(&self, name: &str) -> bool {
        self.feature_gates.get(name).copied().unwrap_or_else(|| {
            FEATURE_GATES
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, d)| *d)
                .unwrap_or(false)
        })
    }
}

impl ServerOptions {
    /// Reports every invalid combination at once; empty = valid.
    pub fn validate(&self) -> Vec<String> {
        let mut errs = Vec::new();
        let s = &self.serving;
        if s.tls_cert_file.is_some() != s.tls_private_key_file.is_some() {
            errs.push("--tls-cert-file and --tls-private-key-file must be given together".into());
        }
        s.request_header.validate(&mut errs);
        if s.max_requests_inflight == 0 {
            errs.push("--max-requests-inflight must be greater than 0".into());
        }
        if s.max_mutating_requests_inflight == 0 {
            errs.push("--max-mutating-requests-inflight must be greater than 0".into());
        }
        let sa = &s.service_accounts;
        for (i, issuer) in sa.issuers.iter().enumerate() {
            if issuer.is_empty() {
                errs.push("--service-account-issuer should not be an empty string".into());
            } else if sa.issuers[..i].contains(issuer) {
                errs.push(format!(
                    "--service-account-issuer {issuer:?} is already specified"
                ));
            }
        }
        if sa
            .max_token_expiration
            .is_some_and(|d| d < Duration::from_secs(3600))
        {
            errs.push("--service-account-max-token-expiration: the shortest allowed is 1h".into());
        }
        if s.authorization_modes.is_empty() {
            errs.push(
                "--authorization-mode: at least one authorization mode must be passed".into(),
            );
        }
        for (i, mode) in s.authorization_modes.iter().enumerate() {
            if s.authorization_modes[..i].contains(mode) {
                errs.push(format!(
                    "--authorization-mode: {:?} is specified more than once",
                    mode.name()
                ));
            }
        }
        if s.request_timeout.is_zero() {
            errs.push("--request-timeout must be greater than 0".into());
        }
        if let Backend::Etcd { servers, .. } = &self.storage.backend {
            for server in servers {
                if !(server.starts_with("http://") || server.starts_with("https://")) {
                    errs.push(format!(
                        "--etcd-servers: {server:?} must start with http:// or https://"
                    ));
                }
            }
        }
        if !self.storage.prefix.starts_with('/') {
            errs.push(format!(
                "--etcd-prefix: {:?} must start with /",
                self.storage.prefix
            ));
        }
        let c = &self.controllers;
        for name in c.feature_gates.keys() {
            if !FEATURE_GATES.iter().any(|(n, _)| n == name) {
                let known: Vec<&str> = FEATURE_GATES.iter().map(|(n, _)| *n).collect();
                errs.push(format!(
                    "--feature-gates: unrecognized feature gate {name:?} (known: {})",
                    known.join(", ")
                ));
            }
        }
        if c.identity_lease_duration_seconds <= 0 {
            errs.push("--identity-lease-duration-seconds must be greater than 0".into());
        }
        if c.identity_lease_renew_interval.is_zero() {
            errs.push("--identity-lease-renew-interval must be greater than 0".into());
        }
        if c.cle_renew_deadline >= c.cle_lease_duration {
            errs.push("--coordinated-leadership-renew-deadline must be less than --coordinated-leadership-lease-duration".into());
        }
        if c.cle_retry_period.is_zero() {
            errs.push("--coordinated-leadership-retry-period must be greater than 0".into());
        }
        if c.peer_advertise_port.is_some() && c.peer_advertise_ip.is_none() {
            errs.push("--peer-advertise-port requires --peer-advertise-ip".into());
        }
        self.audit.validate(&mut errs);
        self.tracing.validate(&mut errs);
        errs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors(opts: RequestHeaderOptions) -> Vec<String> {
        let mut errs = Vec::new();
        opts.validate(&mut errs);
        errs
    }

    #[test]
    fn request_header_misuse_is_one_line_each() {
        let path = |p: &str| Some(PathBuf::from(p));
        let cert_only = RequestHeaderOptions {
            proxy_client_cert_file: path("proxy.crt"),
            ..RequestHeaderOptions::default()
        };
        assert_eq!(
            errors(cert_only.clone()),
            ["--proxy-client-cert-file and --proxy-client-key-file must be given together"]
        );
        let pair = RequestHeaderOptions {
            proxy_client_key_file: path("proxy.key"),
            ..cert_only
        };
        assert_eq!(errors(pair.clone()).len(), 1);
        assert!(errors(pair.clone())[0].contains("needs --requestheader-client-ca-file"));
        let complete = RequestHeaderOptions {
            client_ca_file: path("proxy-ca.crt"),
            username_headers: vec!["X-Remote-User".into()],
            allowed_names: Some(vec![]),
            ..pair
        };
        assert_eq!(errors(complete.clone()), Vec::<String>::new());
        let empty_entry = RequestHeaderOptions {
            group_headers: vec!["X-A".into(), " ".into()],
            allowed_names: Some(vec!["".into()]),
            ..complete
        };
        assert_eq!(
            errors(empty_entry),
            [
                "--requestheader-group-headers: empty value in the list (remove the extra comma)",
                "--requestheader-allowed-names: empty value in the list (remove the extra comma)",
            ]
        );
    }
}
