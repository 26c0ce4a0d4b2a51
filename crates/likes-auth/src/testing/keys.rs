//! Test key pairs and tokens.

use aws_lc_rs::encoding::AsDer;
use aws_lc_rs::rsa::{KeyPair as RsaKeyPair, KeySize};
use aws_lc_rs::signature::{EcdsaKeyPair, KeyPair as _, ECDSA_P256_SHA256_FIXED_SIGNING};
use base64::Engine as _;
use jsonwebtoken::jwk::{Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{json, Value};

/// A signing key pair with its `kid`.
pub struct TestKey {
    pub kid: String,
    pub alg: Algorithm,
    encoding: EncodingKey,
    /// The public key as SubjectPublicKeyInfo DER (what an attacker has, and may try as an
    /// HMAC secret).
    public_der: Vec<u8>,
}

impl TestKey {
    /// A fresh RSA-2048 key for RS256.
    pub fn rs256(kid: &str) -> Self {
        let pair = RsaKeyPair::generate(KeySize::Rsa2048).expect("RSA key generation");
        let pkcs8 = pair.as_der().expect("RSA key as PKCS#8");
        // jsonwebtoken signs RS256 with a PKCS#1 RSAPrivateKey; aws-lc-rs writes PKCS#8.
        let pkcs1 = pkcs1_from_pkcs8(pkcs8.as_ref()).expect("PKCS#8 holds a PKCS#1 key");
        let public = pair.public_key().as_der().expect("RSA public key as DER");
        Self {
            kid: kid.to_owned(),
            alg: Algorithm::RS256,
            encoding: EncodingKey::from_rsa_der(pkcs1),
            public_der: public.as_ref().to_vec(),
        }
    }

    /// A fresh P-256 key for ES256.
    pub fn es256(kid: &str) -> Self {
        let pair =
            EcdsaKeyPair::generate(&ECDSA_P256_SHA256_FIXED_SIGNING).expect("EC key generation");
        let pkcs8 = pair.to_pkcs8v1().expect("EC key as PKCS#8");
        let public = pair.public_key().as_der().expect("EC public key as DER");
        Self {
            kid: kid.to_owned(),
            alg: Algorithm::ES256,
            encoding: EncodingKey::from_ec_der(pkcs8.as_ref()),
            public_der: public.as_ref().to_vec(),
        }
    }

    /// The public key as the issuer publishes it (kid, alg, use: sig).
    pub fn jwk(&self) -> Value {
        let mut jwk = Jwk::from_encoding_key(&self.encoding, self.alg).expect("public JWK");
        jwk.common.key_id = Some(self.kid.clone());
        jwk.common.public_key_use = Some(PublicKeyUse::Signature);
        serde_json::to_value(jwk).expect("JWK as JSON")
    }

    /// The public key in PEM, the usual "secret" of the HS256 key-confusion forgery.
    pub fn public_pem(&self) -> String {
        let b64 = base64::engine::general_purpose::STANDARD.encode(&self.public_der);
        let lines: Vec<&str> = b64
            .as_bytes()
            .chunks(64)
            .map(|c| std::str::from_utf8(c).unwrap_or_default())
            .collect();
        format!(
            "-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----\n",
            lines.join("\n")
        )
    }

    /// `claims` signed with this key, the header naming its kid.
    pub fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(self.alg);
        header.kid = Some(self.kid.clone());
        self.sign_with(&header, claims)
    }

    /// `claims` signed with this key under any header (another kid, none, ...).
    pub fn sign_with(&self, header: &Header, claims: &Value) -> String {
        jsonwebtoken::encode(header, claims, &self.encoding).expect("signing")
    }
}

/// A JWK set document of these keys.
pub fn jwks(keys: &[&TestKey]) -> String {
    json!({ "keys": keys.iter().map(|k| k.jwk()).collect::<Vec<_>>() }).to_string()
}

/// Claims a verifier for `issuer` and `audience` accepts: `sub`, `exp` in five minutes, `iat`
/// now.
pub fn claims(issuer: &str, audience: &str, sub: &str) -> Value {
    let now = jsonwebtoken::get_current_timestamp();
    json!({ "iss": issuer, "aud": audience, "sub": sub, "iat": now, "exp": now + 300 })
}

/// A token with `header` and `claims` signed by HMAC (`alg` HS256, HS384 or HS512) with
/// `secret`: the forgery of a client who knows only public things.
pub fn token(alg: Algorithm, kid: &str, secret: &[u8], claims: &Value) -> String {
    let mut header = Header::new(alg);
    header.kid = Some(kid.to_owned());
    jsonwebtoken::encode(&header, claims, &EncodingKey::from_secret(secret)).expect("HMAC signing")
}

/// An unsigned token (`alg: none`, empty signature) with `kid`.
pub fn unsigned(kid: &str, claims: &Value) -> String {
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let header = json!({ "alg": "none", "typ": "JWT", "kid": kid });
    format!(
        "{}.{}.",
        b64.encode(header.to_string()),
        b64.encode(claims.to_string())
    )
}

/// The RSAPrivateKey inside a PKCS#8 PrivateKeyInfo:
/// SEQUENCE { INTEGER version, SEQUENCE algorithm, OCTET STRING privateKey, ... }.
fn pkcs1_from_pkcs8(der: &[u8]) -> Option<&[u8]> {
    let (0x30, info, _) = tlv(der)? else {
        return None;
    };
    let (0x02, _, rest) = tlv(info)? else {
        return None;
    };
    let (0x30, _, rest) = tlv(rest)? else {
        return None;
    };
    let (0x04, key, _) = tlv(rest)? else {
        return None;
    };
    Some(key)
}

/// One DER element: (tag, contents, what follows).
fn tlv(der: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = der.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 {
            return None;
        }
        let (bytes, rest) = rest.split_at_checked(n)?;
        let len = bytes
            .iter()
            .fold(0usize, |acc, &b| (acc << 8) | usize::from(b));
        (len, rest)
    };
    let (contents, rest) = rest.split_at_checked(len)?;
    Some((tag, contents, rest))
}
