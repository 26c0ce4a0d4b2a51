//! The issuer's JWK set, reduced to the keys a token may be verified with: RS256 (RSA) and ES256
//! (EC on P-256) keys with a `kid`, meant for signatures. Parsed once per fetch, so a request
//! only looks a key up.

use jsonwebtoken::jwk::{
    AlgorithmParameters, EllipticCurve, Jwk, KeyAlgorithm, KeyOperations, PublicKeyUse,
};
use jsonwebtoken::{Algorithm, DecodingKey};
use serde::Deserialize;

use crate::error::AuthError;

/// One key a token may name.
struct Key {
    kid: String,
    /// The one algorithm this key verifies: a key is bound to its type (and its `alg`, when the
    /// set says), so a token cannot choose how its key is used.
    alg: Algorithm,
    decoding: DecodingKey,
}

/// The usable keys of a JWK set.
#[derive(Default)]
pub struct KeySet {
    keys: Vec<Key>,
    /// Keys in the document that cannot verify an accepted token (other types, curves or
    /// algorithms, encryption keys, no `kid`, unreadable).
    skipped: usize,
}

impl std::fmt::Debug for KeySet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kids: Vec<(&str, Algorithm)> =
            self.keys.iter().map(|k| (k.kid.as_str(), k.alg)).collect();
        f.debug_struct("KeySet")
            .field("keys", &kids)
            .field("skipped", &self.skipped)
            .finish()
    }
}

/// The document is not a JWK set at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a JWK set ({0})")]
pub struct KeySetError(String);

/// Keys are read one by one: an issuer may publish key types this crate does not know (or
/// jsonwebtoken cannot parse), and one such key must not make the whole set unusable.
#[derive(Deserialize)]
struct Document {
    keys: Vec<serde_json::Value>,
}

impl KeySet {
    /// Parses a JWK set document (`{"keys": [...]}`), keeping the usable keys.
    pub fn parse(json: &[u8]) -> Result<Self, KeySetError> {
        let document: Document =
            serde_json::from_slice(json).map_err(|e| KeySetError(e.to_string()))?;
        let mut set = KeySet::default();
        for value in document.keys {
            match serde_json::from_value::<Jwk>(value)
                .ok()
                .and_then(|jwk| usable(&jwk))
            {
                Some(key) => set.keys.push(key),
                None => set.skipped += 1,
            }
        }
        Ok(set)
    }

    /// How many keys a token may name.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// How many keys of the document were left out as unusable.
    pub fn skipped(&self) -> usize {
        self.skipped
    }

    pub(crate) fn contains(&self, kid: &str) -> bool {
        self.keys.iter().any(|k| k.kid == kid)
    }

    /// The key `kid` for `alg`: [`AuthError::UnknownKey`] if no key has that id,
    /// [`AuthError::KeyMismatch`] if one has but verifies another algorithm.
    pub(crate) fn find(&self, kid: &str, alg: Algorithm) -> Result<&DecodingKey, AuthError> {
        let mut named = self.keys.iter().filter(|k| k.kid == kid).peekable();
        if named.peek().is_none() {
            return Err(AuthError::UnknownKey);
        }
        named
            .find(|k| k.alg == alg)
            .map(|k| &k.decoding)
            .ok_or(AuthError::KeyMismatch)
    }
}

/// The key, if it can verify an accepted token.
fn usable(jwk: &Jwk) -> Option<Key> {
    let kid = jwk.common.key_id.clone()?;
    // A key published for encryption (or anything but signatures) never verifies a token.
    if matches!(&jwk.common.public_key_use, Some(u) if *u != PublicKeyUse::Signature) {
        return None;
    }
    if matches!(&jwk.common.key_operations, Some(ops) if !ops.contains(&KeyOperations::Verify)) {
        return None;
    }
    // The key's type decides its algorithm; symmetric (`oct`) and Ed25519 keys are never used.
    let alg = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => Algorithm::RS256,
        AlgorithmParameters::EllipticCurve(p) if p.curve == EllipticCurve::P256 => Algorithm::ES256,
        _ => return None,
    };
    // An `alg` on the key narrows it further: an RSA key marked PS256 or RS512 is not RS256's.
    match jwk.common.key_algorithm {
        None => {}
        Some(KeyAlgorithm::RS256) if alg == Algorithm::RS256 => {}
        Some(KeyAlgorithm::ES256) if alg == Algorithm::ES256 => {}
        Some(_) => return None,
    }
    let decoding = DecodingKey::from_jwk(jwk).ok()?;
    Some(Key { kid, alg, decoding })
}

#[cfg(test)]
mod tests {
    use super::*;

    use base64::Engine as _;

    /// A 2048-bit modulus (any bytes do: these tests never verify a signature).
    fn modulus() -> String {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode([0xC5u8; 256])
    }

    fn rsa(extra: serde_json::Value) -> serde_json::Value {
        let mut k = serde_json::json!({"kty": "RSA", "kid": "r1", "n": modulus(), "e": "AQAB"});
        if let (Some(k), Some(extra)) = (k.as_object_mut(), extra.as_object()) {
            k.extend(extra.clone());
        }
        k
    }

    fn parse(keys: Vec<serde_json::Value>) -> KeySet {
        KeySet::parse(serde_json::json!({ "keys": keys }).to_string().as_bytes()).unwrap()
    }

    #[test]
    fn keeps_rsa_signing_keys_and_skips_the_rest() {
        let set = parse(vec![
            rsa(serde_json::json!({})),
            rsa(serde_json::json!({"kid": "enc", "use": "enc"})),
            rsa(serde_json::json!({"kid": "ps", "alg": "PS256"})),
            rsa(serde_json::json!({"kid": "signing-only", "key_ops": ["sign"]})),
            serde_json::json!({"kty": "RSA", "n": modulus(), "e": "AQAB"}),
            serde_json::json!({"kty": "oct", "kid": "hmac", "k": "c2VjcmV0"}),
            serde_json::json!({"kty": "EC", "kid": "p384", "crv": "P-384", "x": "AA", "y": "AA"}),
            serde_json::json!({"kty": "weird", "kid": "w"}),
        ]);
        assert_eq!(set.len(), 1, "{set:?}");
        assert_eq!(set.skipped(), 7);
        assert!(set.find("r1", Algorithm::RS256).is_ok());
        assert_eq!(
            set.find("r1", Algorithm::ES256).err(),
            Some(AuthError::KeyMismatch)
        );
        assert_eq!(
            set.find("hmac", Algorithm::RS256).err(),
            Some(AuthError::UnknownKey)
        );
    }

    #[test]
    fn a_document_without_keys_is_not_a_set() {
        assert!(KeySet::parse(b"{}").is_err());
        assert!(KeySet::parse(b"<html>").is_err());
        assert!(KeySet::parse(br#"{"keys": []}"#).unwrap().is_empty());
    }
}
