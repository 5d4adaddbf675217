//! The incremental engine started from a command-line layout. (The
//! hand-computed fair-share examples that were here run on both engines from
//! data: `crates/engine/tests/cases/{fair_tree,classic}_two_accounts.toml`.)

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
