//! The service-account token issuer of a server: the signing key (`--service-account-signing-
//! key-file`, else `<cert-dir>/sa.key`, generated on first start, 0600, so replicas sharing
//! `--cert-dir` sign and verify alike), the verification keys, the issuer URLs and audiences.
//! May use: options, serviceaccount.

use super::pki;
use crate::options::ServiceAccountOptions;
use crate::serviceaccount::keys::{self, KeyError, SigningKey};
use crate::serviceaccount::Issuer;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// Why the issuer could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum Error {
    /// A key file could not be read.
    #[error("cannot read {0}")]
    Read(PathBuf, #[source] std::io::Error),
    /// A key file holds no usable key.
    #[error("{0}")]
    Key(PathBuf, #[source] KeyError),
    /// The generated key could not be written.
    #[error("cannot write the service-account signing key")]
    Write(#[source] pki::Error),
}

fn read(path: &Path) -> Result<Vec<u8>, Error> {
    std::fs::read(path).map_err(|e| Error::Read(path.to_path_buf(), e))
}

/// `https://<address>` of a server reachable at `addr` (IPv6 in brackets).
pub(crate) fn https_url(addr: SocketAddr) -> String {
    format!("https://{addr}")
}

/// Loads (or generates) the keys and fills in the defaults: issuer
/// `https://<advertise>:<port>`, audiences = issuers, jwks_uri under the issuer's address.
pub(crate) fn load(
    opts: &ServiceAccountOptions,
    cert_dir: &Path,
    advertise: SocketAddr,
) -> Result<Issuer, Error> {
    let signing = match &opts.signing_key_file {
        Some(path) => {
            SigningKey::from_pem(&read(path)?).map_err(|e| Error::Key(path.clone(), e))?
        }
        None => {
            let path = cert_dir.join("sa.key");
            if path.exists() {
                SigningKey::from_pem(&read(&path)?).map_err(|e| Error::Key(path.clone(), e))?
            } else {
                let (key, pem) = SigningKey::generate().map_err(|e| Error::Key(path.clone(), e))?;
                pki::write_file(&path, pem.as_bytes(), 0o600).map_err(Error::Write)?;
                key
            }
        }
    };
    let mut verifying = vec![signing.public.clone()];
    for path in &opts.key_files {
        let found =
            keys::public_keys_from_pem(&read(path)?).map_err(|e| Error::Key(path.clone(), e))?;
        verifying.extend(found);
    }
    let issuers = if opts.issuers.is_empty() {
        vec![https_url(advertise)]
    } else {
        opts.issuers.clone()
    };
    let audiences = if opts.api_audiences.is_empty() {
        issuers.clone()
    } else {
        opts.api_audiences.clone()
    };
    let jwks_uri = opts
        .jwks_uri
        .clone()
        .unwrap_or_else(|| format!("{}/openid/v1/jwks", https_url(advertise)));
    Ok(Issuer {
        issuers,
        audiences,
        signing,
        verifying,
        max_expiration: opts.max_token_expiration,
        jwks_uri,
    })
}
