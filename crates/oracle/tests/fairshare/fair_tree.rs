//! Fair Tree: per-level values, the global ranking, the three documented tie
//! rules with exact ties (`FairTreeTies=documented`), zero-share users, `FairShare=parent` users and
//! accounts, and independence from input order.

use std::collections::BTreeMap;

use super::support::*;
use fairflow_oracle::fairshare;

fn factors(lines: &[String]) -> BTreeMap<(String, String), f64> {
    fairshare::user_factors(replay(lines).state())
}

/// `FairTreeTies=documented`: the tie rules of Slurm's documentation.
fn documented() -> String {
    config(T0, &[("FairTreeTies", "documented")])
}

fn factor(factors: &BTreeMap<(String, String), f64>, account: &str, user: &str) -> f64 {
    factors[&(account.to_string(), user.to_string())]
}

/// root -> A (3) -> a1 (1), a2 (1), A2 (2) -> a3 (1), a4 (1);
/// root -> B (1) -> b1 (1), b2 (0), b3 (1).
/// Usage a1 12, a2 28, a3 15, a4 5, b1 40: root 100, A 60, A2 20, B 40.
/// Root's group (level 4): A: S .75, U .6, LF 1.25; B: S .25, U .4, LF .625.
/// A's group (level 4): A2 S .5, U 20/60, LF 1.5; a1 S .25, U .2, LF 1.25;
///   a2 S .25, U 28/60, LF 15/28 = 0.535714.
/// A2's group (level 2): a4 S .5, U .25, LF 2; a3 S .5, U .75, LF 2/3.
/// B's group (level 2): b3 S .5, U 0, LF inf; b1 S .5, U 1, LF .5; b2 S 0, LF 0.
/// N = 7. Visit A (LF 1.25) before B: A2 first (1.5): a4 7, a3 6; then a1 5,
/// a2 4; then B: b3 3, b1 2, b2 1. Factors rank / 7.
fn ranked_tree() -> Vec<String> {
    vec![
        account(T0, "A", "root", "3"),
        account(T0, "B", "root", "1"),
        account(T0, "A2", "A", "2"),
        user(T0, "a1", "A", "1"),
        user(T0, "a2", "A", "1"),
        user(T0, "a3", "A2", "1"),
        user(T0, "a4", "A2", "1"),
        user(T0, "b1", "B", "1"),
        user(T0, "b2", "B", "0"),
        user(T0, "b3", "B", "1"),
        usage(T0, "A", "a1", 12.0),
        usage(T0, "A", "a2", 28.0),
        usage(T0, "A2", "a3", 15.0),
        usage(T0, "A2", "a4", 5.0),
        usage(T0, "B", "b1", 40.0),
    ]
}

#[test]
fn a_hand_ranked_tree() {
    let lines = ranked_tree();
    let table = table_of(&lines);
    assert_eq!(table.algorithm, fairflow_model::Algorithm::FairTree);
    let eps = 1e-12;
    for (account, user, shares, effective, level_fs) in [
        ("A", None, 0.75, 0.6, 1.25),
        ("B", None, 0.25, 0.4, 0.625),
        ("A2", None, 0.5, 1.0 / 3.0, 1.5),
        ("A", Some("a1"), 0.25, 0.2, 1.25),
        ("A", Some("a2"), 0.25, 28.0 / 60.0, 15.0 / 28.0),
        ("A2", Some("a3"), 0.5, 0.75, 2.0 / 3.0),
        ("A2", Some("a4"), 0.5, 0.25, 2.0),
        ("B", Some("b1"), 0.5, 1.0, 0.5),
        ("B", Some("b2"), 0.0, 0.0, 0.0),
    ] {
        let r = row(&table, account, user);
        let what = format!("{account}/{user:?}");
        assert_close(r.norm_shares, shares, eps, &format!("S {what}"));
        assert_close(r.effective_usage, effective, eps, &format!("U {what}"));
        assert_close(r.level_fs, level_fs, eps, &format!("LF {what}"));
    }
    assert_eq!(row(&table, "B", Some("b3")).level_fs, Some(f64::INFINITY));
    // NormUsage is usage / root usage: a2 28/100.
    assert_close(row(&table, "A", Some("a2")).norm_usage, 0.28, eps, "UN a2");
    for (account, user, rank) in [
        ("A2", "a4", 7.0),
        ("A2", "a3", 6.0),
        ("A", "a1", 5.0),
        ("A", "a2", 4.0),
        ("B", "b3", 3.0),
        ("B", "b1", 2.0),
        ("B", "b2", 1.0),
    ] {
        assert_eq!(
            row(&table, account, Some(user)).fairshare,
            Some(rank / 7.0),
            "{user}"
        );
    }
    // Root row: NormShares 0, EffectvUsage 1, the rest empty.
    let root = &table.rows[0];
    assert_eq!(
        (root.norm_shares, root.norm_usage, root.effective_usage),
        (Some(0.0), None, Some(1.0))
    );
    assert_eq!(
        (root.fairshare, root.level_fs, root.raw_shares),
        (None, None, None)
    );
    assert_eq!(root.raw_usage, 100);
    // Accounts have no FairShare.
    assert_eq!(row(&table, "A", None).fairshare, None);
    assert_eq!(factor(&factors(&lines), "B", "b2"), 1.0 / 7.0);
}

/// Rule 1: root -> A (1) -> u1, u2, u3 (1 each); usage 1, 1, 2: LF u1 = u2 =
/// (1/3) / (1/4) = 4/3, u3 = (1/3) / (1/2) = 2/3. N = 3: u1 and u2 share rank
/// 3 (1.0); competition ranking skips 2; u3 gets 1 (1/3).
#[test]
fn tie_rule_1_tied_sibling_users_share_a_rank() {
    let f = factors(&[
        account(T0, "A", "root", "1"),
        user(T0, "u1", "A", "1"),
        user(T0, "u2", "A", "1"),
        user(T0, "u3", "A", "1"),
        usage(T0, "A", "u1", 1.0),
        usage(T0, "A", "u2", 1.0),
        usage(T0, "A", "u3", 2.0),
    ]);
    assert_eq!(factor(&f, "A", "u1"), 1.0);
    assert_eq!(factor(&f, "A", "u2"), 1.0);
    assert_eq!(factor(&f, "A", "u3"), 1.0 / 3.0);
}

/// Exact ties where floating point would split them (notes §3.2: test24.4's
/// 22/17): a group with shares d1 80, d2 40, d3 50 (level 170) and usage
/// 65, 20, 25 (parent 110). LF d2 = (40/170) / (20/110) = 22/17 and
/// LF d3 = (50/170) / (25/110) = 22/17 exactly, though the f64 quotients
/// differ in the last bit; d1 = (80/170) / (65/110) = 0.796. N = 3: d2 and d3
/// share rank 3 (1.0), d1 gets 1 (1/3).
#[test]
fn ties_are_exact_rationals_not_floating_point() {
    let f = factors(&[
        documented(),
        account(T0, "D", "root", "1"),
        user(T0, "d1", "D", "80"),
        user(T0, "d2", "D", "40"),
        user(T0, "d3", "D", "50"),
        usage(T0, "D", "d1", 65.0),
        usage(T0, "D", "d2", 20.0),
        usage(T0, "D", "d3", 25.0),
    ]);
    assert_eq!(factor(&f, "D", "d2"), 1.0);
    assert_eq!(factor(&f, "D", "d3"), 1.0);
    assert_eq!(factor(&f, "D", "d1"), 1.0 / 3.0);
}

/// The notes' §3.2 [derived] example: root -> X (10), Y (10), usage 10 each:
/// LF X = LF Y = .5 / .5 = 1, a tie. X: x1 (1 share, usage 1; LF .5 / .1 = 5),
/// x2 (1, 9; LF .5 / .9 = 0.556). Y: y1, y2 (1, 5 each; LF .5 / .5 = 1).
/// Rule 2 merges X's and Y's children: x1 (5), y1 (1), y2 (1), x2 (0.556).
/// N = 4: x1 4 -> 1.0; y1 3 -> .75; y2 tied 3 -> .75; x2 1 -> .25.
fn xy_example(x: &str, y: &str, reversed: bool) -> Vec<String> {
    let mut lines = vec![
        documented(),
        account(T0, x, "root", "10"),
        account(T0, y, "root", "10"),
        user(T0, "x1", x, "1"),
        user(T0, "x2", x, "1"),
        user(T0, "y1", y, "1"),
        user(T0, "y2", y, "1"),
        usage(T0, x, "x1", 1.0),
        usage(T0, x, "x2", 9.0),
        usage(T0, y, "y1", 5.0),
        usage(T0, y, "y2", 5.0),
    ];
    if reversed {
        lines.reverse();
        // Accounts and users must exist before use: move creations first.
        lines.sort_by_key(|l| {
            !l.contains("\"op\":\"account\"") as u8 * 2 + !l.contains("\"op\":\"user\"") as u8
        });
    }
    lines
}

#[test]
fn tie_rule_2_tied_accounts_merge_their_children() {
    let f = factors(&xy_example("X", "Y", false));
    assert_eq!(factor(&f, "X", "x1"), 1.0);
    assert_eq!(factor(&f, "Y", "y1"), 0.75);
    assert_eq!(factor(&f, "Y", "y2"), 0.75);
    assert_eq!(factor(&f, "X", "x2"), 0.25);
}

#[test]
fn permuting_the_input_changes_nothing() {
    let expected = factors(&xy_example("X", "Y", false));
    // The same structure with the accounts' names swapped, so that the
    // account holding x1 and x2 comes second among root's children.
    let swapped = factors(&xy_example("Y", "X", false));
    let rename = |(account, user): &(String, String)| {
        let account = if account == "X" { "Y" } else { "X" };
        (account.to_string(), user.clone())
    };
    let swapped: BTreeMap<_, _> = swapped.iter().map(|(k, v)| (rename(k), *v)).collect();
    assert_eq!(swapped, expected);
    // Events in another order.
    let reversed = factors(&xy_example("X", "Y", true));
    assert_eq!(reversed, expected);
    // The ranked tree, built in reverse creation order, gives the same table.
    let mut lines = ranked_tree();
    lines.insert(0, documented());
    let (creations, usages) = lines.split_at_mut(11);
    creations[1..3].reverse();
    creations[4..].reverse();
    usages.reverse();
    let mut forward = ranked_tree();
    forward.insert(0, documented());
    assert_eq!(table_of(&lines), table_of(&forward));
}

/// Rule 3: root -> A (1) -> u (1), v (1), Sub (1) -> s1 (1), s2 (1).
/// Usage u 2, v 4, s1 2, s2 0: A 8. A's group (level 3): u LF (1/3) / (2/8)
/// = 4/3, Sub (1/3) / (2/8) = 4/3 (tied with u), v (1/3) / (4/8) = 2/3.
/// Sub's group: s2 LF inf (no usage), s1 .5 / 1 = .5.
/// N = 4: u 4 (1.0); Sub entered tied: s2 takes u's rank 4 (1.0); s1 gets the
/// next untied rank, 2 (.5); v 1 (.25).
#[test]
fn tie_rule_3_a_user_tied_with_an_account() {
    let f = factors(&[
        account(T0, "A", "root", "1"),
        account(T0, "Sub", "A", "1"),
        user(T0, "u", "A", "1"),
        user(T0, "v", "A", "1"),
        user(T0, "s1", "Sub", "1"),
        user(T0, "s2", "Sub", "1"),
        usage(T0, "A", "u", 2.0),
        usage(T0, "A", "v", 4.0),
        usage(T0, "Sub", "s1", 2.0),
    ]);
    assert_eq!(factor(&f, "A", "u"), 1.0);
    assert_eq!(factor(&f, "Sub", "s2"), 1.0);
    assert_eq!(factor(&f, "Sub", "s1"), 0.5);
    assert_eq!(factor(&f, "A", "v"), 0.25);
}

/// root -> A (1) -> p (parent user), q (1), PA (parent account) -> r (1), s (1);
/// root -> B (1) -> b (1). Usage p 5, q 1, r 2, s 3, b 3: root 14, A 11, PA 5.
/// PA's users move up into A's group {p, q, PA, r, s}, level 0 + 1 + 0 + 1 + 1 = 3.
/// Root's group: A S .5, U 11/14, LF 0.636; B S .5, U 3/14, LF 2.333: B first.
/// B's group: b LF 1 / 1 = 1. A's group: p inf; q (1/3) / (1/11) = 11/3;
/// r (1/3) / (2/11) = 11/6; s (1/3) / (3/11) = 11/9; PA not ranked.
/// N = 5: b 5 (1.0), p 4 (.8), q 3 (.6), r 2 (.4), s 1 (.2).
#[test]
fn fairshare_parent_users_and_accounts() {
    let lines = vec![
        account(T0, "A", "root", "1"),
        account(T0, "B", "root", "1"),
        account(T0, "PA", "A", "parent"),
        user(T0, "p", "A", "parent"),
        user(T0, "q", "A", "1"),
        user(T0, "r", "PA", "1"),
        user(T0, "s", "PA", "1"),
        user(T0, "b", "B", "1"),
        usage(T0, "A", "p", 5.0),
        usage(T0, "A", "q", 1.0),
        usage(T0, "PA", "r", 2.0),
        usage(T0, "PA", "s", 3.0),
        usage(T0, "B", "b", 3.0),
    ];
    let table = table_of(&lines);
    for (account, user, rank) in [
        ("B", "b", 5.0),
        ("A", "p", 4.0),
        ("A", "q", 3.0),
        ("PA", "r", 2.0),
        ("PA", "s", 1.0),
    ] {
        assert_eq!(
            row(&table, account, Some(user)).fairshare,
            Some(rank / 5.0),
            "{user}"
        );
    }
    let eps = 1e-12;
    // The parent account: not ranked (LevelFS empty); NormShares its
    // fs-parent A's shares / level_shares = 1/2; EffectvUsage 5/11.
    let pa = row(&table, "PA", None);
    assert_eq!(pa.level_fs, None);
    assert_close(pa.norm_shares, 0.5, eps, "S PA");
    assert_close(pa.effective_usage, 5.0 / 11.0, eps, "U PA");
    // The parent user: ranked with LevelFS inf, but the cell is empty as
    // Slurm's sshare prints every `parent` row's (test24.4's uD1);
    // NormShares A's 1/2, EffectvUsage 5/11.
    let p = row(&table, "A", Some("p"));
    assert_eq!(p.level_fs, None);
    assert_close(p.norm_shares, 0.5, eps, "S p");
    assert_close(p.effective_usage, 5.0 / 11.0, eps, "U p");
    // r, moved up: S 1/3, U 2/11, LF 11/6.
    let r = row(&table, "PA", Some("r"));
    assert_close(r.norm_shares, 1.0 / 3.0, eps, "S r");
    assert_close(r.effective_usage, 2.0 / 11.0, eps, "U r");
    assert_close(r.level_fs, 11.0 / 6.0, eps, "LF r");
}

/// Zero-share and idle users are ranked too: root -> A (1) -> z (0, usage 0),
/// i (1, idle), w (1, usage 1). LF: i inf, w .5 / 1 = .5, z 0 (S = 0 wins
/// over U = 0). N = 3: i 3 (1.0), w 2 (2/3), z 1 (1/3), never 0.
#[test]
fn zero_share_and_idle_users_are_ranked() {
    let f = factors(&[
        account(T0, "A", "root", "1"),
        user(T0, "z", "A", "0"),
        user(T0, "i", "A", "1"),
        user(T0, "w", "A", "1"),
        usage(T0, "A", "w", 1.0),
    ]);
    assert_eq!(factor(&f, "A", "i"), 1.0);
    assert_eq!(factor(&f, "A", "w"), 2.0 / 3.0);
    assert_eq!(factor(&f, "A", "z"), 1.0 / 3.0);
}

/// A small deterministic generator (64-bit LCG, Knuth's constants).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

/// Random trees with many ties (shares and usage from tiny ranges, `parent`
/// accounts and users) give the same factors whatever the names, hence the
/// sibling order, and whatever the order of the usage events: Fair Tree's
/// ranking depends only on the tree.
#[test]
fn random_trees_rank_independently_of_sibling_order() {
    let mut rng = Lcg(0x5eed);
    for case in 0..150 {
        let n_accounts = 1 + rng.below(6) as usize;
        let n_users = 1 + rng.below(8) as usize;
        let shares = |rng: &mut Lcg| match rng.below(7) {
            0 => "parent".to_string(),
            v => (v % 3).to_string(),
        };
        // Account i's parent is root or an earlier account.
        let accounts: Vec<(Option<usize>, String)> = (0..n_accounts)
            .map(|i| {
                let parent = (rng.below(2) == 0 && i > 0).then(|| rng.below(i as u64) as usize);
                (parent, shares(&mut rng))
            })
            .collect();
        let users: Vec<(Option<usize>, String, u64)> = (0..n_users)
            .map(|_| {
                let account = (rng.below(4) != 0).then(|| rng.below(n_accounts as u64) as usize);
                (account, shares(&mut rng), rng.below(4))
            })
            .collect();
        // Two namings: identity and a rotation that reorders every sibling list.
        let lines = |rotation: usize, reverse_usage: bool| {
            let account_name = move |i: usize| format!("acc{:02}", (i + rotation) % n_accounts);
            let user_name = move |i: usize| format!("usr{:02}", (i + rotation) % n_users);
            let parent_name = |p: Option<usize>| p.map_or("root".to_string(), account_name);
            let mut lines: Vec<String> = accounts
                .iter()
                .enumerate()
                .map(|(i, (p, s))| account(T0, &account_name(i), &parent_name(*p), s))
                .collect();
            let mut usages = Vec::new();
            for (i, (a, s, amount)) in users.iter().enumerate() {
                lines.push(user(T0, &user_name(i), &parent_name(*a), s));
                if *amount > 0 {
                    usages.push(usage(T0, &parent_name(*a), &user_name(i), *amount as f64));
                }
            }
            if reverse_usage {
                usages.reverse();
            }
            lines.extend(usages);
            (lines, account_name, user_name)
        };
        let factors_by_logical_user = |rotation: usize, reverse: bool| {
            let (lines, _, user_name) = lines(rotation, reverse);
            let factors = factors(&lines);
            (0..n_users)
                .map(|i| {
                    let name = user_name(i);
                    let (_, f) = factors.iter().find(|((_, u), _)| *u == name).unwrap();
                    *f
                })
                .collect::<Vec<f64>>()
        };
        let expected = factors_by_logical_user(0, false);
        assert!(
            expected.iter().all(|f| *f > 0.0 && *f <= 1.0),
            "case {case}: {expected:?}"
        );
        for rotation in 1..n_accounts.max(n_users) {
            assert_eq!(
                factors_by_logical_user(rotation, rotation % 2 == 1),
                expected,
                "case {case}, rotation {rotation}"
            );
        }
    }
}
