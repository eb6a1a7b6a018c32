//! The bound service-account token authenticator (pkg/serviceaccount/jwt.go with the
//! validator of claims.go): a JWT of one of the accepted issuers, signed by one of the
//! verification keys, for one of the audiences, not expired, whose service account (and
//! bound secret) still exists with the UID the token names. Verified tokens are kept until
//! they expire, so a request pays a hash lookup, not a signature check; the subject is
//! checked on every request, so deleting a service account revokes its tokens at once.
//! May use: api, serviceaccount.

use crate::api::UserInfo;
use crate::serviceaccount::jwt::{self, Claims};
use crate::serviceaccount::{Issuer, Subjects};
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

/// Most tokens kept verified; the cache is emptied when it is full.
const CACHE_MAX: usize = 4096;

/// The groups of every service account.
const ALL_SERVICE_ACCOUNTS: &str = "system:serviceaccounts";
/// The extra key naming the credential.
const CREDENTIAL_ID: &str = "authentication.kubernetes.io/credential-id";

/// Why a token was refused (the client sees 401 only).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum Error {
    /// Not for this authenticator (another issuer, not a JWT).
    #[error("not a service account token of this issuer")]
    NotOurs,
    /// Refused by the JWT checks.
    #[error(transparent)]
    Token(#[from] jwt::TokenError),
    /// Its service account is gone, being deleted, or another one by that name.
    #[error("service account {0} has been deleted")]
    ServiceAccountGone(String),
    /// Its bound secret is gone, being deleted, or another one by that name.
    #[error("secret {0} has been deleted")]
    SecretGone(String),
    /// None of the token's audiences is one the request accepts.
    #[error("token audiences {0:?} are invalid for the target audiences")]
    Audience(Vec<String>),
}

/// A verified token: the user, and what must still hold for it.
struct Verified {
    /// The whole token (the cache is keyed by its signature only).
    token: String,
    user: UserInfo,
    claims: Claims,
    /// `namespace/name` of the service account.
    service_account: String,
    /// `namespace/name` of the bound secret, if any.
    secret: Option<String>,
}

impl Verified {
    fn new(token: &str, claims: Claims) -> Verified {
        let k = &claims.kubernetes;
        Verified {
            token: token.to_string(),
            user: user_of(&claims),
            service_account: format!("{}/{}", k.namespace, k.serviceaccount.name),
            secret: k
                .secret
                .as_ref()
                .map(|s| format!("{}/{}", k.namespace, s.name)),
            claims,
        }
    }
}

/// Authenticates bound service-account tokens.
pub(crate) struct ServiceAccountTokens {
    issuer: Arc<Issuer>,
    subjects: Arc<dyn Subjects>,
    cache: RwLock<HashMap<String, Arc<Verified>>>,
}

/// The signature segment of a JWT: the verified-token cache's key. Hashing it rather than
/// the whole token (about 1 KB) keeps a cache hit cheap; a hit still compares the whole token.
fn signature(token: &str) -> &str {
    token.rsplit('.').next().unwrap_or(token)
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

impl ServiceAccountTokens {
    /// Tokens of `issuer`, checked against `subjects`.
    pub(crate) fn new(issuer: Arc<Issuer>, subjects: Arc<dyn Subjects>) -> Self {
        ServiceAccountTokens {
            issuer,
            subjects,
            cache: RwLock::new(HashMap::new()),
        }
    }

    /// Whether `token` claims one of the accepted issuers (so this authenticator decides).
    pub(crate) fn claims_issuer(&self, token: &str) -> bool {
        token.starts_with("eyJ")
            && jwt::unverified_issuer(token).is_some_and(|iss| self.issuer.issuers.contains(&iss))
    }

    /// The audiences a token must name to reach the API (`--api-audiences`).
    pub(crate) fn api_audiences(&self) -> &[String] {
        &self.issuer.audiences
    }

    /// The user of a token for `audiences` (a TokenReview's), and the audiences it is valid
    /// for.
    pub(crate) fn authenticate_for(
        &self,
        token: &str,
        audiences: &[String],
    ) -> Result<(UserInfo, Vec<String>), Error> {
        let api = audiences == self.issuer.audiences.as_slice();
        let cached = if api {
            self.cache
                .read()
                .ok()
                .and_then(|c| c.get(signature(token)).cloned())
                .filter(|v| v.token == token)
        } else {
            None
        };
        let verified = match cached {
            // Checked against the API's audiences when it was cached.
            Some(v) if v.claims.exp + jwt::LEEWAY_SECONDS as i64 > now() => {
                self.still_valid(&v)?;
                return Ok((v.user.clone(), Vec::new()));
            }
            _ => {
                if !self.claims_issuer(token) {
                    return Err(Error::NotOurs);
                }
                let claims = jwt::verify(
                    token,
                    &self.issuer.verifying,
                    &self.issuer.issuers,
                    audiences,
                )?;
                Arc::new(Verified::new(token, claims))
            }
        };
        self.still_valid(&verified)?;
        let valid_for: Vec<String> = audiences
            .iter()
            .filter(|a| verified.claims.aud.contains(a))
            .cloned()
            .collect();
        if valid_for.is_empty() {
            return Err(Error::Audience(verified.claims.aud.clone()));
        }
        if api {
            if let Ok(mut cache) = self.cache.write() {
                if cache.len() >= CACHE_MAX {
                    cache.clear();
                }
                cache.insert(signature(token).to_string(), verified.clone());
            }
        }
        Ok((verified.user.clone(), valid_for))
    }

    /// The service account, and the bound secret, exist with the token's UIDs.
    fn still_valid(&self, v: &Verified) -> Result<(), Error> {
        let k = &v.claims.kubernetes;
        if self.subjects.service_account(&v.service_account).as_deref()
            != Some(k.serviceaccount.uid.as_str())
        {
            return Err(Error::ServiceAccountGone(v.service_account.clone()));
        }
        if let (Some(key), Some(secret)) = (&v.secret, &k.secret) {
            if self.subjects.secret(key).as_deref() != Some(secret.uid.as_str()) {
                return Err(Error::SecretGone(key.clone()));
            }
        }
        Ok(())
    }
}

/// The user a token's claims name (ServiceAccountInfo.UserInfo).
fn user_of(claims: &Claims) -> UserInfo {
    let k = &claims.kubernetes;
    let mut extra = std::collections::BTreeMap::new();
    if !claims.jti.is_empty() {
        extra.insert(
            CREDENTIAL_ID.to_string(),
            vec![format!("JTI={}", claims.jti)],
        );
    }
    UserInfo {
        name: format!(
            "system:serviceaccount:{}:{}",
            k.namespace, k.serviceaccount.name
        ),
        uid: k.serviceaccount.uid.clone(),
        groups: vec![
            ALL_SERVICE_ACCOUNTS.into(),
            format!("{ALL_SERVICE_ACCOUNTS}:{}", k.namespace),
            // Here already, so that the union authenticator need not add it per request.
            "system:authenticated".into(),
        ],
        extra,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serviceaccount::jwt::{Kubernetes, Ref};
    use crate::serviceaccount::keys::SigningKey;

    /// Service accounts and secrets by `namespace/name`, changed by the test.
    #[derive(Default)]
    struct Live(RwLock<HashMap<String, Arc<str>>>);

    impl Subjects for Live {
        fn service_account(&self, key: &str) -> Option<Arc<str>> {
            self.0.read().unwrap().get(&format!("sa:{key}")).cloned()
        }
        fn secret(&self, key: &str) -> Option<Arc<str>> {
            self.0
                .read()
                .unwrap()
                .get(&format!("secret:{key}"))
                .cloned()
        }
    }

    fn issuer() -> Arc<Issuer> {
        let (signing, _) = SigningKey::generate().unwrap();
        Arc::new(Issuer {
            issuers: vec!["https://kapi.test".into()],
            audiences: vec!["https://kapi.test".into()],
            verifying: vec![signing.public.clone()],
            signing,
            max_expiration: None,
            jwks_uri: String::new(),
        })
    }

    fn token(issuer: &Issuer, aud: &str, secret: Option<Ref>) -> String {
        let now = now();
        jwt::issue(
            &issuer.signing,
            &Claims {
                aud: vec![aud.into()],
                exp: now + 600,
                iat: now,
                iss: issuer.issuer().into(),
                jti: "jti-1".into(),
                kubernetes: Kubernetes {
                    namespace: "ci".into(),
                    secret,
                    serviceaccount: Ref {
                        name: "builder".into(),
                        uid: "sa-uid".into(),
                    },
                },
                nbf: now,
                sub: "system:serviceaccount:ci:builder".into(),
            },
        )
        .unwrap()
    }

    #[test]
    fn cached_tokens_still_die_with_their_service_account() {
        let issuer = issuer();
        let live = Arc::new(Live::default());
        live.0
            .write()
            .unwrap()
            .insert("sa:ci/builder".into(), Arc::from("sa-uid"));
        let tokens = ServiceAccountTokens::new(issuer.clone(), live.clone());
        let t = token(&issuer, "https://kapi.test", None);
        let api = issuer.audiences.clone();
        for _ in 0..2 {
            // The second call is a cache hit.
            let (user, _) = tokens.authenticate_for(&t, &api).unwrap();
            assert_eq!(user.name, "system:serviceaccount:ci:builder");
            assert_eq!(user.uid, "sa-uid");
            assert_eq!(user.extra[CREDENTIAL_ID], ["JTI=jti-1"]);
        }
        // Another account of the same name is not the token's.
        live.0
            .write()
            .unwrap()
            .insert("sa:ci/builder".into(), Arc::from("other"));
        assert!(matches!(
            tokens.authenticate_for(&t, &api),
            Err(Error::ServiceAccountGone(_))
        ));
        live.0.write().unwrap().clear();
        assert!(tokens.authenticate_for(&t, &api).is_err());
    }

    #[test]
    fn audiences_bound_secrets_and_foreign_tokens() {
        let issuer = issuer();
        let live = Arc::new(Live::default());
        live.0
            .write()
            .unwrap()
            .insert("sa:ci/builder".into(), Arc::from("sa-uid"));
        let tokens = ServiceAccountTokens::new(issuer.clone(), live.clone());
        let api = issuer.audiences.clone();
        let vault = token(&issuer, "vault", None);
        assert!(tokens.authenticate_for(&vault, &api).is_err());
        let (_, valid) = tokens
            .authenticate_for(&vault, &["vault".to_string()])
            .unwrap();
        assert_eq!(valid, ["vault"]);
        let bound = token(
            &issuer,
            "https://kapi.test",
            Some(Ref {
                name: "s".into(),
                uid: "secret-uid".into(),
            }),
        );
        assert!(matches!(
            tokens.authenticate_for(&bound, &api),
            Err(Error::SecretGone(_))
        ));
        live.0
            .write()
            .unwrap()
            .insert("secret:ci/s".into(), Arc::from("secret-uid"));
        assert!(tokens.authenticate_for(&bound, &api).is_ok());
        // Another issuer's token (or no JWT at all) is not this authenticator's to judge.
        let mut foreign = (*issuer).clone();
        foreign.issuers = vec!["https://elsewhere".into()];
        let t = token(&foreign, "https://kapi.test", None);
        assert!(matches!(
            tokens.authenticate_for(&t, &api),
            Err(Error::NotOurs)
        ));
        assert!(matches!(
            tokens.authenticate_for("opaque", &api),
            Err(Error::NotOurs)
        ));
    }
}
