//! Times as Slurm prints and accepts them, in the site's time zone.
//!
//! Slurm's commands and plugins (`squeue`'s `%V`, `sacct`, `jobcomp/filetxt`,
//! `scontrol`) print times as `YYYY-MM-DDTHH:MM:SS` in the local time of the
//! process that wrote them, with no zone. fairflow reads them the same way:
//! in the local zone of the machine, which is the `TZ` environment variable
//! when it is set (`TZ=Europe/Berlin`, `TZ=UTC`), else the system's zone.
//! Every Slurm-format time fairflow reads (squeue, sacct, jobcomp, `--at`)
//! goes through this module, so one convention holds everywhere.
//!
//! [`parse_time_arg`] reads a time given on the command line the way Slurm's
//! `-S`/`--begin` options do: `now`, `now-1hour`, `now+30minutes`,
//! `2026-11-24T10:00:00` (or without seconds, or a date alone), and, as
//! before, Unix seconds.

use chrono::{DateTime, Local, LocalResult, NaiveDate, NaiveDateTime, TimeZone};

use fairflow_model::Time;

/// Why a text is not a time (each message names the text as given).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimeError {
    /// A local time skipped when daylight saving starts.
    #[error("`{0}` does not exist in the time zone (a daylight-saving gap)")]
    DaylightSavingGap(NaiveDateTime),
    /// Not Slurm's `YYYY-MM-DDTHH:MM:SS`.
    #[error("`{0}` is not a time YYYY-MM-DDTHH:MM:SS")]
    NotSlurmTime(String),
    /// `now` followed by neither `+` nor `-`.
    #[error("`{0}`: expected now, now+COUNT[UNIT] or now-COUNT[UNIT]")]
    NotNowOffset(String),
    /// `now+` or `now-` without a count.
    #[error("`{0}`: a count must follow the sign")]
    NoCount(String),
    /// `now±COUNT` with a unit Slurm does not know.
    #[error("`{text}`: unknown unit `{unit}` (seconds, minutes, hours, days or weeks)")]
    UnknownUnit {
        /// The whole text.
        text: String,
        /// The unit given.
        unit: String,
    },
    /// `now±COUNT[UNIT]` beyond the range of times.
    #[error("`{0}` is out of range")]
    OutOfRange(String),
    /// None of the forms of a command-line time.
    #[error(
        "`{0}` is not a time: use Unix seconds, now[+-COUNT[UNIT]] or YYYY-MM-DD[THH:MM[:SS]]"
    )]
    NotTimeArg(String),
}

/// Words Slurm prints for "no time".
const NO_TIME: [&str; 5] = ["Unknown", "None", "N/A", "0", "(null)"];

/// The Unix seconds of a local date and time in `tz`. An ambiguous time (the
/// hour repeated when daylight saving ends) is the earlier instant; a time
/// that does not exist (skipped when it starts) is an error.
pub fn local_to_unix<Tz: TimeZone>(naive: NaiveDateTime, tz: &Tz) -> Result<Time, TimeError> {
    match tz.from_local_datetime(&naive) {
        LocalResult::Single(t) => Ok(t.timestamp()),
        LocalResult::Ambiguous(earlier, _) => Ok(earlier.timestamp()),
        LocalResult::None => Err(TimeError::DaylightSavingGap(naive)),
    }
}

/// Parse Slurm's `YYYY-MM-DDTHH:MM:SS` in `tz`; Slurm's words for no time
/// (`Unknown`, `None`, `N/A`, `0`, `(null)`) give `None`.
pub fn parse_slurm_time_in<Tz: TimeZone>(text: &str, tz: &Tz) -> Result<Option<Time>, TimeError> {
    if NO_TIME.contains(&text) {
        return Ok(None);
    }
    let naive = NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S")
        .map_err(|_| TimeError::NotSlurmTime(text.to_string()))?;
    local_to_unix(naive, tz).map(Some)
}

/// [`parse_slurm_time_in`] the site's zone (`TZ`, else the system's).
pub fn parse_site_time(text: &str) -> Result<Option<Time>, TimeError> {
    parse_slurm_time_in(text, &Local)
}

/// A Unix time as Slurm prints it (`2026-11-24T10:00:00`) in `tz`.
pub fn format_slurm_time_in<Tz: TimeZone>(t: Time, tz: &Tz) -> String
where
    Tz::Offset: std::fmt::Display,
{
    match DateTime::from_timestamp(t, 0) {
        Some(utc) => utc
            .with_timezone(tz)
            .format("%Y-%m-%dT%H:%M:%S")
            .to_string(),
        None => t.to_string(),
    }
}

/// [`format_slurm_time_in`] the site's zone.
pub fn format_site_time(t: Time) -> String {
    format_slurm_time_in(t, &Local)
}

/// Seconds per unit of Slurm's `now[+-]COUNT[UNIT]` (`sbatch --begin`):
/// seconds (the default), minutes, hours, days, weeks, singular or plural.
fn unit_secs(unit: &str) -> Option<i64> {
    match unit.to_ascii_lowercase().as_str() {
        "" | "s" | "sec" | "secs" | "second" | "seconds" => Some(1),
        "m" | "min" | "mins" | "minute" | "minutes" => Some(60),
        "h" | "hour" | "hours" => Some(3_600),
        "d" | "day" | "days" => Some(86_400),
        "w" | "week" | "weeks" => Some(604_800),
        _ => None,
    }
}

/// A time given on the command line, in `tz`, with `now` as the current time:
/// Unix seconds (`1700000000`), `now`, `now-1hour`, `now+30minutes`,
/// `2026-11-24T10:00:00`, `2026-11-24T10:00` or `2026-11-24` (midnight).
pub fn parse_time_arg_in<Tz: TimeZone>(text: &str, now: Time, tz: &Tz) -> Result<Time, TimeError> {
    let text = text.trim();
    if let Ok(seconds) = text.parse::<Time>() {
        return Ok(seconds);
    }
    if let Some(rest) = text.strip_prefix("now") {
        if rest.is_empty() {
            return Ok(now);
        }
        let (sign, rest) = match rest.as_bytes()[0] {
            b'+' => (1, &rest[1..]),
            b'-' => (-1, &rest[1..]),
            _ => return Err(TimeError::NotNowOffset(text.to_string())),
        };
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let count: i64 = rest[..digits]
            .parse()
            .map_err(|_| TimeError::NoCount(text.to_string()))?;
        let unit = unit_secs(&rest[digits..]).ok_or_else(|| TimeError::UnknownUnit {
            text: text.to_string(),
            unit: rest[digits..].to_string(),
        })?;
        return count
            .checked_mul(unit)
            .and_then(|offset| now.checked_add(sign * offset))
            .ok_or_else(|| TimeError::OutOfRange(text.to_string()));
    }
    let naive = ["%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M"]
        .iter()
        .find_map(|format| NaiveDateTime::parse_from_str(text, format).ok())
        .or_else(|| {
            NaiveDate::parse_from_str(text, "%Y-%m-%d")
                .ok()
                .and_then(|d| d.and_hms_opt(0, 0, 0))
        })
        .ok_or_else(|| TimeError::NotTimeArg(text.to_string()))?;
    local_to_unix(naive, tz)
}

/// [`parse_time_arg_in`] the site's zone, relative to the clock's now.
pub fn parse_time_arg(text: &str) -> Result<Time, TimeError> {
    parse_time_arg_in(text, Local::now().timestamp(), &Local)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{FixedOffset, Utc};

    #[test]
    fn slurm_times_are_read_in_the_given_zone() {
        // 2023-11-14T22:13:20Z is 1_700_000_000 (date -u -d @1700000000).
        assert_eq!(
            parse_slurm_time_in("2023-11-14T22:13:20", &Utc),
            Ok(Some(1_700_000_000))
        );
        // The same wall-clock time at UTC+01:00 is one hour earlier.
        let cet = FixedOffset::east_opt(3_600).unwrap();
        assert_eq!(
            parse_slurm_time_in("2023-11-14T22:13:20", &cet),
            Ok(Some(1_700_000_000 - 3_600))
        );
        assert_eq!(parse_slurm_time_in("Unknown", &Utc), Ok(None));
        assert!(parse_slurm_time_in("yesterday", &Utc).is_err());
        assert_eq!(
            format_slurm_time_in(1_700_000_000, &Utc),
            "2023-11-14T22:13:20"
        );
        assert_eq!(
            format_slurm_time_in(1_700_000_000, &cet),
            "2023-11-14T23:13:20"
        );
    }

    #[test]
    fn command_line_times_take_slurms_forms_and_unix_seconds() {
        let now = 1_700_000_000;
        assert_eq!(
            parse_time_arg_in("1690000000", now, &Utc),
            Ok(1_690_000_000)
        );
        assert_eq!(parse_time_arg_in("now", now, &Utc), Ok(now));
        assert_eq!(parse_time_arg_in("now-1hour", now, &Utc), Ok(now - 3_600));
        assert_eq!(
            parse_time_arg_in("now+30minutes", now, &Utc),
            Ok(now + 1_800)
        );
        assert_eq!(parse_time_arg_in("now-2days", now, &Utc), Ok(now - 172_800));
        assert_eq!(parse_time_arg_in("now+90", now, &Utc), Ok(now + 90));
        assert_eq!(
            parse_time_arg_in("now-1weeks", now, &Utc),
            Ok(now - 604_800)
        );
        assert_eq!(
            parse_time_arg_in("2023-11-14T22:13:20", now, &Utc),
            Ok(1_700_000_000)
        );
        assert_eq!(
            parse_time_arg_in("2023-11-14T22:13", now, &Utc),
            Ok(1_700_000_000 - 20)
        );
        // Midnight of 2023-11-14 is 22:13:20 (80_000 s) before the instant above.
        assert_eq!(
            parse_time_arg_in("2023-11-14", now, &Utc),
            Ok(1_700_000_000 - 80_000)
        );
        assert!(parse_time_arg_in("now-1fortnight", now, &Utc).is_err());
        assert!(parse_time_arg_in("now*2", now, &Utc).is_err());
        assert!(parse_time_arg_in("tomorrow", now, &Utc).is_err());
    }
}
