//! Stream sequence numbers.
//!
//! DynamoDB Streams sequence numbers are decimal strings of up to 40 digits (21 to 40 seen).
//! String order is not numeric order across lengths ("9" > "10"), so they are compared as
//! numbers: leading zeros dropped, then shorter is smaller, then digit by digit. The aggregator
//! compares one per record, borrowed from the event ([`Seq`]): no allocation, no padding.
//!
//! Stored in a Counts item (a bucket's high-water mark), a sequence number is a [`SeqKey`]:
//! 23 characters of a 64-letter alphabet in ASCII order, fixed width, so that DynamoDB's
//! byte-wise string order — and the emulator's — is numeric order. 23 characters instead of 40
//! zero-padded digits keep a post's item, 16 marks and all, under one 1 KB write unit. (A binary
//! attribute would be shorter still, but the emulator compares binary values by their base64
//! text, which is not byte order.)

use std::cmp::Ordering;
use std::fmt;

pub const MAX_DIGITS: usize = 40;

/// Width of a [`SeqKey`]: 23 × 6 = 138 bits ≥ log2(10^40) ≈ 132.9.
pub const KEY_WIDTH: usize = 23;

/// The key alphabet, in ASCII order.
const ALPHABET: &[u8; 64] = b"-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("sequence number {0:?} is not 1 to 40 decimal digits")]
pub struct BadSeqNo(pub String);

fn bad(raw: &str) -> BadSeqNo {
    BadSeqNo(raw.chars().take(64).collect())
}

/// A sequence number borrowed from where it was received, compared as a number.
#[derive(Debug, Clone, Copy)]
pub struct Seq<'a> {
    raw: &'a str,
    /// `raw` without leading zeros (`"0"` stays `"0"`).
    digits: &'a str,
}

impl<'a> Seq<'a> {
    pub fn parse(raw: &'a str) -> Result<Self, BadSeqNo> {
        if raw.is_empty() || raw.len() > MAX_DIGITS || !raw.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad(raw));
        }
        let trimmed = raw.trim_start_matches('0');
        let digits = if trimmed.is_empty() { "0" } else { trimmed };
        Ok(Self { raw, digits })
    }

    /// As received: what Lambda's `batchItemFailures` must name.
    pub fn raw(&self) -> &'a str {
        self.raw
    }

    pub fn key(&self) -> SeqKey {
        SeqKey::from_digits(self.digits)
    }

    pub fn to_owned(&self) -> SeqNo {
        SeqNo(self.raw.to_owned())
    }
}

impl Ord for Seq<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.digits
            .len()
            .cmp(&other.digits.len())
            .then_with(|| self.digits.cmp(other.digits))
    }
}

impl PartialOrd for Seq<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Seq<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Seq<'_> {}

/// An owned sequence number (its decimal spelling), for reports and stored marks.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SeqNo(String);

impl SeqNo {
    pub fn parse(raw: &str) -> Result<Self, BadSeqNo> {
        Seq::parse(raw).map(|s| s.to_owned())
    }

    pub fn as_seq(&self) -> Seq<'_> {
        // Checked when built.
        Seq::parse(&self.0).unwrap_or(Seq {
            raw: &self.0,
            digits: &self.0,
        })
    }

    pub fn raw(&self) -> &str {
        &self.0
    }
}

impl Ord for SeqNo {
    fn cmp(&self, other: &Self) -> Ordering {
        self.as_seq().cmp(&other.as_seq())
    }
}

impl PartialOrd for SeqNo {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for SeqNo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The stored, order-preserving spelling of a sequence number (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SeqKey([u8; KEY_WIDTH]);

/// 192 bits, little-endian limbs: room for 10^40 and for 64^23.
type Wide = [u64; 3];

fn mul_add(n: &mut Wide, m: u64, add: u64) {
    let mut carry = u128::from(add);
    for limb in n.iter_mut() {
        let v = u128::from(*limb) * u128::from(m) + carry;
        *limb = v as u64;
        carry = v >> 64;
    }
}

/// Divides in place; returns the remainder.
fn div_rem(n: &mut Wide, d: u64) -> u64 {
    let mut rem = 0u128;
    for limb in n.iter_mut().rev() {
        let cur = (rem << 64) | u128::from(*limb);
        *limb = (cur / u128::from(d)) as u64;
        rem = cur % u128::from(d);
    }
    rem as u64
}

impl SeqKey {
    fn from_digits(digits: &str) -> Self {
        let mut n: Wide = [0; 3];
        for d in digits.bytes() {
            mul_add(&mut n, 10, u64::from(d - b'0'));
        }
        let mut out = [ALPHABET[0]; KEY_WIDTH];
        for slot in out.iter_mut().rev() {
            *slot = ALPHABET[div_rem(&mut n, 64) as usize];
        }
        Self(out)
    }

    /// Parses a stored key.
    pub fn parse(raw: &str) -> Result<Self, BadSeqNo> {
        let bytes: [u8; KEY_WIDTH] = raw.as_bytes().try_into().map_err(|_| bad(raw))?;
        if !bytes.iter().all(|b| ALPHABET.contains(b)) {
            return Err(bad(raw));
        }
        let key = Self(bytes);
        // Only keys of at most 40 digits are ever written.
        if key.to_decimal().len() > MAX_DIGITS {
            return Err(bad(raw));
        }
        Ok(key)
    }

    pub fn as_str(&self) -> &str {
        // The alphabet is ASCII.
        std::str::from_utf8(&self.0).unwrap_or("")
    }

    pub fn to_decimal(&self) -> String {
        let mut n: Wide = [0; 3];
        for b in self.0 {
            let v = ALPHABET.iter().position(|a| *a == b).unwrap_or(0) as u64;
            mul_add(&mut n, 64, v);
        }
        let mut digits = Vec::new();
        loop {
            digits.push(b'0' + div_rem(&mut n, 10) as u8);
            if n == [0; 3] {
                break;
            }
        }
        digits.reverse();
        String::from_utf8(digits).unwrap_or_default()
    }

    pub fn to_seq_no(&self) -> SeqNo {
        SeqNo(self.to_decimal())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn numeric_order_across_lengths() {
        let short = "9".repeat(21);
        let long = format!("1{}", "0".repeat(39));
        let (a, b) = (Seq::parse(&short).unwrap(), Seq::parse(&long).unwrap());
        assert!(short > long, "raw strings compare the wrong way");
        assert!(a < b);
        assert!(a.key() < b.key());
        assert!(
            a.key().as_str() < b.key().as_str(),
            "stored strings keep the order"
        );
        assert_eq!(Seq::parse("007").unwrap(), Seq::parse("7").unwrap());
        assert_eq!(Seq::parse("007").unwrap().raw(), "007");
    }

    #[test]
    fn forty_digits_is_the_maximum() {
        assert!(Seq::parse(&"9".repeat(40)).is_ok());
        assert!(Seq::parse(&"9".repeat(41)).is_err());
        assert!(Seq::parse("").is_err());
        assert!(Seq::parse("12a").is_err());
        assert!(Seq::parse("-1").is_err());
        assert_eq!(
            Seq::parse(&"9".repeat(40)).unwrap().key().as_str().len(),
            KEY_WIDTH
        );
    }

    #[test]
    fn keys_are_fixed_and_known() {
        // Golden: the stored form is persistent.
        assert_eq!(SeqKey::from_digits("0").as_str(), "-----------------------");
        assert_eq!(
            SeqKey::from_digits("64").as_str(),
            "---------------------0-"
        );
        assert_eq!(
            Seq::parse("100000000000000000001")
                .unwrap()
                .key()
                .to_decimal(),
            "100000000000000000001"
        );
        assert!(SeqKey::parse("short").is_err());
        assert!(
            SeqKey::parse(&"z".repeat(KEY_WIDTH)).is_err(),
            "above 40 digits"
        );
    }

    proptest! {
        #[test]
        fn order_and_round_trip(a in "[0-9]{1,40}", b in "[0-9]{1,40}") {
            let (x, y) = (Seq::parse(&a).unwrap(), Seq::parse(&b).unwrap());
            let numeric = |s: &str| (s.trim_start_matches('0').len(), s.trim_start_matches('0').to_owned());
            prop_assert_eq!(x.cmp(&y), numeric(&a).cmp(&numeric(&b)));
            prop_assert_eq!(x.key().as_str().cmp(y.key().as_str()), x.cmp(&y));
            let back = SeqKey::parse(x.key().as_str()).unwrap().to_seq_no();
            prop_assert_eq!(back.as_seq(), x);
        }
    }
}
