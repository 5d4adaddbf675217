//! Small trees whose fair-share values are computed by hand in the comments.

use fairflow_dataflow::Engine;
use fairflow_model::Config;

mod common;
use common::lines;

const TREE: &str = r#"{"op":"config","t":100,"set":{"PriorityDecayHalfLife":0}}
{"op":"account","t":100,"name":"a","shares":3}
{"op":"account","t":100,"name":"b","shares":1}
{"op":"user","t":100,"user":"ua","account":"a"}
{"op":"user","t":100,"user":"ub","account":"b"}
{"op":"usage","t":100,"account":"a","user":"ua","amount":100}
{"op":"usage","t":100,"account":"b","user":"ub","amount":100}"#;

fn factor(engine: &Engine, account: &str, user: &str) -> f64 {
    engine.user_factors().unwrap()[&(account.to_string(), user.to_string())]
}

#[test]
fn fair_tree_by_hand() {
    let mut engine = Engine::start(2, Config::default()).unwrap();
    let report = engine.apply_batch(lines(TREE)).unwrap();
    assert_eq!((report.applied, report.rejected.len()), (7, 0));
    // a: S = 3/4, U = 100/200, LF = 1.5; b: S = 1/4, U = 1/2, LF = 0.5.
    // N = 2: ua (under a) ranks 2 -> 2/2, ub ranks 1 -> 1/2.
    assert_eq!(factor(&engine, "a", "ua"), 1.0);
    assert_eq!(factor(&engine, "b", "ub"), 0.5);
    let table = engine.fairshare_table().unwrap();
    // No decay: root holds 200 TRES-seconds.
    assert_eq!(table.rows[0].raw_usage, 200);
    assert_eq!(table.rows[1].level_fs, Some(1.5));

    // Two idle users join b: LF = +inf for both, tied (one rank, 4 of 4);
    // ub's LF in b is (1/3) / 1 = 1/3 < inf. b's own LF stays 0.5, a's 1.5:
    // ua 4/4; then b's group: u1, u2 tied at rank 3, ub rank 1.
    engine
        .apply_batch(lines(
            r#"{"op":"user","t":200,"user":"u1","account":"b"}
{"op":"user","t":200,"user":"u2","account":"b"}"#,
        ))
        .unwrap();
    assert_eq!(factor(&engine, "a", "ua"), 1.0);
    assert_eq!(factor(&engine, "b", "u1"), 0.75);
    assert_eq!(factor(&engine, "b", "u2"), 0.75);
    assert_eq!(factor(&engine, "b", "ub"), 0.25);
}

#[test]
fn classic_by_hand() {
    let mut config = Config::default();
    config.flags.no_fair_tree = true;
    let mut engine = Engine::start(1, config).unwrap();
    engine.apply_batch(lines(TREE)).unwrap();
    // ua: S = 3/4 * 1/1 = 0.75; UN = 1/2; UE_a = UN_a = 1/2 (fs-parent root);
    // UE_ua = 1/2 + (1/2 - 1/2) * 1/1 = 1/2; F = 2^-(0.5/0.75) = 2^(-2/3).
    assert_eq!(factor(&engine, "a", "ua"), (-2.0f64 / 3.0).exp2());
    // ub: S = 1/4, UE = 1/2: F = 2^-2.
    assert_eq!(factor(&engine, "b", "ub"), 0.25);
    // Moving all of ub's usage away (removing ub: b absorbs it) keeps b's
    // subtree usage, and the table still has root, a, ua, b.
    engine
        .apply_batch(lines(
            r#"{"op":"remove_user","t":300,"user":"ub","account":"b"}"#,
        ))
        .unwrap();
    let table = engine.fairshare_table().unwrap();
    let names: Vec<_> = table
        .rows
        .iter()
        .map(|r| (r.account.as_str(), r.user.as_deref()))
        .collect();
    assert_eq!(
        names,
        vec![("root", None), ("a", None), ("a", Some("ua")), ("b", None)]
    );
    assert_eq!(table.rows[3].raw_usage, 100);
}

#[test]
fn a_single_process_layout_starts_an_engine() {
    use fairflow_dataflow::cluster::WorkerLayout;
    let layout = WorkerLayout {
        workers: 2,
        ..WorkerLayout::default()
    };
    let mut engine = Engine::start_layout(&layout, Config::default())
        .unwrap()
        .expect("process 0 hosts worker 0");
    assert_eq!(engine.workers(), 2);
    engine.apply_batch(lines(TREE)).unwrap();
    assert_eq!(factor(&engine, "a", "ua"), 1.0);
}
