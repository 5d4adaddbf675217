//! Exact usage arithmetic, shared by the batch oracle and the incremental
//! engine so that both store bit-identical integers.
//!
//! # Notation
//! - `hl`: `PriorityDecayHalfLife` in seconds (0: no decay); `e`: the frame's epoch.
//! - `scale(t) = 2^((t - e) / hl)` (1 when `hl = 0`).
//! - A **frame unit** is `2^-FRAME_FRAC_BITS` TRES-seconds charged at the epoch.
//!
//! # Definition
//! Usage decays continuously: `amount` charged at time `t` is worth
//! `amount * 2^(-(T - t) / hl)` at a later time `T`. Instead of decaying every
//! stored value as time passes, fairflow stores every charge in the epoch's
//! reference frame, `round(amount * scale(t) * 2^FRAME_FRAC_BITS)`, an integer
//! that never changes again. The decayed value at `T` is the frame value
//! divided by `scale(T) * 2^FRAME_FRAC_BITS`. Sums of frame values are exact
//! integer sums: independent of the order of events, free of drift, and the
//! common factor `scale(T)` cancels in every ratio fair-share takes
//! (usage / parent usage, usage / root usage), so passing time changes nothing
//! stored.
//!
//! A running job accrues at `rate` billable TRES per second. Its usage over
//! `[s, T]` is the integral `rate * (G(T) - G(s))` with the clock
//! `G(t) = hl / ln 2 * scale(t)` (or `t - e` without decay), kept as integers:
//! `rate` with `RATE_FRAC_BITS` fraction bits and `G` with `CLOCK_FRAC_BITS`,
//! whose product is in frame units.
//!
//! # Invariants
//! - Every stored quantity is an integer computed by a pure function of
//!   integers and event fields: the same inputs give the same bits in any engine.
//! - The epoch moves only at a re-base (after `REBASE_HALF_LIVES` half-lives, at
//!   a change of half-life, or at a usage reset), which both engines apply to the
//!   same per-association values at the same event.

use crate::Time;

/// Fraction bits of a frame unit: 2^20 frame units are one TRES-second at the epoch.
pub const FRAME_FRAC_BITS: u32 = 20;
/// Fraction bits of a fixed-point rate (billable TRES per second).
pub const RATE_FRAC_BITS: u32 = 10;
/// Fraction bits of the accrual clock `G`.
pub const CLOCK_FRAC_BITS: u32 = FRAME_FRAC_BITS - RATE_FRAC_BITS;
/// The epoch is re-based once it is this many half-lives behind the present.
pub const REBASE_HALF_LIVES: i64 = 16;

/// Usage in frame units (see the module documentation).
pub type FrameUsage = u128;

/// The reference frame usage is stored in: a half-life and an epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DecayFrame {
    /// `PriorityDecayHalfLife` in seconds; 0 is no decay.
    pub half_life_secs: i64,
    /// The time at which one frame unit is worth `2^-FRAME_FRAC_BITS` TRES-seconds.
    pub epoch: Time,
}

fn round_to_u128(value: f64) -> u128 {
    if value.is_finite() && value > 0.0 {
        value.round() as u128
    } else {
        0
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

    /// The frame value of `amount_tres_secs` charged at `t`.
    pub fn point_usage(&self, amount_tres_secs: f64, t: Time) -> FrameUsage {
        round_to_u128(amount_tres_secs * self.scale(t) * (1u64 << FRAME_FRAC_BITS) as f64)
    }

    /// The accrual clock `G(t)` with `CLOCK_FRAC_BITS` fraction bits. It never
    /// decreases; a job running over `[s, t]` at fixed-point rate `r` accrues
    /// `r * (G(t) - G(s))` frame units.
    pub fn clock(&self, t: Time) -> u128 {
        if self.half_life_secs <= 0 {
            (t.saturating_sub(self.epoch).max(0) as u128) << CLOCK_FRAC_BITS
        } else {
            let g = self.half_life_secs as f64 / std::f64::consts::LN_2 * self.scale(t);
            round_to_u128(g * (1u64 << CLOCK_FRAC_BITS) as f64)
        }
    }

    /// Usage accrued by a job running at fixed-point `rate` from `since` to `until`.
    pub fn accrued(&self, rate: u128, since: Time, until: Time) -> FrameUsage {
        rate.saturating_mul(self.clock(until).saturating_sub(self.clock(since)))
    }

    /// Convert frame units to decayed TRES-seconds as seen at `t`.
    pub fn to_tres_secs(&self, usage: FrameUsage, t: Time) -> f64 {
        usage as f64 / (1u64 << FRAME_FRAC_BITS) as f64 / self.scale(t)
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

/// The largest fixed-point rate one job accrues at: 2^50 (2^40, about 1.1e12,
/// billable TRES per second). A larger product of counts, weights and usage
/// factor is clamped here, identically in both engines. With a half-life of at
/// most `limits::MAX_DURATION_SECS` (< 2^38 s) the clock stays below 2^65, so
/// one job's accrual term stays below 2^115.
pub const MAX_FIXED_RATE: u128 = 1 << 50;

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
    fn usage_halves_every_half_life() {
        let frame = DecayFrame::new(7 * DAY, 0);
        let u = frame.point_usage(3600.0, 0);
        assert_eq!(u, 3600 << FRAME_FRAC_BITS);
        assert!((frame.to_tres_secs(u, 7 * DAY) - 1800.0).abs() < 1e-9);
        assert!((frame.to_tres_secs(u, 14 * DAY) - 900.0).abs() < 1e-9);
        // Charged later, worth more in the frame: decays from its own time.
        let later = frame.point_usage(3600.0, 7 * DAY);
        assert_eq!(later, 7200 << FRAME_FRAC_BITS);
        assert!((frame.to_tres_secs(later, 7 * DAY) - 3600.0).abs() < 1e-9);
    }

    #[test]
    fn no_decay_keeps_usage() {
        let frame = DecayFrame::new(0, 100);
        let u = frame.point_usage(10.5, 1_000_000);
        assert_eq!(frame.to_tres_secs(u, 9_000_000), 10.5);
        // 4 TRES for 100 s is 400 TRES-seconds, exactly.
        let accrued = frame.accrued(fixed_rate(4.0), 200, 300);
        assert_eq!(accrued, 400 << FRAME_FRAC_BITS);
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
    fn rebase_keeps_the_decayed_value() {
        let old = DecayFrame::new(DAY, 0);
        let u = old.point_usage(1000.0, 20 * DAY);
        assert!(old.needs_rebase(20 * DAY));
        let next = DecayFrame::new(DAY, 20 * DAY);
        let moved = old.rebased(u, &next, 20 * DAY);
        assert!((next.to_tres_secs(moved, 21 * DAY) - 500.0).abs() < 1e-6);
    }
}
