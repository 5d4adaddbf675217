//! The queue sharded across workers (each worker holds the jobs of its
//! user associations; reads merge the shards): ties across shards (equal
//! priorities and submit times, ordered by job id), the fill from the
//! model's floor across shards, `queue_through` with the target on any
//! shard, `sprio`, and each worker's job count, for 1, 2 and 4 workers.
//! The expected queue is written out by hand below and checked against the
//! oracle's too.

use fairflow_dataflow::Engine;
use fairflow_model::report::JobState;
use fairflow_model::Config;
use fairflow_oracle::{fairshare, priority, Replay};

mod common;
use common::lines;

/// Every weight 0 (the defaults): a job's priority is `max(1, 0 − nice)`
/// (Slurm's floor is 1). Jobs with nice −500 have priority 500, the others
/// sit at the floor. Eight users, one association each, so that with 2 and
/// 4 workers the tied jobs live on different shards.
const LOG: &str = r#"{"op":"config","t":100,"set":{"PriorityDecayHalfLife":0}}
{"op":"account","t":100,"name":"a","shares":1}
{"op":"account","t":100,"name":"b","shares":1}
{"op":"user","t":100,"user":"u0","account":"a"}
{"op":"user","t":100,"user":"u1","account":"a"}
{"op":"user","t":100,"user":"u2","account":"a"}
{"op":"user","t":100,"user":"u3","account":"a"}
{"op":"user","t":100,"user":"u4","account":"b"}
{"op":"user","t":100,"user":"u5","account":"b"}
{"op":"user","t":100,"user":"u6","account":"b"}
{"op":"user","t":100,"user":"u7","account":"b"}
{"op":"submit","t":100,"job":"10","user":"u0","account":"a","nice":-500}
{"op":"submit","t":100,"job":"9","user":"u1","account":"a","nice":-500}
{"op":"submit","t":100,"job":"2","user":"u2","account":"a","nice":-500}
{"op":"submit","t":100,"job":"30","user":"u3","account":"a","nice":-500}
{"op":"submit","t":100,"job":"7","user":"u4","account":"b"}
{"op":"submit","t":100,"job":"1","user":"u5","account":"b"}
{"op":"submit","t":101,"job":"40","user":"u6","account":"b","nice":-500}
{"op":"submit","t":101,"job":"5","user":"u7","account":"b","nice":-500}
{"op":"submit","t":101,"job":"3","user":"u0","account":"a"}
{"op":"submit","t":101,"job":"11","user":"u4","account":"b"}
{"op":"submit","t":101,"job":"6","user":"u7","account":"b"}"#;

/// The queue by hand: priority 500 first, by submit time then by job id
/// as a number (2, 9, 10, 30 at t = 100; 5, 40 at t = 101), then the jobs
/// at the floor the same way (1, 7; 3, 6, 11).
const QUEUE: [(&str, u64); 11] = [
    ("2", 500),
    ("9", 500),
    ("10", 500),
    ("30", 500),
    ("5", 500),
    ("40", 500),
    ("1", 1),
    ("7", 1),
    ("3", 1),
    ("6", 1),
    ("11", 1),
];

fn ids(jobs: &[fairflow_model::report::JobPriority]) -> Vec<(&str, u64)> {
    jobs.iter().map(|p| (p.job.as_str(), p.priority)).collect()
}

#[test]
fn ties_and_the_floor_merge_across_shards_in_queue_order() {
    let mut oracle = Replay::new(Config::default());
    oracle.feed_all(lines(LOG));
    let factors = fairshare::user_factors(oracle.state());
    let listed = priority::evaluate(oracle.state(), &factors);
    let queue = priority::entry_queue(&listed);
    assert_eq!(ids(&queue), QUEUE, "the oracle agrees with the hand order");
    for workers in [1, 2, 4] {
        let mut engine = Engine::start(workers, Config::default()).expect("engine starts");
        engine.apply_batch(lines(LOG)).expect("batch applies");
        let context = format!("{workers} workers");
        for k in 1..=QUEUE.len() + 1 {
            let top = engine.top(k).expect("top reads");
            assert_eq!(*top, queue[..k.min(queue.len())], "{context}: top {k}");
        }
        for (at, (job, _)) in QUEUE.iter().enumerate() {
            let through = engine.queue_through(job).expect("through reads");
            assert_eq!(
                through.as_deref(),
                Some(&queue[..=at]),
                "{context}: through {job}"
            );
            let one = engine.job(job).expect("job reads");
            assert_eq!(one.as_ref().map(|p| p.priority), Some(QUEUE[at].1));
        }
        assert_eq!(engine.queue_through("none").expect("through reads"), None);
        assert_eq!(
            engine.priorities().expect("sprio reads"),
            listed,
            "{context}"
        );
        let counts = engine.jobs_per_worker().expect("counts read");
        assert_eq!(counts.len(), workers, "{context}: one count per worker");
        assert_eq!(counts.iter().sum::<usize>(), QUEUE.len(), "{context}");
        assert_eq!(
            engine.jobs_per_process().expect("counts read"),
            [QUEUE.len()]
        );
        if workers > 1 {
            assert!(
                counts.iter().filter(|&&c| c > 0).count() >= 2,
                "{context}: the jobs are spread over the shards: {counts:?}"
            );
        }
    }
}

/// The floor fill when the jobs above the floor are all on one shard and
/// the floor jobs on others, with a job ending (its shard shrinks) and a
/// new tie arriving on another shard in a later batch.
#[test]
fn the_queue_stays_exact_as_shards_change() {
    let later = r#"{"op":"start","t":102,"job":"9"}
{"op":"end","t":103,"job":"9"}
{"op":"submit","t":103,"job":"4","user":"u5","account":"b","nice":-500}
{"op":"submit","t":103,"job":"8","user":"u3","account":"a","nice":-500}"#;
    let mut oracle = Replay::new(Config::default());
    oracle.feed_all(lines(LOG));
    oracle.feed_all(lines(later));
    let factors = fairshare::user_factors(oracle.state());
    let queue = priority::entry_queue(&priority::evaluate(oracle.state(), &factors));
    // Job 9 left; 4 and 8 (priority 500, t = 103) come after 5 and 40.
    let want: Vec<&str> = vec![
        "2", "10", "30", "5", "40", "4", "8", "1", "7", "3", "6", "11",
    ];
    assert_eq!(
        queue.iter().map(|p| p.job.as_str()).collect::<Vec<_>>(),
        want
    );
    for workers in [1, 2, 4] {
        let mut engine = Engine::start(workers, Config::default()).expect("engine starts");
        engine.apply_batch(lines(LOG)).expect("batch applies");
        // Keep a top 5 current through the next batch.
        engine.top(5).expect("top reads");
        engine.apply_batch(lines(later)).expect("batch applies");
        assert_eq!(*engine.top(5).expect("top reads"), queue[..5], "{workers}");
        assert_eq!(*engine.top(100).expect("top reads"), queue[..], "{workers}");
        assert!(queue.iter().all(|p| p.state == JobState::Pending));
        let counts = engine.jobs_per_worker().expect("counts read");
        assert_eq!(counts.iter().sum::<usize>(), queue.len(), "{workers}");
    }
}
