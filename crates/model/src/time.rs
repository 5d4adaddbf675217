//! Slurm's duration syntax (`time_str2mins`): `M`, `M:S`, `H:M:S`, `D-H`,
//! `D-H:M`, `D-H:M:S`, plus `UNLIMITED`/`INFINITE`. A bare number is minutes.

use crate::InvalidValue;

/// Parse a Slurm duration into seconds. A bare integer means minutes, as in
/// `slurm.conf`; `-1`, `UNLIMITED` and `INFINITE` are rejected here because no
/// priority parameter accepts them.
pub fn parse_slurm_duration_secs(text: &str) -> Result<i64, InvalidValue> {
    let text = text.trim();
    let bad = || {
        InvalidValue::new(format!(
            "`{text}` is not a Slurm duration (minutes, M:S, H:M:S, D-H, D-H:M or D-H:M:S)"
        ))
    };
    if text.is_empty() {
        return Err(bad());
    }
    let number = |s: &str| -> Result<i64, InvalidValue> {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) || s.len() > 12 {
            return Err(bad());
        }
        s.parse::<i64>().map_err(|_| bad())
    };
    let (days, rest) = match text.split_once('-') {
        Some((d, rest)) => (Some(number(d)?), rest),
        None => (None, text),
    };
    let parts: Vec<&str> = rest.split(':').collect();
    let secs = match (days, parts.as_slice()) {
        (None, [m]) => number(m)? * 60,
        (None, [m, s]) => number(m)? * 60 + number(s)?,
        (None, [h, m, s]) => number(h)? * 3600 + number(m)? * 60 + number(s)?,
        (Some(d), [h]) => d * 86400 + number(h)? * 3600,
        (Some(d), [h, m]) => d * 86400 + number(h)? * 3600 + number(m)? * 60,
        (Some(d), [h, m, s]) => d * 86400 + number(h)? * 3600 + number(m)? * 60 + number(s)?,
        _ => return Err(bad()),
    };
    Ok(secs)
}

#[cfg(test)]
mod tests {
    use super::parse_slurm_duration_secs as p;

    #[test]
    fn every_form_of_the_syntax() {
        assert_eq!(p("0").unwrap(), 0);
        assert_eq!(p("5").unwrap(), 300);
        assert_eq!(p("5:30").unwrap(), 330);
        assert_eq!(p("1:00:00").unwrap(), 3600);
        assert_eq!(p("7-0").unwrap(), 604_800);
        assert_eq!(p("14-0").unwrap(), 1_209_600);
        assert_eq!(p("1-2:3").unwrap(), 86400 + 7200 + 180);
        assert_eq!(p("1-2:3:4").unwrap(), 86400 + 7200 + 184);
    }

    #[test]
    fn garbage_is_rejected() {
        for bad in ["", "x", "1:2:3:4", "-5", "1-", "1.5", "7-0-0", "1- 2"] {
            assert!(p(bad).is_err(), "{bad} should be rejected");
        }
    }
}
