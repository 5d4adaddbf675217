//! `Engine::queue_through` (a job's place in line, read from the queue
//! index) against the oracle's plain sort (`priority::entry_queue`, cut after the
//! job): the seeded random streams of `engine_priority_equivalence`, after
//! every batch moved on to a random later `now`, for every ranked job, and
//! `None` for every listed job that is not ranked (held, running); 1, 2 and
//! 4 workers; Slurm under Fair Tree, classic and many ties (jobs at the
//! floor), `INCR_ONLY` (a full read), Flux and Moab.

use fairflow_dataflow::Engine;
use fairflow_ingest::reader::read_events;
use fairflow_model::report::JobState;
use fairflow_model::Config;
use fairflow_oracle::{fairshare, priority, Replay};

mod priority_stream;
use priority_stream::{compare, round_lines, Rng, Scenario, FLUX, SLURM_INCR_ONLY, SLURM_TIES, T0};

const SLURM: Scenario = Scenario {
    name: "slurm",
    config: r#"{"PriorityWeightAge":1000,"PriorityMaxAge":"1:00:00","PriorityWeightAssoc":500,"PriorityWeightFairshare":10000,"PriorityWeightJobSize":200,"PriorityWeightPartition":300,"PriorityWeightQOS":400,"PriorityWeightTRES":"CPU=10,GRES/gpu=50"}"#,
    changes: &[
        r#"{"PriorityWeightAge":3000}"#,
        r#"{"PriorityFlags":"CALCULATE_RUNNING"}"#,
        r#"{"PriorityFlags":""}"#,
        r#"{"PriorityWeightFairshare":0}"#,
        r#"{"PriorityWeightFairshare":20000}"#,
    ],
    lazy_caps: false,
};

const SLURM_CLASSIC: Scenario = Scenario {
    name: "slurm-classic",
    config: r#"{"PriorityFlags":"NO_FAIR_TREE","PriorityWeightAge":100,"PriorityMaxAge":"1:00:00","PriorityWeightFairshare":100000,"PriorityWeightQOS":400}"#,
    changes: &[r#"{"PriorityWeightFairshare":50000}"#],
    lazy_caps: false,
};

const MOAB: Scenario = Scenario {
    name: "moab",
    config: r#"{"PriorityModel":"moab","PriorityDecayHalfLife":"1:00:00","CREDWEIGHT":2,"USERWEIGHT":1,"QOSWEIGHT":3,"FSUSERWEIGHT":10,"FSWEIGHT":1,"XFACTORWEIGHT":100,"XFMINWCLIMIT":"0:30:00"}"#,
    changes: &[r#"{"QUEUETIMECAP":60}"#],
    lazy_caps: false,
};

fn run(scenario: &Scenario, seed: u64, workers: usize, batches: usize) -> Result<usize, String> {
    let mut engine = Engine::start(workers, Config::default()).map_err(|e| e.to_string())?;
    let mut replay = Replay::new(Config::default());
    let mut rng = Rng::seeded(seed);
    let mut next_id = 0u64;
    let mut t = T0;
    let mut checked = 0usize;
    for round in 0..batches {
        let lines = round_lines(
            round,
            &mut rng,
            replay.state(),
            &mut t,
            &mut next_id,
            scenario,
        );
        let text = lines.join("\n") + "\n";
        replay.feed_all(read_events(text.as_bytes()).map(Result::unwrap));
        engine
            .apply_batch(read_events(text.as_bytes()).map(Result::unwrap).collect())
            .map_err(|e| e.to_string())?;
        // A random `now` after the batch (the next batch starts from it).
        t += rng.below(4000) as i64;
        replay.advance_to(t);
        engine.advance_to(t).map_err(|e| e.to_string())?;
        let context = format!("{} seed {seed} round {round} now {t}", scenario.name);
        let fs = fairshare::user_factors(replay.state());
        let listed = priority::evaluate(replay.state(), &fs);
        let queue = priority::entry_queue(&listed);
        for (index, job) in queue.iter().enumerate() {
            // A job's place is its first entry's.
            if queue[..index].iter().any(|ahead| ahead.job == job.job) {
                continue;
            }
            let got = engine
                .queue_through(&job.job)
                .map_err(|e| e.to_string())?
                .ok_or_else(|| format!("{context}: ranked job {} has no place", job.job))?;
            compare(
                &format!("{context}: through job {} (rank {})", job.job, index + 1),
                &got,
                &queue[..=index],
            )?;
            checked += 1;
        }
        for job in listed.iter().filter(|p| p.state != JobState::Pending) {
            let got = engine.queue_through(&job.job).map_err(|e| e.to_string())?;
            if got.is_some() {
                return Err(format!("{context}: unranked job {} has a place", job.job));
            }
        }
    }
    Ok(checked)
}

fn sweep(scenario: &Scenario) {
    let heavy = fairflow_testkit::heavy();
    let (seeds, batches) = if heavy { (4, 80) } else { (1, 20) };
    for seed in 1..=seeds {
        for workers in [1, 2, 4] {
            match run(scenario, seed, workers, batches) {
                Ok(checked) => assert!(
                    checked >= batches,
                    "{}: too few ranked jobs checked ({checked})",
                    scenario.name
                ),
                Err(e) => panic!("{workers} workers: {e}"),
            }
        }
    }
}

#[test]
fn slurm_places_equal_the_oracle_sort() {
    sweep(&SLURM);
}

#[test]
fn slurm_classic_places_equal_the_oracle_sort() {
    sweep(&SLURM_CLASSIC);
}

#[test]
fn slurm_tied_places_equal_the_oracle_sort() {
    sweep(&SLURM_TIES);
}

#[test]
fn slurm_incr_only_places_equal_the_oracle_sort() {
    sweep(&SLURM_INCR_ONLY);
}

#[test]
fn flux_places_equal_the_oracle_sort() {
    sweep(&FLUX);
}

#[test]
fn moab_places_equal_the_oracle_sort() {
    sweep(&MOAB);
}
