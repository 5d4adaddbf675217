//! Fair Tree's ties as Slurm's code decides them (`FairTreeTies=slurm`, the
//! default): Slurm's own test (`testsuite/expect/test24.4`), the notes'
//! §3.2 X/Y example under both rules, and tied accounts walked newest first.

use std::collections::BTreeMap;

use super::support::*;
use fairflow_oracle::fairshare;

fn factors(lines: &[String]) -> BTreeMap<(String, String), f64> {
    fairshare::user_factors(replay(lines).state())
}

fn factor(factors: &BTreeMap<(String, String), f64>, account: &str, user: &str) -> f64 {
    factors[&(account.to_string(), user.to_string())]
}

/// The lines `testsuite/expect/test24.4` expects from `sshare -l -p` on its
/// tree (`datasets/events/test24_4.jsonl`), as written in that test: the
/// columns `Account|User|RawShares|NormShares|RawUsage|NormUsage|
/// EffectvUsage|FairShare|LevelFS|GrpTRESMins|TRESRunMins|`.
pub const TEST24_4_EXPECTED: [&str; 35] = [
    "root|||0.000000|240||1.000000||||cpu=0|",
    "root|u1|10|0.048077|0|0.000000|0.000000|1.000000|inf||cpu=0|",
    "root|u2|10|0.048077|10|0.041667|0.041667|0.666667|1.153846||cpu=0|",
    "aA||40|0.192308|45|0.187500|0.187500||1.025641||cpu=0|",
    "aAA||30|0.750000|20|0.083333|0.444444||1.687500||cpu=0|",
    "aAA|uAA1|1|1.000000|20|0.083333|1.000000|0.619048|1.000000||cpu=0|",
    "aAB||10|0.250000|25|0.104167|0.555556||0.450000||cpu=0|",
    "aAB|uAB1|1|0.500000|25|0.104167|1.000000|0.523810|0.500000||cpu=0|",
    "aAB|uAB2|1|0.500000|0|0.000000|0.000000|0.571429|inf||cpu=0|",
    "aB||60|0.288462|25|0.104167|0.104167||2.769231||cpu=0|",
    "aBA||25|0.416667|25|0.104167|1.000000||0.416667||cpu=0|",
    "aBA|uBA1|1|1.000000|25|0.104167|1.000000|0.714286|1.000000||cpu=0|",
    "aBB||35|0.583333|0|0.000000|0.000000||inf||cpu=0|",
    "aBB|uBB1|1|1.000000|0|0.000000|0.000000|0.761905|inf||cpu=0|",
    "aC||0|0.000000|30|0.125000|0.125000||0.000000||cpu=0|",
    "aC|uC1|0|0.000000|30|0.125000|1.000000|0.047619|0.000000||cpu=0|",
    "aD||50|0.240385|110|0.458333|0.458333||0.524476||cpu=0|",
    "aD|uD1|parent|0.240385|20|0.083333|0.181818|0.476190|||cpu=0|",
    "aD|uD2|40|0.235294|20|0.083333|0.181818|0.238095|1.294118||cpu=0|",
    "aD|uD3|50|0.294118|25|0.104167|0.227273|0.333333|1.294118||cpu=0|",
    "aDA||parent|0.240385|45|0.187500|0.409091||||cpu=0|",
    "aDA|uDA1|parent|0.240385|10|0.041667|0.090909|0.476190|||cpu=0|",
    "aDA|uDA2|30|0.176471|10|0.041667|0.090909|0.380952|1.941176||cpu=0|",
    "aDA|uDA3|50|0.294118|25|0.104167|0.227273|0.333333|1.294118||cpu=0|",
    "aE||10|0.048077|0|0.000000|0.000000||inf||cpu=0|",
    "aE|aE1|10|0.500000|0|0.000000|0.000000|1.000000|inf||cpu=0|",
    "aE|aE2|10|0.500000|0|0.000000|0.000000|1.000000|inf||cpu=0|",
    "aF||20|0.096154|0|0.000000|0.000000||inf||cpu=0|",
    "aF|uF1|10|0.333333|0|0.000000|0.000000|1.000000|inf||cpu=0|",
    "aF|uF2|20|0.666667|0|0.000000|0.000000|1.000000|inf||cpu=0|",
    "aG||8|0.038462|20|0.083333|0.083333||0.461538||cpu=0|",
    "aG|uG1|10|0.500000|10|0.041667|0.500000|0.190476|1.000000||cpu=0|",
    "aGA||10|0.500000|10|0.041667|0.500000||1.000000||cpu=0|",
    "aGA|uGA1|20|0.500000|4|0.016667|0.400000|0.190476|1.250000||cpu=0|",
    "aGA|uGA2|20|0.500000|6|0.025000|0.600000|0.095238|0.833333||cpu=0|",
];

/// The test24.4 tree's event log.
fn test24_4() -> Vec<String> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../datasets/events/test24_4.jsonl"
    );
    std::fs::read_to_string(path)
        .expect("datasets/events/test24_4.jsonl")
        .lines()
        .map(str::to_string)
        .collect()
}

/// One sshare row as test24.4's `-l -p` line: our nine columns, then the
/// empty GrpTRESMins, TRESRunMins `cpu=0` (no TRES minutes tracked) and `-p`'s
/// trailing `|`.
fn test24_4_line(row: &fairflow_model::report::FairshareRow) -> String {
    let cell = |v: Option<f64>| v.map(|v| format!("{v:.6}")).unwrap_or_default();
    format!(
        "{}|{}|{}|{}|{}|{}|{}|{}|{}||cpu=0|",
        row.account,
        row.user.clone().unwrap_or_default(),
        row.raw_shares.map(|s| s.to_string()).unwrap_or_default(),
        cell(row.norm_shares),
        row.raw_usage,
        cell(row.norm_usage),
        cell(row.effective_usage),
        cell(row.fairshare),
        cell(row.level_fs),
    )
}

/// Every line of Slurm's test24.4, FairShare and LevelFS included: uD2 and
/// uD3 are both 22/17 in exact arithmetic, but Slurm's quotients differ
/// (40/170 / (20/110) < 50/170 / (25/110) in floating point), so uD3 (with
/// uDA3, computed from the same operands) ranks 7 of 21 and uD2 5 of 21.
#[test]
fn slurms_test24_4_line_for_line() {
    let table = table_of(&test24_4());
    let mut got: Vec<String> = table.rows.iter().map(test24_4_line).collect();
    let mut expected: Vec<String> = TEST24_4_EXPECTED.iter().map(|s| s.to_string()).collect();
    got.sort();
    expected.sort();
    assert_eq!(got, expected);
}

/// Under the documented rule the same tree ties uD2 with uD3 and uDA3 (exact
/// 22/17): all three get the rank of the first, 7 of 21 (0.333333).
#[test]
fn test24_4_under_the_documented_rule_ties_ud2() {
    let mut lines = test24_4();
    lines.insert(1, config(T0, &[("FairTreeTies", "documented")]));
    let f = factors(&lines);
    for (account, user) in [("aD", "uD2"), ("aD", "uD3"), ("aDA", "uDA3")] {
        assert_eq!(factor(&f, account, user), 7.0 / 21.0, "{user}");
    }
}

/// The notes' §3.2 example: root -> X (10), Y (10), usage 10 each: LF X =
/// LF Y = .5 / .5 = 1, a tie. X: x1 (1 share, usage 1; LF .5 / .1 = 5), x2
/// (1, 9; LF .5 / .9 = .556). Y: y1, y2 (1, 5 each; LF .5 / .5 = 1). N = 4.
fn xy(created_first: &str, created_second: &str) -> Vec<String> {
    vec![
        account(T0, created_first, "root", "10"),
        account(T0, created_second, "root", "10"),
        user(T0, "x1", "X", "1"),
        user(T0, "x2", "X", "1"),
        user(T0, "y1", "Y", "1"),
        user(T0, "y2", "Y", "1"),
        usage(T0, "X", "x1", 1.0),
        usage(T0, "X", "x2", 9.0),
        usage(T0, "Y", "y1", 5.0),
        usage(T0, "Y", "y2", 5.0),
    ]
}

/// Slurm walks the tied accounts newest first, never merged.
/// X created last, so visited first: x1 rank 4 (1.0), x2 3 (.75); Y entered
/// tied: y1 takes the last rank, 3 (.75); y2 tied with y1 (LF 1 = 1), 3
/// (.75). The notes' "X visited first": 1.0, .75, .75, .75.
/// Y created last: y1 4 (1.0), y2 tied 4 (1.0); X entered tied: x1 takes 4
/// (1.0); x2 not tied (LF .556 != 5), rnt 1 (.25): 1.0, 1.0, 1.0, .25.
#[test]
fn tied_accounts_are_walked_newest_first() {
    let x_newest = factors(&xy("Y", "X"));
    for (account, user, expected) in [
        ("X", "x1", 1.0),
        ("X", "x2", 0.75),
        ("Y", "y1", 0.75),
        ("Y", "y2", 0.75),
    ] {
        assert_eq!(factor(&x_newest, account, user), expected, "{user}");
    }
    let y_newest = factors(&xy("X", "Y"));
    for (account, user, expected) in [
        ("Y", "y1", 1.0),
        ("Y", "y2", 1.0),
        ("X", "x1", 1.0),
        ("X", "x2", 0.25),
    ] {
        assert_eq!(factor(&y_newest, account, user), expected, "{user}");
    }
}

/// The documented merge on the same trees, whichever is newest: x1 (5),
/// then y1, y2 (1, tied), then x2 (.556): 1.0, .75, .75, .25.
#[test]
fn the_xy_example_under_the_documented_rule() {
    for (first, second) in [("X", "Y"), ("Y", "X")] {
        let mut lines = xy(first, second);
        lines.insert(0, config(T0, &[("FairTreeTies", "documented")]));
        let f = factors(&lines);
        assert_eq!(factor(&f, "X", "x1"), 1.0);
        assert_eq!(factor(&f, "Y", "y1"), 0.75);
        assert_eq!(factor(&f, "Y", "y2"), 0.75);
        assert_eq!(factor(&f, "X", "x2"), 0.25);
    }
}

/// "Newest" is creation: setting X's shares again changes no order, but
/// removing X and creating it again makes it the newest. Without decay,
/// root -> X, Y as in `xy`, Y created last (so visited first: x2 .25); X
/// recreated and refilled (its old usage stays with root, which no LevelFS
/// reads): X is the newest, visited first (x2 .75).
#[test]
fn newest_means_created_last() {
    let no_decay = config(T0, &[("PriorityDecayHalfLife", "0")]);
    let mut lines = vec![no_decay];
    lines.extend(xy("X", "Y"));
    lines.push(account(T0 + 1, "X", "root", "10"));
    assert_eq!(factor(&factors(&lines), "X", "x2"), 0.25);
    let remove_user = |user: &str| {
        serde_json::json!({"op": "remove_user", "t": T0 + 2, "user": user, "account": "X"})
            .to_string()
    };
    lines.extend([
        remove_user("x1"),
        remove_user("x2"),
        serde_json::json!({"op": "remove_account", "t": T0 + 2, "name": "X"}).to_string(),
        account(T0 + 3, "X", "root", "10"),
        user(T0 + 3, "x1", "X", "1"),
        user(T0 + 3, "x2", "X", "1"),
        usage(T0 + 3, "X", "x1", 1.0),
        usage(T0 + 3, "X", "x2", 9.0),
    ]);
    let f = factors(&lines);
    assert_eq!(factor(&f, "X", "x1"), 1.0);
    assert_eq!(factor(&f, "X", "x2"), 0.75);
    assert_eq!(factor(&f, "Y", "y1"), 0.75);
}

/// A user tied with an account sorts before it (rule 3 holds in Slurm's code
/// too), and a `FairShare=parent` account stays in its group with LevelFS
/// `NO_VAL` = 4294967294, ranking nobody: root -> A (1) -> u (1), P
/// (parent) -> p1 (1); A -> Sub (1) -> s1 (1), s2 (1). Usage u 2, p1 4, s1 2:
/// A's group is {u, P, p1, Sub} (level 3); LF u = (1/3) / (2/8) = 4/3, Sub
/// = 4/3, p1 = (1/3) / (4/8) = 2/3, P 4294967294. Order: P (4294967294), u,
/// Sub (tied with u), p1. N = 4: u 4 (1.0); Sub entered tied: s2 (LF inf)
/// takes 4 (1.0), s1 (.5 / 1) rnt 2 (.5); p1: prev Sub 4/3 != 2/3, rnt 1 (.25).
#[test]
fn parent_accounts_stay_in_their_group_and_users_tie_into_accounts() {
    let f = factors(&[
        account(T0, "A", "root", "1"),
        account(T0, "P", "A", "parent"),
        account(T0, "Sub", "A", "1"),
        user(T0, "u", "A", "1"),
        user(T0, "p1", "P", "1"),
        user(T0, "s1", "Sub", "1"),
        user(T0, "s2", "Sub", "1"),
        usage(T0, "A", "u", 2.0),
        usage(T0, "P", "p1", 4.0),
        usage(T0, "Sub", "s1", 2.0),
    ]);
    assert_eq!(factor(&f, "A", "u"), 1.0);
    assert_eq!(factor(&f, "Sub", "s2"), 1.0);
    assert_eq!(factor(&f, "Sub", "s1"), 0.5);
    assert_eq!(factor(&f, "P", "p1"), 0.25);
}
