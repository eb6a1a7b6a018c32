//! Service-account tokens (pkg/serviceaccount): the signing key and the keys tokens are
//! verified with, bound tokens as JWTs, and the issuer-discovery documents
//! (/.well-known/openid-configuration, /openid/v1/jwks). Used by TokenRequest (registry), the
//! token authenticator (filters) and the server's discovery endpoints.
//! May use: api.

pub(crate) mod jwt;
pub(crate) mod keys;
pub(crate) mod legacy;

use keys::{PublicKey, SigningKey};
use serde_json::{json, Value};
use std::time::Duration;

/// The default lifetime of a requested token (TokenRequest's expirationSeconds default).
pub(crate) const DEFAULT_EXPIRATION: Duration = Duration::from_secs(3600);
/// The shortest a requested token may live.
pub(crate) const MIN_EXPIRATION: Duration = Duration::from_secs(600);

/// Everything tokens are issued and verified with.
#[derive(Debug, Clone)]
pub(crate) struct Issuer {
    /// `--service-account-issuer` values; the first one is put in new tokens.
    pub issuers: Vec<String>,
    /// `--api-audiences` (default: the issuers).
    pub audiences: Vec<String>,
    /// The key new tokens are signed with.
    pub signing: SigningKey,
    /// The keys tokens are verified with (the signing key's public half first).
    pub verifying: Vec<PublicKey>,
    /// `--service-account-max-token-expiration` (None: no limit beyond upstream's).
    pub max_expiration: Option<Duration>,
    /// Where /openid/v1/jwks is served (for the discovery document).
    pub jwks_uri: String,
}

impl Issuer {
    /// The issuer put in new tokens.
    pub(crate) fn issuer(&self) -> &str {
        self.issuers.first().map_or("", String::as_str)
    }

    /// The /.well-known/openid-configuration document (pkg/serviceaccount/openidmetadata.go).
    pub(crate) fn openid_configuration(&self) -> Value {
        let mut algs: Vec<&str> = self
            .verifying
            .iter()
            .map(|k| match k.alg {
                jsonwebtoken::Algorithm::RS256 => "RS256",
                _ => "ES256",
            })
            .collect();
        algs.sort_unstable();
        algs.dedup();
        json!({
            "issuer": self.issuer(),
            "jwks_uri": self.jwks_uri,
            "response_types_supported": ["id_token"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": algs,
        })
    }

    /// An issuer `url` (also the audience) with a fresh signing key, for tests.
    #[cfg(test)]
    pub(crate) fn for_tests(url: &str) -> Issuer {
        let (signing, _) = SigningKey::generate().expect("generating a P-256 key");
        Issuer {
            issuers: vec![url.into()],
            audiences: vec![url.into()],
            verifying: vec![signing.public.clone()],
            signing,
            max_expiration: None,
            jwks_uri: String::new(),
        }
    }

    /// The /openid/v1/jwks document: every verification key, once.
    pub(crate) fn jwks(&self) -> Value {
        let mut keys: Vec<&Value> = Vec::new();
        for k in &self.verifying {
            if !keys.iter().any(|j| j["kid"] == k.jwk["kid"]) {
                keys.push(&k.jwk);
            }
        }
        json!({ "keys": keys })
    }
}

/// What a token's subject must still be: the UIDs of live (not deleting) service accounts
/// and secrets, by `namespace/name`. The registry keeps it from storage.
pub(crate) trait Subjects: Send + Sync {
    /// The UID of the service account at `namespace/name`, unless it is gone or being
    /// deleted.
    fn service_account(&self, key: &str) -> Option<std::sync::Arc<str>>;
    /// The UID of the secret at `namespace/name`, unless it is gone or being deleted.
    fn secret(&self, key: &str) -> Option<std::sync::Arc<str>>;
    /// The `kubernetes.io/service-account-token` secret at `namespace/name` holding a token,
    /// unless it is gone or being deleted.
    fn token_secret(&self, key: &str) -> Option<std::sync::Arc<TokenSecret>>;
    /// Labels the token secret at `namespace/name` (whose UID is `uid`) as used on `date`
    /// (`kubernetes.io/legacy-token-last-used`), in the background: a request never waits
    /// for that write.
    fn mark_used(&self, key: &str, uid: &str, date: &str);
    /// Whether the service account at `namespace/name` lists the secret named `secret` in
    /// its `secrets`: the token in it was generated for the account (an auto-generated
    /// legacy token, which upstream warns about).
    fn lists_secret(&self, service_account: &str, secret: &str) -> bool;
}

/// What the legacy-token authenticator reads of a `kubernetes.io/service-account-token`
/// Secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TokenSecret {
    /// The secret's UID.
    pub uid: std::sync::Arc<str>,
    /// Its `data.token`, decoded.
    pub token: String,
    /// Its [`legacy::LAST_USED_LABEL`].
    pub last_used: Option<String>,
    /// Whether it carries [`legacy::INVALID_SINCE_LABEL`].
    pub invalid: bool,
}
