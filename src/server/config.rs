//! Server configuration (pkg/server/config.go): [`Config::load`] does the I/O (certificates,
//! listener, storage, admin kubeconfig), [`Config::complete`] derives the loopback client and
//! TLS settings, and [`CompletedConfig::new_server`] builds the [`GenericServer`].
//! May use: options, filters, endpoints, registry, storage, api, audit.

use super::control_runtime::ControlRuntime;
use super::front_proxy::{self, FrontProxy, ProxyClient, RequestHeader};
use super::pki::{self, Pki, ADMIN_USER, MASTERS_GROUP};
use super::{listener, loopback, GenericServer};
use crate::api::UserInfo;
use crate::endpoints::ApiServer;
use crate::filters::authn::{TokenAuthenticator, TokenFileError};
use crate::options::{Backend, ServerOptions};
use crate::registry::resources::admissionregistration;
use crate::registry::Registry;
use crate::storage::{self, Storage};
use base64::Engine;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Why the server could not be configured.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum Error {
    /// Certificates could not be loaded or generated.
    #[error("cannot set up certificates")]
    Pki(#[from] pki::Error),
    /// The front-proxy CA or client certificate could not be loaded or generated.
    #[error("cannot set up front-proxy (request-header) certificates")]
    FrontProxy(#[source] pki::Error),
    /// The listener could not bind.
    #[error("cannot listen on {0}")]
    Bind(SocketAddr, #[source] std::io::Error),
    /// The token file could not be read.
    #[error("cannot read --token-auth-file {0}")]
    ReadTokenFile(PathBuf, #[source] std::io::Error),
    /// The token file is invalid.
    #[error("invalid --token-auth-file {0}")]
    TokenFile(PathBuf, #[source] TokenFileError),
    /// The admin kubeconfig could not be written.
    #[error("cannot write the admin kubeconfig")]
    Kubeconfig(#[source] pki::Error),
    /// The storage backend could not be opened.
    #[error("cannot open storage")]
    Storage(#[source] storage::Error),
    /// TLS could not be set up.
    #[error("cannot set up TLS")]
    Tls(#[from] listener::Error),
    /// The control plane's runtime could not be started.
    #[error("cannot start the control-plane runtime")]
    ControlRuntime(#[source] std::io::Error),
    /// The service-account token issuer could not be set up.
    #[error("cannot set up service-account tokens")]
    ServiceAccounts(#[from] super::service_accounts::Error),
    /// The loopback client could not be built.
    #[error("cannot build the loopback client")]
    Loopback(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// `--runtime-config` names what this server does not have.
    #[error("invalid --runtime-config")]
    RuntimeConfig(#[source] crate::options::RuntimeConfigError),
}

/// The loaded configuration: certificates, bound listener, opened storage.
pub(crate) struct Config {
    pub(super) options: ServerOptions,
    pub(super) pki: Pki,
    /// Request-header authentication and kapi's own front-proxy client certificate.
    pub(super) front_proxy: FrontProxy,
    pub(super) listener: tokio::net::TcpListener,
    pub(super) local_addr: SocketAddr,
    pub(super) storage: Arc<dyn Storage>,
    pub(super) api: Arc<ApiServer>,
    /// kube-aggregator: APIServices, the proxy to extension API servers.
    pub(super) aggregator: Arc<crate::aggregator::Aggregator>,
    pub(super) tokens: TokenAuthenticator,
    /// What service-account tokens are issued and verified with.
    pub(super) issuer: Arc<crate::serviceaccount::Issuer>,
    /// The audit policy and log, when auditing is on.
    pub(super) audit: Option<Arc<crate::audit::Auditor>>,
    kubeconfig_path: PathBuf,
}

impl Config {
    /// Loads certificates, binds the listener, writes the admin kubeconfig and opens storage.
    pub(crate) async fn load(options: ServerOptions) -> Result<Config, Error> {
        let s = &options.serving;
        let hostname = options
            .controllers
            .hostname_override
            .clone()
            .unwrap_or_else(|| {
                hostname::get()
                    .ok()
                    .and_then(|h| h.into_string().ok())
                    .unwrap_or_default()
            });
        pki::create_private_dir(&s.data_dir)?;
        let pki = pki::load(s, &hostname)?;
        let front_proxy =
            front_proxy::load(&s.request_header, &s.cert_dir).map_err(Error::FrontProxy)?;
        let tokens = match &s.token_auth_file {
            Some(path) => {
                let data =
                    std::fs::read(path).map_err(|e| Error::ReadTokenFile(path.clone(), e))?;
                TokenAuthenticator::from_csv(&data)
                    .map_err(|e| Error::TokenFile(path.clone(), e))?
            }
            None => TokenAuthenticator::default(),
        };
        let addr = SocketAddr::new(s.bind_address, s.secure_port);
        let listener = bind(addr).map_err(|e| Error::Bind(addr, e))?;
        let local_addr = listener.local_addr().map_err(|e| Error::Bind(addr, e))?;
        let kubeconfig_path = absolute(&s.data_dir.join("admin.kubeconfig"));
        let kubeconfig = admin_kubeconfig(&client_url(local_addr), &pki);
        pki::write_file(&kubeconfig_path, kubeconfig.as_bytes(), 0o600)
            .map_err(Error::Kubeconfig)?;

        let storage = storage::open(storage_config(&options))
            .await
            .map_err(Error::Storage)?;
        let advertise = SocketAddr::new(
            s.advertise_address.unwrap_or_else(|| local_addr.ip()),
            local_addr.port(),
        );
        let issuer = Arc::new(super::service_accounts::load(
            &s.service_accounts,
            &s.cert_dir,
            advertise,
        )?);
        let registry = Registry::with_prefix(storage.clone(), &options.storage.prefix);
        registry.set_token_issuer(issuer.clone());
        if !options.controllers.gate("CoordinatedLeaderElection") {
            // As kube-apiserver without the gate: LeaseCandidates are not served.
            registry.remove("coordination.k8s.io", "v1beta1", "leasecandidates");
        }
        if !options
            .controllers
            .gate(admissionregistration::MUTATING_POLICY_GATE)
        {
            // kube-apiserver serves this beta API only with the gate (and runtime-config, which
            // kapi does not have: the gate alone turns it on).
            for resource in [
                "mutatingadmissionpolicies",
                "mutatingadmissionpolicybindings",
            ] {
                registry.remove(admissionregistration::GROUP, "v1beta1", resource);
            }
        }
        let rc = &options.controllers.runtime_config;
        if !rc.is_empty() {
            let known: Vec<(String, String, String)> = registry
                .resources()
                .iter()
                .map(|r| {
                    let i = r.info();
                    (
                        i.group.to_string(),
                        i.version.to_string(),
                        i.resource.to_string(),
                    )
                })
                .collect();
            rc.check_known(&known).map_err(Error::RuntimeConfig)?;
            for (group, version, resource) in &known {
                if !rc.enabled(group, version, resource, true) {
                    registry.remove(group, version, resource);
                }
            }
        }
        let services = registry.services().clone();
        let api = Arc::new(ApiServer::new(Arc::new(registry)));
        // The client certificate kapi presents as a front proxy to extension API servers and
        // peers (None with an operator's --requestheader-client-ca-file but no
        // --proxy-client-cert-file).
        let identity = front_proxy.proxy_client.as_ref().map(|p: &ProxyClient| {
            crate::aggregator::ProxyIdentity {
                cert_pem: p.cert_pem.clone(),
                key_pem: p.key_pem.clone(),
            }
        });
        // Loaded on the runtime that serves clients.
        let serving = tokio::runtime::Handle::current();
        let aggregator = Arc::new(crate::aggregator::Aggregator::new(
            identity, services, serving,
        ));
        Ok(Config {
            options,
            pki,
            front_proxy,
            listener,
            local_addr,
            storage,
            api,
            aggregator,
            tokens,
            issuer,
            audit: None,
            kubeconfig_path,
        })
    }

    /// Audits requests with `auditor` (loaded before the server, so a bad policy stops the
    /// start before anything is written).
    pub(crate) fn set_auditor(&mut self, auditor: Option<Arc<crate::audit::Auditor>>) {
        self.audit = auditor;
    }

    /// Absolute path of the written admin kubeconfig.
    pub(crate) fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig_path
    }

    /// The address actually bound (the real port when `--secure-port 0`).
    pub(crate) fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The service-account token issuer (signing key, issuers, audiences).
    pub(crate) fn token_issuer(&self) -> Arc<crate::serviceaccount::Issuer> {
        self.issuer.clone()
    }

    /// The CA bundle (PEM) clients verify the serving certificate with.
    pub(crate) fn serving_ca_pem(&self) -> &str {
        &self.pki.serving_ca_pem
    }

    /// The client CA certificates the server trusts (generated client CA + `--client-ca-file`).
    pub(crate) fn client_ca_ders(&self) -> Vec<Vec<u8>> {
        self.pki
            .client_cas
            .iter()
            .map(|c| c.as_ref().to_vec())
            .collect()
    }

    /// The request-header (front-proxy) authentication settings, as the
    /// `extension-apiserver-authentication` ConfigMap publishes them.
    pub(crate) fn request_header(&self) -> &RequestHeader {
        &self.front_proxy.request_header
    }

    /// The opened storage (for the few writers that bypass the API, like peer endpoints).
    pub(crate) fn storage(&self) -> Arc<dyn Storage> {
        self.storage.clone()
    }

    /// Derives the loopback credentials and client, and the TLS settings.
    pub(crate) fn complete(self) -> Result<CompletedConfig, Error> {
        let token = crate::api::new_uuid().to_string();
        let chain = loopback::ChainSlot::default();
        let control = ControlRuntime::start().map_err(Error::ControlRuntime)?;
        // Made inside the control runtime: the client's dispatch task runs there too.
        let loopback = {
            let _inside = control.handle().enter();
            loopback::client(chain.clone(), &token).map_err(|e| Error::Loopback(e.into()))?
        };
        let mut config = self;
        config.tokens.insert(
            token,
            UserInfo {
                name: "system:apiserver".into(),
                uid: crate::api::new_uuid().to_string(),
                groups: vec![MASTERS_GROUP.into()],
                ..UserInfo::default()
            },
        );
        let verifier = listener::client_verifier(&config.pki.client_cas)?;
        let request_header_verifier =
            listener::client_verifier(&config.front_proxy.request_header.cas)?;
        let (tls, serving_cert) = listener::server_config(
            &config.pki,
            verifier.clone(),
            Some(request_header_verifier.as_ref()),
            config.options.serving.disable_http2,
        )?;
        Ok(CompletedConfig {
            config,
            control,
            loopback,
            chain,
            verifier,
            request_header_verifier,
            tls,
            serving_cert,
        })
    }
}

/// A configuration with every derived value filled in.
pub(crate) struct CompletedConfig {
    pub(super) config: Config,
    /// Where the post-start hooks and the loopback client run.
    pub(super) control: ControlRuntime,
    pub(super) loopback: kube::Client,
    /// Where [`super::GenericServer::prepare_run`] publishes the chain the loopback client uses.
    pub(super) chain: loopback::ChainSlot,
    pub(super) verifier: Arc<dyn rustls::server::danger::ClientCertVerifier>,
    /// Verifies chains against the request-header CAs only (front proxies).
    pub(super) request_header_verifier: Arc<dyn rustls::server::danger::ClientCertVerifier>,
    pub(super) tls: Arc<rustls::ServerConfig>,
    /// The serving certificate's slot, reloaded from `--tls-cert-file` when it changes.
    pub(super) serving_cert: Arc<listener::ServingCert>,
}

impl CompletedConfig {
    /// Builds the server (hooks may be added until it runs).
    pub(crate) fn new_server(self) -> GenericServer {
        GenericServer::new(self)
    }
}

fn bind(addr: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let socket = socket2::Socket::new(
        socket2::Domain::for_address(addr),
        socket2::Type::STREAM,
        Some(socket2::Protocol::TCP),
    )?;
    socket.set_reuse_address(true)?;
    if addr.is_ipv6() && addr.ip().is_unspecified() {
        socket.set_only_v6(false)?;
    }
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    socket.listen(1024)?;
    tokio::net::TcpListener::from_std(socket.into())
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The URL local clients use: loopback when bound to an unspecified or loopback address.
pub(super) fn client_url(addr: SocketAddr) -> String {
    let ip = match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() || ip.is_loopback() => {
            IpAddr::V4(Ipv4Addr::LOCALHOST)
        }
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_loopback() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    format!("https://{}", SocketAddr::new(ip, addr.port()))
}

fn admin_kubeconfig(server: &str, pki: &Pki) -> String {
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s.as_bytes());
    let doc = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "kapi", "cluster": {
            "server": server,
            "certificate-authority-data": b64(&pki.serving_ca_pem),
        }}],
        "users": [{"name": ADMIN_USER, "user": {
            "client-certificate-data": b64(&pki.admin.cert_pem),
            "client-key-data": b64(&pki.admin.key_pem),
        }}],
        "contexts": [{"name": "kapi", "context": {"cluster": "kapi", "user": ADMIN_USER}}],
        "current-context": "kapi",
        "preferences": {},
    });
    serde_yaml::to_string(&doc).unwrap_or_default()
}

fn storage_config(options: &ServerOptions) -> storage::Config {
    let s = &options.storage;
    let backend = match &s.backend {
        Backend::Embedded => storage::BackendConfig::Embedded {
            dir: s.data_dir.join("store"),
        },
        Backend::Etcd {
            servers,
            ca_file,
            cert_file,
            key_file,
        } => storage::BackendConfig::Etcd {
            servers: servers.clone(),
            ca_file: ca_file.clone(),
            cert_file: cert_file.clone(),
            key_file: key_file.clone(),
        },
    };
    storage::Config {
        backend,
        prefix: s.prefix.clone(),
        compaction_interval: s.compaction_interval,
        watch_cache: s.watch_cache,
        healthcheck_timeout: s.healthcheck_timeout,
        traced: options.tracing.config_file.is_some(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_url_prefers_loopback() {
        let url = |s: &str| client_url(s.parse().unwrap());
        assert_eq!(url("0.0.0.0:6443"), "https://127.0.0.1:6443");
        assert_eq!(url("127.0.0.1:1"), "https://127.0.0.1:1");
        assert_eq!(url("[::1]:2"), "https://[::1]:2");
        assert_eq!(url("[::]:3"), "https://127.0.0.1:3");
        assert_eq!(url("10.0.0.5:4"), "https://10.0.0.5:4");
    }
}
