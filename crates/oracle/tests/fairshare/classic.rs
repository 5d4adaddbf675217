//! The classic algorithm (`NO_FAIR_TREE`) and `DEPTH_OBLIVIOUS`, checked
//! against the seed document's worked example and hand arithmetic.

use super::support::*;
use fairflow_model::Shares;
use fairflow_oracle::fairshare;

fn classic() -> String {
    config(T0, &[("PriorityFlags", "NO_FAIR_TREE")])
}

#[test]
fn the_seed_example_effective_usage_and_factors() {
    let table = table_of(&seed_tree("NO_FAIR_TREE"));
    let eps = 1e-12;
    // Normalized shares: A .4, B .4*30/40 = .3, C .4*10/40 = .1, D .6,
    // E .6*25/60 = .25, F .6*35/60 = .35; users 1 and 4, 5 as their accounts,
    // users 2 and 3 half of C's: .05.
    for (account, user, shares) in [
        ("A", None, 0.4),
        ("B", None, 0.3),
        ("C", None, 0.1),
        ("D", None, 0.6),
        ("E", None, 0.25),
        ("F", None, 0.35),
        ("B", Some("user1"), 0.3),
        ("C", Some("user2"), 0.05),
        ("C", Some("user3"), 0.05),
        ("E", Some("user4"), 0.25),
        ("F", Some("user5"), 0.35),
    ] {
        assert_close(
            row(&table, account, user).norm_shares,
            shares,
            eps,
            &format!("NormShares {account}/{user:?}"),
        );
    }
    // Effective usage, from the document:
    // A = .45, D = .25 (top tier: actual usage);
    // B = .2 + (.45 - .2) * 30/40 = .3875; C = .25 + (.45 - .25) * 10/40 = .3;
    // E = .25 + 0 = .25; F = 0 + .25 * 35/60 = .1458333...;
    // user1 = .2 + (.3875 - .2) * 1/1 = .3875; user2 = .25 + (.3 - .25)/2 = .275;
    // user3 = 0 + .3/2 = .15; user4 = .25; user5 = .1458333...
    for (account, user, effective) in [
        ("A", None, 0.45),
        ("D", None, 0.25),
        ("B", None, 0.3875),
        ("C", None, 0.3),
        ("E", None, 0.25),
        ("F", None, 0.25 * 35.0 / 60.0),
        ("B", Some("user1"), 0.3875),
        ("C", Some("user2"), 0.275),
        ("C", Some("user3"), 0.15),
        ("E", Some("user4"), 0.25),
        ("F", Some("user5"), 0.25 * 35.0 / 60.0),
    ] {
        assert_close(
            row(&table, account, user).effective_usage,
            effective,
            eps,
            &format!("EffectvUsage {account}/{user:?}"),
        );
    }
    // The document's factors, to its six decimals.
    for (account, user, factor) in [
        ("B", "user1", "0.408479"),
        ("C", "user2", "0.022097"),
        ("C", "user3", "0.125000"),
        ("E", "user4", "0.500000"),
        ("F", "user5", "0.749154"),
    ] {
        assert_6dp(
            row(&table, account, Some(user)).fairshare,
            factor,
            &format!("FairShare {user}"),
        );
    }
    // Accounts show their own F = 2^(-UE/S), as Slurm 22.05 prints them:
    // A 2^(-.45/.4) = 2^-1.125 = 0.458502; B 2^(-.3875/.3) = 0.408479 (as
    // user1); C 2^(-.3/.1) = 0.125; D 2^(-.25/.6) = 2^(-5/12) = 0.749154;
    // E 2^(-.25/.25) = 0.5; F 2^(-(.25 * 35/60)/.35) = 2^(-5/12) = 0.749154.
    for (account, factor) in [
        ("A", "0.458502"),
        ("B", "0.408479"),
        ("C", "0.125000"),
        ("D", "0.749154"),
        ("E", "0.500000"),
        ("F", "0.749154"),
    ] {
        assert_6dp(
            row(&table, account, None).fairshare,
            factor,
            &format!("FairShare {account}"),
        );
    }
    // Classic shows no LevelFS.
    assert!(table.rows.iter().all(|r| r.level_fs.is_none()));
    // NormUsage and RawUsage: user1 .2 of 1000; A 450 in all.
    assert_close(
        row(&table, "B", Some("user1")).norm_usage,
        0.2,
        eps,
        "UN user1",
    );
    assert_close(row(&table, "A", None).norm_usage, 0.45, eps, "UN A");
    assert_eq!(row(&table, "A", None).raw_usage, 450);
    assert_eq!(row(&table, "root", None).raw_usage, 1000);
    // The root row: RawShares and NormUsage empty, NormShares and EffectvUsage 1.
    let root = &table.rows[0];
    assert_eq!(root.account, "root");
    assert_eq!(root.raw_shares, None);
    assert_eq!(root.norm_shares, Some(1.0));
    assert_eq!(root.norm_usage, None);
    assert_eq!(root.effective_usage, Some(1.0));
    // Root: UE = S = 1, so 2^-1 = 0.5 (a real Slurm 22.05 prints 0.500000).
    assert_eq!(root.fairshare, Some(0.5));
    assert_eq!(row(&table, "A", None).raw_shares, Some(Shares::Value(40)));

    // user_factors agrees with the table.
    let replayed = replay(&seed_tree("NO_FAIR_TREE"));
    let factors = fairshare::user_factors(replayed.state());
    assert_eq!(factors.len(), 5);
    let user5 = factors[&("F".to_string(), "user5".to_string())];
    assert_eq!(Some(user5), row(&table, "F", Some("user5")).fairshare);
}

#[test]
fn tree_order_and_depths() {
    let table = table_of(&seed_tree("NO_FAIR_TREE"));
    let order: Vec<(String, Option<String>, usize)> = table
        .rows
        .iter()
        .map(|r| (r.account.clone(), r.user.clone(), r.depth))
        .collect();
    let expect = |a: &str, u: Option<&str>, d: usize| (a.to_string(), u.map(String::from), d);
    assert_eq!(
        order,
        vec![
            expect("root", None, 0),
            expect("A", None, 1),
            expect("B", None, 2),
            expect("B", Some("user1"), 3),
            expect("C", None, 2),
            expect("C", Some("user2"), 3),
            expect("C", Some("user3"), 3),
            expect("D", None, 1),
            expect("E", None, 2),
            expect("E", Some("user4"), 3),
            expect("F", None, 2),
            expect("F", Some("user5"), 3),
        ]
    );
}

/// root -> a (1) -> u (1); root -> b (1) -> v (1); usage u 3, v 1.
/// UN: a = u = .75, b = v = .25; S: a = u = .5. UE_a = .75 (top tier);
/// UE_u = .75 + (.75 - .75) * 1/1 = .75. F_u = 2^(-(.75/.5)/d):
/// d = 1: 2^-1.5 = 0.353553; d = 3: 2^-0.5 = 0.707107.
#[test]
fn dampening_factor_divides_the_exponent() {
    let lines = |d: &str| {
        vec![
            config(
                T0,
                &[
                    ("PriorityFlags", "NO_FAIR_TREE"),
                    ("FairShareDampeningFactor", d),
                ],
            ),
            account(T0, "a", "root", "1"),
            account(T0, "b", "root", "1"),
            user(T0, "u", "a", "1"),
            user(T0, "v", "b", "1"),
            usage(T0, "a", "u", 3.0),
            usage(T0, "b", "v", 1.0),
        ]
    };
    let one = table_of(&lines("1"));
    let three = table_of(&lines("3"));
    assert_6dp(row(&one, "a", Some("u")).fairshare, "0.353553", "d=1");
    assert_6dp(row(&three, "a", Some("u")).fairshare, "0.707107", "d=3");
    // v: UE .25, S .5: d = 1: 2^-0.5 = 0.707107; d = 3: 2^(-1/6) = 0.890899.
    assert_6dp(row(&one, "b", Some("v")).fairshare, "0.707107", "v d=1");
    assert_6dp(row(&three, "b", Some("v")).fairshare, "0.890899", "v d=3");
}

/// root -> a (1) -> p (parent), q (1); root -> b (1) -> r (1); root -> z (parent user).
/// Usage p 2, q 1, r 1: root 4. a's fair-share group {p, q} has level_shares
/// 0 + 1 = 1. S: a = b = .5, q = 1/1 * .5 = .5, p copies a's .5, r = .5,
/// z copies root's 1.0. UE: a = .75, b = .25 (top tier);
/// q = .25 + (.75 - .25) * 1/1 = .75; p = a's .75; r = .25;
/// z (fs-parent root) = its own UN 0.
/// F: p uses a's UE and S: 2^-1.5 = 0.353553 (= a's); q 2^-1.5; r 2^-0.5;
/// z uses root's UE 1 and S 1: 2^-1 = 0.5.
#[test]
fn fairshare_parent_user_takes_its_accounts_values() {
    let table = table_of(&[
        classic(),
        account(T0, "a", "root", "1"),
        account(T0, "b", "root", "1"),
        user(T0, "p", "a", "parent"),
        user(T0, "q", "a", "1"),
        user(T0, "r", "b", "1"),
        user(T0, "z", "root", "parent"),
        usage(T0, "a", "p", 2.0),
        usage(T0, "a", "q", 1.0),
        usage(T0, "b", "r", 1.0),
    ]);
    let eps = 1e-12;
    assert_close(row(&table, "a", Some("p")).norm_shares, 0.5, eps, "S p");
    assert_close(row(&table, "a", Some("q")).norm_shares, 0.5, eps, "S q");
    assert_close(row(&table, "root", Some("z")).norm_shares, 1.0, eps, "S z");
    assert_close(
        row(&table, "a", Some("p")).effective_usage,
        0.75,
        eps,
        "UE p",
    );
    assert_close(
        row(&table, "a", Some("q")).effective_usage,
        0.75,
        eps,
        "UE q",
    );
    assert_close(
        row(&table, "root", Some("z")).effective_usage,
        0.0,
        eps,
        "UE z",
    );
    assert_close(row(&table, "a", Some("p")).norm_usage, 0.5, eps, "UN p");
    assert_6dp(row(&table, "a", Some("p")).fairshare, "0.353553", "F p");
    assert_6dp(row(&table, "a", Some("q")).fairshare, "0.353553", "F q");
    assert_6dp(row(&table, "b", Some("r")).fairshare, "0.707107", "F r");
    assert_6dp(row(&table, "root", Some("z")).fairshare, "0.500000", "F z");
    assert_eq!(row(&table, "a", Some("p")).raw_shares, Some(Shares::Parent));
}

/// root -> a (2) -> w (4), pa (parent) -> x (1), y (3); root -> b (2) -> v (1).
/// pa's children move up: a's fair-share group is {w, pa, x, y} with
/// level_shares 4 + 0 + 1 + 3 = 8. Usage x 1, y 1, w 2, v 4: root 8.
/// UN: a .5, b .5, pa .25, w .25, x .125, y .125, v .5.
/// S: a = b = .5; w = 4/8 * .5 = .25; x = 1/8 * .5 = .0625 (pa is skipped);
/// y = 3/8 * .5 = .1875; pa copies a's .5; v = .5.
/// UE: a = b = .5; w = .25 + (.5 - .25) * 4/8 = .375;
/// x = .125 + (.5 - .125) * 1/8 = .171875; y = .125 + .375 * 3/8 = .265625;
/// pa = a's .5; v = .5 + 0 = .5.
/// F: w 2^(-.375/.25) = 2^-1.5 = 0.353553; x 2^(-.171875/.0625) = 2^-2.75
/// = 0.148651; y 2^(-.265625/.1875) = 2^(-17/12) = 0.374577; v 2^-1 = 0.5.
#[test]
fn fairshare_parent_account_moves_its_children_up() {
    let table = table_of(&[
        classic(),
        account(T0, "a", "root", "2"),
        account(T0, "b", "root", "2"),
        account(T0, "pa", "a", "parent"),
        user(T0, "w", "a", "4"),
        user(T0, "x", "pa", "1"),
        user(T0, "y", "pa", "3"),
        user(T0, "v", "b", "1"),
        usage(T0, "pa", "x", 1.0),
        usage(T0, "pa", "y", 1.0),
        usage(T0, "a", "w", 2.0),
        usage(T0, "b", "v", 4.0),
    ]);
    let eps = 1e-12;
    for (account, user, shares, effective) in [
        ("a", Some("w"), 0.25, 0.375),
        ("pa", Some("x"), 0.0625, 0.171875),
        ("pa", Some("y"), 0.1875, 0.265625),
        ("pa", None, 0.5, 0.5),
        ("b", Some("v"), 0.5, 0.5),
    ] {
        let r = row(&table, account, user);
        assert_close(r.norm_shares, shares, eps, &format!("S {account}/{user:?}"));
        assert_close(
            r.effective_usage,
            effective,
            eps,
            &format!("UE {account}/{user:?}"),
        );
    }
    assert_close(row(&table, "pa", None).norm_usage, 0.25, eps, "UN pa");
    assert_6dp(row(&table, "a", Some("w")).fairshare, "0.353553", "F w");
    assert_6dp(row(&table, "pa", Some("x")).fairshare, "0.148651", "F x");
    assert_6dp(row(&table, "pa", Some("y")).fairshare, "0.374577", "F y");
    assert_6dp(row(&table, "b", Some("v")).fairshare, "0.500000", "F v");
}

/// root -> a (1) -> u1 (0), u2 (1); root -> b (1) -> z1 (0), z2 (0).
/// Usage u1 1, z1 1: root 2. S: u1 0, u2 1/1 * .5 = .5; z1, z2: b's group
/// has level_shares 0, so 0. UE: a = b = .5; u1 = .5 + 0 * 0/1 = .5;
/// u2 = 0 + (.5 - 0) * 1/1 = .5; z1 = z2 = b's .5 (level_shares 0).
/// F: u1 0 (S = 0), u2 2^(-.5/.5) = 0.5, z1 = z2 = 0.
#[test]
fn zero_shares_and_all_zero_sibling_shares() {
    let table = table_of(&[
        classic(),
        account(T0, "a", "root", "1"),
        account(T0, "b", "root", "1"),
        user(T0, "u1", "a", "0"),
        user(T0, "u2", "a", "1"),
        user(T0, "z1", "b", "0"),
        user(T0, "z2", "b", "0"),
        usage(T0, "a", "u1", 1.0),
        usage(T0, "b", "z1", 1.0),
    ]);
    let eps = 1e-12;
    assert_eq!(row(&table, "a", Some("u1")).fairshare, Some(0.0));
    assert_eq!(row(&table, "a", Some("u1")).norm_shares, Some(0.0));
    assert_close(
        row(&table, "a", Some("u1")).effective_usage,
        0.5,
        eps,
        "UE u1",
    );
    assert_close(
        row(&table, "a", Some("u2")).effective_usage,
        0.5,
        eps,
        "UE u2",
    );
    assert_6dp(row(&table, "a", Some("u2")).fairshare, "0.500000", "F u2");
    for z in ["z1", "z2"] {
        let r = row(&table, "b", Some(z));
        assert_eq!(r.norm_shares, Some(0.0), "S {z}");
        assert_close(r.effective_usage, 0.5, eps, &format!("UE {z}"));
        assert_eq!(r.fairshare, Some(0.0), "F {z}");
    }
}

/// With no usage at all every NormUsage and EffectvUsage is 0, so every
/// association with shares has F = 2^0 = 1 and a zero-share one has 0.
#[test]
fn zero_total_usage_gives_factor_one() {
    let table = table_of(&[
        classic(),
        account(T0, "a", "root", "3"),
        account(T0, "b", "a", "1"),
        user(T0, "u", "b", "5"),
        user(T0, "v", "a", "1"),
        user(T0, "n", "a", "0"),
    ]);
    assert_eq!(row(&table, "b", Some("u")).fairshare, Some(1.0));
    assert_eq!(row(&table, "a", Some("v")).fairshare, Some(1.0));
    assert_eq!(row(&table, "a", Some("n")).fairshare, Some(0.0));
    assert_eq!(row(&table, "b", Some("u")).norm_usage, Some(0.0));
    assert_eq!(row(&table, "b", Some("u")).effective_usage, Some(0.0));
    assert_eq!(row(&table, "root", None).raw_usage, 0);
}

/// DEPTH_OBLIVIOUS (notes §2.7) by hand on root -> A (1) -> a1 (1), a2 (1);
/// root -> B (1) -> b1 (1); usage a1 3, a2 1: root 4.
/// UN: A 1, B 0, a1 .75, a2 .25, b1 0. S: A = B = .5, a1 = a2 = .25, b1 = .5.
/// Top tier: UE_A = 1, UE_B = 0.
/// a1: ratio_p = 1 / .5 = 2; ratio_s = (.75 + .25) / .5 = 2;
///     ratio_l = (.75 / .25) / 2 = 1.5; ln 2 * ln 1.5 > 0, k = 1;
///     UE = 2 * 1.5 * .25 = .75; F = 2^(-3) = 0.125.
/// a2: ratio_l = (.25 / .25) / 2 = .5; ln 2 * ln .5 < 0, so
///     k = 1 / (1 + (5 ln 2)^2) = 1 / (1 + 3.4657359^2) = 1 / 13.0113253 = 0.0768561;
///     UE = 2 * .5^k * .25 = .5 * 2^-0.0768561 = .5 * 0.9481215 = 0.4740608;
///     F = 2^(-0.4740608 / .25) = 2^-1.8962430 = 0.268642.
/// b1: UE_p = 0, so UE = UN = 0 and F = 1.
/// (Classic would give a1 UE .75 + .25 * .5 = .875, F 2^-3.5 = 0.088388.)
#[test]
fn depth_oblivious_by_hand() {
    let lines = |flags: &str| {
        vec![
            config(T0, &[("PriorityFlags", flags)]),
            account(T0, "A", "root", "1"),
            account(T0, "B", "root", "1"),
            user(T0, "a1", "A", "1"),
            user(T0, "a2", "A", "1"),
            user(T0, "b1", "B", "1"),
            usage(T0, "A", "a1", 3.0),
            usage(T0, "A", "a2", 1.0),
        ]
    };
    let table = table_of(&lines("DEPTH_OBLIVIOUS"));
    assert_eq!(table.algorithm, fairflow_model::Algorithm::DepthOblivious);
    assert_close(
        row(&table, "A", Some("a1")).effective_usage,
        0.75,
        1e-12,
        "UE a1",
    );
    assert_6dp(row(&table, "A", Some("a1")).fairshare, "0.125000", "F a1");
    assert_close(
        row(&table, "A", Some("a2")).effective_usage,
        0.4740608,
        1e-6,
        "UE a2",
    );
    assert_6dp(row(&table, "A", Some("a2")).fairshare, "0.268642", "F a2");
    assert_eq!(row(&table, "B", Some("b1")).fairshare, Some(1.0));
    let classic = table_of(&lines("NO_FAIR_TREE"));
    assert_6dp(
        row(&classic, "A", Some("a1")).fairshare,
        "0.088388",
        "classic a1",
    );
}

/// Account rows of a `FairShare=parent` account (Slurm 22.05's sshare computes
/// every row's `F` from the row's own `UE` and `S`; a `parent` account holds its
/// fs-parent's). root -> A (1) -> P (parent) -> u (1); root -> B (1) -> v (1);
/// usage u 3, v 1 (root 4).
/// S: A = B = 1/2; P copies A's .5; u's fair-share group is A's children
/// {P (adds 0), u (1)}, so S_u = 1/1 * .5 = .5; v = .5.
/// UE: A = .75, B = .25 (top tier); P = UE_A = .75; u = .75 + (.75 - .75) = .75.
/// F: A = P = u = 2^(-.75/.5) = 2^-1.5 = 0.353553; B = v = 2^-0.5 = 0.707107;
/// root 2^-1 = 0.5. Dampening 2 halves each exponent: A 2^-0.75 = 0.594604,
/// root 2^-0.5 = 0.707107.
#[test]
fn account_rows_show_their_own_factor_parent_accounts_their_parents() {
    let tree = |damp: &str| {
        vec![
            config(
                T0,
                &[
                    ("PriorityFlags", "NO_FAIR_TREE"),
                    ("FairShareDampeningFactor", damp),
                ],
            ),
            account(T0, "A", "root", "1"),
            account(T0, "B", "root", "1"),
            account(T0, "P", "A", "parent"),
            user(T0, "u", "P", "1"),
            user(T0, "v", "B", "1"),
            usage(T0, "P", "u", 3.0),
            usage(T0, "B", "v", 1.0),
        ]
    };
    let table = table_of(&tree("1"));
    for (account, user, factor) in [
        ("root", None, "0.500000"),
        ("A", None, "0.353553"),
        ("P", None, "0.353553"),
        ("P", Some("u"), "0.353553"),
        ("B", None, "0.707107"),
        ("B", Some("v"), "0.707107"),
    ] {
        assert_6dp(
            row(&table, account, user).fairshare,
            factor,
            &format!("FairShare {account}/{user:?}"),
        );
    }
    let damped = table_of(&tree("2"));
    assert_6dp(row(&damped, "A", None).fairshare, "0.594604", "A, d = 2");
    assert_6dp(
        row(&damped, "root", None).fairshare,
        "0.707107",
        "root, d = 2",
    );
}
