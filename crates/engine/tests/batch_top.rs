//! The batch oracle's `top` (each job evaluated and dropped, only the first
//! `k` entries held: `fairflow_model::report::first_entries`) against the
//! oracle's whole evaluation sorted (`priority::entry_queue` of
//! `priority::evaluate`), for every `k`: on every example log, and on a log
//! with what decides the scheduler's order besides the priority (an
//! expedited requeue, a higher `PriorityTier`, jobs in several partitions
//! and QOS, held and running jobs, equal priorities and submit times, ids
//! that compare as numbers), under each priority model.

use std::path::PathBuf;

use fairflow_engine::{BatchEngine, Engine};
use fairflow_ingest::reader::read_events;
use fairflow_model::Config;
use fairflow_oracle::{fairshare, priority};

fn engine_of(text: &str) -> BatchEngine {
    let mut engine = BatchEngine::new(Config::default());
    let lines = read_events(text.as_bytes()).map(Result::unwrap).collect();
    engine.apply(lines).unwrap();
    engine
}

/// Every `k` from 0 past the queue's length: `top(k)` is the first `k` of
/// the whole evaluation's queue.
fn assert_top_is_the_whole_queues_head(engine: &mut BatchEngine, what: &str) {
    let state = engine.replay.state();
    let factors = fairshare::user_factors(state);
    let whole = priority::entry_queue(&priority::evaluate(state, &factors));
    for k in (0..=whole.len() + 1).chain([usize::MAX]) {
        let top = engine.top(k).unwrap();
        assert_eq!(top.to_vec(), whole[..k.min(whole.len())], "{what}, k = {k}");
    }
}

#[test]
fn on_every_example_log_top_is_the_whole_evaluations_head() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../datasets/events");
    let mut logs = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "jsonl") {
            let text = std::fs::read_to_string(&path).unwrap();
            assert_top_is_the_whole_queues_head(&mut engine_of(&text), &path.display().to_string());
            logs += 1;
        }
    }
    assert!(logs >= 4, "the example logs are in {}", dir.display());
}

/// A queue whose order is decided by every key of the scheduler's sort.
const ORDERED: &str = r#"{"op":"config","t":1000,"set":{"PriorityDecayHalfLife":0,"PriorityWeightAge":0,"PriorityWeightFairshare":0,"PriorityWeightJobSize":0,"PriorityWeightPartition":1000,"PriorityWeightQOS":2000}}
{"op":"cluster","t":1000,"nodes":4,"tres":{"cpu":64}}
{"op":"partition","t":1000,"name":"p1","priority_job_factor":1}
{"op":"partition","t":1000,"name":"p2","priority_job_factor":4}
{"op":"partition","t":1000,"name":"top","priority_job_factor":1,"priority_tier":2}
{"op":"qos","t":1000,"name":"hi","priority":10}
{"op":"qos","t":1000,"name":"lo","priority":5}
{"op":"account","t":1000,"name":"lab","shares":1}
{"op":"user","t":1000,"user":"alice","account":"lab","shares":1}
{"op":"user","t":1000,"user":"bob","account":"lab","shares":1}
{"op":"submit","t":1001,"job":"10","user":"alice","account":"lab","partition":"p1","qos":"lo"}
{"op":"submit","t":1001,"job":"9","user":"bob","account":"lab","partition":"p1","qos":"lo"}
{"op":"submit","t":1001,"job":"010","user":"bob","account":"lab","partition":"p1","qos":"lo"}
{"op":"submit","t":1002,"job":"11","user":"alice","account":"lab","partition":"p1,p2","qos":"lo,hi"}
{"op":"submit","t":1002,"job":"12","user":"bob","account":"lab","partition":"p2","qos":["hi","lo"]}
{"op":"submit","t":1003,"job":"13","user":"alice","account":"lab","partition":"top","qos":"lo"}
{"op":"submit","t":1003,"job":"14","user":"bob","account":"lab","partition":"p2","qos":"hi"}
{"op":"submit","t":1004,"job":"15","user":"bob","account":"lab","partition":"p1","qos":"lo"}
{"op":"hold","t":1004,"job":"15"}
{"op":"submit","t":1004,"job":"16","user":"alice","account":"lab","partition":"p1","qos":"hi"}
{"op":"start","t":1005,"job":"16"}
{"op":"submit","t":1005,"job":"17","user":"alice","account":"lab","partition":"p1","qos":"lo"}
{"op":"start","t":1006,"job":"17"}
{"op":"requeue","t":1007,"job":"17","expedite":true}
{"op":"tick","t":1010}
"#;

#[test]
fn with_expedited_tiers_and_several_pairs_top_is_the_whole_evaluations_head() {
    let mut engine = engine_of(ORDERED);
    assert_eq!(engine.replay.report.rejected, [], "the log is valid");
    // By hand: 17 is expedited; 13's partition has tier 2; the rest by
    // priority. So the first two entries are 17 and 13 whatever their
    // priorities.
    let top = engine.top(2).unwrap();
    let named: Vec<&str> = top.iter().map(|entry| entry.job.as_str()).collect();
    assert_eq!(named, ["17", "13"]);
    assert_top_is_the_whole_queues_head(&mut engine, "slurm");
    for model in ["flux", "moab"] {
        let text = ORDERED.replacen(
            r#""set":{"#,
            &format!(r#""set":{{"PriorityModel":"{model}","#),
            1,
        );
        let mut engine = engine_of(&text);
        assert_eq!(
            engine.replay.report.rejected,
            [],
            "{model}: the log is valid"
        );
        assert_top_is_the_whole_queues_head(&mut engine, model);
    }
}
