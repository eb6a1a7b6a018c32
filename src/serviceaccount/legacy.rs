//! Legacy secret-based service-account tokens (pkg/serviceaccount/legacy.go): the JWT the
//! tokens controller puts in a `kubernetes.io/service-account-token` Secret, with issuer
//! `kubernetes/serviceaccount`, no audience and no expiry, and the checks of its claims. Whether
//! the secret and the service account still hold is the authenticator's check.

use super::jwt::{self, TokenError};
use super::keys::PublicKey;
use serde::{Deserialize, Serialize};

/// The issuer of legacy tokens (serviceaccount.LegacyIssuer).
pub(crate) const ISSUER: &str = "kubernetes/serviceaccount";
/// The label the authenticator stamps with the UTC date a legacy token was last used.
pub(crate) const LAST_USED_LABEL: &str = "kubernetes.io/legacy-token-last-used";
/// The label that marks a legacy token as no longer accepted.
pub(crate) const INVALID_SINCE_LABEL: &str = "kubernetes.io/legacy-token-invalid-since";
/// The Secret type of legacy tokens.
pub(crate) const SECRET_TYPE: &str = "kubernetes.io/service-account-token";
/// The annotation naming a token secret's service account.
pub(crate) const NAME_ANNOTATION: &str = "kubernetes.io/service-account.name";
/// The annotation holding that service account's UID.
pub(crate) const UID_ANNOTATION: &str = "kubernetes.io/service-account.uid";

/// The claims of a legacy token, in the order go-jose writes them (sorted keys).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Claims {
    /// Always [`ISSUER`].
    pub iss: String,
    /// The service account's namespace.
    #[serde(rename = "kubernetes.io/serviceaccount/namespace", default)]
    pub namespace: String,
    /// The secret holding the token.
    #[serde(rename = "kubernetes.io/serviceaccount/secret.name", default)]
    pub secret_name: String,
    /// The service account.
    #[serde(rename = "kubernetes.io/serviceaccount/service-account.name", default)]
    pub service_account_name: String,
    /// The service account's UID.
    #[serde(rename = "kubernetes.io/serviceaccount/service-account.uid", default)]
    pub service_account_uid: String,
    /// `system:serviceaccount:<namespace>:<name>`.
    #[serde(default)]
    pub sub: String,
}

impl Claims {
    /// The claims of the token for `secret` of the service account `namespace/name` (`uid`).
    pub(crate) fn new(namespace: &str, name: &str, uid: &str, secret: &str) -> Claims {
        Claims {
            iss: ISSUER.into(),
            namespace: namespace.into(),
            secret_name: secret.into(),
            service_account_name: name.into(),
            service_account_uid: uid.into(),
            sub: format!("system:serviceaccount:{namespace}:{name}"),
        }
    }

    /// legacyValidator's claim checks: every claim present, and `sub` naming the same
    /// service account.
    pub(crate) fn check(&self) -> Result<(), &'static str> {
        if self.sub.is_empty() {
            return Err("sub claim is missing");
        }
        if self.namespace.is_empty() {
            return Err("namespace claim is missing");
        }
        if self.secret_name.is_empty() {
            return Err("secretName claim is missing");
        }
        if self.service_account_name.is_empty() {
            return Err("serviceAccountName claim is missing");
        }
        if self.service_account_uid.is_empty() {
            return Err("serviceAccountUID claim is missing");
        }
        let expected = format!(
            "system:serviceaccount:{}:{}",
            self.namespace, self.service_account_name
        );
        if self.sub != expected {
            return Err("sub claim is invalid");
        }
        Ok(())
    }
}

/// Checks a legacy token's signature against `keys` and its issuer; no expiry, no audience.
pub(crate) fn verify(token: &str, keys: &[PublicKey]) -> Result<Claims, TokenError> {
    jwt::decode(token, keys, |validation| {
        validation.validate_exp = false;
        validation.validate_aud = false;
        validation.set_issuer(&[ISSUER]);
        validation.set_required_spec_claims(&["iss", "sub"]);
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serviceaccount::jwt::issue;
    use crate::serviceaccount::keys::SigningKey;
    use base64::Engine as _;

    #[test]
    fn legacy_tokens_carry_upstreams_claims_and_verify() {
        let (key, _) = SigningKey::generate().unwrap();
        let (other, _) = SigningKey::generate().unwrap();
        let claims = Claims::new("ci", "builder", "sa-uid", "builder-token");
        let token = issue(&key, &claims).unwrap();
        let payload = token.split('.').nth(1).unwrap();
        let json: serde_json::Value = serde_json::from_slice(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(payload)
                .unwrap(),
        )
        .unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "iss": "kubernetes/serviceaccount",
                "kubernetes.io/serviceaccount/namespace": "ci",
                "kubernetes.io/serviceaccount/secret.name": "builder-token",
                "kubernetes.io/serviceaccount/service-account.name": "builder",
                "kubernetes.io/serviceaccount/service-account.uid": "sa-uid",
                "sub": "system:serviceaccount:ci:builder",
            })
        );
        let keys = std::slice::from_ref(&key.public);
        let verified = verify(&token, keys).unwrap();
        assert_eq!(verified, claims);
        assert!(verified.check().is_ok());
        // Another key's signature, or a bound token's issuer, is refused.
        assert!(verify(&issue(&other, &claims).unwrap(), keys).is_err());
        let mut foreign = claims.clone();
        foreign.iss = "https://kapi.example".into();
        assert!(verify(&issue(&key, &foreign).unwrap(), keys).is_err());
        assert!(verify("not-a-jwt", keys).is_err());
    }

    #[test]
    fn claims_must_name_one_service_account() {
        let good = Claims::new("ci", "builder", "u", "s");
        let mut wrong_sub = good.clone();
        wrong_sub.sub = "system:serviceaccount:ci:other".into();
        assert_eq!(wrong_sub.check(), Err("sub claim is invalid"));
        let mut no_secret = good.clone();
        no_secret.secret_name.clear();
        assert_eq!(no_secret.check(), Err("secretName claim is missing"));
        let mut no_uid = good;
        no_uid.service_account_uid.clear();
        assert_eq!(no_uid.check(), Err("serviceAccountUID claim is missing"));
    }
}
