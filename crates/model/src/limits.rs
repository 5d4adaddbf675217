//! The range of every input quantity the exact arithmetic can hold: event
//! times, durations, usage amounts, TRES counts and usage factors. Parsers and
//! converters reject anything outside (naming the field), so neither engine
//! ever meets a value its integers cannot represent.
//!
//! Why these bounds suffice: usage is stored as `u128` frame units of
//! `2^-20 · 5^-6` TRES-seconds and summed into `i128` differences (`usage`
//! module). A charge is at most
//! `MAX_USAGE_AMOUNT_TRES_SECS · 2^16 · 2^20 · 5^6 < 2^100` frame units (the
//! frame is re-based before its scale reaches `2^REBASE_HALF_LIVES = 2^16`),
//! so `2^27` maximal charges still fit in an `i128`. A running job's
//! fixed-point rate is at most `MAX_TRES_COUNT · weight · MAX_USAGE_FACTOR`,
//! clamped by `usage::fixed_rate` to `usage::MAX_FIXED_RATE` (2^26 billable
//! TRES per second), so that its accrual term stays below 2^115 with a
//! half-life of up to `MAX_DURATION_SECS`.

use crate::Time;

/// The last second of year 9999 (9999-12-31T23:59:59Z): the latest event
/// time, begin time or deadline. Calendar arithmetic (reset boundaries) is
/// exact far beyond it.
pub const MAX_TIME: Time = 253_402_300_799;

/// The longest duration (time limit, partition `MaxTime`), in seconds: the
/// whole range of times.
pub const MAX_DURATION_SECS: u64 = MAX_TIME as u64;

/// The largest usage amount of one event, in billable TRES-seconds: 2^50, about
/// 1.1e15 (a million CPUs for 35 years).
pub const MAX_USAGE_AMOUNT_TRES_SECS: f64 = (1u64 << 50) as f64;

/// The largest count of one TRES of a job, partition or cluster: 2^40, about
/// 1.1e12 (a petabyte of memory in MB).
pub const MAX_TRES_COUNT: f64 = (1u64 << 40) as f64;

/// The largest QOS `UsageFactor`.
pub const MAX_USAGE_FACTOR: f64 = 1_000_000.0;

/// Is `t` a representable time (`0..=MAX_TIME`)?
pub fn time_in_range(t: Time) -> bool {
    (0..=MAX_TIME).contains(&t)
}
