//! Stream sequence numbers.
//!
//! DynamoDB Streams sequence numbers are decimal strings of 21 to 40 digits. String order is not
//! numeric order across lengths ("9" > "10"), so every stored or compared sequence number is
//! left-padded with zeros to 40 digits first. The original string is kept too: Lambda's
//! `batchItemFailures` must name the record exactly as it was received.

use std::cmp::Ordering;
use std::fmt;

pub const SEQ_WIDTH: usize = 40;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SeqNo {
    raw: String,
    padded: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("sequence number {0:?} is not 1 to 40 decimal digits")]
pub struct BadSeqNo(pub String);

impl SeqNo {
    pub fn parse(raw: &str) -> Result<Self, BadSeqNo> {
        if raw.is_empty() || raw.len() > SEQ_WIDTH || !raw.bytes().all(|b| b.is_ascii_digit()) {
            return Err(BadSeqNo(raw.chars().take(64).collect()));
        }
        Ok(Self {
            raw: raw.to_owned(),
            padded: format!("{raw:0>width$}", width = SEQ_WIDTH),
        })
    }

    /// Parses the 40-digit stored form (a Counts row's `hwm`).
    pub fn from_padded(padded: &str) -> Result<Self, BadSeqNo> {
        if padded.len() != SEQ_WIDTH {
            return Err(BadSeqNo(padded.chars().take(64).collect()));
        }
        let trimmed = padded.trim_start_matches('0');
        Self::parse(if trimmed.is_empty() { "0" } else { trimmed })
    }

    /// As received from the stream.
    pub fn raw(&self) -> &str {
        &self.raw
    }

    /// Zero-padded to 40 digits: string order equals numeric order.
    pub fn padded(&self) -> &str {
        &self.padded
    }
}

impl Ord for SeqNo {
    fn cmp(&self, other: &Self) -> Ordering {
        self.padded.cmp(&other.padded)
    }
}

impl PartialOrd for SeqNo {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for SeqNo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.raw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_order_across_lengths() {
        let short = SeqNo::parse(&"9".repeat(21)).unwrap();
        let long = SeqNo::parse(&format!("1{}", "0".repeat(39))).unwrap();
        assert!(
            short.raw() > long.raw(),
            "raw strings compare the wrong way"
        );
        assert!(short < long);
        assert_eq!(long.padded().len(), 40);
        assert_eq!(short.padded().len(), 40);
        assert_eq!(short.raw(), "9".repeat(21));
    }

    #[test]
    fn forty_digits_is_the_maximum() {
        assert!(SeqNo::parse(&"9".repeat(40)).is_ok());
        assert!(SeqNo::parse(&"9".repeat(41)).is_err());
        assert!(SeqNo::parse("").is_err());
        assert!(SeqNo::parse("12a").is_err());
        assert!(SeqNo::parse("-1").is_err());
    }

    #[test]
    fn padded_round_trip() {
        for raw in ["1", "100000000017454423009", &"7".repeat(40)] {
            let s = SeqNo::parse(raw).unwrap();
            assert_eq!(SeqNo::from_padded(s.padded()).unwrap(), s);
        }
        assert!(SeqNo::from_padded("123").is_err());
    }
}
