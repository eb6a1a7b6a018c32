//! Bound service-account tokens (pkg/serviceaccount/claims.go, jwt.go): the claims upstream
//! signs, issuing them, and checking a token's signature, issuer, audience and validity
//! period. Whether the service account and bound object still exist is the caller's check.

use super::keys::{PublicKey, SigningKey};
use jsonwebtoken::{Header, Validation};
use serde::{Deserialize, Serialize};

/// How far clocks may disagree (go-jose's DefaultLeeway, which upstream uses).
pub(crate) const LEEWAY_SECONDS: u64 = 60;

/// A name and UID (`serviceaccount`, `secret`, `pod` and `node` claims).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Ref {
    /// Object name.
    pub name: String,
    /// Object UID.
    pub uid: String,
}

/// The private `kubernetes.io` claim.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Kubernetes {
    /// The service account's namespace.
    pub namespace: String,
    /// The bound Secret, if any.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub secret: Option<Ref>,
    /// The service account.
    pub serviceaccount: Ref,
}

/// The claims of a bound token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Claims {
    /// Audiences.
    pub aud: Vec<String>,
    /// Expiry (Unix seconds).
    pub exp: i64,
    /// Issued at.
    pub iat: i64,
    /// Issuer.
    pub iss: String,
    /// Token ID (credential-id `JTI=<jti>` in the user's extra).
    #[serde(default)]
    pub jti: String,
    /// The service account and bound objects.
    #[serde(rename = "kubernetes.io")]
    pub kubernetes: Kubernetes,
    /// Not before.
    pub nbf: i64,
    /// `system:serviceaccount:<namespace>:<name>`.
    pub sub: String,
}

/// Why a token was not accepted (the client sees 401 only).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum TokenError {
    /// Not a JWT, or not one of ours.
    #[error("not a service account token")]
    NotOurs,
    /// Signature, expiry, audience or shape refused.
    #[error("invalid service account token")]
    Invalid(#[source] jsonwebtoken::errors::Error),
    /// Signing failed.
    #[error("signing the token failed")]
    Sign(#[source] jsonwebtoken::errors::Error),
}

/// Signs `claims` (a bound token's, or a legacy one's) with `key`.
pub(crate) fn issue(key: &SigningKey, claims: &impl Serialize) -> Result<String, TokenError> {
    // As upstream's go-jose header: alg and kid, no typ.
    let mut header = Header::new(key.public.alg);
    header.typ = None;
    header.kid = Some(key.public.kid.clone());
    jsonwebtoken::encode(&header, claims, &key.encoding).map_err(TokenError::Sign)
}

/// The issuer a token claims, without checking anything: whether to try this authenticator.
pub(crate) fn unverified_issuer(token: &str) -> Option<String> {
    use base64::Engine as _;
    let payload = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .ok()?;
    #[derive(Deserialize)]
    struct Iss {
        iss: String,
    }
    serde_json::from_slice::<Iss>(&bytes).ok().map(|i| i.iss)
}

/// Checks a token against `keys`: signature, issuer among `issuers`, an audience among
/// `audiences`, and exp/nbf with [`LEEWAY_SECONDS`].
pub(crate) fn verify(
    token: &str,
    keys: &[PublicKey],
    issuers: &[String],
    audiences: &[String],
) -> Result<Claims, TokenError> {
    decode(token, keys, |validation| {
        validation.leeway = LEEWAY_SECONDS;
        validation.validate_nbf = true;
        validation.set_issuer(issuers);
        validation.set_audience(audiences);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
    })
}

/// The claims of `token` if one of `keys` (the one its `kid` names, when it names one)
/// verifies its signature and the checks `configure` sets up pass.
pub(crate) fn decode<C: serde::de::DeserializeOwned>(
    token: &str,
    keys: &[PublicKey],
    configure: impl Fn(&mut Validation),
) -> Result<C, TokenError> {
    let header = jsonwebtoken::decode_header(token).map_err(|_| TokenError::NotOurs)?;
    let mut last = None;
    for key in keys.iter().filter(|k| k.alg == header.alg) {
        if header.kid.as_ref().is_some_and(|kid| kid != &key.kid) {
            continue;
        }
        let mut validation = Validation::new(key.alg);
        configure(&mut validation);
        match jsonwebtoken::decode::<C>(token, &key.decoding, &validation) {
            Ok(data) => return Ok(data.claims),
            Err(e) => last = Some(e),
        }
    }
    Err(last.map_or(TokenError::NotOurs, TokenError::Invalid))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims(now: i64, aud: &str) -> Claims {
        Claims {
            aud: vec![aud.into()],
            exp: now + 3600,
            iat: now,
            iss: "https://kapi.example".into(),
            jti: "j-1".into(),
            kubernetes: Kubernetes {
                namespace: "default".into(),
                secret: None,
                serviceaccount: Ref {
                    name: "builder".into(),
                    uid: "u-1".into(),
                },
            },
            nbf: now,
            sub: "system:serviceaccount:default:builder".into(),
        }
    }

    fn now() -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64
    }

    #[test]
    fn issued_tokens_verify_and_others_do_not() {
        let (key, _) = SigningKey::generate().unwrap();
        let (other, _) = SigningKey::generate().unwrap();
        let keys = vec![key.public.clone()];
        let iss = vec!["https://kapi.example".to_string()];
        let aud = vec!["https://kapi.example".to_string()];
        let c = claims(now(), "https://kapi.example");
        let token = issue(&key, &c).unwrap();
        assert_eq!(
            unverified_issuer(&token).as_deref(),
            Some("https://kapi.example")
        );
        assert_eq!(verify(&token, &keys, &iss, &aud).unwrap(), c);
        // Another key, another issuer, another audience, expired: refused.
        let forged = issue(&other, &c).unwrap();
        assert!(verify(&forged, &keys, &iss, &aud).is_err());
        assert!(verify(&token, &keys, &["https://else".to_string()], &aud).is_err());
        assert!(verify(&token, &keys, &iss, &["vault".to_string()]).is_err());
        let mut old = claims(now() - 7200, "https://kapi.example");
        old.exp = now() - 3600;
        let expired = issue(&key, &old).unwrap();
        assert!(verify(&expired, &keys, &iss, &aud).is_err());
        assert!(verify("garbage", &keys, &iss, &aud).is_err());
        // The key ID is in the header, as upstream puts it.
        let header = jsonwebtoken::decode_header(&token).unwrap();
        assert_eq!(header.kid.as_deref(), Some(key.public.kid.as_str()));
    }
}
