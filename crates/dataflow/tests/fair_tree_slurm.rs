//! Fair Tree with Slurm's own ties (`FairTreeTies=slurm`, the default) in
//! the incremental engine: ties that appear and disappear give the oracle's
//! answers after every batch. (Slurm's test24.4 and the notes' §3.2 X/Y
//! example run on both engines from data:
//! `crates/engine/tests/cases/fair_tree_slurm_*.toml`.)

use fairflow_dataflow::Engine;
use fairflow_model::Config;
use fairflow_oracle::{fairshare, Replay};

mod common;
use common::lines;

const T0: i64 = 1_700_000_000;

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
