//! Front-proxy authentication (k8s: `authentication/request/headerrequest`, wrapped in the
//! x509 `Verifier` of `NewDynamicVerifyOptionsSecure`): a request whose client certificate
//! chains to a request-header CA (verified against those CAs alone, never the client CAs) and
//! whose common name is allowed is the user its identity headers name: the first non-empty
//! user-name header, the first non-empty UID header, every value of every group header, and
//! `<prefix><key>` headers as extra attributes (key lower-cased, then percent-decoded). Those
//! headers are removed once read (ClearAuthenticationHeaders), so nothing behind the
//! authenticator sees them. Without a user-name header the request falls through to the other
//! authenticators, headers untouched, as upstream.
//! May use: api.

use super::authn::{subject_of, PeerCertificates};
use crate::api::UserInfo;
use rustls::pki_types::UnixTime;
use rustls::server::danger::ClientCertVerifier;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The headers a front proxy names the user with (all matched case-insensitively).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct HeaderNames {
    /// Checked in order; the first with a non-empty value is the user name.
    pub username: Vec<String>,
    /// Checked in order; the first with a non-empty value is the UID.
    pub uid: Vec<String>,
    /// Every non-empty value of each is a group.
    pub group: Vec<String>,
    /// `<prefix><key>: value` adds value to the extra attribute key.
    pub extra_prefix: Vec<String>,
}

/// Why a front proxy's certificate may not assert an identity.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum Error {
    /// Signed by a request-header CA, but its common name is not allowed (upstream's message).
    #[error("x509: subject with cn={0} is not in the allowed list")]
    NameNotAllowed(String),
}

/// What checking a chain against the request-header CAs found.
#[derive(Debug, Clone)]
enum Check {
    /// Not signed by a request-header CA: not a front proxy.
    NotFromCa,
    /// A front proxy whose name may assert identities.
    Allowed,
    /// A front proxy whose name may not.
    Refused(Error),
}

/// Bound of the checked-chain cache; it is cleared when full.
const CHECKED_CACHE_MAX: usize = 1024;
/// How long a chain that did not verify is remembered: most requests with a client
/// certificate carry a user's, checked here first on every request.
const NOT_FROM_CA_TTL_SECS: i64 = 60;

/// The request-header authenticator: front proxies' CAs, allowed names and header names.
pub(crate) struct RequestHeaderAuthenticator {
    verifier: Arc<dyn ClientCertVerifier>,
    allowed_names: Vec<String>,
    names: HeaderNames,
    /// Chain digest → outcome and until when it holds (the leaf's notAfter, or a minute for
    /// a chain that did not verify).
    checked: Mutex<HashMap<[u8; 32], (Check, i64)>>,
}

impl RequestHeaderAuthenticator {
    /// Builds the authenticator; `verifier` checks chains against the request-header CAs only,
    /// `allowed_names` empty allows any common name.
    pub(crate) fn new(
        verifier: Arc<dyn ClientCertVerifier>,
        allowed_names: Vec<String>,
        names: HeaderNames,
    ) -> Self {
        RequestHeaderAuthenticator {
            verifier,
            allowed_names,
            names,
            checked: Mutex::default(),
        }
    }

    /// The user a front proxy names in `headers`, whose identity headers are then removed.
    /// Ok(None) when `peer` is no front proxy or names no user: other authenticators decide
    /// (a chain that fails here fails against the client CAs too, so the outcome is the same
    /// as upstream's, where this is an error).
    ///
    /// # Errors
    ///
    /// [`Error::NameNotAllowed`] for a front proxy outside `--requestheader-allowed-names`.
    pub(crate) fn authenticate(
        &self,
        headers: &mut http::HeaderMap,
        peer: &PeerCertificates,
    ) -> Result<Option<UserInfo>, Error> {
        match self.check(peer) {
            Check::NotFromCa => Ok(None),
            Check::Refused(err) => Err(err),
            Check::Allowed => Ok(take_user(headers, &self.names)),
        }
    }

    fn check(&self, peer: &PeerCertificates) -> Check {
        let key = peer.digest();
        let now = UnixTime::now().as_secs() as i64;
        if let Ok(cache) = self.checked.lock() {
            if let Some((check, until)) = cache.get(&key) {
                if now < *until {
                    return check.clone();
                }
            }
        }
        let chain = peer.chain();
        let (check, until) =
            match self
                .verifier
                .verify_client_cert(&chain[0], &chain[1..], UnixTime::now())
            {
                Err(_) => (Check::NotFromCa, now + NOT_FROM_CA_TTL_SECS),
                Ok(_) => {
                    let (_, cn, _) = subject_of(&chain[0]);
                    let cn = cn.unwrap_or_default();
                    let not_after = x509_parser::parse_x509_certificate(&chain[0])
                        .map(|(_, c)| c.validity().not_after.timestamp())
                        .unwrap_or(now);
                    let check = if allowed(&self.allowed_names, &cn) {
                        Check::Allowed
                    } else {
                        Check::Refused(Error::NameNotAllowed(cn))
                    };
                    (check, not_after)
                }
            };
        if let Ok(mut cache) = self.checked.lock() {
            if cache.len() >= CHECKED_CACHE_MAX {
                cache.clear();
            }
            cache.insert(key, (check.clone(), until));
        }
        check
    }
}

/// Whether a front proxy with common name `cn` may assert identities (verifySubject in k8s).
fn allowed(allowed_names: &[String], cn: &str) -> bool {
    allowed_names.is_empty() || allowed_names.iter().any(|name| name == cn)
}

/// The user named by `headers`, whose identity headers are then removed; None, headers
/// untouched, without a user name (requestHeaderAuthRequestHandler in k8s).
pub(crate) fn take_user(headers: &mut http::HeaderMap, names: &HeaderNames) -> Option<UserInfo> {
    let name = first_value(headers, &names.username)?;
    let user = UserInfo {
        name,
        uid: first_value(headers, &names.uid).unwrap_or_default(),
        groups: all_values(headers, &names.group),
        extra: extra(headers, &names.extra_prefix),
    };
    clear(headers, names);
    Some(user)
}

fn text(value: &http::HeaderValue) -> String {
    String::from_utf8_lossy(value.as_bytes()).into_owned()
}

/// The first value of the first header with a non-empty one (Go's `Header.Get` per name).
fn first_value(headers: &http::HeaderMap, names: &[String]) -> Option<String> {
    names
        .iter()
        .filter_map(|name| headers.get(name.as_str()))
        .map(text)
        .find(|value| !value.is_empty())
}

/// Every non-empty value of every header named, in order; values are not split on commas.
fn all_values(headers: &http::HeaderMap, names: &[String]) -> Vec<String> {
    names
        .iter()
        .flat_map(|name| headers.get_all(name.as_str()))
        .map(text)
        .filter(|value| !value.is_empty())
        .collect()
}

fn has_prefix_ignore_case(name: &str, prefix: &str) -> bool {
    name.len() >= prefix.len()
        && name.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
}

/// Extra attributes: for each prefix in order, every header starting with it adds its values
/// to the key after the prefix, lower-cased then percent-decoded (newExtra in k8s).
fn extra(
    headers: &http::HeaderMap,
    prefixes: &[String],
) -> std::collections::BTreeMap<String, Vec<String>> {
    let mut extra = std::collections::BTreeMap::<String, Vec<String>>::new();
    for prefix in prefixes {
        for name in headers.keys() {
            let name = name.as_str();
            if !has_prefix_ignore_case(name, prefix) {
                continue;
            }
            let key = unescape_key(&name[prefix.len()..].to_ascii_lowercase());
            extra
                .entry(key)
                .or_default()
                .extend(headers.get_all(name).iter().map(text));
        }
    }
    extra
}

/// Go's `url.PathUnescape`, keeping the key as sent when an escape is malformed ("always record
/// extra strings, even if malformed/unencoded").
fn unescape_key(encoded: &str) -> String {
    let bytes = encoded.as_bytes();
    let well_formed = bytes.iter().enumerate().all(|(i, b)| {
        *b != b'%'
            || (bytes.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit))
    });
    if !well_formed {
        return encoded.to_string();
    }
    percent_encoding::percent_decode_str(encoded)
        .decode_utf8_lossy()
        .into_owned()
}

/// Removes every header `names` name or prefix (ClearAuthenticationHeaders in k8s).
fn clear(headers: &mut http::HeaderMap, names: &HeaderNames) {
    for name in names.username.iter().chain(&names.uid).chain(&names.group) {
        headers.remove(name.as_str());
    }
    let prefixed: Vec<http::HeaderName> = headers
        .keys()
        .filter(|name| {
            names
                .extra_prefix
                .iter()
                .any(|prefix| has_prefix_ignore_case(name.as_str(), prefix))
        })
        .cloned()
        .collect();
    for name in prefixed {
        headers.remove(name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::pki_types::CertificateDer;

    fn names() -> HeaderNames {
        HeaderNames {
            username: vec!["X-Remote-User".into(), "X-Other-User".into()],
            uid: vec!["X-Remote-Uid".into()],
            group: vec!["X-Remote-Group".into(), "X-Other-Group".into()],
            extra_prefix: vec!["X-Remote-Extra-".into(), "X-Other-Extra-".into()],
        }
    }

    fn headers(pairs: &[(&str, &str)]) -> http::HeaderMap {
        let mut map = http::HeaderMap::new();
        for (name, value) in pairs {
            map.append(
                http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                value.parse().unwrap(),
            );
        }
        map
    }

    #[test]
    fn first_non_empty_name_every_group_and_headers_removed() {
        let mut h = headers(&[
            ("x-remote-user", ""),
            ("X-Other-User", "alice"),
            ("X-Remote-Uid", "uid-1"),
            ("X-Remote-Group", "devs"),
            ("X-Remote-Group", ""),
            ("X-Remote-Group", "a,b"),
            ("X-Other-Group", "ops"),
            ("Accept", "application/json"),
        ]);
        let user = take_user(&mut h, &names()).unwrap();
        assert_eq!(user.name, "alice");
        assert_eq!(user.uid, "uid-1");
        // Every value of every header, in order; empty ones dropped; no comma splitting.
        assert_eq!(user.groups, ["devs", "a,b", "ops"]);
        assert!(user.extra.is_empty());
        let left: Vec<&str> = h.keys().map(|k| k.as_str()).collect();
        assert_eq!(left, ["accept"], "identity headers are cleared");
    }

    #[test]
    fn extra_keys_are_lower_cased_then_percent_decoded() {
        let mut h = headers(&[
            ("X-Remote-User", "alice"),
            ("X-Remote-Extra-Scopes", "view"),
            ("X-Remote-Extra-Scopes", "edit"),
            ("X-Remote-Extra-Example.com%2fTeam", "blue"),
            ("X-Remote-Extra-Bad%zz", "kept"),
            ("X-Other-Extra-Scopes", "other"),
            ("X-Remote-Extra-Empty", ""),
        ]);
        let user = take_user(&mut h, &names()).unwrap();
        let extra: Vec<(&str, Vec<&str>)> = user
            .extra
            .iter()
            .map(|(k, v)| (k.as_str(), v.iter().map(String::as_str).collect()))
            .collect();
        assert_eq!(
            extra,
            [
                ("bad%zz", vec!["kept"]),
                ("empty", vec![""]),
                ("example.com/team", vec!["blue"]),
                ("scopes", vec!["view", "edit", "other"]),
            ]
        );
        assert!(h.is_empty(), "{h:?}");
    }

    #[test]
    fn no_user_name_leaves_everything_in_place() {
        let mut h = headers(&[("X-Remote-Group", "devs"), ("X-Remote-Extra-A", "1")]);
        assert_eq!(take_user(&mut h, &names()), None);
        assert_eq!(h.len(), 2);
        let mut h = headers(&[("X-Remote-User", "alice")]);
        let user = take_user(&mut h, &HeaderNames::default());
        assert_eq!(user, None, "no user-name headers configured: nobody");
    }

    #[test]
    fn unescape_matches_go_path_unescape() {
        assert_eq!(unescape_key("a%2fb"), "a/b");
        assert_eq!(unescape_key("a%2Fb%20c"), "a/b c");
        assert_eq!(unescape_key("plain+key"), "plain+key");
        assert_eq!(unescape_key("trailing%2"), "trailing%2");
        assert_eq!(unescape_key("bad%g1%41"), "bad%g1%41");
    }

    /// A CA: its issuer and its certificate (DER).
    fn ca(
        cn: &str,
    ) -> (
        rcgen::Issuer<'static, rcgen::KeyPair>,
        CertificateDer<'static>,
    ) {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, cn);
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let der = params.self_signed(&key).unwrap().der().clone();
        (rcgen::Issuer::new(params, key), der)
    }

    /// A client certificate issued by `issuer`, as a connection presents it.
    fn client(issuer: &rcgen::Issuer<'_, rcgen::KeyPair>, cn: &str) -> PeerCertificates {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, cn);
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
        let cert = params.signed_by(&key, issuer).unwrap();
        PeerCertificates::new(vec![cert.der().clone()])
    }

    fn verifier(ca: &CertificateDer<'static>) -> Arc<dyn ClientCertVerifier> {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(ca.clone()).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
            .unwrap()
    }

    #[test]
    fn only_allowed_front_proxies_of_the_request_header_ca_name_users() {
        let (front_proxy_ca, front_proxy_ca_der) = ca("front-proxy-ca");
        let (client_ca, _) = ca("client-ca");
        let allowed = vec!["front-proxy-client".to_string()];
        let authn =
            RequestHeaderAuthenticator::new(verifier(&front_proxy_ca_der), allowed, names());
        let proxy = client(&front_proxy_ca, "front-proxy-client");
        let alice = || headers(&[("X-Remote-User", "alice"), ("X-Remote-Group", "devs")]);

        let mut h = alice();
        let user = authn.authenticate(&mut h, &proxy).unwrap().unwrap();
        assert_eq!(
            (user.name.as_str(), user.groups.as_slice()),
            ("alice", &["devs".to_string()][..])
        );
        assert!(h.is_empty());
        // Cached: the same chain again, same answer.
        let mut h = alice();
        assert!(authn.authenticate(&mut h, &proxy).unwrap().is_some());

        // A user's certificate from another CA is no front proxy: headers ignored, kept.
        let mut h = alice();
        let user_cert = client(&client_ca, "front-proxy-client");
        assert!(authn.authenticate(&mut h, &user_cert).unwrap().is_none());
        assert_eq!(h.len(), 2);
        for _ in 0..2 {
            assert!(
                authn.authenticate(&mut h, &user_cert).unwrap().is_none(),
                "cached too"
            );
        }

        // Signed by the request-header CA, but a name that is not allowed.
        let other = client(&front_proxy_ca, "other");
        let err = authn.authenticate(&mut alice(), &other).unwrap_err();
        assert_eq!(
            err.to_string(),
            "x509: subject with cn=other is not in the allowed list"
        );

        // No user-name header: not authenticated here, nothing removed.
        let mut h = headers(&[("X-Remote-Group", "devs")]);
        assert!(authn.authenticate(&mut h, &proxy).unwrap().is_none());
        assert_eq!(h.len(), 1);
    }

    #[test]
    fn allowed_names_empty_means_any() {
        assert!(allowed(&[], "anyone"));
        let names = vec!["front-proxy-client".to_string()];
        assert!(allowed(&names, "front-proxy-client"));
        assert!(!allowed(&names, "Front-Proxy-Client"));
        assert!(!allowed(&names, ""));
    }
}
