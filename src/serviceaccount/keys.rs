//! Service-account signing and verification keys: ECDSA P-256 (what kapi generates) or RSA
//! (what kubeadm generates), from PEM. Each public key has upstream's key ID (keyIDFromPublicKey:
//! the unpadded base64url SHA-256 of its SubjectPublicKeyInfo DER) and a JWK, so any JWT
//! library can verify the tokens from /openid/v1/jwks.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey};
use ring::signature::{EcdsaKeyPair, RsaKeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use rustls::pki_types::PrivateKeyDer;
use serde_json::{json, Value};
use sha2::Digest;

/// Why a key could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum KeyError {
    /// No PEM block kapi can use.
    #[error("no ECDSA P-256 or RSA key in PEM form (PKCS#8, PKCS#1 or PUBLIC KEY)")]
    NoKey,
    /// A PEM block that does not decode as the key it claims to be.
    #[error("the key does not decode: {0}")]
    Invalid(String),
}

/// A public key tokens are verified with.
#[derive(Clone)]
pub(crate) struct PublicKey {
    /// Upstream's key ID.
    pub kid: String,
    /// ES256 or RS256.
    pub alg: Algorithm,
    /// What jsonwebtoken verifies with.
    pub decoding: DecodingKey,
    /// The JWK served at /openid/v1/jwks.
    pub jwk: Value,
}

impl std::fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PublicKey")
            .field("kid", &self.kid)
            .field("alg", &self.alg)
            .finish()
    }
}

/// The private key tokens are signed with, and its public half.
#[derive(Clone)]
pub(crate) struct SigningKey {
    /// What jsonwebtoken signs with. Never log it.
    pub encoding: EncodingKey,
    /// The public half.
    pub public: PublicKey,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey")
            .field("public", &self.public)
            .finish_non_exhaustive()
    }
}

/// The SubjectPublicKeyInfo DER of an EC P-256 point (uncompressed, 65 bytes).
fn ec_spki(point: &[u8]) -> Vec<u8> {
    use simple_asn1::{oid, to_der, ASN1Block};
    let algorithm = ASN1Block::Sequence(
        0,
        vec![
            ASN1Block::ObjectIdentifier(0, oid!(1, 2, 840, 10045, 2, 1)),
            ASN1Block::ObjectIdentifier(0, oid!(1, 2, 840, 10045, 3, 1, 7)),
        ],
    );
    let spki = ASN1Block::Sequence(
        0,
        vec![
            algorithm,
            ASN1Block::BitString(0, point.len() * 8, point.to_vec()),
        ],
    );
    to_der(&spki).unwrap_or_default()
}

/// The SubjectPublicKeyInfo DER of an RSAPublicKey DER.
fn rsa_spki(rsa_public_key: &[u8]) -> Vec<u8> {
    use simple_asn1::{oid, to_der, ASN1Block};
    let algorithm = ASN1Block::Sequence(
        0,
        vec![
            ASN1Block::ObjectIdentifier(0, oid!(1, 2, 840, 113549, 1, 1, 1)),
            ASN1Block::Null(0),
        ],
    );
    let spki = ASN1Block::Sequence(
        0,
        vec![
            algorithm,
            ASN1Block::BitString(0, rsa_public_key.len() * 8, rsa_public_key.to_vec()),
        ],
    );
    to_der(&spki).unwrap_or_default()
}

fn kid(spki: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(spki))
}

fn ec_public(point: &[u8]) -> Result<PublicKey, KeyError> {
    if point.len() != 65 || point[0] != 4 {
        return Err(KeyError::Invalid("not an uncompressed P-256 point".into()));
    }
    let spki = ec_spki(point);
    let kid = kid(&spki);
    let (x, y) = (
        URL_SAFE_NO_PAD.encode(&point[1..33]),
        URL_SAFE_NO_PAD.encode(&point[33..]),
    );
    Ok(PublicKey {
        jwk: json!({"use": "sig", "kty": "EC", "kid": kid, "crv": "P-256", "alg": "ES256", "x": x, "y": y}),
        decoding: DecodingKey::from_ec_components(
            &URL_SAFE_NO_PAD.encode(&point[1..33]),
            &URL_SAFE_NO_PAD.encode(&point[33..]),
        )
        .map_err(|e| KeyError::Invalid(e.to_string()))?,
        alg: Algorithm::ES256,
        kid,
    })
}

fn rsa_public(n: &[u8], e: &[u8], rsa_public_key_der: &[u8]) -> Result<PublicKey, KeyError> {
    let kid = kid(&rsa_spki(rsa_public_key_der));
    let (n, e) = (URL_SAFE_NO_PAD.encode(n), URL_SAFE_NO_PAD.encode(e));
    Ok(PublicKey {
        decoding: DecodingKey::from_rsa_components(&n, &e)
            .map_err(|err| KeyError::Invalid(err.to_string()))?,
        jwk: json!({"use": "sig", "kty": "RSA", "kid": kid, "alg": "RS256", "n": n, "e": e}),
        alg: Algorithm::RS256,
        kid,
    })
}

fn rsa_signing(pair: &RsaKeyPair, encoding: EncodingKey) -> Result<SigningKey, KeyError> {
    let parts: ring::rsa::PublicKeyComponents<Vec<u8>> = pair.public().into();
    Ok(SigningKey {
        encoding,
        public: rsa_public(&parts.n, &parts.e, pair.public().as_ref())?,
    })
}

impl SigningKey {
    /// The first private key of a PEM file: ECDSA P-256 (PKCS#8) or RSA (PKCS#8 or PKCS#1).
    pub(crate) fn from_pem(pem: &[u8]) -> Result<SigningKey, KeyError> {
        let key = rustls_pemfile::private_key(&mut &pem[..])
            .map_err(|e| KeyError::Invalid(e.to_string()))?
            .ok_or(KeyError::NoKey)?;
        let invalid = |e: &dyn std::fmt::Display| KeyError::Invalid(e.to_string());
        match key {
            PrivateKeyDer::Pkcs8(der) => {
                let der = der.secret_pkcs8_der();
                let rng = ring::rand::SystemRandom::new();
                if let Ok(pair) =
                    EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, der, &rng)
                {
                    use ring::signature::KeyPair as _;
                    return Ok(SigningKey {
                        encoding: EncodingKey::from_ec_der(der),
                        public: ec_public(pair.public_key().as_ref())?,
                    });
                }
                let pair = RsaKeyPair::from_pkcs8(der).map_err(|e| invalid(&e))?;
                rsa_signing(&pair, EncodingKey::from_rsa_der(der))
            }
            PrivateKeyDer::Pkcs1(der) => {
                let der = der.secret_pkcs1_der();
                let pair = RsaKeyPair::from_der(der).map_err(|e| invalid(&e))?;
                rsa_signing(&pair, EncodingKey::from_rsa_der(der))
            }
            _ => Err(KeyError::NoKey),
        }
    }

    /// A new ECDSA P-256 key, and its PKCS#8 PEM to keep.
    pub(crate) fn generate() -> Result<(SigningKey, String), KeyError> {
        let pair = rcgen::KeyPair::generate().map_err(|e| KeyError::Invalid(e.to_string()))?;
        let pem = pair.serialize_pem();
        Ok((SigningKey::from_pem(pem.as_bytes())?, pem))
    }
}

/// Every public key of a PEM file (`--service-account-key-file`): PUBLIC KEY blocks, and the
/// public halves of private keys.
pub(crate) fn public_keys_from_pem(pem: &[u8]) -> Result<Vec<PublicKey>, KeyError> {
    let mut out = Vec::new();
    for item in rustls_pemfile::read_all(&mut &pem[..]) {
        let item = item.map_err(|e| KeyError::Invalid(e.to_string()))?;
        match item {
            rustls_pemfile::Item::SubjectPublicKeyInfo(spki) => out.push(from_spki(spki.as_ref())?),
            rustls_pemfile::Item::Pkcs8Key(_) | rustls_pemfile::Item::Pkcs1Key(_) => {}
            _ => {}
        }
    }
    if let Ok(signing) = SigningKey::from_pem(pem) {
        out.push(signing.public);
    }
    if out.is_empty() {
        return Err(KeyError::NoKey);
    }
    Ok(out)
}

/// A public key from its SubjectPublicKeyInfo DER.
fn from_spki(der: &[u8]) -> Result<PublicKey, KeyError> {
    use x509_parser::prelude::FromDer as _;
    use x509_parser::public_key::PublicKey as Parsed;
    let (_, spki) = x509_parser::x509::SubjectPublicKeyInfo::from_der(der)
        .map_err(|e| KeyError::Invalid(e.to_string()))?;
    match spki
        .parsed()
        .map_err(|e| KeyError::Invalid(e.to_string()))?
    {
        Parsed::EC(point) => ec_public(point.data()),
        Parsed::RSA(rsa) => rsa_public(
            rsa.modulus.strip_prefix(&[0]).unwrap_or(rsa.modulus),
            rsa.exponent,
            &spki.subject_public_key.data,
        ),
        _ => Err(KeyError::NoKey),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_keys_have_upstreams_key_id_and_a_usable_jwk() {
        let (key, pem) = SigningKey::generate().unwrap();
        assert!(pem.starts_with("-----BEGIN PRIVATE KEY-----"));
        let again = SigningKey::from_pem(pem.as_bytes()).unwrap();
        assert_eq!(key.public.kid, again.public.kid);
        // The key ID hashes the SubjectPublicKeyInfo rcgen derives for the same key.
        let pair = rcgen::KeyPair::from_pem(&pem).unwrap();
        use rcgen::PublicKeyData as _;
        assert_eq!(key.public.kid, kid(&pair.subject_public_key_info()));
        assert_eq!(key.public.jwk["kty"], "EC");
        assert_eq!(key.public.jwk["alg"], "ES256");
        // A PUBLIC KEY block of the same key gives the same key.
        let public_pem = pair.public_key_pem();
        let publics = public_keys_from_pem(public_pem.as_bytes()).unwrap();
        assert_eq!(publics.len(), 1);
        assert_eq!(publics[0].kid, key.public.kid);
        assert_eq!(publics[0].jwk, key.public.jwk);
    }

    #[test]
    fn kubeadm_style_rsa_keys_sign_and_their_public_keys_verify() {
        // A throwaway key made for this test (`openssl genrsa -traditional 2048`).
        let key = SigningKey::from_pem(include_bytes!("testdata/rsa-pkcs1.pem")).unwrap();
        assert_eq!(key.public.alg, Algorithm::RS256);
        assert_eq!(key.public.jwk["kty"], "RSA");
        assert_eq!(key.public.jwk["e"], "AQAB");
        let public = public_keys_from_pem(include_bytes!("testdata/rsa-public.pem")).unwrap();
        assert_eq!(public[0].kid, key.public.kid);
        assert_eq!(public[0].jwk, key.public.jwk);
    }

    #[test]
    fn bad_key_files_say_why() {
        assert!(matches!(
            SigningKey::from_pem(b"not a key"),
            Err(KeyError::NoKey)
        ));
        assert!(public_keys_from_pem(b"").is_err());
    }
}
