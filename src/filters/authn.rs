//! Authentication (WithAuthentication in k8s), in upstream's order: front proxies
//! (`request_header`), x509 client certificates verified against the client CAs, static bearer
//! tokens (`--token-auth-file`), the loopback token and service-account tokens; no
//! credentials = `system:anonymous`; bad credentials = 401, never a fallback to anonymous.
//! May use: api.

use super::request_header::{self, RequestHeaderAuthenticator};
use super::sa_tokens::{self, LegacyUse, TokenUser};
use crate::api::UserInfo;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::danger::ClientCertVerifier;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

/// The client certificate chain presented in the TLS handshake (leaf first); a request
/// extension set by the listener for every request of the connection. Clones share the
/// chain and its digest, computed by the first request that needs it.
#[derive(Debug, Clone, Default)]
pub(crate) struct PeerCertificates(Arc<Peer>);

#[derive(Debug, Default)]
struct Peer {
    chain: Vec<CertificateDer<'static>>,
    digest: OnceLock<[u8; 32]>,
    /// Carried here, in the one extension every network request already has, for the audit
    /// events' sourceIPs.
    remote: Option<std::net::SocketAddr>,
}

impl PeerCertificates {
    /// The chain a connection presented.
    #[cfg(test)]
    pub(crate) fn new(chain: Vec<CertificateDer<'static>>) -> Self {
        PeerCertificates(Arc::new(Peer {
            chain,
            digest: OnceLock::new(),
            remote: None,
        }))
    }

    /// The chain a connection from `remote` presented.
    pub(crate) fn from_connection(
        chain: Vec<CertificateDer<'static>>,
        remote: std::net::SocketAddr,
    ) -> Self {
        PeerCertificates(Arc::new(Peer {
            chain,
            digest: OnceLock::new(),
            remote: Some(remote),
        }))
    }

    /// The connection's remote address.
    pub(crate) fn remote(&self) -> Option<std::net::SocketAddr> {
        self.0.remote
    }

    /// The presented chain, leaf first (empty without a client certificate).
    pub(crate) fn chain(&self) -> &[CertificateDer<'static>] {
        &self.0.chain
    }

    /// SHA-256 over the chain (each certificate's length, then its DER): the key of the
    /// verified-chain caches.
    pub(super) fn digest(&self) -> [u8; 32] {
        *self.0.digest.get_or_init(|| {
            use sha2::Digest;
            let mut hasher = sha2::Sha256::new();
            for cert in self.chain() {
                hasher.update((cert.len() as u64).to_be_bytes());
                hasher.update(cert.as_ref());
            }
            hasher.finalize().into()
        })
    }
}

/// Why a request could not be authenticated (the client sees only 401 Unauthorized).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum Error {
    /// A bearer token nobody issued.
    #[error("invalid bearer token")]
    InvalidToken,
    /// A secret-based service-account token whose secret is labelled
    /// `kubernetes.io/legacy-token-invalid-since`: the secret as `name/namespace`, the value
    /// of upstream's audit annotation.
    #[error("invalid bearer token")]
    InvalidatedLegacyToken(String),
    /// A client certificate that does not verify against the client CAs.
    #[error("verifying certificate {subject} failed")]
    InvalidCertificate {
        /// Subject of the presented certificate.
        subject: String,
        /// Why webpki rejected it.
        #[source]
        source: rustls::Error,
    },
    /// A certificate that verifies but names no user.
    #[error("client certificate has no common name")]
    NoCommonName,
    /// A front proxy's certificate that may not assert identities.
    #[error(transparent)]
    RequestHeader(#[from] request_header::Error),
    /// No credentials and anonymous requests are disabled.
    #[error("anonymous requests are disabled")]
    AnonymousDisabled,
}

/// The audit annotation upstream's legacy validator adds for a token of a secret labelled
/// invalid.
pub(crate) const LEGACY_TOKEN_INVALIDATED: &str = "authentication.k8s.io/legacy-token-invalidated";

impl Error {
    /// The audit annotation the failure carries (a legacy token marked invalid).
    pub(crate) fn audit_annotation(&self) -> Option<(&'static str, &str)> {
        match self {
            Error::InvalidatedLegacyToken(secret) => Some((LEGACY_TOKEN_INVALIDATED, secret)),
            _ => None,
        }
    }
}

/// Why a token file could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum TokenFileError {
    /// The file is not valid CSV.
    #[error("token file line {line}: invalid CSV")]
    Csv {
        /// 1-based line number.
        line: u64,
        /// CSV error.
        #[source]
        source: csv::Error,
    },
    /// A record with fewer than three columns.
    #[error("token file line {line}: must have at least 3 columns (token, user name, user uid), found {found}")]
    TooFewColumns {
        /// 1-based line number.
        line: u64,
        /// Number of columns found.
        found: usize,
    },
}

/// Static bearer tokens (k8s tokenfile authenticator): token → user.
#[derive(Debug, Default, Clone)]
pub(crate) struct TokenAuthenticator {
    tokens: HashMap<String, UserInfo>,
}

impl TokenAuthenticator {
    /// Parses kube-apiserver's token CSV: `token,user,uid,"group1,group2"` (groups optional).
    pub(crate) fn from_csv(data: &[u8]) -> Result<Self, TokenFileError> {
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .trim(csv::Trim::All)
            .from_reader(data);
        let mut tokens = HashMap::new();
        for record in reader.records() {
            let record = record.map_err(|source| TokenFileError::Csv {
                line: source.position().map(|p| p.line()).unwrap_or(0),
                source,
            })?;
            let line = record.position().map(|p| p.line()).unwrap_or(0);
            if record.len() == 1 && record[0].is_empty() {
                continue;
            }
            if record.len() < 3 {
                return Err(TokenFileError::TooFewColumns {
                    line,
                    found: record.len(),
                });
            }
            let groups = record
                .get(3)
                .map(|g| {
                    g.split(',')
                        .map(str::trim)
                        .filter(|g| !g.is_empty())
                        .map(String::from)
                        .collect()
                })
                .unwrap_or_default();
            let user = UserInfo {
                name: record[1].to_string(),
                uid: record[2].to_string(),
                groups,
                ..UserInfo::default()
            };
            if tokens.insert(record[0].to_string(), user).is_some() {
                tracing::warn!(line, "duplicate token in token file, the last one wins");
            }
        }
        Ok(TokenAuthenticator { tokens })
    }

    /// Adds one token (e.g. the loopback client's).
    pub(crate) fn insert(&mut self, token: String, user: UserInfo) {
        self.tokens.insert(token, user);
    }

    fn lookup(&self, token: &str) -> Option<&UserInfo> {
        self.tokens.get(token)
    }
}

/// The union of every authenticator, as kube-apiserver's union authenticator.
pub(crate) struct Authenticator {
    /// Front proxies (`--requestheader-*`), asked first.
    request_header: Option<RequestHeaderAuthenticator>,
    tokens: TokenAuthenticator,
    /// Bound service-account tokens, when the server issues them.
    service_accounts: Option<super::sa_tokens::ServiceAccountTokens>,
    x509: Option<Arc<dyn ClientCertVerifier>>,
    anonymous: bool,
    /// Verified chains (SHA-256 of the DER chain) → user and the leaf's notAfter, so a
    /// client's chain is verified once rather than on every request of every connection.
    verified: std::sync::Mutex<HashMap<[u8; 32], (UserInfo, i64)>>,
}

/// Bound of the verified-chain cache; it is cleared when full.
const VERIFIED_CACHE_MAX: usize = 1024;

impl Authenticator {
    /// Builds the authenticator; `x509` verifies client chains against the client CAs.
    pub(crate) fn new(
        tokens: TokenAuthenticator,
        x509: Option<Arc<dyn ClientCertVerifier>>,
        anonymous: bool,
    ) -> Self {
        Authenticator {
            request_header: None,
            tokens,
            service_accounts: None,
            x509,
            anonymous,
            verified: std::sync::Mutex::default(),
        }
    }

    /// Also accepts front proxies' identity headers, before any other credential.
    pub(crate) fn with_request_header(mut self, authenticator: RequestHeaderAuthenticator) -> Self {
        self.request_header = Some(authenticator);
        self
    }

    /// Also accepts bound service-account tokens.
    pub(crate) fn with_service_accounts(
        mut self,
        tokens: super::sa_tokens::ServiceAccountTokens,
    ) -> Self {
        self.service_accounts = Some(tokens);
        self
    }

    /// The user of a bearer token (the token file, then service-account tokens) for
    /// `audiences` (None: the API's, `--api-audiences`), and the audiences it is valid for.
    pub(crate) fn authenticate_token(
        &self,
        token: &str,
        audiences: Option<&[String]>,
    ) -> Result<TokenUser, Error> {
        let sa = self.service_accounts.as_ref();
        let api: &[String] = sa.map(|s| s.api_audiences()).unwrap_or_default();
        let audiences = audiences.filter(|a| !a.is_empty()).unwrap_or(api);
        if let Some(user) = self.tokens.lookup(token) {
            // The token file knows no audiences: valid for whichever are asked.
            return Ok(TokenUser {
                user: authenticated(user.clone()),
                audiences: audiences.to_vec(),
                legacy: None,
            });
        }
        match sa
            .ok_or(Error::InvalidToken)?
            .authenticate_for(token, audiences)
        {
            Ok(found) => Ok(TokenUser {
                user: authenticated(found.user),
                ..found
            }),
            Err(e) => {
                tracing::debug!(error = %e, "service account token refused");
                match e {
                    sa_tokens::Error::MarkedInvalid(secret, _) => {
                        let (namespace, name) = secret.split_once('/').unwrap_or(("", &secret));
                        Err(Error::InvalidatedLegacyToken(format!("{name}/{namespace}")))
                    }
                    _ => Err(Error::InvalidToken),
                }
            }
        }
    }

    /// Authenticates a request: any credential that verifies wins; presented credentials that
    /// all fail are an error (the first failure is reported); none at all is the anonymous
    /// user (when allowed). A front proxy's identity headers are removed from `headers` once
    /// they have named the user.
    #[cfg(test)]
    pub(crate) fn authenticate(
        &self,
        headers: &mut http::HeaderMap,
        certs: Option<&PeerCertificates>,
    ) -> Result<UserInfo, Error> {
        self.authenticate_noting_legacy(headers, certs)
            .map(|(user, _)| user)
    }

    /// [`Self::authenticate`], with the use of a secret-based service-account token (for its
    /// `Warning` header, audit annotation and counter).
    pub(crate) fn authenticate_noting_legacy(
        &self,
        headers: &mut http::HeaderMap,
        certs: Option<&PeerCertificates>,
    ) -> Result<(UserInfo, Option<LegacyUse>), Error> {
        let mut failure = None;
        let peer = certs.filter(|c| !c.chain().is_empty());
        if let (Some(front_proxies), Some(peer)) = (&self.request_header, peer) {
            match front_proxies.authenticate(headers, peer) {
                Ok(Some(user)) => return Ok((authenticated(user), None)),
                Ok(None) => {}
                Err(e) => failure = Some(e.into()),
            }
        }
        if let Some(peer) = peer {
            match self.verify_cert(peer) {
                Ok(user) => return Ok((authenticated(user), None)),
                Err(e) => failure = failure.or(Some(e)),
            }
        }
        if let Some(token) = bearer_token(headers) {
            match self.authenticate_token(token, None) {
                Ok(found) => return Ok((found.user, found.legacy)),
                Err(e) => failure = failure.or(Some(e)),
            }
        }
        match failure {
            Some(err) => Err(err),
            None if self.anonymous => Ok((UserInfo::anonymous(), None)),
            None => Err(Error::AnonymousDisabled),
        }
    }

    fn verify_cert(&self, peer: &PeerCertificates) -> Result<UserInfo, Error> {
        let chain = peer.chain();
        let key = peer.digest();
        let now = UnixTime::now().as_secs() as i64;
        if let Ok(cache) = self.verified.lock() {
            if let Some((user, not_after)) = cache.get(&key) {
                if now < *not_after {
                    return Ok(user.clone());
                }
            }
        }
        let user = self.verify_chain(chain)?;
        let not_after = x509_parser::parse_x509_certificate(&chain[0])
            .map(|(_, c)| c.validity().not_after.timestamp())
            .unwrap_or(now);
        if let Ok(mut cache) = self.verified.lock() {
            if cache.len() >= VERIFIED_CACHE_MAX {
                cache.clear();
            }
            cache.insert(key, (user.clone(), not_after));
        }
        Ok(user)
    }

    fn verify_chain(&self, chain: &[CertificateDer<'static>]) -> Result<UserInfo, Error> {
        let subject = subject_of(&chain[0]);
        let Some(verifier) = &self.x509 else {
            return Err(Error::InvalidCertificate {
                subject: subject.0,
                source: rustls::Error::General("no client CA configured".into()),
            });
        };
        verifier
            .verify_client_cert(&chain[0], &chain[1..], UnixTime::now())
            .map_err(|source| Error::InvalidCertificate {
                subject: subject.0.clone(),
                source,
            })?;
        let (_, cn, orgs) = subject;
        let name = cn.ok_or(Error::NoCommonName)?;
        Ok(UserInfo {
            name,
            groups: orgs,
            ..UserInfo::default()
        })
    }
}

impl crate::api::authorizer::TokenReviewer for Authenticator {
    fn review(&self, token: &str, audiences: &[String]) -> Result<(UserInfo, Vec<String>), String> {
        self.authenticate_token(token, Some(audiences))
            .map(|found| (found.user, found.audiences))
            .map_err(|e| e.to_string())
    }
}

/// Adds `system:authenticated`, except to the anonymous user and to a user already in it or
/// in `system:unauthenticated` (AuthenticatedGroupAdder in k8s: a front proxy forwards an
/// anonymous caller as `system:anonymous` in `system:unauthenticated`).
fn authenticated(mut user: UserInfo) -> UserInfo {
    let marked = user
        .groups
        .iter()
        .any(|g| g == "system:authenticated" || g == "system:unauthenticated");
    if user.name != "system:anonymous" && !marked {
        user.groups.push("system:authenticated".into());
    }
    user
}

fn bearer_token(headers: &http::HeaderMap) -> Option<&str> {
    let value = headers.get(http::header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// (subject text, CN, O values) of a certificate.
pub(super) fn subject_of(cert: &CertificateDer<'_>) -> (String, Option<String>, Vec<String>) {
    match x509_parser::parse_x509_certificate(cert) {
        Ok((_, parsed)) => {
            let subject = parsed.subject();
            let cn = subject
                .iter_common_name()
                .next()
                .and_then(|a| a.as_str().ok())
                .map(String::from);
            let orgs = subject
                .iter_organization()
                .filter_map(|a| a.as_str().ok())
                .map(String::from)
                .collect();
            (subject.to_string(), cn, orgs)
        }
        Err(_) => ("<unparsable certificate>".into(), None, vec![]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_csv_and_outcomes() {
        let csv = b"tok1,alice,uid-1,\"dev,ops\"\n\ntok2,bob,uid-2\n";
        let tokens = TokenAuthenticator::from_csv(csv).unwrap();
        let authn = Authenticator::new(tokens, None, true);
        let mut headers = http::HeaderMap::new();
        let anon = authn.authenticate(&mut headers, None).unwrap();
        assert_eq!(anon, UserInfo::anonymous());
        headers.insert(http::header::AUTHORIZATION, "Bearer tok1".parse().unwrap());
        let alice = authn.authenticate(&mut headers, None).unwrap();
        assert_eq!(alice.name, "alice");
        assert_eq!(alice.groups, vec!["dev", "ops", "system:authenticated"]);
        headers.insert(http::header::AUTHORIZATION, "Bearer nope".parse().unwrap());
        assert!(matches!(
            authn.authenticate(&mut headers, None),
            Err(Error::InvalidToken)
        ));
    }

    #[test]
    fn authenticated_group_is_added_as_upstream() {
        let user = |name: &str, groups: &[&str]| UserInfo {
            name: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..UserInfo::default()
        };
        let groups = |u: UserInfo| authenticated(u).groups;
        assert_eq!(
            groups(user("alice", &["devs"])),
            ["devs", "system:authenticated"]
        );
        assert_eq!(
            groups(user("alice", &["system:authenticated"])),
            ["system:authenticated"]
        );
        // A front proxy forwarding an anonymous caller.
        let anonymous = user("system:anonymous", &["system:unauthenticated"]);
        assert_eq!(groups(anonymous), ["system:unauthenticated"]);
        assert_eq!(groups(user("system:anonymous", &[])), Vec::<String>::new());
    }

    #[test]
    fn short_record_is_rejected() {
        let err = TokenAuthenticator::from_csv(b"tok,alice\n").unwrap_err();
        assert!(err.to_string().contains("at least 3 columns"), "{err}");
    }
}
