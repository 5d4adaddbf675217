//! Fair Tree with Slurm's own ties (`FairTreeTies=slurm`, the default) in
//! the incremental engine, on 1, 2 and 4 workers: Slurm's test24.4 (the
//! expected factors are the FairShare column `testsuite/expect/test24.4`
//! expects, times 21), the notes' §3.2 X/Y example with each account newest,
//! and the same answers as the oracle.

use fairflow_dataflow::Engine;
use fairflow_model::Config;
use fairflow_oracle::{fairshare, Replay};

mod common;
use common::lines;

const T0: i64 = 1_700_000_000;

fn test24_4() -> String {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../datasets/events/test24_4.jsonl"
    );
    std::fs::read_to_string(path).expect("datasets/events/test24_4.jsonl")
}

/// `(account, user, rank of 21)`: test24.4's FairShare column
/// (`root|u2|...|0.666667|...` is 14/21, and so on).
const TEST24_4_RANKS: [(&str, &str, u32); 21] = [
    ("root", "u1", 21),
    ("root", "u2", 14),
    ("aAA", "uAA1", 13),
    ("aAB", "uAB1", 11),
    ("aAB", "uAB2", 12),
    ("aBA", "uBA1", 15),
    ("aBB", "uBB1", 16),
    ("aC", "uC1", 1),
    ("aD", "uD1", 10),
    ("aD", "uD2", 5),
    ("aD", "uD3", 7),
    ("aDA", "uDA1", 10),
    ("aDA", "uDA2", 8),
    ("aDA", "uDA3", 7),
    ("aE", "aE1", 21),
    ("aE", "aE2", 21),
    ("aF", "uF1", 21),
    ("aF", "uF2", 21),
    ("aG", "uG1", 4),
    ("aGA", "uGA1", 4),
    ("aGA", "uGA2", 2),
];

/// Engine and oracle after `text`, under the default configuration.
fn both(text: &str, workers: usize) -> (Engine, Replay) {
    let mut engine = Engine::start(workers, Config::default()).expect("workers start");
    let report = engine.apply_batch(lines(text)).expect("batch applies");
    assert!(report.rejected.is_empty(), "{:?}", report.rejected);
    let mut oracle = Replay::new(Config::default());
    oracle.feed_all(lines(text));
    (engine, oracle)
}

fn factor(engine: &Engine, account: &str, user: &str) -> f64 {
    engine.user_factors().expect("factors read")[&(account.to_string(), user.to_string())]
}

#[test]
fn slurms_test24_4_on_one_two_and_four_workers() {
    for workers in [1, 2, 4] {
        let (engine, oracle) = both(&test24_4(), workers);
        for (account, user, rank) in TEST24_4_RANKS {
            assert_eq!(
                factor(&engine, account, user),
                f64::from(rank) / 21.0,
                "{account}/{user}, {workers} workers"
            );
        }
        assert_eq!(
            engine.fairshare_table().expect("table"),
            fairshare::table(oracle.state()),
            "{workers} workers"
        );
    }
}

/// The notes' §3.2 example: X and Y tie (LF 1), X: x1 LF 5, x2 LF .556;
/// Y: y1, y2 LF 1. The account created last is walked first and the tie
/// reaches only its successor's first user.
fn xy(first: &str, second: &str) -> String {
    [
        format!(r#"{{"op":"account","t":{T0},"name":"{first}","shares":10}}"#),
        format!(r#"{{"op":"account","t":{T0},"name":"{second}","shares":10}}"#),
        format!(r#"{{"op":"user","t":{T0},"user":"x1","account":"X"}}"#),
        format!(r#"{{"op":"user","t":{T0},"user":"x2","account":"X"}}"#),
        format!(r#"{{"op":"user","t":{T0},"user":"y1","account":"Y"}}"#),
        format!(r#"{{"op":"user","t":{T0},"user":"y2","account":"Y"}}"#),
        format!(r#"{{"op":"usage","t":{T0},"account":"X","user":"x1","amount":1}}"#),
        format!(r#"{{"op":"usage","t":{T0},"account":"X","user":"x2","amount":9}}"#),
        format!(r#"{{"op":"usage","t":{T0},"account":"Y","user":"y1","amount":5}}"#),
        format!(r#"{{"op":"usage","t":{T0},"account":"Y","user":"y2","amount":5}}"#),
    ]
    .join("\n")
}

/// X newest: x1 4 (1.0), x2 3 (.75), y1 takes 3 (.75), y2 tied 3 (.75).
/// Y newest: y1 4 (1.0), y2 4 (1.0), x1 takes 4 (1.0), x2 1 (.25).
#[test]
fn tied_accounts_newest_first_on_one_two_and_four_workers() {
    for workers in [1, 2, 4] {
        let (engine, _) = both(&xy("Y", "X"), workers);
        for (account, user, expected) in [
            ("X", "x1", 1.0),
            ("X", "x2", 0.75),
            ("Y", "y1", 0.75),
            ("Y", "y2", 0.75),
        ] {
            assert_eq!(
                factor(&engine, account, user),
                expected,
                "{user}, {workers}"
            );
        }
        let (engine, _) = both(&xy("X", "Y"), workers);
        for (account, user, expected) in [
            ("Y", "y1", 1.0),
            ("Y", "y2", 1.0),
            ("X", "x1", 1.0),
            ("X", "x2", 0.25),
        ] {
            assert_eq!(
                factor(&engine, account, user),
                expected,
                "{user}, {workers}"
            );
        }
    }
}

/// A tie that appears and disappears: Y's users drift apart and back, and a
/// chain of three tied accounts (each entered tied from the one before)
/// forms; after every batch the engine equals the oracle.
#[test]
fn ties_that_come_and_go_match_the_oracle() {
    for workers in [1, 2] {
        let mut engine = Engine::start(workers, Config::default()).expect("workers start");
        let mut oracle = Replay::new(Config::default());
        let mut batches = vec![xy("X", "Y")];
        batches.push(format!(
            r#"{{"op":"usage","t":{T0},"account":"Y","user":"y1","amount":2}}"#
        ));
        batches.push(format!(
            r#"{{"op":"usage","t":{T0},"account":"Y","user":"y2","amount":2}}"#
        ));
        // Z ties X and Y (shares 10, usage 12) with two idle users.
        batches.push(
            [
                format!(r#"{{"op":"account","t":{T0},"name":"Z","shares":10}}"#),
                format!(r#"{{"op":"user","t":{T0},"user":"z1","account":"Z"}}"#),
                format!(r#"{{"op":"user","t":{T0},"user":"z2","account":"Z"}}"#),
                format!(r#"{{"op":"usage","t":{T0},"account":"Z","amount":12}}"#),
                format!(r#"{{"op":"usage","t":{T0},"account":"X","user":"x2","amount":2}}"#),
            ]
            .join("\n"),
        );
        batches.push(format!(
            r#"{{"op":"user","t":{T0},"user":"x3","account":"X","shares":"parent"}}"#
        ));
        for (i, batch) in batches.iter().enumerate() {
            engine.apply_batch(lines(batch)).expect("batch applies");
            oracle.feed_all(lines(batch));
            assert_eq!(
                engine.user_factors().expect("factors"),
                fairshare::user_factors(oracle.state()),
                "batch {i}, {workers} workers"
            );
        }
    }
}
