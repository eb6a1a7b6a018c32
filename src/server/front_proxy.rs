//! Front-proxy PKI and request-header settings (kube-apiserver's `--requestheader-*` and
//! `--proxy-client-*` flags): the CA that vouches for front proxies, which of their names may
//! assert identities, the headers read, and the client certificate kapi itself presents when it
//! proxies to extension API servers. Without `--requestheader-client-ca-file` kapi does what
//! kubeadm does for kube-apiserver: it generates `front-proxy-ca.crt/.key` and
//! `front-proxy-client.crt/.key` (CN `front-proxy-client`, client auth) in the cert dir,
//! reused on later starts and by replicas sharing the directory, and allows only that name.
//! May use: options.

use super::pki::{self, CertKey};
use crate::options::{RequestHeaderOptions, FRONT_PROXY_CLIENT_NAME};
use rcgen::{DnType, ExtendedKeyUsagePurpose};
use rustls::pki_types::CertificateDer;
use std::path::Path;

/// Common name of the generated front-proxy CA.
const GENERATED_CA_CN: &str = "kapi-front-proxy-ca";

/// Request-header authentication as configured (RequestHeaderConfig in k8s), also what the
/// `extension-apiserver-authentication` ConfigMap tells extension servers.
#[derive(Debug, Clone)]
pub(crate) struct RequestHeader {
    /// The CA bundle as published (PEM).
    pub ca_pem: String,
    /// The same certificates, DER: the only roots front-proxy certificates verify against.
    pub cas: Vec<CertificateDer<'static>>,
    /// Common names that may assert identities (empty: any the CA signed).
    pub allowed_names: Vec<String>,
    /// `--requestheader-username-headers`.
    pub username_headers: Vec<String>,
    /// `--requestheader-uid-headers`.
    pub uid_headers: Vec<String>,
    /// `--requestheader-group-headers`.
    pub group_headers: Vec<String>,
    /// `--requestheader-extra-headers-prefix`.
    pub extra_headers_prefix: Vec<String>,
}

/// The client certificate kapi presents when it proxies a request to an extension API server
/// (kube-aggregator's proxy client, `--proxy-client-cert-file`). The proxy sends the caller's
/// identity in the standard headers (`X-Remote-User`, `X-Remote-Uid`, `X-Remote-Group`,
/// `X-Remote-Extra-<key>`, see the `options::REMOTE_*` names) whatever `--requestheader-*`
/// says, replacing any the client sent, as client-go's `SetAuthProxyHeaders` does: extension
/// servers learn which headers to read from the ConfigMap, which carries the defaults.
#[derive(Clone)]
#[allow(
    dead_code,
    reason = "the aggregator will proxy with it; nothing reads it yet"
)]
pub(crate) struct ProxyClient {
    /// The certificate chain, PEM (leaf first).
    pub cert_pem: String,
    /// Its private key, PEM. Never log it.
    pub key_pem: String,
}

impl std::fmt::Debug for ProxyClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyClient").finish_non_exhaustive()
    }
}

/// Everything front-proxy related a server needs.
#[derive(Debug, Clone)]
pub(crate) struct FrontProxy {
    /// How requests from front proxies are authenticated.
    pub request_header: RequestHeader,
    /// kapi's own front-proxy identity; None when the operator gives a request-header CA but
    /// no `--proxy-client-cert-file` (kapi cannot sign one without the CA's key).
    pub proxy_client: Option<ProxyClient>,
}

/// Loads the operator's request-header CA and proxy client certificate, or loads (generating
/// on first start) the front-proxy CA and client certificate in `cert_dir`.
pub(crate) fn load(opts: &RequestHeaderOptions, cert_dir: &Path) -> pki::Result<FrontProxy> {
    let (ca_pem, cas, proxy_client, default_names) = match &opts.client_ca_file {
        Some(path) => {
            let pem =
                std::fs::read_to_string(path).map_err(|e| pki::Error::Read(path.clone(), e))?;
            let cas = pki::parse_certs(path, pem.as_bytes())?;
            let proxy_client = match (&opts.proxy_client_cert_file, &opts.proxy_client_key_file) {
                (Some(cert), Some(key)) => Some(proxy_client(pki::read_pair(cert, key)?)),
                _ => None,
            };
            (pem, cas, proxy_client, Vec::new())
        }
        None => {
            let ca = pki::load_or_create_ca(cert_dir, "front-proxy-ca", GENERATED_CA_CN)?;
            let client = pki::load_or_create_leaf(cert_dir, "front-proxy-client", &ca, |p| {
                p.distinguished_name
                    .push(DnType::CommonName, FRONT_PROXY_CLIENT_NAME);
                p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
            })?;
            let names = vec![FRONT_PROXY_CLIENT_NAME.to_string()];
            (ca.cert_pem, ca.chain, Some(proxy_client(client)), names)
        }
    };
    Ok(FrontProxy {
        request_header: RequestHeader {
            ca_pem,
            cas,
            allowed_names: opts.allowed_names.clone().unwrap_or(default_names),
            username_headers: opts.username_headers.clone(),
            uid_headers: opts.uid_headers.clone(),
            group_headers: opts.group_headers.clone(),
            extra_headers_prefix: opts.extra_headers_prefix.clone(),
        },
        proxy_client,
    })
}

fn proxy_client(pair: CertKey) -> ProxyClient {
    ProxyClient {
        cert_pem: pair.cert_pem,
        key_pem: pair.key_pem,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn defaults() -> RequestHeaderOptions {
        RequestHeaderOptions {
            username_headers: vec!["X-Remote-User".into()],
            ..RequestHeaderOptions::default()
        }
    }

    #[test]
    fn generated_once_then_reused_and_only_front_proxy_client_allowed() {
        let dir = tempfile::tempdir().unwrap();
        let first = load(&defaults(), dir.path()).unwrap();
        let second = load(&defaults(), dir.path()).unwrap();
        let rh = &first.request_header;
        assert_eq!(rh.ca_pem, second.request_header.ca_pem);
        assert_eq!(rh.allowed_names, ["front-proxy-client"]);
        assert_eq!(rh.username_headers, ["X-Remote-User"]);
        let client = first.proxy_client.unwrap();
        assert_eq!(client.cert_pem, second.proxy_client.unwrap().cert_pem);
        for f in ["front-proxy-ca.key", "front-proxy-client.key"] {
            let mode = std::fs::metadata(dir.path().join(f))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600, "{f}");
        }
        let der = rustls_pemfile::certs(&mut client.cert_pem.as_bytes())
            .next()
            .unwrap()
            .unwrap();
        let (_, leaf) = x509_parser::parse_x509_certificate(&der).unwrap();
        assert_eq!(leaf.subject().to_string(), "CN=front-proxy-client");
        let (_, ca) = x509_parser::parse_x509_certificate(&rh.cas[0]).unwrap();
        assert_eq!(leaf.issuer(), ca.subject());
        let eku = leaf.extended_key_usage().unwrap().unwrap().value;
        assert!(eku.client_auth && !eku.server_auth);
    }

    #[test]
    fn operator_ca_allows_any_name_and_has_no_client_without_its_files() {
        let dir = tempfile::tempdir().unwrap();
        let generated = load(&defaults(), &dir.path().join("gen")).unwrap();
        let ca_file = dir.path().join("proxy-ca.crt");
        std::fs::write(&ca_file, &generated.request_header.ca_pem).unwrap();
        let opts = RequestHeaderOptions {
            client_ca_file: Some(ca_file),
            ..defaults()
        };
        let loaded = load(&opts, &dir.path().join("pki")).unwrap();
        assert!(loaded.request_header.allowed_names.is_empty());
        assert!(loaded.proxy_client.is_none());
        assert!(!dir.path().join("pki/front-proxy-ca.crt").exists());
        let named = RequestHeaderOptions {
            allowed_names: Some(vec!["aggregator".into()]),
            ..opts
        };
        let loaded = load(&named, &dir.path().join("pki")).unwrap();
        assert_eq!(loaded.request_header.allowed_names, ["aggregator"]);
    }
}
