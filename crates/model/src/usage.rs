//! Exact usage arithmetic, shared by the batch oracle and the incremental
//! engine so that both store bit-identical integers.
//!
//! # Notation
//! - `hl`: `PriorityDecayHalfLife` in seconds (0: no decay); `e`: the frame's epoch.
//! - `scale(t) = 2^((t - e) / hl)` (1 when `hl = 0`).
//! - A **frame unit** is `2^-20 · 5^-6` TRES-seconds charged at the epoch:
//!   [`FRAME_UNITS_PER_TRES_SEC`] `= 2^20 · 5^6 = 16_384_000_000` units are one
//!   TRES-second, so a micro-TRES-second (`10^-6 = 2^-6 · 5^-6`) is exactly
//!   `2^14` units and every decimal amount with up to six decimals is a whole
//!   number of units: amounts in the ratio 1:2 (0.1 and 0.2) are stored in
//!   the ratio 1:2, and charges that sum to a whole number (3599 + 0.4 + 0.4 +
//!   0.2) sum to exactly that many TRES-seconds.
//!
//! # Definition
//! Usage decays continuously: `amount` charged at time `t` is worth
//! `amount * 2^(-(T - t) / hl)` at a later time `T`. Instead of decaying every
//! stored value as time passes, fairflow stores every charge in the epoch's
//! reference frame, `round(micros(amount) * 2^14 * scale(t))` with
//! `micros(amount)` the amount rounded to a whole micro-TRES-second (exactly,
//! from the `f64`'s binary value), an integer that never changes again. The
//! decayed value at `T` is the frame value divided by
//! `scale(T) * FRAME_UNITS_PER_TRES_SEC`. Sums of frame values are exact
//! integer sums: independent of the order of events, free of drift, and the
//! common factor `scale(T)` cancels in every ratio fair-share takes
//! (usage / parent usage, usage / root usage), so passing time changes nothing
//! stored.
//!
//! A running job accrues at `rate` billable TRES per second. Its usage over
//! `[s, T]` is the integral `rate * (G(T) - G(s))` with the clock
//! `G(t) = hl / ln 2 * scale(t)` (or `t - e` without decay), kept as integers:
//! `rate` with `RATE_FRAC_BITS` fraction bits and `G` in units of
//! `1 / CLOCK_UNITS_PER_SEC` seconds, whose product is in frame units.
//!
//! # Range
//! A charge is at most `MAX_USAGE_AMOUNT_TRES_SECS · 2^16 · 2^20 · 5^6 <
//! 2^100` units (the frame is re-based before `scale` reaches 2^16), so 2^27
//! maximal charges fit in the `i128` diffs the incremental engine sums. The
//! clock stays below `2^38 / ln 2 · 2^16 · 2^10 · 5^6 < 2^79` (a half-life of
//! at most `limits::MAX_DURATION_SECS` < 2^38 s), and a rate below
//! [`MAX_FIXED_RATE`] `= 2^36`, so one job's accrual term `rate · G` stays
//! below 2^115.
//!
//! # Invariants
//! - Every stored quantity is an integer computed by a pure function of
//!   integers and event fields: the same inputs give the same bits in any engine.
//! - The epoch moves only at a re-base (after `REBASE_HALF_LIVES` half-lives, at
//!   a change of half-life, or at a usage reset), which both engines apply to the
//!   same per-association values at the same event.

use crate::Time;

/// The binary part of a frame unit: `2^-FRAME_FRAC_BITS` (times `5^-FRAME_FIVES`) TRES-seconds.
pub const FRAME_FRAC_BITS: u32 = 20;
/// The factors of five of a frame unit: with six, a micro-TRES-second is a
/// whole number (`2^14`) of units.
pub const FRAME_FIVES: u32 = 6;
/// Frame units in one TRES-second at the epoch: `2^20 · 5^6 = 16_384_000_000`.
pub const FRAME_UNITS_PER_TRES_SEC: u128 = (1 << FRAME_FRAC_BITS) * 5u128.pow(FRAME_FIVES);
/// Frame units in one micro-TRES-second (`10^-6`) at the epoch: `2^14 = 16_384`.
pub const FRAME_UNITS_PER_MICRO: u128 = FRAME_UNITS_PER_TRES_SEC / MICROS_PER_UNIT;
/// Micro-TRES-seconds in one TRES-second.
const MICROS_PER_UNIT: u128 = 1_000_000;
/// Fraction bits of a fixed-point rate (billable TRES per second).
pub const RATE_FRAC_BITS: u32 = 10;
/// Units of the accrual clock `G` in one second: `FRAME_UNITS_PER_TRES_SEC /
/// 2^RATE_FRAC_BITS = 2^10 · 5^6 = 16_000_000`, so that a fixed-point rate
/// times the clock is in frame units.
pub const CLOCK_UNITS_PER_SEC: u128 = FRAME_UNITS_PER_TRES_SEC >> RATE_FRAC_BITS;
/// The epoch is re-based once it is this many half-lives behind the present.
pub const REBASE_HALF_LIVES: i64 = 16;

/// Usage in frame units (see the module documentation).
pub type FrameUsage = u128;

/// The reference frame usage is stored in: a half-life and an epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DecayFrame {
    /// `PriorityDecayHalfLife` in seconds; 0 is no decay.
    pub half_life_secs: i64,
    /// The time at which one frame unit is worth `1 / FRAME_UNITS_PER_TRES_SEC` TRES-seconds.
    pub epoch: Time,
}

fn round_to_u128(value: f64) -> u128 {
    if value.is_finite() && value > 0.0 {
        value.round() as u128
    } else {
        0
    }
}

/// `amount` (TRES-seconds) rounded to the nearest whole micro-TRES-second,
/// halves away from zero, computed exactly from the `f64`'s binary value
/// (`m · 2^e`), so the decimal an input wrote with up to six decimals comes
/// back exactly while it is below 2^33 TRES-seconds (there the `f64`'s step
/// is below 10^-6; beyond, the JSON number was already rounded to its `f64`,
/// which is rounded to the micro-TRES-second like any other). 0 for anything
/// not positive and finite; saturates at `u128::MAX`.
pub fn micros(amount_tres_secs: f64) -> u128 {
    round_decimal(amount_tres_secs, MICROS_PER_UNIT, Ties::AwayFromZero)
}

/// How [`round_decimal`] breaks an exact tie.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ties {
    AwayFromZero,
    Even,
}

/// `amount · per_unit` rounded to an integer, computed exactly from the
/// `f64`'s binary value (`m · 2^e`); `per_unit` at most `10^6`. 0 for
/// anything not positive and finite; saturates at `u128::MAX`.
fn round_decimal(amount: f64, per_unit: u128, ties: Ties) -> u128 {
    if !(amount.is_finite() && amount > 0.0) {
        return 0;
    }
    let bits = amount.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    let fraction = u128::from(bits & ((1u64 << 52) - 1));
    // value = mantissa · 2^exponent, exactly.
    let (mantissa, exponent) = if biased == 0 {
        (fraction, -1074)
    } else {
        (fraction | (1 << 52), biased - 1075)
    };
    let scaled = mantissa * per_unit; // < 2^73
    if exponent >= 0 {
        let shift = exponent as u32;
        if shift > scaled.leading_zeros() {
            u128::MAX
        } else {
            scaled << shift
        }
    } else {
        let shift = exponent.unsigned_abs();
        if shift > 74 {
            // scaled / 2^shift < 2^73 / 2^75 < 1/2.
            return 0;
        }
        let whole = scaled >> shift;
        let rest = scaled - (whole << shift);
        let half = 1u128 << (shift - 1);
        let up = match ties {
            Ties::AwayFromZero => rest >= half,
            Ties::Even => rest > half || (rest == half && whole % 2 == 1),
        };
        whole + u128::from(up)
    }
}

/// Hundred-thousandths of a TRES-second in one.
const FLUX_JOB_USAGE_DIGITS: u128 = 100_000;

/// The frame units (without decay, at the epoch) of one completed Flux job's
/// usage as flux-accounting records it (`usage_calculators/periodic.py`:
/// `round(weighted_usage, 5)`): `amount_tres_secs` rounded to five decimals
/// as Python's `round` does (the exact binary value, ties to even: 0.015625
/// is 0.01562), each hundred-thousandth exactly `10 · 2^14` units.
pub fn flux_job_usage(amount_tres_secs: f64) -> FrameUsage {
    round_decimal(amount_tres_secs, FLUX_JOB_USAGE_DIGITS, Ties::Even)
        .saturating_mul(FRAME_UNITS_PER_TRES_SEC / FLUX_JOB_USAGE_DIGITS)
}

/// `usage` times a decay factor given in millionths (`decay_millionths /
/// 10^6`), rounded to the nearest unit (halves up): flux-accounting's
/// `value * decay` on a usage bin, exact for the factor's six decimals (0.5
/// halves a value of whole hundred-thousandths exactly 15 times).
pub fn decayed(usage: FrameUsage, decay_millionths: u128) -> FrameUsage {
    match usage.checked_mul(decay_millionths) {
        Some(product) => (product + MICROS_PER_UNIT / 2) / MICROS_PER_UNIT,
        None => (usage / MICROS_PER_UNIT).saturating_mul(decay_millionths),
    }
}

impl DecayFrame {
    /// A frame with its epoch at `epoch`.
    pub fn new(half_life_secs: i64, epoch: Time) -> Self {
        DecayFrame {
            half_life_secs,
            epoch,
        }
    }

    /// `scale(t) = 2^((t - e) / hl)`, 1 without decay.
    pub fn scale(&self, t: Time) -> f64 {
        if self.half_life_secs <= 0 {
            1.0
        } else {
            ((t - self.epoch) as f64 / self.half_life_secs as f64).exp2()
        }
    }

    /// The frame value of `amount_tres_secs` charged at `t`: the amount in
    /// whole micro-TRES-seconds ([`micros`]), each `2^14` units, exact at the
    /// epoch (and always without decay); otherwise scaled by `scale(t)` and
    /// rounded to the unit.
    pub fn point_usage(&self, amount_tres_secs: f64, t: Time) -> FrameUsage {
        let units = micros(amount_tres_secs).saturating_mul(FRAME_UNITS_PER_MICRO);
        let scale = self.scale(t);
        if scale == 1.0 {
            units
        } else {
            round_to_u128(units as f64 * scale)
        }
    }

    /// The accrual clock `G(t)` in units of `1 / CLOCK_UNITS_PER_SEC`. It never
    /// decreases; a job running over `[s, t]` at fixed-point rate `r` accrues
    /// `r * (G(t) - G(s))` frame units.
    pub fn clock(&self, t: Time) -> u128 {
        if self.half_life_secs <= 0 {
            (t.saturating_sub(self.epoch).max(0) as u128) * CLOCK_UNITS_PER_SEC
        } else {
            let g = self.half_life_secs as f64 / std::f64::consts::LN_2 * self.scale(t);
            round_to_u128(g * CLOCK_UNITS_PER_SEC as f64)
        }
    }

    /// Usage accrued by a job running at fixed-point `rate` from `since` to `until`.
    pub fn accrued(&self, rate: u128, since: Time, until: Time) -> FrameUsage {
        rate.saturating_mul(self.clock(until).saturating_sub(self.clock(since)))
    }

    /// Convert frame units to decayed TRES-seconds as seen at `t`.
    pub fn to_tres_secs(&self, usage: FrameUsage, t: Time) -> f64 {
        self.tres_secs_at(t)(usage)
    }

    /// [`DecayFrame::to_tres_secs`] at one time `t` for many values (a
    /// table's rows): the frame's scale at `t` computed once.
    pub fn tres_secs_at(&self, t: Time) -> impl Fn(FrameUsage) -> f64 {
        let scale = self.scale(t);
        move |usage| usage as f64 / FRAME_UNITS_PER_TRES_SEC as f64 / scale
    }

    /// Does an event at `t` require a re-base (the epoch is too far behind)?
    pub fn needs_rebase(&self, t: Time) -> bool {
        self.half_life_secs > 0 && t - self.epoch >= REBASE_HALF_LIVES * self.half_life_secs
    }

    /// Re-express a frame value of this frame in the frame `next`, as of time
    /// `t` (the time of the re-base): the decayed value at `t` is kept.
    pub fn rebased(&self, usage: FrameUsage, next: &DecayFrame, t: Time) -> FrameUsage {
        if usage == 0 {
            return 0;
        }
        if self == next {
            return usage;
        }
        round_to_u128(usage as f64 / self.scale(t) * next.scale(t))
    }
}

/// The most settled usage a state holds in all, frame units (`2^126`): the
/// sum over every association's and every credential's settled usage. The
/// engines sum usage up the tree in `u128` and as `i128` differences; events
/// reach this only past `2^26` maximal charges (the range above), so a state
/// that holds more (a damaged snapshot) is refused as read
/// (`fairflow_book`'s restored-state check), not summed past the integers.
pub const MAX_SETTLED_TOTAL: FrameUsage = 1 << 126;

/// The largest fixed-point rate one job accrues at: 2^36 (2^26, about 6.7e7,
/// billable TRES per second). A larger product of counts, weights and usage
/// factor is clamped here, identically in both engines. With a half-life of at
/// most `limits::MAX_DURATION_SECS` (< 2^38 s) the clock stays below 2^79
/// (`CLOCK_UNITS_PER_SEC` < 2^24 units a second), so one job's accrual term
/// stays below 2^115.
pub const MAX_FIXED_RATE: u128 = 1 << 36;

/// A billable rate (TRES per second) as a fixed-point integer, at most
/// [`MAX_FIXED_RATE`].
pub fn fixed_rate(rate_tres_per_sec: f64) -> u128 {
    round_to_u128(rate_tres_per_sec * (1u64 << RATE_FRAC_BITS) as f64).min(MAX_FIXED_RATE)
}

/// An association's own usage: what was charged to it directly, plus the
/// accrual of its running jobs, all in frame units. The usage at `T` is
/// `settled + rate * G(T) - rate_offset`; every field is an exact sum, so the
/// usage of a subtree is the field-wise sum over its associations.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
)]
pub struct OwnUsage {
    /// Usage already settled (usage events, ended jobs), frame units.
    pub settled: FrameUsage,
    /// Sum of the fixed-point rates of running jobs.
    pub rate: u128,
    /// Sum over running jobs of `rate * G(start)`.
    pub rate_offset: u128,
}

impl OwnUsage {
    /// The usage in frame units at time `t` of this frame.
    pub fn at(&self, frame: &DecayFrame, t: Time) -> FrameUsage {
        self.settled
            .saturating_add(self.rate.saturating_mul(frame.clock(t)))
            .saturating_sub(self.rate_offset)
    }

    /// Field-wise sum.
    pub fn add(&mut self, other: &OwnUsage) {
        self.settled += other.settled;
        self.rate += other.rate;
        self.rate_offset += other.rate_offset;
    }

    /// Is everything zero?
    pub fn is_zero(&self) -> bool {
        *self == OwnUsage::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: i64 = 86_400;

    #[test]
    fn flux_job_usage_is_rounded_to_five_decimals_as_python_rounds() {
        let unit = FRAME_UNITS_PER_TRES_SEC / 100_000; // 10 · 2^14 = 163_840
        assert_eq!(unit, 163_840);
        // 2 nodes for 100 s: 200 node-seconds, exactly.
        assert_eq!(flux_job_usage(200.0), 200 * FRAME_UNITS_PER_TRES_SEC);
        // 0.3 node-weight · 3 nodes · 7 s = 6.3 (6.299999999999999 in binary,
        // which Python's round(x, 5) makes 6.3): 630_000 hundred-thousandths.
        assert_eq!(flux_job_usage(0.3 * 3.0 * 7.0), 630_000 * unit);
        // 1.234564999... (the f64 of 1.234565 is below it) rounds down to
        // 1.23456, as Python's round(1.234565, 5) == 1.23456.
        assert_eq!(flux_job_usage(1.234565), 123_456 * unit);
        // An exact binary tie: 0.015625 = 2^-6 is 1562.5 hundred-thousandths;
        // Python rounds ties to even: round(0.015625, 5) == 0.01562.
        assert_eq!(flux_job_usage(0.015625), 1_562 * unit);
        // 0.046875 = 3 · 2^-6 is 4687.5: to even, 4688.
        assert_eq!(flux_job_usage(0.046875), 4_688 * unit);
        assert_eq!(flux_job_usage(0.0), 0);
        assert_eq!(flux_job_usage(-1.0), 0);
    }

    #[test]
    fn decay_multiplies_by_millionths_and_rounds_to_the_unit() {
        // 0.5: 7 units are 3.5, rounded up to 4; 200 TRES-seconds halve exactly.
        assert_eq!(decayed(7, 500_000), 4);
        assert_eq!(
            decayed(200 * FRAME_UNITS_PER_TRES_SEC, 500_000),
            100 * FRAME_UNITS_PER_TRES_SEC
        );
        // 0.25 of 10 units: 2.5, up to 3.
        assert_eq!(decayed(10, 250_000), 3);
    }

    #[test]
    fn usage_halves_every_half_life() {
        let frame = DecayFrame::new(7 * DAY, 0);
        let u = frame.point_usage(3600.0, 0);
        // 3600 TRES-seconds at the epoch: 3600 · 2^20 · 5^6 = 58_982_400_000_000 units.
        assert_eq!(u, 58_982_400_000_000);
        assert!((frame.to_tres_secs(u, 7 * DAY) - 1800.0).abs() < 1e-9);
        assert!((frame.to_tres_secs(u, 14 * DAY) - 900.0).abs() < 1e-9);
        // Charged later, worth more in the frame: decays from its own time.
        let later = frame.point_usage(3600.0, 7 * DAY);
        // One half-life after the epoch the scale is 2: 7200 · 16_384_000_000.
        assert_eq!(later, 117_964_800_000_000);
        assert!((frame.to_tres_secs(later, 7 * DAY) - 3600.0).abs() < 1e-9);
    }

    #[test]
    fn no_decay_keeps_usage() {
        let frame = DecayFrame::new(0, 100);
        let u = frame.point_usage(10.5, 1_000_000);
        assert_eq!(frame.to_tres_secs(u, 9_000_000), 10.5);
        // 4 TRES for 100 s is 400 TRES-seconds, exactly: the rate 4 · 2^10
        // times the clock's 100 · 2^10 · 5^6 is 400 · 2^20 · 5^6 units.
        let accrued = frame.accrued(fixed_rate(4.0), 200, 300);
        assert_eq!(accrued, 6_553_600_000_000);
    }

    #[test]
    fn running_accrual_is_the_integral_of_decayed_rate() {
        // 1 TRES/s over one half-life, seen at its end: ∫0^h 2^-(h-x)/h dx = h / (2 ln 2).
        let h = 3600;
        let frame = DecayFrame::new(h, 0);
        let accrued = frame.accrued(fixed_rate(1.0), 0, h);
        let expected = h as f64 / (2.0 * std::f64::consts::LN_2);
        assert!((frame.to_tres_secs(accrued, h) - expected).abs() < 1e-3);
    }

    #[test]
    fn decimal_amounts_are_whole_micro_tres_seconds() {
        // 10^-6 TRES-seconds = 2^-6 · 5^-6 is 2^20 · 5^6 / (2^6 · 5^6) = 2^14
        // units, so a decimal with six decimals is (its millionths) · 16_384.
        assert_eq!(FRAME_UNITS_PER_TRES_SEC, 16_384_000_000);
        assert_eq!(FRAME_UNITS_PER_MICRO, 16_384);
        assert_eq!(CLOCK_UNITS_PER_SEC, 16_000_000);
        let frame = DecayFrame::new(0, 0);
        // 0.1: 100_000 millionths · 16_384 = 1_638_400_000; 0.2 twice that.
        assert_eq!(frame.point_usage(0.1, 0), 1_638_400_000);
        assert_eq!(frame.point_usage(0.2, 0), 3_276_800_000);
        assert_eq!(frame.point_usage(0.3, 0), 4_915_200_000);
        // 3599 + 0.4 + 0.4 + 0.2 sums to 3600 TRES-seconds exactly.
        let sum: u128 = [3599.0, 0.4, 0.4, 0.2]
            .iter()
            .map(|&a| frame.point_usage(a, 0))
            .sum();
        assert_eq!(sum, 3600 * 16_384_000_000);
        // Six decimals on large amounts (where the f64's step is near 10^-6):
        // 600_000.000001 is 600_000_000_001 millionths.
        assert_eq!(micros(600_000.000001), 600_000_000_001);
        assert_eq!(micros(8_589_934_591.999999), 8_589_934_591_999_999);
        assert_eq!(micros(123_456.654321), 123_456_654_321);
        // More than six decimals round to the nearest millionth.
        assert_eq!(micros(0.0000004), 0);
        assert_eq!(micros(0.0000006), 1);
        assert_eq!(micros(1.2345678), 1_234_568);
        // Not positive or not finite: nothing.
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, f64::MIN_POSITIVE / 4.0] {
            assert_eq!(micros(bad), 0, "{bad}");
        }
        assert_eq!(micros(f64::MAX), u128::MAX);
        // 2^50 TRES-seconds (the largest amount) is 2^50 · 10^6 millionths.
        assert_eq!(micros((1u64 << 50) as f64), (1u128 << 50) * 1_000_000);
    }

    #[test]
    fn the_accrual_term_has_headroom_at_the_limits() {
        // The longest half-life (MAX_DURATION_SECS) at 16 half-lives past the
        // epoch, and the largest rate: below 2^115 (module documentation).
        let hl = crate::limits::MAX_DURATION_SECS as i64;
        let frame = DecayFrame::new(hl, 0);
        let clock = frame.clock(16 * hl - 1);
        assert!(clock < 1 << 79, "{clock}");
        assert!(clock
            .checked_mul(MAX_FIXED_RATE)
            .is_some_and(|term| term < 1 << 115));
        assert_eq!(fixed_rate(1e12), MAX_FIXED_RATE);
        // The largest charge, at a scale just below 2^16: below 2^100.
        let charge = frame.point_usage(crate::limits::MAX_USAGE_AMOUNT_TRES_SECS, 16 * hl - 1);
        assert!(charge < 1 << 100, "{charge}");
    }

    #[test]
    fn rebase_keeps_the_decayed_value() {
        let old = DecayFrame::new(DAY, 0);
        let u = old.point_usage(1000.0, 20 * DAY);
        assert!(old.needs_rebase(20 * DAY));
        let next = DecayFrame::new(DAY, 20 * DAY);
        let moved = old.rebased(u, &next, 20 * DAY);
        assert!((next.to_tres_secs(moved, 21 * DAY) - 500.0).abs() < 1e-6);
    }
}
