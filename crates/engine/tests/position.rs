//! `Engine::position` and `Engine::top_page` on both engines (the batch
//! oracle, the incremental engine with 1, 2 and 4 workers): a small queue by
//! hand, Slurm's multi-partition case by hand, and on every example log each
//! ranked job's rank equal to its index in `top -k ALL`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use fairflow_engine::{BatchEngine, Engine, EngineError, IncrementalEngine};
use fairflow_ingest::reader::read_events;
use fairflow_ingest::LogLine;
use fairflow_model::report::Selection;
use fairflow_model::Config;

fn lines(text: &str) -> Vec<LogLine> {
    read_events(text.as_bytes()).map(Result::unwrap).collect()
}

fn engines() -> Vec<(String, Box<dyn Engine>)> {
    let mut all: Vec<(String, Box<dyn Engine>)> = vec![(
        "batch".into(),
        Box::new(BatchEngine::new(Config::default())),
    )];
    for workers in [1, 2, 4] {
        let engine = IncrementalEngine::start(workers, Config::default()).expect("workers start");
        all.push((format!("incremental, {workers} workers"), Box::new(engine)));
    }
    all
}

/// Slurm, partition weight 1,000 and no other weight: `batch` has
/// PriorityJobFactor 1, `debug` 2 (the largest), so a job's priority is
/// 500 in batch and 1000 in debug, minus its nice.
const SMALL: &str = r#"{"op":"config","t":1000,"set":{"PriorityDecayHalfLife":0,"PriorityWeightAge":0,"PriorityWeightFairshare":0,"PriorityWeightJobSize":0,"PriorityWeightAssoc":0,"PriorityWeightPartition":1000,"PriorityWeightQOS":0}}
{"op":"partition","t":1000,"name":"batch","priority_job_factor":1}
{"op":"partition","t":1000,"name":"debug","priority_job_factor":2}
{"op":"account","t":1000,"name":"phys","shares":1}
{"op":"account","t":1000,"name":"chem","shares":1}
{"op":"user","t":1000,"user":"alice","account":"phys","shares":1}
{"op":"user","t":1000,"user":"bob","account":"chem","shares":1}
{"op":"user","t":1000,"user":"carol","account":"chem","shares":1}
{"op":"submit","t":1000,"job":"1","user":"alice","account":"phys","partition":"batch"}
{"op":"submit","t":1001,"job":"2","user":"bob","account":"chem","partition":"debug"}
{"op":"submit","t":1002,"job":"3","user":"alice","account":"phys","partition":"debug"}
{"op":"submit","t":1003,"job":"4","user":"carol","account":"chem","partition":"batch"}
{"op":"submit","t":1004,"job":"5","user":"bob","account":"chem","partition":"batch","nice":100}
{"op":"submit","t":1005,"job":"6","user":"bob","account":"chem","partition":"batch"}
{"op":"hold","t":1005,"job":"6"}
"#;

/// The hand calculation: priorities 1: 500, 2: 1000, 3: 1000, 4: 500,
/// 5: 500 − 100 = 400; 6 is held. The queue: 2 (1000, submitted 1001), 3
/// (1000, 1002), 1 (500, 1000), 4 (500, 1003), 5 (400).
#[test]
fn a_small_queue_by_hand() {
    for (name, mut engine) in engines() {
        engine.apply(lines(SMALL)).expect("applies");
        let at = |engine: &mut Box<dyn Engine>, job: &str| {
            engine
                .position(job)
                .unwrap_or_else(|e| panic!("{name}: {job}: {e}"))
        };

        // Job 2 is first: nothing ahead, no gap; first in debug.
        let first = at(&mut engine, "2");
        assert_eq!(first.rank, 1, "{name}");
        assert!(first.ahead_by_account.is_empty(), "{name}");
        assert_eq!(first.gap, None, "{name}");
        assert_eq!(first.partitions.len(), 1, "{name}");
        assert_eq!(
            (
                first.partitions[0].partition.as_str(),
                first.partitions[0].rank
            ),
            ("debug", 1),
            "{name}"
        );

        // Job 4: behind 2 (chem), 3 and 1 (phys); second in batch, after 1.
        // To pass job 1 (500, the same priority, submitted earlier) it
        // needs 500 + 1 − 500 = 1 point: a partition factor of 0.5 + 1/1000.
        let fourth = at(&mut engine, "4");
        assert_eq!(fourth.rank, 4, "{name}");
        assert_eq!(
            fourth.ahead_by_account,
            BTreeMap::from([("chem".to_string(), 1), ("phys".to_string(), 2)]),
            "{name}"
        );
        assert_eq!(
            (
                fourth.partitions[0].partition.as_str(),
                fourth.partitions[0].rank
            ),
            ("batch", 2),
            "{name}"
        );
        let gap = fourth.gap.as_ref().expect("a job ahead");
        assert_eq!(
            (gap.job.as_str(), gap.priority, gap.points),
            ("1", 500, 1),
            "{name}"
        );
        let partition = gap
            .factors
            .iter()
            .find(|f| f.name == "partition")
            .expect("the partition factor");
        assert_eq!((partition.own, partition.ahead), (0.5, 0.5), "{name}");
        assert_eq!(partition.weighted_gap, 0.0, "{name}");
        assert_eq!(partition.needed, Some(0.5 + 1.0 / 1000.0), "{name}");

        // Job 5 (400): 101 points short of job 4 (500).
        let last = at(&mut engine, "5");
        assert_eq!(last.rank, 5, "{name}");
        assert_eq!(last.job.priority, 400, "{name}");
        let gap = last.gap.as_ref().expect("a job ahead");
        assert_eq!((gap.job.as_str(), gap.points), ("4", 101), "{name}");
        assert_eq!(
            last.ahead_by_account,
            BTreeMap::from([("chem".to_string(), 2), ("phys".to_string(), 2)]),
            "{name}"
        );

        // Not in the queue: held, unknown.
        match engine.position("6") {
            Err(EngineError::NotQueued { state, .. }) => assert_eq!(state, "held", "{name}"),
            other => panic!("{name}: held job 6: {other:?}"),
        }
        assert!(
            matches!(engine.position("7"), Err(EngineError::UnknownJob { .. })),
            "{name}"
        );

        // Pages: ranks 2-3 are jobs 3 and 1; from rank 5 only job 5; past the end nothing.
        let all = Selection::default();
        let ids = |page: fairflow_model::report::SharedJobs| {
            page.iter().map(|p| p.job.clone()).collect::<Vec<_>>()
        };
        assert_eq!(
            ids(engine.top_page(1, 2, &all).unwrap()),
            ["3", "1"],
            "{name}"
        );
        assert_eq!(ids(engine.top_page(4, 10, &all).unwrap()), ["5"], "{name}");
        assert!(engine.top_page(9, 10, &all).unwrap().is_empty(), "{name}");
        let chem = Selection {
            accounts: vec!["chem".into()],
            ..Selection::default()
        };
        assert_eq!(
            ids(engine.top_page(1, 5, &chem).unwrap()),
            ["4", "5"],
            "{name}"
        );
    }
}

/// Slurm's multi-partition case (`tests/cases/slurm_multi_partition_qos.toml`,
/// its hand calculation): the scheduler's queue, one entry per (partition,
/// QOS) pair: 1 D (p2, lo) 6000, 2 D (p3, lo) 5500, 3 A (p1, hi) 4250,
/// 4 B (p2, lo) 4000, 5 B (p2, zero) 4000, 6 A (p2, hi) 3500, 7 C 3500,
/// 8 A (p1, lo) 3250, 9 F (p2, hi) 3000, 10 A (p2, lo) 2500, 11 F (p1, hi)
/// 2250. p1's entries: A 4250, A 3250, F 2250; p2's: D 6000, B 4000,
/// B 4000, A 3500, F 3000, A 2500.
#[test]
fn multi_partition_ranks_by_hand() {
    let case = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/cases/slurm_multi_partition_qos.toml");
    let case = std::fs::read_to_string(case).expect("the case");
    let step = case
        .split("events = '''")
        .nth(1)
        .and_then(|rest| rest.split("'''").next())
        .expect("the first step's events");
    for (name, mut engine) in engines() {
        engine.apply(lines(step)).expect("applies");
        let a = engine.position("A").expect("A is queued");
        assert_eq!(a.rank, 3, "{name}");
        let places: Vec<(&str, u64, u64)> = a
            .partitions
            .iter()
            .map(|p| (p.partition.as_str(), p.rank, p.priority))
            .collect();
        assert_eq!(places, [("p1", 1, 4250), ("p2", 4, 3500)], "{name}");
        let others: Vec<(&str, &str, u64, u64)> = a
            .entries
            .iter()
            .map(|e| (e.partition.as_str(), e.qos.as_str(), e.rank, e.priority))
            .collect();
        assert_eq!(
            others,
            [
                ("p2", "hi", 6, 3500),
                ("p1", "lo", 8, 3250),
                ("p2", "lo", 10, 2500)
            ],
            "{name}"
        );
        // To pass D's entry in p3 (5500): 5500 + 1 − 4250 = 1251 points. Per
        // factor: the partition 0.25 -> p3's 0.5 (weighted 250 -> 500), QOS
        // 1.0 -> 0.5 (2000 -> 1000), TRES cpu 8/16 -> 64/64 (p3 has no
        // totals: the cluster's 64 CPUs; 2000 -> 4000); the gaps sum to
        // 1250, D's entry's priority minus A's.
        let gap = a.gap.expect("D is ahead");
        assert_eq!((gap.job.as_str(), gap.points), ("D", 1251), "{name}");
        let by_name: BTreeMap<&str, (f64, f64, f64, Option<f64>)> = gap
            .factors
            .iter()
            .map(|f| (f.name.as_str(), (f.own, f.ahead, f.weighted_gap, f.needed)))
            .collect();
        assert_eq!(
            by_name["partition"],
            (0.25, 0.5, 250.0, Some(0.25 + 1.251)),
            "{name}"
        );
        assert_eq!(
            by_name["qos"],
            (1.0, 0.5, -1000.0, Some(1.0 + 1251.0 / 2000.0)),
            "{name}"
        );
        assert_eq!(
            by_name["tres/cpu"],
            (0.5, 1.0, 2000.0, Some(0.5 + 1251.0 / 4000.0)),
            "{name}"
        );
        assert_eq!(
            by_name["age"].3, None,
            "{name}: no weight, no value would do"
        );
        // F's first entry is (p2, hi) 3000, ninth.
        let f = engine.position("F").expect("F is queued");
        assert_eq!(f.rank, 9, "{name}");
        let places: Vec<(&str, u64, u64)> = f
            .partitions
            .iter()
            .map(|p| (p.partition.as_str(), p.rank, p.priority))
            .collect();
        assert_eq!(places, [("p1", 3, 2250), ("p2", 5, 3000)], "{name}");
    }
}

fn logs() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../datasets/events");
    let mut logs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("datasets/events")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    logs.sort();
    assert!(!logs.is_empty(), "no logs in {}", dir.display());
    logs
}

/// On every example log, fed in chunks of 5 lines and then an hour later:
/// each ranked job's rank is its index in `top -k ALL` plus one, and both
/// engines give equal places (as `{:?}`, so equal bits).
#[test]
fn ranks_are_indexes_in_the_whole_queue_on_the_example_logs() {
    let mut checked = 0usize;
    for log in logs() {
        let text = std::fs::read_to_string(&log).expect("log");
        let all: Vec<&str> = text.lines().collect();
        let mut runs = engines();
        let mut chunks: Vec<Option<String>> = all
            .chunks(5)
            .map(|chunk| Some(chunk.join("\n") + "\n"))
            .collect();
        chunks.push(None);
        for chunk in &chunks {
            let mut want: Option<Vec<String>> = None;
            for (name, engine) in runs.iter_mut() {
                match chunk {
                    Some(chunk) => {
                        engine.apply(lines(chunk)).expect("applies");
                    }
                    None => {
                        if let Some(now) = engine.now() {
                            engine.advance_to(now + 3600).expect("advances");
                        }
                    }
                }
                let queue = engine.top(usize::MAX).expect("top");
                let mut places = Vec::new();
                for (index, job) in queue.iter().enumerate() {
                    // A job's place is its first entry's.
                    if queue[..index].iter().any(|ahead| ahead.job == job.job) {
                        continue;
                    }
                    let place = engine.position(&job.job).expect("a ranked job has a place");
                    assert_eq!(
                        place.rank,
                        index as u64 + 1,
                        "{name}: {}: job {}",
                        log.display(),
                        job.job
                    );
                    assert_eq!(&place.job, job, "{name}: {}", log.display());
                    places.push(format!("{place:?}"));
                    checked += 1;
                }
                match &want {
                    None => want = Some(places),
                    Some(want) => assert_eq!(&places, want, "{name}: {}", log.display()),
                }
            }
        }
    }
    assert!(
        checked > 20,
        "the example logs ranked too few jobs ({checked})"
    );
}

/// Slurm with every weight 0: every pending job is at the floor (priority
/// 1), so the queue is by submit time, then job id as numbers ("9" before
/// "10"). Job 11 is held (not ranked, not counted).
const FLOOR: &str = r#"{"op":"config","t":1000,"set":{"PriorityDecayHalfLife":0,"PriorityWeightAge":0,"PriorityWeightFairshare":0,"PriorityWeightJobSize":0,"PriorityWeightAssoc":0,"PriorityWeightPartition":0,"PriorityWeightQOS":0}}
{"op":"partition","t":1000,"name":"batch","priority_job_factor":1}
{"op":"partition","t":1000,"name":"debug","priority_job_factor":1}
{"op":"account","t":1000,"name":"phys","shares":1}
{"op":"account","t":1000,"name":"chem","shares":1}
{"op":"user","t":1000,"user":"alice","account":"phys","shares":1}
{"op":"user","t":1000,"user":"bob","account":"chem","shares":1}
{"op":"submit","t":1000,"job":"10","user":"alice","account":"phys","partition":"batch"}
{"op":"submit","t":1000,"job":"9","user":"bob","account":"chem","partition":"batch"}
{"op":"submit","t":1000,"job":"11","user":"bob","account":"chem","partition":"batch"}
{"op":"hold","t":1000,"job":"11"}
{"op":"submit","t":1001,"job":"3","user":"bob","account":"chem","partition":"debug"}
{"op":"submit","t":1002,"job":"4","user":"alice","account":"phys","partition":"batch"}
"#;

/// The hand calculation: the queue is 9, 10 (both submitted at 1000, by
/// id), 3 (1001), 4 (1002), all at priority 1. Job 4: rank 4; ahead of it
/// 9 and 3 (chem) and 10 (phys); third in batch (after 9 and 10); the job
/// just ahead is 3, whose equal priority wins on submit time, so 4 lacks
/// 1 + 1 − 1 = 1 point. Job 10: rank 2, behind 9 (chem), second in batch.
#[test]
fn jobs_at_the_floor_by_hand() {
    for (name, mut engine) in engines() {
        engine.apply(lines(FLOOR)).expect("applies");
        let fourth = engine.position("4").expect("job 4 is ranked");
        assert_eq!((fourth.rank, fourth.job.priority), (4, 1), "{name}");
        assert_eq!(
            fourth.ahead_by_account,
            BTreeMap::from([("chem".to_string(), 2), ("phys".to_string(), 1)]),
            "{name}"
        );
        let batch = &fourth.partitions[..];
        assert_eq!(batch.len(), 1, "{name}");
        assert_eq!(
            (batch[0].partition.as_str(), batch[0].rank),
            ("batch", 3),
            "{name}"
        );
        let gap = fourth.gap.as_ref().expect("a job ahead");
        assert_eq!(
            (
                gap.job.as_str(),
                gap.account.as_str(),
                gap.priority,
                gap.points
            ),
            ("3", "chem", 1, 1),
            "{name}"
        );

        let second = engine.position("10").expect("job 10 is ranked");
        assert_eq!(second.rank, 2, "{name}");
        assert_eq!(
            second.ahead_by_account,
            BTreeMap::from([("chem".to_string(), 1)]),
            "{name}"
        );
        assert_eq!(second.partitions[0].rank, 2, "{name}");
        let gap = second.gap.as_ref().expect("a job ahead");
        assert_eq!(gap.job.as_str(), "9", "{name}");

        let first = engine.position("9").expect("job 9 is ranked");
        assert_eq!((first.rank, first.gap.is_none()), (1, true), "{name}");
    }
}
