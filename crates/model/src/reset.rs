//! `PriorityUsageResetPeriod` boundaries, in UTC: the next midnight, Sunday
//! 00:00, first of the month, of the quarter, or of the year after a time.
//! A scalar function of the calendar, shared by both engines.

use crate::config::ResetPeriod;
use crate::Time;
use chrono::{DateTime, Datelike, Duration, NaiveDate, Utc};

fn midnight(date: NaiveDate) -> Time {
    date.and_hms_opt(0, 0, 0)
        .expect("midnight exists")
        .and_utc()
        .timestamp()
}

/// The first reset boundary strictly after `t`, or `None` for `NONE`/`NOW`.
pub fn next_reset_after(period: ResetPeriod, t: Time) -> Option<Time> {
    let date = DateTime::<Utc>::from_timestamp(t, 0)?.date_naive();
    let first_of = |year: i32, month: u32| NaiveDate::from_ymd_opt(year, month, 1);
    let next = match period {
        ResetPeriod::None | ResetPeriod::Now => return None,
        ResetPeriod::Daily => date + Duration::days(1),
        ResetPeriod::Weekly => {
            let days_to_sunday = 7 - i64::from(date.weekday().num_days_from_sunday());
            date + Duration::days(days_to_sunday)
        }
        ResetPeriod::Monthly => {
            let (y, m) = if date.month() == 12 {
                (date.year() + 1, 1)
            } else {
                (date.year(), date.month() + 1)
            };
            first_of(y, m)?
        }
        ResetPeriod::Quarterly => {
            let quarter_start = (date.month0() / 3) * 3 + 1;
            let (y, m) = if quarter_start == 10 {
                (date.year() + 1, 1)
            } else {
                (date.year(), quarter_start + 3)
            };
            first_of(y, m)?
        }
        ResetPeriod::Yearly => first_of(date.year() + 1, 1)?,
    };
    Some(midnight(next))
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
