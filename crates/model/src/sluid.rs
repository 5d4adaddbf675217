//! Slurm's SLUID ("Slurm Lexicographically-sortable Unique ID", Slurm 26.05):
//! a job's second key, as `squeue -O Sluid`, `sprio -o %s`, `sacct -o SLUID,
//! OriginalSLUID` and `scontrol show job -d` print it. [`Sluid`] owns its
//! reading (case-insensitive Crockford base 32, as Slurm's `str2sluid`) and
//! its canonical form (as Slurm's `print_sluid`); [`SluidError`] says why a
//! text is not one.
//!
//! A SLUID is `s` and 13 characters of `0123456789ABCDEFGHJKMNPQRSTVWXYZ`,
//! most significant first, encoding 64 bits: the cluster id (12 bits) << 52,
//! the milliseconds since the Unix epoch (42 bits) << 10, a sequence number
//! (10 bits). 13 characters hold 65 bits, so the first one is at most `F`.
//! On input lower case is read as upper case, `O` as `0`, `I` and `L` as `1`.
//! Slurm's value 0 means "no SLUID" (a job from before 26.05): its text
//! `s0000000000000` is not a key ([`Sluid::parse_printed`] reads it as none).

use std::fmt;
use std::num::NonZeroU64;
use std::str::FromStr;

/// Crockford's base-32 alphabet, as Slurm writes it (`cb32map`).
const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
/// Characters after the leading `s`.
const DIGITS: usize = 13;

/// A SLUID: a job's unique key on a Slurm 26.05 cluster (never 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Sluid(NonZeroU64);

/// Why a text is not a SLUID.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SluidError {
    /// Not 14 characters.
    #[error("a SLUID is `s` and 13 base-32 characters (14 in all), not {chars} characters")]
    Length {
        /// How many characters the text has.
        chars: usize,
    },
    /// The first character is not `s` or `S`.
    #[error("a SLUID starts with `s`, not `{found}`")]
    Prefix {
        /// The first character.
        found: char,
    },
    /// A character outside Crockford's base 32.
    #[error("character {position} of a SLUID, `{found}`, is not one of Crockford's base 32 (0-9 and A-Z without U; O, I and L read as 0, 1, 1)")]
    Character {
        /// Its position, 1 the leading `s`.
        position: usize,
        /// The character.
        found: char,
    },
    /// The first base-32 character is above `F`: more than 64 bits.
    #[error("a SLUID holds 64 bits: its second character is at most `F`, not `{found}`")]
    TooLarge {
        /// The character.
        found: char,
    },
    /// `s0000000000000`: Slurm's "no SLUID".
    #[error("s0000000000000 is Slurm's \"no SLUID\" (0), not a job's key")]
    Zero,
}

/// The value of one base-32 character as Slurm reads it (`str2sluid`).
fn digit_value(c: u8) -> Option<u64> {
    let upper = c.to_ascii_uppercase();
    match upper {
        b'O' => Some(0),
        b'I' | b'L' => Some(1),
        _ => ALPHABET.iter().position(|&a| a == upper).map(|v| v as u64),
    }
}

impl Sluid {
    /// The SLUID of a 64-bit value (`None` for 0, Slurm's "no SLUID").
    pub fn from_bits(bits: u64) -> Option<Sluid> {
        NonZeroU64::new(bits).map(Sluid)
    }

    /// The SLUID of `cluster` (12 bits), `millis` (42 bits) and `sequence`
    /// (10 bits), as slurmctld's `generate_sluid` composes it (`None` when a
    /// part does not fit or all are 0).
    pub fn from_parts(cluster: u16, millis: u64, sequence: u16) -> Option<Sluid> {
        if cluster >= 1 << 12 || millis >= 1 << 42 || sequence >= 1 << 10 {
            return None;
        }
        Sluid::from_bits(u64::from(cluster) << 52 | millis << 10 | u64::from(sequence))
    }

    /// The 64 bits.
    pub fn bits(self) -> u64 {
        self.0.get()
    }

    /// The cluster id (Slurm's are 2 to 4095).
    pub fn cluster(self) -> u16 {
        (self.bits() >> 52) as u16
    }

    /// When it was made: milliseconds since the Unix epoch.
    pub fn millis(self) -> u64 {
        (self.bits() >> 10) & ((1 << 42) - 1)
    }

    /// The sequence number within its millisecond.
    pub fn sequence(self) -> u16 {
        (self.bits() & 0x3ff) as u16
    }

    /// Read a SLUID: exactly `s` and 13 base-32 characters, neither empty
    /// nor 0 (the same as `str::parse`).
    pub fn parse(text: &str) -> Result<Sluid, SluidError> {
        let bytes = text.as_bytes();
        let chars = text.chars().count();
        if chars != DIGITS + 1 || bytes.len() != DIGITS + 1 {
            return Err(SluidError::Length { chars });
        }
        if !matches!(bytes[0], b's' | b'S') {
            let found = text.chars().next().unwrap_or(' ');
            return Err(SluidError::Prefix { found });
        }
        let mut bits: u64 = 0;
        for (index, &c) in bytes[1..].iter().enumerate() {
            let Some(value) = digit_value(c) else {
                let found = char::from(c);
                return Err(SluidError::Character {
                    position: index + 2,
                    found,
                });
            };
            if index == 0 && value > 0xF {
                return Err(SluidError::TooLarge {
                    found: char::from(c),
                });
            }
            bits = bits << 5 | value;
        }
        Sluid::from_bits(bits).ok_or(SluidError::Zero)
    }

    /// Read a SLUID as Slurm's commands print one in a column: empty (a
    /// field a site's older Slurm left blank) and `s0000000000000` (a job
    /// without one) are `None`.
    pub fn parse_printed(text: &str) -> Result<Option<Sluid>, SluidError> {
        let text = text.trim();
        if text.is_empty() {
            return Ok(None);
        }
        match Sluid::parse(text) {
            Err(SluidError::Zero) => Ok(None),
            other => other.map(Some),
        }
    }

    /// Does `text` read as a SLUID?
    pub fn looks_like(text: &str) -> bool {
        Sluid::parse(text).is_ok()
    }
}

impl fmt::Display for Sluid {
    /// The canonical form: `s` and 13 upper-case characters.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut text = [0u8; DIGITS + 1];
        text[0] = b's';
        for (index, slot) in text[1..].iter_mut().enumerate() {
            let shift = 5 * (DIGITS - 1 - index);
            // The first character's shift (60) leaves 4 bits: never past 31.
            *slot = ALPHABET[((self.bits() >> shift) & 0x1f) as usize];
        }
        f.write_str(std::str::from_utf8(&text).expect("ASCII"))
    }
}

impl FromStr for Sluid {
    type Err = SluidError;

    fn from_str(text: &str) -> Result<Sluid, SluidError> {
        Sluid::parse(text)
    }
}

impl serde::Serialize for Sluid {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Sluid {
    fn deserialize<D: serde::Deserializer<'de>>(reader: D) -> Result<Sluid, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(reader)?;
        Sluid::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Cluster 3, 2026-01-01T00:00:00Z (1767225600000 ms), sequence 5:
    // 3 << 52 | 1767225600000 << 10 | 5 = 0x0036_6DDB_6AA0_0005. From the top,
    // 4 bits then 12 groups of 5: 0000 | 00000 | 01101 | 10011 | 01101 | 11011 |
    // 01101 | 10101 | 01010 | 00000 | 00000 | 00000 | 00101, that is
    // 0 0 D K D V D N A 0 0 0 5 (13 = D, 19 = K, 27 = V, 21 = N, 10 = A).
    const HAND: &str = "s00DKDVDNA0005";

    #[test]
    fn a_hand_encoded_sluid_reads_back_its_parts() {
        let sluid = Sluid::parse(HAND).unwrap();
        assert_eq!(sluid.bits(), 0x0036_6DDB_6AA0_0005);
        assert_eq!(sluid.cluster(), 3);
        assert_eq!(sluid.millis(), 1_767_225_600_000);
        assert_eq!(sluid.sequence(), 5);
        assert_eq!(Sluid::from_parts(3, 1_767_225_600_000, 5), Some(sluid));
        assert_eq!(sluid.to_string(), HAND);
    }

    #[test]
    fn the_largest_sluid_is_f_then_twelve_z() {
        // Cluster 4095, 2^42 - 1 ms, sequence 1023: all 64 bits set; the
        // first character holds 4 bits (F = 15), each other 5 (Z = 31).
        let sluid = Sluid::from_parts(4095, (1 << 42) - 1, 1023).unwrap();
        assert_eq!(sluid.bits(), u64::MAX);
        assert_eq!(sluid.to_string(), "sFZZZZZZZZZZZZ");
        assert_eq!(Sluid::parse("sFZZZZZZZZZZZZ"), Ok(sluid));
        assert_eq!(
            Sluid::parse("sGZZZZZZZZZZZZ"),
            Err(SluidError::TooLarge { found: 'G' })
        );
    }

    #[test]
    fn lower_case_o_i_and_l_read_as_slurm_reads_them() {
        let sluid = Sluid::parse(HAND).unwrap();
        assert_eq!(Sluid::parse("s00dkdvdna0005"), Ok(sluid));
        assert_eq!(Sluid::parse("SOoDKDVDNAoO05"), Ok(sluid));
        // Cluster 1, 0 ms, sequence 1: 1 << 52 | 1 = 0 00100 00000 ... 00001.
        let one = Sluid::from_parts(1, 0, 1).unwrap();
        assert_eq!(one.to_string(), "s0040000000001");
        assert_eq!(Sluid::parse("s0040000000001"), Ok(one));
        assert_eq!(Sluid::parse("sO04OOOOOOOOOI"), Ok(one));
        assert_eq!(Sluid::parse("so04ooooooooOl"), Ok(one));
    }

    #[test]
    fn malformed_sluids_say_why() {
        let cases = [
            ("s00DKDVDNA000", SluidError::Length { chars: 13 }),
            ("s00DKDVDNA00055", SluidError::Length { chars: 15 }),
            ("", SluidError::Length { chars: 0 }),
            ("x00DKDVDNA0005", SluidError::Prefix { found: 'x' }),
            ("100DKDVDNA0005", SluidError::Prefix { found: '1' }),
            (
                "s00DKDVDNU0005",
                SluidError::Character {
                    position: 10,
                    found: 'U',
                },
            ),
            (
                "s00DKDVD-A0005",
                SluidError::Character {
                    position: 9,
                    found: '-',
                },
            ),
            ("s0000000000000", SluidError::Zero),
            ("sOOOOOOOOOOOOO", SluidError::Zero),
        ];
        for (text, expected) in cases {
            assert_eq!(Sluid::parse(text), Err(expected), "{text:?}");
        }
        // Multi-byte characters are counted as characters, never split.
        assert_eq!(
            Sluid::parse("s00DKDVDNA00é"),
            Err(SluidError::Length { chars: 13 })
        );
        assert!(matches!(
            Sluid::parse("s00DKDVDNA0é"),
            Err(SluidError::Length { chars: 12 })
        ));
        let message = Sluid::parse("s00DKDVDNU0005").unwrap_err().to_string();
        assert!(
            message.contains("character 10") && message.contains("`U`"),
            "{message}"
        );
    }

    #[test]
    fn a_printed_column_reads_empty_and_zero_as_none() {
        assert_eq!(Sluid::parse_printed(""), Ok(None));
        assert_eq!(Sluid::parse_printed("s0000000000000"), Ok(None));
        assert_eq!(
            Sluid::parse_printed(" s00dkdvdna0005 "),
            Ok(Sluid::parse(HAND).ok())
        );
        assert!(Sluid::parse_printed("s00").is_err());
    }

    #[test]
    fn json_carries_the_canonical_text() {
        let sluid: Sluid = serde_json::from_str("\"s00dkdvdna0005\"").unwrap();
        assert_eq!(
            serde_json::to_string(&sluid).unwrap(),
            format!("\"{HAND}\"")
        );
        assert!(serde_json::from_str::<Sluid>("\"s0\"").is_err());
    }
}
