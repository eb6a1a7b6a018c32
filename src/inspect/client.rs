//! Reaching a cluster like kubectl: `--kubeconfig`, `KUBECONFIG`, `~/.kube/config`, then the
//! in-cluster service account; `--context`; `--request-timeout` bounding every request.

use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

use http_body_util::BodyExt;
use kube::config::{KubeConfigOptions, Kubeconfig};

use super::error::{one_line, Error, Result};

/// What the operator said about reaching the cluster.
#[derive(Debug, Clone)]
pub(crate) struct ClusterConfig {
    /// `--kubeconfig`.
    pub kubeconfig: Option<PathBuf>,
    /// `--context`.
    pub context: Option<String>,
    /// `--request-timeout`: the bound on every single request.
    pub request_timeout: Duration,
}

/// A connected cluster: the client plus what is needed to name it in errors and reach peers.
#[derive(Clone)]
pub(crate) struct Cluster {
    client: kube::Client,
    config: kube::Config,
    server: String,
    timeout: Duration,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

impl Cluster {
    /// Loads the client configuration and builds a client. Does not contact the server.
    ///
    /// # Errors
    /// [`Error::NoKubeconfig`] or [`Error::Kubeconfig`] when no usable configuration exists.
    pub(crate) async fn connect(cfg: &ClusterConfig) -> Result<Self> {
        let opts = KubeConfigOptions {
            context: cfg.context.clone(),
            ..Default::default()
        };
        let kube_err = |e: kube::config::KubeconfigError| Error::Kubeconfig {
            cause: root_cause(&e),
        };
        let mut config = if let Some(path) = &cfg.kubeconfig {
            if !path.exists() {
                return Err(Error::Kubeconfig {
                    cause: format!("{} does not exist", path.display()),
                });
            }
            let kc = Kubeconfig::read_from(path).map_err(kube_err)?;
            kube::Config::from_custom_kubeconfig(kc, &opts)
                .await
                .map_err(kube_err)?
        } else if std::env::var_os("KUBECONFIG").is_some_and(|v| !v.is_empty())
            || default_kubeconfig().is_some_and(|p| p.exists())
        {
            kube::Config::from_kubeconfig(&opts)
                .await
                .map_err(kube_err)?
        } else if cfg.context.is_some() {
            return Err(Error::NoKubeconfig);
        } else {
            kube::Config::incluster().map_err(|_| Error::NoKubeconfig)?
        };
        config.connect_timeout = Some(cfg.request_timeout);
        config.write_timeout = Some(cfg.request_timeout);
        // Watches stay open: single requests are bounded by `within` instead.
        config.read_timeout = None;
        config.default_retry = false;
        Self::from_config(config, cfg.request_timeout)
    }

    fn from_config(config: kube::Config, timeout: Duration) -> Result<Self> {
        let server = config
            .cluster_url
            .to_string()
            .trim_end_matches('/')
            .to_string();
        let client = kube::Client::try_from(config.clone()).map_err(|e| Error::Kubeconfig {
            cause: root_cause(&e),
        })?;
        Ok(Self {
            client,
            config,
            server,
            timeout,
        })
    }

    /// The same credentials aimed at another apiserver replica at `host:port`.
    ///
    /// # Errors
    /// [`Error::Kubeconfig`] when the address does not form a URL.
    pub(crate) fn for_peer(&self, address: &str) -> Result<Self> {
        let mut config = self.config.clone();
        config.cluster_url =
            format!("https://{address}")
                .parse()
                .map_err(|_| Error::Kubeconfig {
                    cause: format!("peer address {address:?} is not host:port"),
                })?;
        // The replica's certificate was issued for the name the kubeconfig uses, when it names one.
        if config.tls_server_name.is_none() {
            if let Some(host) = self.config.cluster_url.host() {
                if host.parse::<std::net::IpAddr>().is_err() && !host.starts_with('[') {
                    config.tls_server_name = Some(host.to_string());
                }
            }
        }
        Self::from_config(config, self.timeout)
    }

    /// The kube client.
    pub(crate) fn client(&self) -> &kube::Client {
        &self.client
    }

    /// The server URL, for messages.
    pub(crate) fn server(&self) -> &str {
        &self.server
    }

    /// Runs one kube request under the request timeout and classifies its failure.
    ///
    /// # Errors
    /// The classified [`Error`]; [`Error::Timeout`] when the timeout passes.
    pub(crate) async fn within<T>(
        &self,
        what: &str,
        fut: impl Future<Output = kube::Result<T>>,
    ) -> Result<T> {
        match tokio::time::timeout(self.timeout, fut).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(Error::from_kube(e, &self.server, what, self.timeout)),
            Err(_) => Err(self.timed_out(what)),
        }
    }

    fn timed_out(&self, what: &str) -> Error {
        Error::Timeout {
            server: self.server.clone(),
            what: what.to_string(),
            timeout: self.timeout,
        }
    }

    /// GETs a non-resource path (e.g. `/readyz?verbose`) and returns status code and body.
    /// 401 and 403 become errors; any other status is returned for the caller to judge.
    ///
    /// # Errors
    /// Transport failures, timeouts, 401/403.
    pub(crate) async fn get_text(&self, path_and_query: &str) -> Result<(u16, String)> {
        let what = path_and_query.split('?').next().unwrap_or(path_and_query);
        let fut = async {
            let req = http::Request::get(path_and_query)
                .body(kube::client::Body::empty())
                .map_err(|e| Error::Failed {
                    server: self.server.clone(),
                    what: what.to_string(),
                    code: 0,
                    message: one_line(&e.to_string()),
                })?;
            let res = self
                .client
                .send(req)
                .await
                .map_err(|e| Error::from_kube(e, &self.server, what, self.timeout))?;
            let code = res.status().as_u16();
            let body = res
                .into_body()
                .collect()
                .await
                .map_err(|e| Error::from_kube(e, &self.server, what, self.timeout))?;
            let text = String::from_utf8_lossy(&body.to_bytes()).into_owned();
            match code {
                401 | 403 => Err(Error::from_status(code, &text, &self.server, what)),
                _ => Ok((code, text)),
            }
        };
        match tokio::time::timeout(self.timeout, fut).await {
            Ok(r) => r,
            Err(_) => Err(self.timed_out(what)),
        }
    }
}

fn default_kubeconfig() -> Option<PathBuf> {
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".kube").join("config"))
}

fn root_cause(err: &(dyn std::error::Error + 'static)) -> String {
    let root = std::iter::successors(Some(err), |e| e.source())
        .last()
        .unwrap_or(err);
    one_line(&root.to_string())
}
