//! The two real SWF traces of `../shared/datasets/` (Parallel Workloads Archive:
//! D. G. Feitelson, D. Tsafrir, D. Krakov, "Experience with using the Parallel
//! Workloads Archive", JPDC 74(10), 2014; LCG log by Hui Li, NASA log by Bill
//! Nitzberg) replay end to end through the validator and the oracle.

use fairflow_ingest::reader::open_source;
use fairflow_ingest::swf::convert_swf;
use fairflow_model::Config;
use fairflow_oracle::Replay;

fn replay_trace(name: &str, expected_jobs: u64) {
    let Some(path) = fairflow_testkit::dataset(name) else {
        return;
    };
    let lines = convert_swf(open_source(path.to_str().unwrap()).unwrap()).unwrap();
    let mut replay = Replay::new(Config::default());
    replay.feed_all(lines);
    assert!(
        replay.report.rejected.is_empty(),
        "{:?}",
        &replay.report.rejected[..5.min(replay.report.rejected.len())]
    );
    // Every job was submitted, and every job that ran has ended: nothing is left active.
    assert!(
        replay.report.applied >= expected_jobs * 2,
        "{}",
        replay.report.applied
    );
    assert!(
        replay.state().jobs.is_empty(),
        "{} jobs still active",
        replay.state().jobs.len()
    );
    assert!(replay.state().accounts.len() > 1 && !replay.state().users.is_empty());
}

#[test]
fn nasa_ipsc_trace_replays_with_no_rejection() {
    replay_trace("NASA-iPSC-1993-3.1-cln.swf.gz", 18_239);
}

#[test]
fn lcg_trace_replays_with_no_rejection() {
    replay_trace("LCG-2005-1.swf.gz", 188_041);
}
