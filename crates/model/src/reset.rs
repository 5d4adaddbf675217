//! `PriorityUsageResetPeriod` boundaries, in UTC: the next midnight, Sunday
//! 00:00, first of the month, of the quarter, or of the year after a time.
//! A scalar function of the calendar, shared by both engines.

use crate::config::ResetPeriod;
use crate::Time;
use chrono::{DateTime, Datelike, NaiveDate, Utc};

const DAY_SECS: Time = 86_400;
const WEEK_SECS: Time = 7 * DAY_SECS;
/// 1970-01-04, the first Sunday of the Unix epoch, at 00:00 UTC.
const FIRST_SUNDAY: Time = 3 * DAY_SECS;

fn midnight(date: NaiveDate) -> Option<Time> {
    Some(date.and_hms_opt(0, 0, 0)?.and_utc().timestamp())
}

/// The first day of month `month0` (0-based, may exceed 11) counted from January of `year`.
fn first_of(year: i32, month0: u32) -> Option<Time> {
    let year = year.checked_add(i32::try_from(month0 / 12).ok()?)?;
    midnight(NaiveDate::from_ymd_opt(year, month0 % 12 + 1, 1)?)
}

/// The reset boundary at or before `t` (the start of the period holding `t`),
/// in closed form; `None` for `NONE`/`NOW` or outside the calendar's range.
pub fn reset_at_or_before(period: ResetPeriod, t: Time) -> Option<Time> {
    let floor_to = |origin: Time, step: Time| {
        t.checked_sub(origin)
            .map(|x| x.div_euclid(step) * step)
            .and_then(|x| x.checked_add(origin))
    };
    match period {
        ResetPeriod::None | ResetPeriod::Now => None,
        ResetPeriod::Daily => floor_to(0, DAY_SECS),
        ResetPeriod::Weekly => floor_to(FIRST_SUNDAY, WEEK_SECS),
        ResetPeriod::Monthly | ResetPeriod::Quarterly | ResetPeriod::Yearly => {
            let date = DateTime::<Utc>::from_timestamp(t, 0)?.date_naive();
            let month0 = match period {
                ResetPeriod::Monthly => date.month0(),
                ResetPeriod::Quarterly => date.month0() / 3 * 3,
                _ => 0,
            };
            first_of(date.year(), month0)
        }
    }
}

/// The first reset boundary strictly after `t`, or `None` for `NONE`/`NOW`
/// (or when it would fall outside the calendar's range). Closed form: no
/// walking, no overflow.
pub fn next_reset_after(period: ResetPeriod, t: Time) -> Option<Time> {
    match period {
        ResetPeriod::None | ResetPeriod::Now => None,
        ResetPeriod::Daily => reset_at_or_before(period, t)?.checked_add(DAY_SECS),
        ResetPeriod::Weekly => reset_at_or_before(period, t)?.checked_add(WEEK_SECS),
        ResetPeriod::Monthly | ResetPeriod::Quarterly | ResetPeriod::Yearly => {
            let date = DateTime::<Utc>::from_timestamp(t, 0)?.date_naive();
            let month0 = match period {
                ResetPeriod::Monthly => date.month0() + 1,
                ResetPeriod::Quarterly => date.month0() / 3 * 3 + 3,
                _ => 12,
            };
            first_of(date.year(), month0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // 2023-11-14T22:13:20Z is a Tuesday.
    const T: Time = 1_700_000_000;

    #[test]
    fn boundaries_by_hand() {
        assert_eq!(next_reset_after(ResetPeriod::Daily, T), Some(1_700_006_400)); // 2023-11-15
        assert_eq!(
            next_reset_after(ResetPeriod::Weekly, T),
            Some(1_700_352_000)
        ); // Sun 2023-11-19
        assert_eq!(
            next_reset_after(ResetPeriod::Monthly, T),
            Some(1_701_388_800)
        ); // 2023-12-01
        assert_eq!(
            next_reset_after(ResetPeriod::Quarterly, T),
            Some(1_704_067_200)
        ); // 2024-01-01
        assert_eq!(
            next_reset_after(ResetPeriod::Yearly, T),
            Some(1_704_067_200)
        );
        assert_eq!(next_reset_after(ResetPeriod::None, T), None);
        // Exactly at a boundary, the next one is a full period later.
        assert_eq!(
            next_reset_after(ResetPeriod::Daily, 1_700_006_400),
            Some(1_700_092_800)
        );
        // A Sunday midnight goes to the next Sunday.
        assert_eq!(
            next_reset_after(ResetPeriod::Weekly, 1_700_352_000),
            Some(1_700_956_800)
        );
        // 2024-02-10 is in Q1: the next quarter starts 2024-04-01.
        assert_eq!(
            next_reset_after(ResetPeriod::Quarterly, 1_707_523_200),
            Some(1_711_929_600)
        );
    }

    // 2023-11-14T22:13:20Z is a Tuesday (1_700_000_000).
    const T2: Time = 1_700_000_000;

    /// 9999-12-31T23:59:59Z, the last second of year 9999 (253_402_300_800 is
    /// 10000-01-01: 2932897 days after the epoch, 2932897 * 86400).
    const Y9999_END: Time = 253_402_300_799;

    #[test]
    fn boundaries_near_the_end_of_the_calendar_do_not_panic() {
        let y10000 = Y9999_END + 1;
        assert_eq!(
            next_reset_after(ResetPeriod::Daily, Y9999_END),
            Some(y10000)
        );
        // 10000-01-01 is a Saturday: (2932897 - 3) % 7 = 6 days after a Sunday.
        let last_sunday = y10000 - 6 * 86_400;
        assert_eq!(
            reset_at_or_before(ResetPeriod::Weekly, Y9999_END),
            Some(last_sunday)
        );
        assert_eq!(
            next_reset_after(ResetPeriod::Yearly, Y9999_END),
            Some(y10000)
        );
        // chrono's last representable day and beyond: no panic, and no boundary
        // where the calendar ends.
        for t in [i64::MAX, i64::MAX - 1, 8_210_298_412_799, 8_210_298_412_800] {
            for period in [
                ResetPeriod::Daily,
                ResetPeriod::Weekly,
                ResetPeriod::Monthly,
                ResetPeriod::Quarterly,
                ResetPeriod::Yearly,
            ] {
                let _ = next_reset_after(period, t);
                let _ = reset_at_or_before(period, t);
            }
        }
        assert_eq!(next_reset_after(ResetPeriod::Daily, i64::MAX), None);
    }

    #[test]
    fn the_period_holding_a_far_time_is_found_without_walking() {
        // 9999-12-31 23:59:59: the day started 86_399 s before.
        assert_eq!(
            reset_at_or_before(ResetPeriod::Daily, Y9999_END),
            Some(Y9999_END - 86_399)
        );
        // Its quarter started 9999-10-01, 92 days (Oct 31 + Nov 30 + Dec 31) before 10000-01-01.
        assert_eq!(
            reset_at_or_before(ResetPeriod::Quarterly, Y9999_END),
            Some(Y9999_END + 1 - 92 * 86_400)
        );
        // A boundary is its own period's start.
        assert_eq!(
            reset_at_or_before(ResetPeriod::Daily, 1_700_006_400),
            Some(1_700_006_400)
        );
        // 2023-11-14 (Tuesday): the week started Sunday 2023-11-12, 2 days before 2023-11-14 00:00.
        assert_eq!(
            reset_at_or_before(ResetPeriod::Weekly, T2),
            Some(1_700_006_400 - 3 * 86_400)
        );
        assert_eq!(
            reset_at_or_before(ResetPeriod::Monthly, T2),
            Some(1_700_006_400 - 14 * 86_400) // 2023-11-01
        );
        assert_eq!(reset_at_or_before(ResetPeriod::Now, T2), None);
    }

    #[test]
    fn boundaries_counted_in_days() {
        // 2023-11-15 00:00 UTC = 1_700_000_000 + 6_400 (22:13:20 + 1:46:40).
        assert_eq!(
            next_reset_after(ResetPeriod::Daily, T2),
            Some(1_700_006_400)
        );
        // Sunday 2023-11-19 = 4 days after 2023-11-15.
        assert_eq!(
            next_reset_after(ResetPeriod::Weekly, T2),
            Some(1_700_006_400 + 4 * 86_400)
        );
        // 2023-12-01 = 2023-11-15 + 16 days.
        assert_eq!(
            next_reset_after(ResetPeriod::Monthly, T2),
            Some(1_700_006_400 + 16 * 86_400)
        );
        // 2024-01-01 = 2023-12-01 + 31 days, for the quarter and the year.
        let new_year = 1_700_006_400 + 47 * 86_400;
        assert_eq!(next_reset_after(ResetPeriod::Quarterly, T2), Some(new_year));
        assert_eq!(next_reset_after(ResetPeriod::Yearly, T2), Some(new_year));
        // From 2024-01-01: 2024-04-01 is 31 + 29 + 31 = 91 days later (leap year).
        assert_eq!(
            next_reset_after(ResetPeriod::Quarterly, new_year),
            Some(new_year + 91 * 86_400)
        );
        // A December date rolls the month into January of the next year.
        assert_eq!(
            next_reset_after(ResetPeriod::Monthly, new_year - 86_400),
            Some(new_year)
        );
        assert_eq!(next_reset_after(ResetPeriod::None, T2), None);
    }
}
