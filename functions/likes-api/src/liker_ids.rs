//! How "who liked P" names its likers. `raw` (the default): their `sub`s, as the identity
//! provider issued them — for some providers a cross-service id or an email, shown to any
//! authenticated caller. `opaque`: `u_` and 22 characters of an HMAC-SHA256 of the `sub` under
//! a per-deployment secret: stable (the same person is the same id on every page and every
//! post) but not reversible without the secret, so a product that needs the person maps the
//! id itself (docs/limits.md says what this gives up).
//!
//! The likers cursor names the last liker shown, so in `opaque` mode it is sealed too
//! (AES-256-GCM under a key derived from the same secret); a raw one is refused.
//!
//! aws-lc-rs, already in every binary for TLS, provides both primitives.

use aws_lc_rs::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM, NONCE_LEN};
use aws_lc_rs::hmac;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use likes_core::UserId;

use crate::error::ApiError;

const ID_DOMAIN: &[u8] = b"likes-liker-id-v1\0";
const CURSOR_KEY_DOMAIN: &[u8] = b"likes-cursor-key-v1\0";
/// 22 base64url characters: 132 bits of the HMAC, beyond any collision among likers.
const ID_CHARS: usize = 22;

pub enum LikerIds {
    Raw,
    Opaque(Box<Opaque>),
}

pub struct Opaque {
    ids: hmac::Key,
    cursors: LessSafeKey,
}

impl LikerIds {
    /// Opaque ids under `secret` (`LIKES_LIKER_ID_KEY`); `None` if the crypto library refuses
    /// the derived key (it is 32 bytes, as AES-256 wants: it does not).
    pub fn opaque(secret: &[u8]) -> Option<Self> {
        let ids = hmac::Key::new(hmac::HMAC_SHA256, secret);
        let derived = hmac::sign(&ids, CURSOR_KEY_DOMAIN);
        let cursors = UnboundKey::new(&AES_256_GCM, derived.as_ref())
            .map(LessSafeKey::new)
            .ok()?;
        Some(Self::Opaque(Box::new(Opaque { ids, cursors })))
    }

    /// The id a listing shows for `user`.
    pub fn show(&self, user: &UserId) -> String {
        match self {
            LikerIds::Raw => user.as_str().to_owned(),
            LikerIds::Opaque(o) => {
                let mut input = ID_DOMAIN.to_vec();
                input.extend_from_slice(user.as_str().as_bytes());
                let tag = hmac::sign(&o.ids, &input);
                let text = URL_SAFE_NO_PAD.encode(tag.as_ref());
                format!("u_{}", &text[..ID_CHARS])
            }
        }
    }

    /// A likers cursor as the client sees it.
    pub fn seal(&self, cursor: String) -> String {
        let LikerIds::Opaque(o) = self else {
            return cursor;
        };
        let mut nonce = [0u8; NONCE_LEN];
        if aws_lc_rs::rand::fill(&mut nonce).is_err() {
            // No randomness: no cursor (the page is still right; the client cannot go on).
            return String::new();
        }
        let mut sealed = cursor.into_bytes();
        if o.cursors
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::empty(),
                &mut sealed,
            )
            .is_err()
        {
            return String::new();
        }
        let mut out = nonce.to_vec();
        out.extend_from_slice(&sealed);
        URL_SAFE_NO_PAD.encode(out)
    }

    /// The cursor a client sent, as [`crate::cursor`] reads it.
    pub fn open(&self, token: &str) -> Result<String, ApiError> {
        let LikerIds::Opaque(o) = self else {
            return Ok(token.to_owned());
        };
        let refused = || ApiError::bad_request("invalid_cursor", "cursor is not valid here");
        let bytes = URL_SAFE_NO_PAD
            .decode(token.as_bytes())
            .map_err(|_| refused())?;
        if bytes.len() < NONCE_LEN {
            return Err(refused());
        }
        let (nonce, sealed) = bytes.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| refused())?;
        let mut sealed = sealed.to_vec();
        let plain = o
            .cursors
            .open_in_place(nonce, Aad::empty(), &mut sealed)
            .map_err(|_| refused())?;
        String::from_utf8(plain.to_vec()).map_err(|_| refused())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"a-test-secret-of-thirty-two-bytes!!";

    #[test]
    fn opaque_ids_are_stable_keyed_and_say_nothing_of_the_sub() {
        let ids = LikerIds::opaque(SECRET).unwrap();
        let alice = UserId::parse("google-oauth2|1234567890").unwrap();
        let bob = UserId::parse("bob@example.com").unwrap();
        let shown = ids.show(&alice);
        assert_eq!(shown, ids.show(&alice), "stable");
        assert_eq!(shown.len(), 2 + ID_CHARS);
        assert!(
            UserId::parse(&shown).is_ok(),
            "inside the id grammar: {shown}"
        );
        assert!(!shown.contains("google") && !shown.contains("1234"));
        assert_ne!(shown, ids.show(&bob));
        assert_ne!(
            shown,
            LikerIds::opaque(b"another-secret-of-thirty-two-bytes!")
                .unwrap()
                .show(&alice),
            "another deployment, another id"
        );
        assert_eq!(LikerIds::Raw.show(&alice), "google-oauth2|1234567890");
    }

    #[test]
    fn sealed_cursors_open_and_nothing_else_does() {
        let ids = LikerIds::opaque(SECRET).unwrap();
        let cursor = "eyJrIjoicG9zdF9saWtlcyJ9".to_owned();
        let sealed = ids.seal(cursor.clone());
        assert_ne!(sealed, cursor);
        assert_ne!(sealed, ids.seal(cursor.clone()), "a fresh nonce each time");
        assert_eq!(ids.open(&sealed), Ok(cursor.clone()));
        let mut flipped = sealed.into_bytes();
        let last = flipped.len() - 3;
        flipped[last] = if flipped[last] == b'A' { b'B' } else { b'A' };
        let flipped = String::from_utf8(flipped).unwrap();
        assert_eq!(ids.open(&flipped).unwrap_err().status, 400);
        assert_eq!(ids.open(&cursor).unwrap_err().status, 400, "a raw cursor");
        assert_eq!(ids.open("").unwrap_err().status, 400);
        let other = LikerIds::opaque(b"another-secret-of-thirty-two-bytes!").unwrap();
        assert_eq!(other.open(&ids.seal(cursor)).unwrap_err().status, 400);
    }
}
