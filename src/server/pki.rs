//! Certificates of `kapi serve`: the generated serving CA + serving certificate, the client CA +
//! admin client certificate (reused on later starts), the in-memory loopback certificate, and
//! loading of operator-given PEM files (k8s: options/serving.go MaybeDefaultWithSelfSignedCerts);
//! `front_proxy` generates the front-proxy pair with the same helpers.
//! Private keys are written 0600 and never logged.
//! May use: options.

use crate::options::ServingOptions;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::io::Write;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use time::{Duration as TimeDuration, OffsetDateTime};

/// The host name kube-apiserver's loopback client sends as SNI; kapi serves its in-memory
/// loopback certificate for it, as kube-apiserver does (kapi's own loopback client needs no
/// TLS: it runs in process, see `server::loopback`).
pub(crate) const LOOPBACK_SERVER_NAME: &str = "apiserver-loopback-client";

/// User and group of the generated admin client certificate.
pub(crate) const ADMIN_USER: &str = "kapi-admin";
/// The privileged group every admin credential carries.
pub(crate) const MASTERS_GROUP: &str = "system:masters";

/// Why certificates could not be loaded or generated.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum Error {
    /// A file could not be read.
    #[error("cannot read {0}")]
    Read(PathBuf, #[source] std::io::Error),
    /// A file could not be written.
    #[error("cannot write {0}")]
    Write(PathBuf, #[source] std::io::Error),
    /// A PEM file held no usable certificate or key.
    #[error("{0}: {1}")]
    Pem(PathBuf, &'static str),
    /// rcgen failed to build a certificate.
    #[error("cannot generate {0}")]
    Generate(&'static str, #[source] rcgen::Error),
}

/// Result of this module.
pub(crate) type Result<T> = std::result::Result<T, Error>;

/// A certificate with its key, as PEM text and DER.
#[derive(Clone)]
pub(crate) struct CertKey {
    /// The certificate chain (leaf first), PEM.
    pub cert_pem: String,
    /// The private key, PEM. Never log it.
    pub key_pem: String,
    /// The chain as DER.
    pub chain: Vec<CertificateDer<'static>>,
    /// The key as DER.
    pub key: std::sync::Arc<PrivateKeyDer<'static>>,
}

impl std::fmt::Debug for CertKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertKey")
            .field("chain", &self.chain.len())
            .finish_non_exhaustive()
    }
}

/// Everything TLS-related the server needs.
#[derive(Debug, Clone)]
pub(crate) struct Pki {
    /// Serving certificate (generated or `--tls-cert-file`).
    pub serving: CertKey,
    /// PEM bundle clients must trust for the serving certificate (written to the kubeconfig).
    pub serving_ca_pem: String,
    /// Client CAs (generated client CA + `--client-ca-file`), DER.
    pub client_cas: Vec<CertificateDer<'static>>,
    /// The admin client certificate.
    pub admin: CertKey,
    /// In-memory certificate served for SNI `apiserver-loopback-client` (regenerated each start).
    pub loopback: CertKey,
}

/// Loads or generates every certificate the options call for.
pub(crate) fn load(opts: &ServingOptions, hostname: &str) -> Result<Pki> {
    let dir = &opts.cert_dir;
    let (serving, serving_ca_pem) = match (&opts.tls_cert_file, &opts.tls_private_key_file) {
        (Some(cert), Some(key)) => {
            let pair = read_pair(cert, key)?;
            // Clients trust the bundle as given (a self-signed or CA-issued chain).
            let ca = pair.cert_pem.clone();
            (pair, ca)
        }
        _ => {
            let ca = load_or_create_ca(dir, "ca", "kapi-serving-ca")?;
            let sans = serving_sans(opts, hostname);
            let leaf = load_or_create_leaf(dir, "apiserver", &ca, |params| {
                params
                    .distinguished_name
                    .push(DnType::CommonName, "kapi-apiserver");
                params.subject_alt_names = sans.clone();
                params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
            })?;
            let ca_pem = ca.cert_pem.clone();
            (leaf, ca_pem)
        }
    };
    let client_ca = load_or_create_ca(dir, "client-ca", "kapi-client-ca")?;
    let admin = load_or_create_leaf(dir, "admin", &client_ca, |params| {
        params
            .distinguished_name
            .push(DnType::CommonName, ADMIN_USER);
        params
            .distinguished_name
            .push(DnType::OrganizationName, MASTERS_GROUP);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    })?;
    let mut client_cas = client_ca.chain.clone();
    if let Some(path) = &opts.client_ca_file {
        let pem = std::fs::read(path).map_err(|e| Error::Read(path.clone(), e))?;
        let certs = parse_certs(path, &pem)?;
        client_cas.extend(certs);
    }
    let loopback = generate_loopback()?;
    Ok(Pki {
        serving,
        serving_ca_pem,
        client_cas,
        admin,
        loopback,
    })
}

fn serving_sans(opts: &ServingOptions, hostname: &str) -> Vec<SanType> {
    let mut ips: Vec<IpAddr> = vec![
        IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
        IpAddr::V6(std::net::Ipv6Addr::LOCALHOST),
    ];
    for ip in [Some(opts.bind_address), opts.advertise_address]
        .into_iter()
        .flatten()
    {
        if !ip.is_unspecified() && !ips.contains(&ip) {
            ips.push(ip);
        }
    }
    let mut names = vec!["localhost"];
    if !hostname.is_empty() && hostname != "localhost" {
        names.push(hostname);
    }
    let mut sans: Vec<SanType> = names
        .into_iter()
        .filter_map(|n| n.to_string().try_into().ok().map(SanType::DnsName))
        .collect();
    sans.extend(ips.into_iter().map(SanType::IpAddress));
    sans
}

fn base_params(days: i64) -> CertificateParams {
    let mut params = CertificateParams::default();
    params.distinguished_name = rcgen::DistinguishedName::new();
    let now = OffsetDateTime::now_utc();
    params.not_before = now - TimeDuration::hours(1);
    params.not_after = now + TimeDuration::days(days);
    let mut serial = [0u8; 16];
    rand::Rng::fill(&mut rand::thread_rng(), &mut serial[..]);
    serial[0] &= 0x7f;
    params.serial_number = Some(rcgen::SerialNumber::from_slice(&serial));
    params
}

/// Loads `<name>.crt/.key`, or generates a self-signed CA there (valid ten years) when absent.
pub(super) fn load_or_create_ca(dir: &Path, name: &'static str, cn: &str) -> Result<CertKey> {
    let (cert_path, key_path) = (
        dir.join(format!("{name}.crt")),
        dir.join(format!("{name}.key")),
    );
    if cert_path.exists() && key_path.exists() {
        return read_pair(&cert_path, &key_path);
    }
    let key = KeyPair::generate().map_err(|e| Error::Generate(name, e))?;
    let mut params = base_params(3650);
    params.distinguished_name.push(DnType::CommonName, cn);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let cert = params
        .self_signed(&key)
        .map_err(|e| Error::Generate(name, e))?;
    write_pair(&cert_path, &cert.pem(), &key_path, &key.serialize_pem())?;
    read_pair(&cert_path, &key_path)
}

/// Reuses `<name>.crt/.key` when present and valid for 30 more days, else issues a new leaf.
pub(super) fn load_or_create_leaf(
    dir: &Path,
    name: &'static str,
    ca: &CertKey,
    customize: impl Fn(&mut CertificateParams),
) -> Result<CertKey> {
    let (cert_path, key_path) = (
        dir.join(format!("{name}.crt")),
        dir.join(format!("{name}.key")),
    );
    if cert_path.exists() && key_path.exists() {
        let pair = read_pair(&cert_path, &key_path)?;
        if valid_for(&pair.chain[0], TimeDuration::days(30)) {
            return Ok(pair);
        }
        tracing::info!(cert = %cert_path.display(), "certificate expires soon, issuing a new one");
    }
    let ca_key = KeyPair::from_pem(&ca.key_pem).map_err(|e| Error::Generate(name, e))?;
    let issuer =
        Issuer::from_ca_cert_der(&ca.chain[0], ca_key).map_err(|e| Error::Generate(name, e))?;
    let key = KeyPair::generate().map_err(|e| Error::Generate(name, e))?;
    let mut params = base_params(365);
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.use_authority_key_identifier_extension = true;
    customize(&mut params);
    let cert = params
        .signed_by(&key, &issuer)
        .map_err(|e| Error::Generate(name, e))?;
    write_pair(&cert_path, &cert.pem(), &key_path, &key.serialize_pem())?;
    read_pair(&cert_path, &key_path)
}

fn valid_for(cert: &CertificateDer<'_>, margin: TimeDuration) -> bool {
    match x509_parser::parse_x509_certificate(cert) {
        Ok((_, parsed)) => {
            let not_after = parsed.validity().not_after.to_datetime();
            not_after > OffsetDateTime::now_utc() + margin
        }
        Err(_) => false,
    }
}

fn generate_loopback() -> Result<CertKey> {
    let key = KeyPair::generate().map_err(|e| Error::Generate("loopback", e))?;
    let mut params = base_params(365);
    params
        .distinguished_name
        .push(DnType::CommonName, LOOPBACK_SERVER_NAME);
    params.subject_alt_names = vec![SanType::DnsName(
        LOOPBACK_SERVER_NAME
            .try_into()
            .map_err(|e| Error::Generate("loopback", e))?,
    )];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let cert = params
        .self_signed(&key)
        .map_err(|e| Error::Generate("loopback", e))?;
    let key_der = PrivateKeyDer::try_from(key.serialize_der())
        .map_err(|_| Error::Pem(PathBuf::from("<loopback>"), "invalid generated key"))?;
    Ok(CertKey {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
        chain: vec![cert.der().clone()],
        key: std::sync::Arc::new(key_der),
    })
}

/// The PEM certificates of `pem` (read from `path`), at least one.
pub(super) fn parse_certs(path: &Path, pem: &[u8]) -> Result<Vec<CertificateDer<'static>>> {
    let certs: Vec<_> = rustls_pemfile::certs(&mut &pem[..])
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| Error::Pem(path.to_path_buf(), "invalid PEM certificate"))?;
    if certs.is_empty() {
        return Err(Error::Pem(path.to_path_buf(), "no certificate found"));
    }
    Ok(certs)
}

/// Reads a PEM certificate chain and its PEM private key.
pub(crate) fn read_pair(cert_path: &Path, key_path: &Path) -> Result<CertKey> {
    let cert_pem =
        std::fs::read_to_string(cert_path).map_err(|e| Error::Read(cert_path.into(), e))?;
    let key_pem = std::fs::read_to_string(key_path).map_err(|e| Error::Read(key_path.into(), e))?;
    let chain = parse_certs(cert_path, cert_pem.as_bytes())?;
    let key = rustls_pemfile::private_key(&mut key_pem.as_bytes())
        .map_err(|_| Error::Pem(key_path.into(), "invalid PEM private key"))?
        .ok_or_else(|| Error::Pem(key_path.into(), "no private key found"))?;
    Ok(CertKey {
        cert_pem,
        key_pem,
        chain,
        key: std::sync::Arc::new(key),
    })
}

fn write_pair(cert_path: &Path, cert: &str, key_path: &Path, key: &str) -> Result<()> {
    if let Some(dir) = cert_path.parent() {
        create_private_dir(dir)?;
    }
    write_file(key_path, key.as_bytes(), 0o600)?;
    write_file(cert_path, cert.as_bytes(), 0o644)
}

/// Creates a directory (and parents) readable only by the owner when new.
pub(crate) fn create_private_dir(dir: &Path) -> Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| Error::Write(dir.into(), e))
}

/// Writes a file atomically (temp file + rename) with the given mode.
pub(crate) fn write_file(path: &Path, data: &[u8], mode: u32) -> Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = path.with_extension("tmp");
    let _ = std::fs::remove_file(&tmp);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(&tmp)
        .map_err(|e| Error::Write(tmp.clone(), e))?;
    f.write_all(data)
        .and_then(|_| f.sync_all())
        .map_err(|e| Error::Write(tmp.clone(), e))?;
    std::fs::rename(&tmp, path).map_err(|e| Error::Write(path.into(), e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(dir: &Path) -> ServingOptions {
        ServingOptions {
            bind_address: "127.0.0.1".parse().unwrap(),
            secure_port: 0,
            advertise_address: Some("10.1.2.3".parse().unwrap()),
            data_dir: dir.into(),
            cert_dir: dir.join("pki"),
            tls_cert_file: None,
            tls_private_key_file: None,
            client_ca_file: None,
            token_auth_file: None,
            anonymous_auth: true,
            authorization_modes: vec![crate::options::AuthorizationMode::Rbac],
            service_accounts: crate::options::ServiceAccountOptions::default(),
            request_header: crate::options::RequestHeaderOptions::default(),
            max_requests_inflight: 1,
            max_mutating_requests_inflight: 1,
            request_timeout: std::time::Duration::from_secs(1),
            min_request_timeout: std::time::Duration::from_secs(1),
            livez_grace_period: std::time::Duration::ZERO,
            disable_http2: false,
            http2_max_streams: 0,
        }
    }

    #[test]
    fn generates_then_reuses_with_private_keys() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let first = load(&opts(dir.path()), "myhost").unwrap();
        let second = load(&opts(dir.path()), "myhost").unwrap();
        assert_eq!(first.serving.cert_pem, second.serving.cert_pem);
        assert_eq!(first.admin.cert_pem, second.admin.cert_pem);
        assert_ne!(first.loopback.cert_pem, second.loopback.cert_pem);
        for f in ["ca.key", "apiserver.key", "client-ca.key", "admin.key"] {
            let mode = std::fs::metadata(dir.path().join("pki").join(f))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600, "{f}");
        }
        let (_, leaf) = x509_parser::parse_x509_certificate(&first.serving.chain[0]).unwrap();
        let san = leaf.subject_alternative_name().unwrap().unwrap().value;
        let text = format!("{san:?}");
        for want in [
            "\"localhost\"",
            "\"myhost\"",
            "[127, 0, 0, 1]",
            "[10, 1, 2, 3]",
        ] {
            assert!(text.contains(want), "{want} missing in {text}");
        }
        let (_, admin) = x509_parser::parse_x509_certificate(&first.admin.chain[0]).unwrap();
        assert!(admin.subject().to_string().contains("CN=kapi-admin"));
        assert!(admin.subject().to_string().contains("O=system:masters"));
    }
}
