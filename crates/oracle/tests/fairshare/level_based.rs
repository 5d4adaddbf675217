//! Level-based fair-share (Slurm 14.11pre5): the blog example's bit layout,
//! hand-computed bucket values, the zero-shares quirk, `FairShare=parent`,
//! levels deeper than `PriorityLevels`, and the rank factors.

use super::support::*;
use fairflow_model::formula::LevelLayout;

#[test]
fn the_blog_example_bit_layout() {
    // PriorityLevels=4: 16-bit buckets, no unused bits, bucket_max 65535.
    let layout = LevelLayout::new(4);
    assert_eq!(layout.bucket_width_bits, 16);
    assert_eq!(layout.unused_bits, 0);
    assert_eq!(layout.bucket_max, 65535);
    // College 0xAAAA, department 0x1234, faculty 0x7777, user 0xCCCC.
    let life_sciences = layout.place(0xAAAA, 0);
    let biology = layout.place(0x1234, 1);
    let dr_bob = layout.place(0x7777, 2);
    let grad_student = layout.place(0xCCCC, 3);
    assert_eq!(life_sciences, 0xAAAA_0000_0000_0000);
    assert_eq!(biology, 0x0000_1234_0000_0000);
    assert_eq!(dr_bob, 0x0000_0000_7777_0000);
    assert_eq!(grad_student, 0x0000_0000_0000_CCCC);
    assert_eq!(
        life_sciences | biology | dr_bob | grad_student,
        0xAAAA_1234_7777_CCCC
    );
    // A fifth level does not fit: it adds nothing.
    assert_eq!(layout.place(0xFFFF, 4), 0);
}

/// PriorityLevels=4, the blog's four tiers:
/// root -> L (1) -> bio (1) -> bob (1) -> grad (1), prof (1), zed (0);
/// root -> M (1) -> m1 (1).
/// Usage grad 30.25, prof 24.75, m1 45: root 100, L = bio = bob = 55.
/// Bucket v = trunc(1 + 2^(-U/S') * 65534), S' = 0.1 + 0.9 S:
/// - L: S .5, U .55, S' .55, ratio 1: 1 + 32767 = 32768 = 0x8000 (bits 48..63).
/// - M: S .5, U .45, ratio 9/11: 2^(-9/11) = 0.5671563, * 65534 = 37168.018,
///   + 1 -> 37169 = 0x9131.
/// - bio, bob: only children, S 1, U 1, S' 1, ratio 1: 0x8000.
/// - grad: S .5, U 30.25/55 = .55, ratio 1: 0x8000; prof: U .45: 0x9131;
///   zed: S 0, ratio 0 (the quirk): 0xFFFF.
/// - m1: S 1, U 1: 0x8000 at bits 32..47.
///
/// Raw: m1 0x9131_8000_0000_0000 > zed 0x8000_8000_8000_FFFF >
/// prof 0x8000_8000_8000_9131 > grad 0x8000_8000_8000_8000.
/// n = 4: ranks 3, 2, 1, 0: factors .75, .5, .25, 0.
#[test]
fn four_tiers_by_hand() {
    let table = table_of(&[
        config(
            T0,
            &[("PriorityFlags", "LEVEL_BASED"), ("PriorityLevels", "4")],
        ),
        account(T0, "L", "root", "1"),
        account(T0, "M", "root", "1"),
        account(T0, "bio", "L", "1"),
        account(T0, "bob", "bio", "1"),
        user(T0, "grad", "bob", "1"),
        user(T0, "prof", "bob", "1"),
        user(T0, "zed", "bob", "0"),
        user(T0, "m1", "M", "1"),
        usage(T0, "bob", "grad", 30.25),
        usage(T0, "bob", "prof", 24.75),
        usage(T0, "M", "m1", 45.0),
    ]);
    assert_eq!(table.algorithm, fairflow_model::Algorithm::LevelBased);
    let cells = |account: &str, user: Option<&str>| {
        let r = row(&table, account, user);
        (r.level_value, r.fairshare_raw)
    };
    assert_eq!(
        cells("L", None),
        (Some(0x8000_0000_0000_0000), Some(0x8000_0000_0000_0000))
    );
    assert_eq!(
        cells("M", None),
        (Some(0x9131_0000_0000_0000), Some(0x9131_0000_0000_0000))
    );
    assert_eq!(
        cells("bio", None),
        (Some(0x0000_8000_0000_0000), Some(0x8000_8000_0000_0000))
    );
    assert_eq!(
        cells("bob", None),
        (Some(0x0000_0000_8000_0000), Some(0x8000_8000_8000_0000))
    );
    assert_eq!(
        cells("bob", Some("grad")),
        (Some(0x8000), Some(0x8000_8000_8000_8000))
    );
    assert_eq!(
        cells("bob", Some("prof")),
        (Some(0x9131), Some(0x8000_8000_8000_9131))
    );
    assert_eq!(
        cells("bob", Some("zed")),
        (Some(0xFFFF), Some(0x8000_8000_8000_FFFF))
    );
    assert_eq!(
        cells("M", Some("m1")),
        (Some(0x0000_8000_0000_0000), Some(0x9131_8000_0000_0000))
    );
    for (account, user, factor) in [
        ("M", "m1", 0.75),
        ("bob", "zed", 0.5),
        ("bob", "prof", 0.25),
        ("bob", "grad", 0.0),
    ] {
        assert_eq!(
            row(&table, account, Some(user)).fairshare,
            Some(factor),
            "{user}"
        );
    }
    // The local shares and usage ratios sshare shows.
    let eps = 1e-12;
    assert_close(row(&table, "M", None).norm_shares, 0.5, eps, "S M");
    assert_close(row(&table, "M", None).effective_usage, 0.45, eps, "U M");
    assert_close(
        row(&table, "bob", Some("grad")).norm_usage,
        0.3025,
        eps,
        "UN grad",
    );
    let root = &table.rows[0];
    assert_eq!(
        (root.level_value, root.fairshare_raw, root.fairshare),
        (None, None, None)
    );
}

/// PriorityLevels=2 (32-bit buckets, max 0xFFFF_FFFF):
/// root -> a (1) -> b (1) -> u (1); a -> p (parent user); a -> pa (parent
/// account) -> w (1). w moves up into a's group {b, p, pa, w}, level 1 + 0 +
/// 0 + 1 = 2. Usage u 11, w 9: a 20.
/// - a: only child of root, S 1, U 1, ratio 1: 1 + (2^32 - 2) / 2 = 2^31 =
///   0x8000_0000, shifted 32.
/// - b: S .5, U .55, S' .55, ratio 1: 0x8000_0000 at bits 0..31.
/// - p: the maximum bucket 0xFFFF_FFFF. pa: 0 bits (raw = a's).
/// - w: S .5, U .45, ratio 9/11: 1 + 0.56715626 * 4294967294 = 2435917593.002
///   -> 0x9131_2719.
/// - u: fair-share depth 2 >= 2 levels: 0 bits, raw = b's.
///
/// Users: p 0x8000_0000_FFFF_FFFF > w 0x8000_0000_9131_2719 >
/// u 0x8000_0000_8000_0000: n = 3, factors 2/3, 1/3, 0.
#[test]
fn parent_associations_and_levels_deeper_than_configured() {
    let table = table_of(&[
        config(
            T0,
            &[("PriorityFlags", "LEVEL_BASED"), ("PriorityLevels", "2")],
        ),
        account(T0, "a", "root", "1"),
        account(T0, "b", "a", "1"),
        account(T0, "pa", "a", "parent"),
        user(T0, "u", "b", "1"),
        user(T0, "p", "a", "parent"),
        user(T0, "w", "pa", "1"),
        usage(T0, "b", "u", 11.0),
        usage(T0, "pa", "w", 9.0),
    ]);
    let cells = |account: &str, user: Option<&str>| {
        let r = row(&table, account, user);
        (r.level_value, r.fairshare_raw)
    };
    assert_eq!(
        cells("a", None),
        (Some(0x8000_0000_0000_0000), Some(0x8000_0000_0000_0000))
    );
    assert_eq!(
        cells("b", None),
        (Some(0x8000_0000), Some(0x8000_0000_8000_0000))
    );
    assert_eq!(
        cells("a", Some("p")),
        (Some(0xFFFF_FFFF), Some(0x8000_0000_FFFF_FFFF))
    );
    assert_eq!(cells("pa", None), (Some(0), Some(0x8000_0000_0000_0000)));
    assert_eq!(
        cells("pa", Some("w")),
        (Some(0x9131_2719), Some(0x8000_0000_9131_2719))
    );
    assert_eq!(
        cells("b", Some("u")),
        (Some(0), Some(0x8000_0000_8000_0000))
    );
    assert_eq!(row(&table, "a", Some("p")).fairshare, Some(2.0 / 3.0));
    assert_eq!(row(&table, "pa", Some("w")).fairshare, Some(1.0 / 3.0));
    assert_eq!(row(&table, "b", Some("u")).fairshare, Some(0.0));
}

/// Equal raw values share a rank: root -> A (1) -> x (1), y (1), z (1) with
/// usage 1, 1, 2 (PriorityLevels 4). x and y have the same bucket, z a lower
/// one. n = 3: x and y rank 2 (2/3), z rank 0.
#[test]
fn equal_raw_values_share_a_rank() {
    let table = table_of(&[
        config(T0, &[("PriorityFlags", "LEVEL_BASED")]),
        account(T0, "A", "root", "1"),
        user(T0, "x", "A", "1"),
        user(T0, "y", "A", "1"),
        user(T0, "z", "A", "1"),
        usage(T0, "A", "x", 1.0),
        usage(T0, "A", "y", 1.0),
        usage(T0, "A", "z", 2.0),
    ]);
    assert_eq!(row(&table, "A", Some("x")).fairshare, Some(2.0 / 3.0));
    assert_eq!(row(&table, "A", Some("y")).fairshare, Some(2.0 / 3.0));
    assert_eq!(row(&table, "A", Some("z")).fairshare, Some(0.0));
}
