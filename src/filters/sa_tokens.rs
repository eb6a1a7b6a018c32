//! The bound service-account token authenticator (pkg/serviceaccount/jwt.go with the
//! validator of claims.go): a JWT of one of the accepted issuers, signed by one of the
//! verification keys, for one of the audiences, not expired, whose service account (and
//! bound secret) still exists with the UID the token names. Verified tokens are kept until
//! they expire, so a request pays a hash lookup, not a signature check; the subject is
//! checked on every request, so deleting a service account revokes its tokens at once.
//! Legacy secret-based tokens (issuer `kubernetes/serviceaccount`, pkg/serviceaccount/legacy.go)
//! are accepted while their Secret holds them and is not labelled invalid, and their use is
//! recorded in the Secret's `kubernetes.io/legacy-token-last-used` label, once a day.
//! May use: api, serviceaccount.

use crate::api::UserInfo;
use crate::serviceaccount::jwt::{self, Claims};
use crate::serviceaccount::legacy::{self, INVALID_SINCE_LABEL};
use crate::serviceaccount::{Issuer, Subjects, TokenSecret};
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

/// Hash maps looked up by name or token on every request: foldhash, randomly seeded per map
/// (hashbrown's default), a fraction of SipHash's cost on these short keys.
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

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
    /// A legacy token's claims are incomplete or inconsistent.
    #[error("{0}")]
    Claims(&'static str),
    /// Its service account is gone, being deleted, or another one by that name.
    #[error("service account {0} has been deleted")]
    ServiceAccountGone(String),
    /// Its bound secret is gone, being deleted, or another one by that name.
    #[error("secret {0} has been deleted")]
    SecretGone(String),
    /// A legacy token's secret is gone, being deleted, or holds another token.
    #[error("Token has been invalidated")]
    Invalidated,
    /// A legacy token's secret is labelled invalid.
    #[error("the token in secret {0} for service account {1} has been marked invalid. Use tokens from the TokenRequest API or manually created secret-based tokens, or remove the '{INVALID_SINCE_LABEL}' label from the secret to temporarily allow use of this token")]
    MarkedInvalid(String, String),
    /// None of the token's audiences is one the request accepts.
    #[error("token audiences {0:?} are invalid for the target audiences")]
    Audience(Vec<String>),
}

/// What must still hold for a verified token.
enum Bound {
    /// A bound token: its bound secret's `namespace/name` and UID, if any.
    Token { secret: Option<(String, String)> },
    /// A legacy token: the `namespace/name` of the secret holding it.
    Legacy { secret: String },
}

/// A verified token: the user, and what must still hold for it.
struct Verified {
    /// The whole token (the cache is keyed by its signature only).
    token: String,
    user: UserInfo,
    /// Unix seconds after which it is refused (legacy tokens never expire).
    expires: i64,
    /// The audiences it names (legacy tokens: none, meaning the API's).
    audiences: Vec<String>,
    /// `namespace/name` of the service account.
    service_account: String,
    bound: Bound,
}

impl Verified {
    fn bound(token: &str, claims: Claims) -> Verified {
        let k = &claims.kubernetes;
        Verified {
            token: token.to_string(),
            user: user_of(&claims),
            expires: claims.exp + jwt::LEEWAY_SECONDS as i64,
            service_account: format!("{}/{}", k.namespace, k.serviceaccount.name),
            bound: Bound::Token {
                secret: k
                    .secret
                    .as_ref()
                    .map(|s| (format!("{}/{}", k.namespace, s.name), s.uid.clone())),
            },
            audiences: claims.aud,
        }
    }

    fn legacy(token: &str, claims: legacy::Claims) -> Verified {
        let user = service_account_user(
            &claims.namespace,
            &claims.service_account_name,
            &claims.service_account_uid,
            BTreeMap::new(),
        );
        Verified {
            token: token.to_string(),
            user,
            expires: i64::MAX,
            audiences: Vec::new(),
            service_account: format!("{}/{}", claims.namespace, claims.service_account_name),
            bound: Bound::Legacy {
                secret: format!("{}/{}", claims.namespace, claims.secret_name),
            },
        }
    }

    /// The service account's UID the token names.
    fn service_account_uid(&self) -> &str {
        &self.user.uid
    }
}

/// The warning for a legacy token the tokens controller generated for its service account
/// (one the account lists in `secrets`), as upstream's legacy validator words it.
pub(crate) const AUTO_GENERATED_WARNING: &str = "Use tokens from the TokenRequest API or manually created secret-based tokens instead of auto-generated secret-based tokens.";

/// The use of a secret-based (legacy) token: what upstream's legacy validator warns of,
/// annotates the audit event with and counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LegacyUse {
    /// The name of the secret holding the token.
    pub(crate) secret: String,
    /// The service account lists the secret in `secrets`: the tokens controller made it.
    pub(crate) auto_generated: bool,
}

impl LegacyUse {
    /// [`AUTO_GENERATED_WARNING`] for an auto-generated token.
    pub(crate) fn warning(&self) -> Option<&'static str> {
        self.auto_generated.then_some(AUTO_GENERATED_WARNING)
    }

    /// The audit annotation upstream adds: its key, and the secret's name as its value.
    pub(crate) fn audit_annotation(&self) -> (&'static str, &str) {
        let key = if self.auto_generated {
            "authentication.k8s.io/legacy-token-autogenerated-secret"
        } else {
            "authentication.k8s.io/legacy-token-manual-secret"
        };
        (key, &self.secret)
    }
}

/// Who a verified token names, the audiences it is valid for (of those asked), and, for a
/// secret-based token, how it was used.
#[derive(Debug)]
pub(crate) struct TokenUser {
    /// The service account's user.
    pub(crate) user: UserInfo,
    /// The audiences asked for that the token names (empty for a cached API token).
    pub(crate) audiences: Vec<String>,
    /// A secret-based token's use (None for bound tokens and the token file's).
    pub(crate) legacy: Option<LegacyUse>,
}

/// Authenticates bound and legacy service-account tokens.
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

/// Today's and tomorrow's UTC dates (`YYYY-MM-DD`): a last-used label of either is current
/// (upstream's tolerance for clocks a day apart).
fn today_and_tomorrow() -> (String, String) {
    let today = k8s_openapi::jiff::Timestamp::now()
        .to_zoned(k8s_openapi::jiff::tz::TimeZone::UTC)
        .date();
    let tomorrow = today.tomorrow().unwrap_or(today);
    (today.to_string(), tomorrow.to_string())
}

impl ServiceAccountTokens {
    /// Tokens of `issuer`, checked against `subjects`.
    pub(crate) fn new(issuer: Arc<Issuer>, subjects: Arc<dyn Subjects>) -> Self {
        ServiceAccountTokens {
            issuer,
            subjects,
            cache: RwLock::new(HashMap::default()),
        }
    }

    /// Whether `token` is a bound token of one of the accepted issuers, a legacy token, or
    /// neither (another authenticator's).
    fn kind_of(&self, token: &str) -> Option<bool> {
        if !token.starts_with("eyJ") {
            return None;
        }
        let iss = jwt::unverified_issuer(token)?;
        if iss == legacy::ISSUER {
            Some(true)
        } else {
            self.issuer.issuers.contains(&iss).then_some(false)
        }
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
    ) -> Result<TokenUser, Error> {
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
            Some(v) if v.expires > now() => {
                let legacy = self.still_valid(&v)?;
                return Ok(TokenUser {
                    user: v.user.clone(),
                    audiences: Vec::new(),
                    legacy,
                });
            }
            _ => Arc::new(match self.kind_of(token) {
                None => return Err(Error::NotOurs),
                Some(false) => Verified::bound(
                    token,
                    jwt::verify(
                        token,
                        &self.issuer.verifying,
                        &self.issuer.issuers,
                        audiences,
                    )?,
                ),
                Some(true) => {
                    let claims = legacy::verify(token, &self.issuer.verifying)?;
                    claims.check().map_err(Error::Claims)?;
                    Verified::legacy(token, claims)
                }
            }),
        };
        // Legacy tokens name no audience: they are valid for the API's.
        let token_audiences = if verified.audiences.is_empty() {
            &self.issuer.audiences
        } else {
            &verified.audiences
        };
        let valid_for: Vec<String> = audiences
            .iter()
            .filter(|a| token_audiences.contains(a))
            .cloned()
            .collect();
        if valid_for.is_empty() {
            return Err(Error::Audience(token_audiences.clone()));
        }
        let legacy = self.still_valid(&verified)?;
        if api {
            if let Ok(mut cache) = self.cache.write() {
                if cache.len() >= CACHE_MAX {
                    cache.clear();
                }
                cache.insert(signature(token).to_string(), verified.clone());
            }
        }
        Ok(TokenUser {
            user: verified.user.clone(),
            audiences: valid_for,
            legacy,
        })
    }

    /// The service account, and the bound secret, exist with the token's UIDs; a legacy
    /// token's secret still holds it, unlabelled invalid, and is marked used today; its use
    /// is auto-generated when the account lists the secret in its `secrets`.
    fn still_valid(&self, v: &Verified) -> Result<Option<LegacyUse>, Error> {
        if let Bound::Legacy { secret } = &v.bound {
            // The secret first, as upstream's legacy validator.
            let Some(held) = self
                .subjects
                .token_secret(secret)
                .filter(|s| s.token == v.token)
            else {
                return Err(Error::Invalidated);
            };
            self.check_service_account(v)?;
            if held.invalid {
                self.mark_used(secret, &held);
                return Err(Error::MarkedInvalid(
                    secret.clone(),
                    v.service_account.clone(),
                ));
            }
            self.mark_used(secret, &held);
            let name = secret.rsplit('/').next().unwrap_or(secret);
            return Ok(Some(LegacyUse {
                secret: name.to_string(),
                auto_generated: self.subjects.lists_secret(&v.service_account, name),
            }));
        }
        self.check_service_account(v)?;
        if let Bound::Token {
            secret: Some((key, uid)),
        } = &v.bound
        {
            if self.subjects.secret(key).as_deref() != Some(uid.as_str()) {
                return Err(Error::SecretGone(key.clone()));
            }
        }
        Ok(None)
    }

    fn check_service_account(&self, v: &Verified) -> Result<(), Error> {
        if self.subjects.service_account(&v.service_account).as_deref()
            != Some(v.service_account_uid())
        {
            return Err(Error::ServiceAccountGone(v.service_account.clone()));
        }
        Ok(())
    }

    /// Asks for today's last-used label unless the secret has it (or tomorrow's) already.
    fn mark_used(&self, key: &str, held: &TokenSecret) {
        let (today, tomorrow) = today_and_tomorrow();
        let current = held.last_used.as_deref();
        if current != Some(today.as_str()) && current != Some(tomorrow.as_str()) {
            self.subjects.mark_used(key, &held.uid, &today);
        }
    }
}

/// The user a bound token's claims name (ServiceAccountInfo.UserInfo).
fn user_of(claims: &Claims) -> UserInfo {
    let k = &claims.kubernetes;
    let mut extra = BTreeMap::new();
    if !claims.jti.is_empty() {
        extra.insert(
            CREDENTIAL_ID.to_string(),
            vec![format!("JTI={}", claims.jti)],
        );
    }
    service_account_user(
        &k.namespace,
        &k.serviceaccount.name,
        &k.serviceaccount.uid,
        extra,
    )
}

/// The user of the service account `namespace/name`.
fn service_account_user(
    namespace: &str,
    name: &str,
    uid: &str,
    extra: BTreeMap<String, Vec<String>>,
) -> UserInfo {
    UserInfo {
        name: format!("system:serviceaccount:{namespace}:{name}"),
        uid: uid.to_string(),
        groups: vec![
            ALL_SERVICE_ACCOUNTS.into(),
            format!("{ALL_SERVICE_ACCOUNTS}:{namespace}"),
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

    /// Service accounts and secrets by `namespace/name`, changed by the test.
    #[derive(Default)]
    struct Live(
        RwLock<HashMap<String, Arc<str>>>,
        RwLock<HashMap<String, Arc<TokenSecret>>>,
        std::sync::Mutex<Vec<(String, String, String)>>,
    );

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
        fn token_secret(&self, key: &str) -> Option<Arc<TokenSecret>> {
            self.1.read().unwrap().get(key).cloned()
        }
        fn mark_used(&self, key: &str, uid: &str, date: &str) {
            self.2
                .lock()
                .unwrap()
                .push((key.into(), uid.into(), date.into()));
        }
        fn lists_secret(&self, service_account: &str, secret: &str) -> bool {
            let key = format!("lists:{service_account}/{secret}");
            self.0.read().unwrap().contains_key(&key)
        }
    }

    fn issuer() -> Arc<Issuer> {
        Arc::new(Issuer::for_tests("https://kapi.test"))
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
            let user = tokens.authenticate_for(&t, &api).unwrap().user;
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
        let valid = tokens
            .authenticate_for(&vault, &["vault".to_string()])
            .unwrap()
            .audiences;
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

    #[test]
    fn legacy_tokens_live_and_die_with_their_secret() {
        let issuer = issuer();
        let live = Arc::new(Live::default());
        live.0
            .write()
            .unwrap()
            .insert("sa:ci/builder".into(), Arc::from("sa-uid"));
        let tokens = ServiceAccountTokens::new(issuer.clone(), live.clone());
        let claims = legacy::Claims::new("ci", "builder", "sa-uid", "builder-token");
        let t = jwt::issue(&issuer.signing, &claims).unwrap();
        let api = issuer.audiences.clone();
        // No secret holds it: refused.
        assert!(matches!(
            tokens.authenticate_for(&t, &api),
            Err(Error::Invalidated)
        ));
        let held = |token: &str, last_used: Option<&str>, invalid: bool| {
            live.1.write().unwrap().insert(
                "ci/builder-token".into(),
                Arc::new(TokenSecret {
                    uid: Arc::from("secret-uid"),
                    token: token.into(),
                    last_used: last_used.map(str::to_string),
                    invalid,
                }),
            );
        };
        held(&t, None, false);
        for _ in 0..2 {
            let TokenUser {
                user,
                audiences,
                legacy,
            } = tokens.authenticate_for(&t, &api).unwrap();
            assert_eq!(user.name, "system:serviceaccount:ci:builder");
            assert_eq!(user.uid, "sa-uid");
            assert!(user.extra.is_empty());
            assert!(audiences.is_empty() || audiences == api);
            // Not listed in the account's secrets: made by hand, no warning.
            let legacy = legacy.unwrap();
            assert_eq!(legacy.warning(), None);
            assert_eq!(
                legacy.audit_annotation(),
                (
                    "authentication.k8s.io/legacy-token-manual-secret",
                    "builder-token"
                )
            );
        }
        // Listed: auto-generated, warned about (whether verified afresh or cached).
        live.0
            .write()
            .unwrap()
            .insert("lists:ci/builder/builder-token".into(), Arc::from(""));
        for _ in 0..2 {
            let legacy = tokens.authenticate_for(&t, &api).unwrap().legacy.unwrap();
            assert_eq!(legacy.warning(), Some(AUTO_GENERATED_WARNING));
            assert_eq!(
                legacy.audit_annotation(),
                (
                    "authentication.k8s.io/legacy-token-autogenerated-secret",
                    "builder-token"
                )
            );
        }
        live.0
            .write()
            .unwrap()
            .remove("lists:ci/builder/builder-token");
        live.2.lock().unwrap().truncate(2);
        // Both uses asked for today's label; once the secret has it, no more.
        let (today, _) = today_and_tomorrow();
        let marks = std::mem::take(&mut *live.2.lock().unwrap());
        assert_eq!(marks.len(), 2);
        assert_eq!(
            marks[0],
            (
                "ci/builder-token".into(),
                "secret-uid".into(),
                today.clone()
            )
        );
        held(&t, Some(&today), false);
        tokens.authenticate_for(&t, &api).unwrap();
        assert!(live.2.lock().unwrap().is_empty());
        // Only the API's audiences.
        assert!(matches!(
            tokens.authenticate_for(&t, &["vault".to_string()]),
            Err(Error::Audience(_))
        ));
        // Labelled invalid: refused with upstream's message, and still marked used.
        held(&t, Some("2020-01-01"), true);
        let err = tokens.authenticate_for(&t, &api).unwrap_err();
        assert!(err.to_string().starts_with(
            "the token in secret ci/builder-token for service account ci/builder has been marked invalid"
        ));
        assert_eq!(live.2.lock().unwrap().len(), 1);
        // Another token in the secret, or the service account gone: refused.
        held("another", None, false);
        assert!(matches!(
            tokens.authenticate_for(&t, &api),
            Err(Error::Invalidated)
        ));
        held(&t, None, false);
        live.0.write().unwrap().clear();
        assert!(matches!(
            tokens.authenticate_for(&t, &api),
            Err(Error::ServiceAccountGone(_))
        ));
        // Claims that do not name one service account are refused before any lookup.
        let mut odd = claims;
        odd.sub = "system:serviceaccount:ci:other".into();
        let t = jwt::issue(&issuer.signing, &odd).unwrap();
        assert!(matches!(
            tokens.authenticate_for(&t, &api),
            Err(Error::Claims("sub claim is invalid"))
        ));
    }
}
