//! One cell of a rendered table, kept as the value it shows (no `String`
//! until it is written): its text is written straight into the line being
//! built, and its width (what an aligned table's first pass needs) is
//! computed without writing it for the values tables hold most (names,
//! integers, normalized values below 9). The formats are stated here once:
//! `format::fixed6` and `format::hex16` write a cell.

use std::fmt::Write;

/// A cell's value and how it is written.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Cell<'a> {
    /// Text as it is.
    Text(&'a str),
    /// Text after this many spaces (sshare's account names, by depth).
    Indented(usize, &'a str),
    /// Slurm's `printf("%f")`: six decimals, `inf` / `-inf`, `nan`; empty
    /// for `None`.
    Fixed6(Option<f64>),
    /// A decimal integer; empty for `None`.
    Integer(Option<u64>),
    /// `0x%016X`; empty for `None`.
    Hex16(Option<u64>),
}

/// The decimal digits of `value`.
fn decimal_digits(value: u64) -> usize {
    value.checked_ilog10().map_or(1, |log| log as usize + 1)
}

/// Spaces to pad with, a slice at a time.
const SPACES: &str = "                                                                ";

/// Append `count` spaces to `out`.
pub fn push_spaces(out: &mut String, mut count: usize) {
    while count > 0 {
        let now = count.min(SPACES.len());
        out.push_str(&SPACES[..now]);
        count -= now;
    }
}

/// `value` rounded to six decimals as `(negative, integer part, the six
/// decimals)`, when that is certain without the exact decimal expansion:
/// a finite value below 1000 in magnitude whose millionths are not within
/// `1e-6` of a half. `value · 10⁶` is then below `10⁹`, computed within
/// `1.2e-7` of the exact product, so rounding it rounds the exact value as
/// `printf("%f")` does. Any other value (`None`) is written by `std::fmt`
/// (which rounds the exact value: ties to even, as glibc's `printf`).
fn fixed6_parts(value: f64) -> Option<(bool, u64, u32)> {
    let magnitude = value.abs();
    if magnitude.is_nan() || magnitude >= 1000.0 {
        return None;
    }
    let millionths = magnitude * 1e6;
    if (millionths.fract() - 0.5).abs() <= 1e-6 {
        return None;
    }
    let rounded = millionths.round() as u64;
    let decimals = u32::try_from(rounded % 1_000_000).ok()?;
    Some((value.is_sign_negative(), rounded / 1_000_000, decimals))
}

impl Cell<'_> {
    /// The cell's width in characters (what [`Cell::write`] writes).
    pub fn width(&self) -> usize {
        match *self {
            Cell::Text(text) => text.chars().count(),
            Cell::Indented(depth, text) => depth + text.chars().count(),
            Cell::Fixed6(Some(value)) => match fixed6_parts(value) {
                Some((negative, integer, _)) => usize::from(negative) + decimal_digits(integer) + 7,
                None => {
                    let mut text = String::new();
                    self.write(&mut text);
                    text.len()
                }
            },
            Cell::Integer(Some(value)) => decimal_digits(value),
            Cell::Hex16(Some(_)) => 18,
            Cell::Fixed6(None) | Cell::Integer(None) | Cell::Hex16(None) => 0,
        }
    }

    /// Append the cell's text to `out`.
    pub fn write(&self, out: &mut String) {
        // Writing to a `String` cannot fail.
        let _ = match *self {
            Cell::Text(text) => {
                out.push_str(text);
                Ok(())
            }
            Cell::Indented(depth, text) => {
                push_spaces(out, depth);
                out.push_str(text);
                Ok(())
            }
            Cell::Fixed6(Some(value)) if value.is_nan() => {
                out.push_str("nan");
                Ok(())
            }
            Cell::Fixed6(Some(value)) if value.is_infinite() => {
                out.push_str(if value > 0.0 { "inf" } else { "-inf" });
                Ok(())
            }
            Cell::Fixed6(Some(value)) => match fixed6_parts(value) {
                Some((negative, integer, decimals)) => {
                    if negative {
                        out.push('-');
                    }
                    write!(out, "{integer}.{decimals:06}")
                }
                None => write!(out, "{value:.6}"),
            },
            Cell::Integer(Some(value)) => write!(out, "{value}"),
            Cell::Hex16(Some(value)) => write!(out, "0x{value:016X}"),
            Cell::Fixed6(None) | Cell::Integer(None) | Cell::Hex16(None) => Ok(()),
        };
    }

    /// The cell's text.
    pub fn text(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::Cell;

    #[test]
    fn widths_are_the_written_lengths() {
        let values = [
            0.0,
            -0.0,
            1.0,
            0.387_5,
            8.999_999_5,
            8.999_999_4,
            -8.999_999_9,
            9.0,
            9.999_999_5,
            10.0,
            123_456.789,
            -1e-9,
            1e300,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            f64::MIN_POSITIVE,
        ];
        for value in values {
            let cell = Cell::Fixed6(Some(value));
            assert_eq!(cell.width(), cell.text().len(), "{value}");
        }
        for value in [0, 9, 10, 99, 100, 12_345, u64::MAX] {
            let cell = Cell::Integer(Some(value));
            assert_eq!(cell.width(), value.to_string().len(), "{value}");
        }
        for cell in [
            Cell::Text("ünï"),
            Cell::Indented(3, "acct"),
            Cell::Hex16(Some(0xAB)),
            Cell::Fixed6(None),
            Cell::Integer(None),
            Cell::Hex16(None),
        ] {
            assert_eq!(cell.width(), cell.text().chars().count(), "{cell:?}");
        }
    }

    /// The fast path writes what `std::fmt` writes, on values near every
    /// kind of boundary and on many spread over the range.
    #[test]
    fn fixed6_is_std_formatting() {
        let mut values = vec![
            0.007_812_5, // exactly a tie: 7812.5 millionths
            -0.007_812_5,
            0.000_000_5,
            0.000_000_499_999_9,
            0.999_999_5,
            0.999_999_499_9,
            999.999_999_5,
            999.999_999_4,
            1000.0,
            -999.999_999_9,
            1e-300,
            -1e-300,
            0.1,
            0.2,
            0.3,
            2.0 / 3.0,
        ];
        let mut seed: u64 = 0x2545_F491_4F6C_DD1D;
        for _ in 0..200_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let unit = (seed >> 11) as f64 / (1u64 << 53) as f64;
            let scale = [1e-7, 1e-3, 1.0, 10.0, 999.0, 2000.0][(seed % 6) as usize];
            let sign = if seed & 64 == 0 { 1.0 } else { -1.0 };
            values.push(sign * unit * scale);
            // Halves of millionths and their neighbours.
            let half = ((seed % 2_000_000) as f64 + 0.5) / 1e6;
            values.extend([
                half,
                f64::from_bits(half.to_bits() + 1),
                f64::from_bits(half.to_bits() - 1),
            ]);
        }
        for value in values {
            let cell = Cell::Fixed6(Some(value));
            assert_eq!(cell.text(), format!("{value:.6}"), "{value:e}");
            assert_eq!(cell.width(), cell.text().len(), "{value:e}");
        }
    }

    #[test]
    fn texts_are_printf_formats() {
        // printf("%f", -1e-9) is "-0.000000", as Rust writes it.
        assert_eq!(Cell::Fixed6(Some(-1e-9)).text(), "-0.000000");
        assert_eq!(Cell::Indented(2, "a").text(), "  a");
        assert_eq!(
            Cell::Hex16(Some(0xFFFF_0000_0000)).text(),
            "0x0000FFFF00000000"
        );
        assert_eq!(Cell::Integer(Some(0)).text(), "0");
    }
}
