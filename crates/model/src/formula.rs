//! Pure per-association scalar formulas of every fair-share algorithm, shared
//! by the batch oracle and the incremental engine so that both compute the
//! same bits. Nothing here aggregates: sums over siblings, tree walks and
//! rankings stay in the engines; these functions take the already-aggregated
//! operands of one association.
//!
//! # Notation
//! - `shares`: the association's raw `FairShare` (`parent` counts as 0);
//!   `level_shares`: the sum of the raw shares of its fair-share sibling group.
//! - `usage`: the exact subtree usage in frame units (`crate::usage`); only
//!   ratios of usages are taken, so the frame's scale cancels.
//! - Classic (`NO_FAIR_TREE`): `S` global normalized shares, `UN` usage / root
//!   usage, `UE` effective usage, `F = 2^(-(UE/S)/d)`.
//! - Fair Tree: `S = shares / level_shares`, `U = usage / fs-parent usage`,
//!   `LF = S / U` (the level fair-share), `F = rank / N`.
//! - Ticket-based: `UE = max(UN, 0.01 S)`, `F = S / UE`, tickets split by `S F`.
//! - Level-based: `S' = 0.1 + 0.9 S`, bucket `v = trunc(1 + 2^(-U/S') (max - 1))`.
//!
//! # Definition
//! Each function documents its formula and its degenerate cases (a zero
//! denominator never yields NaN: it has a defined value, as in Slurm).
//!
//! # Invariants
//! - Every function is total and deterministic: no NaN for any input the
//!   engines produce (non-negative finite operands).
//! - Fair Tree's level fair-share is compared exactly ([`LevelFs`]): as a
//!   rational of integers, with wide integer cross-multiplication, never in
//!   floating point, so ties do not depend on rounding or on input order.

use std::cmp::Ordering;

/// `numerator / denominator` as `f64`, or 0 when the denominator is 0.
/// Usage ratios (usage / parent usage, usage / root usage) go through here.
pub fn usage_ratio(numerator: u128, denominator: u128) -> f64 {
    usage_ratio_converted(numerator as f64, denominator as f64)
}

/// [`usage_ratio`] of usages already converted to `f64` (`usage as f64`),
/// for a pass that converts each usage once: the same value, since a
/// conversion is deterministic and only 0 converts to 0.
pub fn usage_ratio_converted(numerator: f64, denominator: f64) -> f64 {
    if denominator == 0.0 {
        0.0
    } else {
        numerator / denominator
    }
}

/// `shares / level_shares` as `f64`, or 0 when `level_shares` is 0.
pub fn share_fraction(shares: u64, level_shares: u64) -> f64 {
    if level_shares == 0 {
        0.0
    } else {
        shares as f64 / level_shares as f64
    }
}

/// Classic normalized shares of a (non-`parent`) association:
/// `S = shares / level_shares * S_fs_parent`, with `S_root = 1`. The product
/// runs from the root down (each association multiplies its own fraction
/// into its fair-share parent's `S`); a `level_shares` of 0 anywhere gives 0.
pub fn classic_norm_shares(shares: u64, level_shares: u64, parent_norm_shares: f64) -> f64 {
    share_fraction(shares, level_shares) * parent_norm_shares
}

/// `UN = usage / root usage`, capped at 1; 0 when root usage is 0.
pub fn norm_usage(usage: u128, root_usage: u128) -> f64 {
    norm_usage_converted(usage as f64, root_usage as f64)
}

/// [`norm_usage`] of usages already converted to `f64` (see
/// [`usage_ratio_converted`]).
pub fn norm_usage_converted(usage: f64, root_usage: f64) -> f64 {
    usage_ratio_converted(usage, root_usage).min(1.0)
}

/// Classic effective usage of an association whose fair-share parent is not
/// root and whose shares are not `parent`:
/// `UE = UN + (UE_parent - UN) * shares / level_shares`, or `UE_parent` when
/// `level_shares` is 0.
pub fn classic_effective_usage(
    norm_usage: f64,
    parent_effective_usage: f64,
    shares: u64,
    level_shares: u64,
) -> f64 {
    if level_shares == 0 {
        parent_effective_usage
    } else {
        norm_usage + (parent_effective_usage - norm_usage) * shares as f64 / level_shares as f64
    }
}

/// Classic factor `F = 2^(-(UE / S) / d)`, with `d` the
/// `FairShareDampeningFactor`; 0 when `S <= 0`.
pub fn classic_factor(effective_usage: f64, norm_shares: f64, dampening_factor: u32) -> f64 {
    if norm_shares <= 0.0 {
        return 0.0;
    }
    let damp = f64::from(dampening_factor.max(1));
    (-(effective_usage / norm_shares) / damp).exp2()
}

/// The hard-coded constant of `DEPTH_OBLIVIOUS`'s damping exponent.
pub const DEPTH_OBLIVIOUS_STEEPNESS: f64 = 5.0;

/// `DEPTH_OBLIVIOUS` effective usage of an association whose fair-share
/// parent is not root and whose shares are not `parent`
/// (`_depth_oblivious_set_usage_efctv`):
/// - `ratio_p = UE_p / S_p`; `ratio_s = sibling_norm_usage / S_p`, where
///   `sibling_norm_usage` is the normalized usage of the parent's fair-share
///   children that are not `parent` (this association included);
/// - `ratio_l = (UN / S) / ratio_s`;
/// - `k = 1` if `ratio_p` or `ratio_l` is 0 or `ln ratio_p * ln ratio_l >= 0`,
///   else `k = 1 / (1 + (5 ln ratio_p)^2)`;
/// - `UE = ratio_p * ratio_l^k * S`, so that `F = 2^-(ratio_p * ratio_l^k)`.
///
/// If any of `S`, `S_p`, `UE_p`, `UN` is 0 (or `ratio_s` is), `UE = UN`.
/// Never NaN or infinite for finite operands, however deep the association
/// (see the regrouping below for subnormal shares).
pub fn depth_oblivious_effective_usage(
    norm_shares: f64,
    norm_usage: f64,
    parent_norm_shares: f64,
    parent_effective_usage: f64,
    sibling_norm_usage: f64,
) -> f64 {
    if norm_shares == 0.0
        || parent_norm_shares == 0.0
        || parent_effective_usage == 0.0
        || norm_usage == 0.0
        || sibling_norm_usage == 0.0
    {
        return norm_usage;
    }
    let ratio_p = parent_effective_usage / parent_norm_shares;
    let ratio_s = sibling_norm_usage / parent_norm_shares;
    let ratio_l = (norm_usage / norm_shares) / ratio_s;
    if ratio_p.is_finite() && ratio_l.is_finite() {
        let k = if ratio_p == 0.0 || ratio_l == 0.0 || ratio_p.ln() * ratio_l.ln() >= 0.0 {
            1.0
        } else {
            1.0 / (1.0 + (DEPTH_OBLIVIOUS_STEEPNESS * ratio_p.ln()).powi(2))
        };
        return ratio_p * ratio_l.powf(k) * norm_shares;
    }
    // Slurm computes in `long double`; in `f64` the normalized shares of an
    // association about 1,000 levels deep are subnormal, `ratio_p` overflows
    // and `ratio_l` is `inf / inf`. The same quantities regrouped stay finite
    // (used only where Slurm's order of operations has no finite `f64`
    // value): `ratio_l = (UN / sibling_norm_usage) · (S_p / S)`,
    // `ln ratio_p = ln UE_p − ln S_p`, `UE = UE_p · (S / S_p) · ratio_l^k`.
    let ratio_l = (norm_usage / sibling_norm_usage) * (parent_norm_shares / norm_shares);
    let ln_ratio_p = parent_effective_usage.ln() - parent_norm_shares.ln();
    let k = if ratio_l == 0.0 || ln_ratio_p * ratio_l.ln() >= 0.0 {
        1.0
    } else {
        1.0 / (1.0 + (DEPTH_OBLIVIOUS_STEEPNESS * ln_ratio_p).powi(2))
    };
    parent_effective_usage * (norm_shares / parent_norm_shares) * ratio_l.powf(k)
}

/// A 256-bit unsigned integer as two 128-bit halves: `high * 2^128 + low`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct U256 {
    /// The high 128 bits.
    pub high: u128,
    /// The low 128 bits.
    pub low: u128,
}

impl U256 {
    /// Little-endian 64-bit limbs.
    fn limbs(self) -> [u64; 4] {
        [
            self.low as u64,
            (self.low >> 64) as u64,
            self.high as u64,
            (self.high >> 64) as u64,
        ]
    }
}

/// Schoolbook multiplication of little-endian 64-bit limbs into `out`, which
/// must be zero and have `a.len() + b.len()` limbs (so nothing overflows).
fn multiply_limbs(a: &[u64], b: &[u64], out: &mut [u64]) {
    debug_assert_eq!(out.len(), a.len() + b.len());
    for (i, &ai) in a.iter().enumerate() {
        let mut carry: u128 = 0;
        for (j, &bj) in b.iter().enumerate() {
            // At most (2^64-1)^2 + 2 (2^64-1) = 2^128 - 1: no overflow.
            let t = u128::from(ai) * u128::from(bj) + u128::from(out[i + j]) + carry;
            out[i + j] = t as u64;
            carry = t >> 64;
        }
        out[i + b.len()] = carry as u64;
    }
}

/// The exact 256-bit product of two `u128`.
pub fn widening_mul_u128(a: u128, b: u128) -> U256 {
    let mut out = [0u64; 4];
    multiply_limbs(
        &[a as u64, (a >> 64) as u64],
        &[b as u64, (b >> 64) as u64],
        &mut out,
    );
    let join = |lo: u64, hi: u64| u128::from(lo) | (u128::from(hi) << 64);
    U256 {
        low: join(out[0], out[1]),
        high: join(out[2], out[3]),
    }
}

/// The exact 512-bit product of two [`U256`], as little-endian 64-bit limbs.
pub fn widening_mul_u256(a: U256, b: U256) -> [u64; 8] {
    let mut out = [0u64; 8];
    multiply_limbs(&a.limbs(), &b.limbs(), &mut out);
    out
}

/// Compare two little-endian limb numbers of the same length.
fn compare_limbs(a: &[u64], b: &[u64]) -> Ordering {
    a.iter().rev().cmp(b.iter().rev())
}

/// Fair Tree's level fair-share `LF = S / U` as an exact value, for ranking.
///
/// `LF = (shares / level_shares) / (usage / parent_usage)
///     = (shares * parent_usage) / (level_shares * usage)`,
/// kept as that rational of 256-bit integers (each is a `u64` times a `u128`)
/// and compared by 512-bit cross-multiplication. Two associations tie exactly
/// when their rationals are equal, whoever their parents are.
#[derive(Debug, Clone, Copy)]
pub enum LevelFs {
    /// `S == 0` (zero shares, or a zero-share sibling group), even if `U == 0`.
    Zero,
    /// `shares * parent_usage / (level_shares * usage)`, both positive.
    Ratio {
        /// `shares * parent_usage`.
        numerator: U256,
        /// `level_shares * usage`.
        denominator: U256,
    },
    /// `U == 0` with `S > 0` (Slurm: "NOT A BUG"), or a `FairShare=parent` user.
    Infinite,
}

impl LevelFs {
    /// The level fair-share of an association that is not `FairShare=parent`.
    pub fn of(shares: u64, level_shares: u64, usage: u128, parent_usage: u128) -> LevelFs {
        if shares == 0 || level_shares == 0 {
            LevelFs::Zero
        } else if usage == 0 || parent_usage == 0 {
            LevelFs::Infinite
        } else {
            LevelFs::Ratio {
                numerator: widening_mul_u128(u128::from(shares), parent_usage),
                denominator: widening_mul_u128(u128::from(level_shares), usage),
            }
        }
    }

    fn class(&self) -> u8 {
        match self {
            LevelFs::Zero => 0,
            LevelFs::Ratio { .. } => 1,
            LevelFs::Infinite => 2,
        }
    }
}

impl Ord for LevelFs {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (
                LevelFs::Ratio {
                    numerator: a,
                    denominator: b,
                },
                LevelFs::Ratio {
                    numerator: c,
                    denominator: d,
                },
            ) => {
                // a/b vs c/d with b, d > 0: compare a*d with c*b.
                compare_limbs(&widening_mul_u256(*a, *d), &widening_mul_u256(*c, *b))
            }
            _ => self.class().cmp(&other.class()),
        }
    }
}

impl PartialOrd for LevelFs {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for LevelFs {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for LevelFs {}

/// The level fair-share as sshare shows it: `S / U` in `f64`; 0 when `S` is
/// 0, `+inf` when `U` is 0. Display only: ranking uses [`LevelFs`].
pub fn level_fs_value(norm_shares: f64, effective_usage: f64) -> f64 {
    if norm_shares == 0.0 {
        0.0
    } else if effective_usage == 0.0 {
        f64::INFINITY
    } else {
        norm_shares / effective_usage
    }
}

/// The `LevelFS` Slurm's `fair_tree.c` gives a `FairShare=parent` account,
/// `(long double) NO_VAL`: it still sorts among its siblings (its children
/// were moved up, so it ranks nobody) and can tie with the next one.
pub const SLURM_PARENT_ACCOUNT_LEVEL_FS: f64 = 4_294_967_294.0;

/// Fair Tree's level fair-share as Slurm's `_calc_assoc_fs` computes it,
/// the value `FairTreeTies=slurm` sorts by and compares for equality: the
/// operations in Slurm's order on the exact operands,
/// `S = (double) shares / (double) level_shares` (0 when `level_shares` is
/// 0), `U = usage / parent_usage` (0 when `parent_usage` is 0), then `0` if
/// `S == 0`, else `S / U` (`+inf` when `U == 0`). Slurm keeps `U` and the
/// quotient in `long double` (80-bit on x86-64); fairflow uses `f64`
/// throughout, so both engines and every platform agree bit for bit. Two
/// associations equal in exact arithmetic can differ here (test24.4's uD2
/// and uD3, 40/170 / (20/110) and 50/170 / (25/110)).
pub fn slurm_level_fs(shares: u64, level_shares: u64, usage: u128, parent_usage: u128) -> f64 {
    slurm_level_fs_of(
        share_fraction(shares, level_shares),
        usage as f64,
        parent_usage as f64,
    )
}

/// [`slurm_level_fs`] from its operands already converted: the share
/// fraction ([`share_fraction`]) and both usages as `f64` (`u128` to `f64`
/// is exact-rounded and maps only 0 to 0, so this is [`usage_ratio`]). A
/// group keeps each member's conversions and re-derives every `LevelFS`
/// with one division pair when its parent's usage moves.
pub fn slurm_level_fs_of(share_fraction: f64, usage: f64, parent_usage: f64) -> f64 {
    let effective_usage = if parent_usage == 0.0 {
        0.0
    } else {
        usage / parent_usage
    };
    level_fs_value(share_fraction, effective_usage)
}

/// Slurm's order of a Fair Tree sibling group, `(LevelFS, is a user,
/// newness)`: `_cmp_level_fs` (`LevelFS` descending, then users before
/// accounts), then, among equal ones, Slurm's association-list order, the
/// newest association first (the larger `newness`: an engine's creation
/// order). The order among tied users changes no rank.
pub fn slurm_sibling_order(a: (f64, bool, u64), b: (f64, bool, u64)) -> Ordering {
    b.0.total_cmp(&a.0)
        .then_with(|| b.1.cmp(&a.1))
        .then_with(|| b.2.cmp(&a.2))
}

/// A rank turned into a factor: `rank / n` (Fair Tree: ranks `1..=N`;
/// level-based: `0..n`). 0 when there is nobody to rank.
pub fn rank_factor(rank: u64, n: u64) -> f64 {
    if n == 0 {
        0.0
    } else {
        rank as f64 / n as f64
    }
}

/// Ticket-based: the smallest effective usage, as a fraction of the shares.
pub const TICKET_MIN_USAGE_FACTOR: f64 = 0.01;

/// Ticket-based effective usage `UE = max(UN, 0.01 * S)` (the seed document's
/// formula, for every association).
pub fn ticket_effective_usage(norm_usage: f64, norm_shares: f64) -> f64 {
    norm_usage.max(TICKET_MIN_USAGE_FACTOR * norm_shares)
}

/// Ticket-based factor `F = S / UE`; 0 when `S` (hence `UE` may be) is 0.
pub fn ticket_factor(norm_shares: f64, effective_usage: f64) -> f64 {
    if norm_shares <= 0.0 || effective_usage <= 0.0 {
        0.0
    } else {
        norm_shares / effective_usage
    }
}

/// The tickets root starts with under ticket-based fair-share (Slurm:
/// `UINT32_MAX`).
pub const ROOT_TICKETS: u64 = u32::MAX as u64;

/// The tickets one active child receives:
/// `round(parent_tickets * weight / weight_sum)`, where `weight = S * F` and
/// `weight_sum` is the sum of the weights of the active siblings. 0 when the
/// sum is 0.
pub fn ticket_share(parent_tickets: u64, weight: f64, weight_sum: f64) -> u64 {
    if weight_sum <= 0.0 || weight <= 0.0 {
        return 0;
    }
    // `as` saturates; the share never exceeds the parent's by more than rounding.
    (parent_tickets as f64 * weight / weight_sum).round() as u64
}

/// The sum of the weights `S * F` of an active sibling group, in a canonical
/// order: ascending (`f64::total_cmp`), so that the result depends only on
/// the multiset of weights, not on the order an engine meets the siblings in
/// (the oracle walks tree order, the dataflow reads a sorted reduce input).
/// Weights are non-negative and finite; an empty group sums to 0.
pub fn ticket_weight_sum(weights: &mut [f64]) -> f64 {
    weights.sort_by(f64::total_cmp);
    weights.iter().fold(0.0, |sum, weight| sum + weight)
}

/// The level-based bit layout for `PriorityLevels` levels (1 to 16).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LevelLayout {
    /// `PriorityLevels`, clamped to 1..=16.
    pub levels: u32,
    /// `64 / levels` bits per level.
    pub bucket_width_bits: u32,
    /// `64 % levels` bits left unused at the bottom.
    pub unused_bits: u32,
    /// `2^bucket_width_bits - 1`.
    pub bucket_max: u64,
}

impl LevelLayout {
    /// The layout for `levels` levels (clamped to 1..=16).
    pub fn new(levels: u32) -> LevelLayout {
        let levels = levels.clamp(1, 16);
        let bucket_width_bits = 64 / levels;
        LevelLayout {
            levels,
            bucket_width_bits,
            unused_bits: 64 % levels,
            bucket_max: u64::MAX >> (64 - bucket_width_bits),
        }
    }

    /// How far a level value at fair-share depth `fs_depth` (0 directly under
    /// root) is shifted left: `(levels - d - 1) * width + unused`; `None` when
    /// the association is deeper than the configured levels (it adds 0 bits).
    pub fn shift_bits(&self, fs_depth: usize) -> Option<u32> {
        let depth = u32::try_from(fs_depth).ok()?;
        if depth >= self.levels {
            return None;
        }
        Some((self.levels - depth - 1) * self.bucket_width_bits + self.unused_bits)
    }

    /// A bucket value placed at its depth's bits (0 when too deep).
    pub fn place(&self, bucket_value: u64, fs_depth: usize) -> u64 {
        match self.shift_bits(fs_depth) {
            Some(shift) => bucket_value << shift,
            None => 0,
        }
    }
}

/// Level-based bucket value (unshifted), Slurm 14.11pre5 `level_based.c`:
/// `S' = 0.1 + 0.9 S`; `ratio = U / S'` if `S != 0`, else 0 (the zero-shares
/// quirk: zero shares get the maximum bucket); `v = trunc(1 + 2^-ratio *
/// (bucket_max - 1))`, in `1..=bucket_max` (0 is reserved).
pub fn level_bucket_value(norm_shares: f64, effective_usage: f64, bucket_max: u64) -> u64 {
    let ratio = if norm_shares != 0.0 {
        effective_usage / (0.1 + 0.9 * norm_shares)
    } else {
        0.0
    };
    let value = 1.0 + (-ratio).exp2() * (bucket_max - 1) as f64;
    // `as` truncates toward zero and saturates (a 64-bit bucket's 2^64 + 1).
    (value as u64).min(bucket_max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converted_usages_give_the_integer_forms_values() {
        // Hand values: 1/4, capped at 1, 0 over a zero root, and usages
        // past 2^64 (their conversion rounds).
        assert_eq!(norm_usage(1, 4), 0.25);
        assert_eq!(norm_usage(9, 4), 1.0);
        assert_eq!(norm_usage(5, 0), 0.0);
        let cases: [(u128, u128); 6] = [
            (0, 0),
            (1, 4),
            (9, 4),
            (5, 0),
            (u128::MAX / 3, u128::MAX),
            ((1 << 70) + 12_345, (1 << 71) + 1),
        ];
        for (usage, root) in cases {
            assert_eq!(
                norm_usage(usage, root).to_bits(),
                norm_usage_converted(usage as f64, root as f64).to_bits()
            );
            assert_eq!(
                usage_ratio(usage, root).to_bits(),
                usage_ratio_converted(usage as f64, root as f64).to_bits()
            );
        }
    }

    #[test]
    fn widening_multiplication_by_hand() {
        // 2^64 * 2^64 = 2^128: high 1, low 0.
        assert_eq!(
            widening_mul_u128(1 << 64, 1 << 64),
            U256 { high: 1, low: 0 }
        );
        // (2^128 - 1)^2 = 2^256 - 2^129 + 1: high 2^128 - 2, low 1.
        assert_eq!(
            widening_mul_u128(u128::MAX, u128::MAX),
            U256 {
                high: u128::MAX - 1,
                low: 1
            }
        );
        // Small values stay in the low half.
        assert_eq!(
            widening_mul_u128(123_456_789, 987_654_321),
            U256 {
                high: 0,
                low: 121_932_631_112_635_269
            }
        );
        // (2^128 - 1) * 3 = 2 * 2^128 + (2^128 - 3).
        assert_eq!(
            widening_mul_u128(u128::MAX, 3),
            U256 {
                high: 2,
                low: u128::MAX - 2
            }
        );
        // (2^256 - 1)^2 = 2^512 - 2^257 + 1: limbs 1, 0, 0, 0, then 2^64-2, then all ones.
        let max = U256 {
            high: u128::MAX,
            low: u128::MAX,
        };
        assert_eq!(
            widening_mul_u256(max, max),
            [1, 0, 0, 0, u64::MAX - 1, u64::MAX, u64::MAX, u64::MAX]
        );
    }

    #[test]
    fn level_fs_ties_are_exact_where_floating_point_is_not() {
        // 40/170 / (20/110) and 50/170 / (25/110) are both 22/17, but the f64
        // quotients differ in the last bit (1.2941176470588234 vs ...236).
        let a = LevelFs::of(40, 170, 20, 110);
        let b = LevelFs::of(50, 170, 25, 110);
        assert_eq!(a, b);
        assert_ne!(
            (40.0 / 170.0) / (20.0 / 110.0),
            (50.0f64 / 170.0) / (25.0 / 110.0)
        );
        // Across parents: 1 * 10 / (2 * 5) = 1 = 10 * 20 / (20 * 10).
        assert_eq!(LevelFs::of(1, 2, 5, 10), LevelFs::of(10, 20, 10, 20));
        // Order: 0 < 5/9 < 1 < 5 < inf; zero shares wins over zero usage.
        let zero = LevelFs::of(0, 2, 0, 10);
        let small = LevelFs::of(1, 2, 9, 10);
        let one = LevelFs::of(1, 2, 5, 10);
        let big = LevelFs::of(1, 2, 1, 10);
        let inf = LevelFs::of(1, 2, 0, 10);
        assert!(zero < small && small < one && one < big && big < inf);
        assert_eq!(zero, LevelFs::Zero);
        assert_eq!(inf, LevelFs::Infinite);
        // Huge operands do not overflow: (2^31 * (2^128-1)) / (2^31 * (2^128-1)) = 1.
        let huge = LevelFs::of(1 << 31, 1 << 31, u128::MAX, u128::MAX);
        assert_eq!(huge, one);
        assert!(LevelFs::of(1 << 31, 1 << 31, u128::MAX - 1, u128::MAX) > huge);
    }

    #[test]
    fn classic_formulas_by_hand() {
        // Seed example, account B: 0.2 + (0.45 - 0.2) * 30 / 40 = 0.3875.
        assert!((classic_effective_usage(0.2, 0.45, 30, 40) - 0.3875).abs() < 1e-15);
        assert_eq!(classic_effective_usage(0.2, 0.45, 0, 0), 0.45);
        // 2^(-(0.25 / 0.25)) = 0.5; dampening 2: 2^(-0.5).
        assert_eq!(classic_factor(0.25, 0.25, 1), 0.5);
        assert!((classic_factor(0.25, 0.25, 2) - std::f64::consts::FRAC_1_SQRT_2).abs() < 1e-15);
        assert_eq!(classic_factor(0.3, 0.0, 1), 0.0);
        // 30/40 * 0.4 = 0.3 (to rounding).
        assert!((classic_norm_shares(30, 40, 0.4) - 0.3).abs() < 1e-15);
        assert_eq!(classic_norm_shares(1, 0, 0.4), 0.0);
        assert_eq!(norm_usage(5, 0), 0.0);
        assert_eq!(norm_usage(3, 4), 0.75);
    }

    #[test]
    fn ticket_formulas_by_hand() {
        // Seed: account F has UN 0 and S 0.35: UE = 0.0035, F = 100.
        assert!((ticket_effective_usage(0.0, 0.35) - 0.0035).abs() < 1e-15);
        assert!((ticket_factor(0.35, 0.0035) - 100.0).abs() < 1e-9);
        assert_eq!(ticket_factor(0.0, 0.0), 0.0);
        // 1000 * 0.355556 / 1.795556 = 198.02 -> 198; 1000 * 1.44 / 1.795556 = 801.98 -> 802.
        let a = 0.4 * (0.4 / 0.45);
        let d = 0.6 * 2.4;
        assert_eq!(ticket_share(1000, a, a + d), 198);
        assert_eq!(ticket_share(1000, d, a + d), 802);
        assert_eq!(ticket_share(1000, 0.0, 0.0), 0);
    }

    #[test]
    fn level_layout_by_hand() {
        // Four levels: 16-bit buckets, none unused, max 0xFFFF, shifts 48/32/16/0.
        let four = LevelLayout::new(4);
        assert_eq!(
            (four.bucket_width_bits, four.unused_bits, four.bucket_max),
            (16, 0, 0xFFFF)
        );
        assert_eq!(
            (0..5).map(|d| four.shift_bits(d)).collect::<Vec<_>>(),
            vec![Some(48), Some(32), Some(16), Some(0), None]
        );
        // Three levels: 21-bit buckets, 1 unused bit at the bottom.
        let three = LevelLayout::new(3);
        assert_eq!((three.bucket_width_bits, three.unused_bits), (21, 1));
        assert_eq!(three.bucket_max, (1 << 21) - 1);
        assert_eq!(three.shift_bits(0), Some(43));
        assert_eq!(three.shift_bits(2), Some(1));
        // One level: the whole word.
        let one = LevelLayout::new(1);
        assert_eq!((one.bucket_width_bits, one.bucket_max), (64, u64::MAX));
        assert_eq!(level_bucket_value(0.0, 0.7, u64::MAX), u64::MAX);
    }

    #[test]
    fn level_bucket_values_by_hand() {
        // S = 0.5, U = 0.55: S' = 0.1 + 0.45 = 0.55, ratio 1, 1 + 0.5 * 65534 = 32768.
        assert_eq!(level_bucket_value(0.5, 0.55, 0xFFFF), 0x8000);
        // U = 0: 1 + 65534 = 65535, the maximum.
        assert_eq!(level_bucket_value(0.3, 0.0, 0xFFFF), 0xFFFF);
        // Zero shares: ratio stays 0, the maximum (14.11pre5's quirk).
        assert_eq!(level_bucket_value(0.0, 0.9, 0xFFFF), 0xFFFF);
        // S = 1, U = 1: S' = 1, ratio 1: 32768. S = 1, U = 3: 1 + 65534 / 8 = 8192.75 -> 8192.
        assert_eq!(level_bucket_value(1.0, 1.0, 0xFFFF), 0x8000);
        assert_eq!(level_bucket_value(1.0, 3.0, 0xFFFF), 8192);
    }

    #[test]
    fn depth_oblivious_by_hand() {
        // Parent R = UE_p / S_p = 1 / 0.5 = 2; siblings' ratio = 1 / 0.5 = 2.
        // Own r = 0.75 / 0.25 = 3, ratio_l = 1.5: same side as ratio_p, k = 1,
        // UE = 2 * 1.5 * 0.25 = 0.75.
        assert!((depth_oblivious_effective_usage(0.25, 0.75, 0.5, 1.0, 1.0) - 0.75).abs() < 1e-15);
        // Any zero operand: UE = UN.
        assert_eq!(
            depth_oblivious_effective_usage(0.25, 0.3, 0.5, 0.0, 1.0),
            0.3
        );
        assert_eq!(
            depth_oblivious_effective_usage(0.0, 0.3, 0.5, 1.0, 1.0),
            0.3
        );
    }

    #[test]
    fn depth_oblivious_stays_finite_with_subnormal_shares() {
        // About 1,030 levels of one share each: S = 2^-1030, S_p = 2^-1029
        // (subnormal), UE_p = 0.5, UN = 1e-4, siblings' UN = 2e-4. In `f64`
        // ratio_p = 0.5 · 2^1029 overflows and (UN / S) / ratio_s is inf / inf.
        // By hand (as Slurm's `long double`): ratio_l = (1e-4 / 2e-4) · 2 = 1,
        // ln ratio_l = 0, so k = 1 and UE = ratio_p · 1 · S = 0.5 · 2^1029 ·
        // 2^-1030 = 0.25.
        let s = 2f64.powi(-1030);
        let s_p = 2f64.powi(-1029);
        assert_eq!(
            depth_oblivious_effective_usage(s, 1e-4, s_p, 0.5, 2e-4),
            0.25
        );
        // ratio_l = (1e-4 / 4e-4) · 2 = 0.5 (ln < 0) and ln ratio_p =
        // ln 0.5 + 1029 ln 2 > 0: opposite sides, k = 1 / (1 + (5 ln ratio_p)²);
        // UE = 0.5 · 0.5 · 0.5^k.
        let ln_ratio_p = 0.5f64.ln() + 1029.0 * 2f64.ln();
        let k = 1.0 / (1.0 + (5.0 * ln_ratio_p).powi(2));
        let expected = 0.25 * 0.5f64.powf(k);
        let got = depth_oblivious_effective_usage(s, 1e-4, s_p, 0.5, 4e-4);
        assert!((got - expected).abs() < 1e-15, "{got} vs {expected}");
    }

    #[test]
    fn ticket_weight_sums_do_not_depend_on_the_order() {
        // 1e16's ulp is 2: 1e16 + 1 rounds (to even) back to 1e16, so in
        // this order a plain sum loses both ones; ascending adds 1 + 1 = 2
        // first, and 1e16 + 2 is exact.
        for mut weights in [[1e16, 1.0, 1.0], [1.0, 1e16, 1.0], [1.0, 1.0, 1e16]] {
            assert_eq!(ticket_weight_sum(&mut weights), 10_000_000_000_000_002.0);
        }
        assert_eq!(ticket_weight_sum(&mut []), 0.0);
    }
}
