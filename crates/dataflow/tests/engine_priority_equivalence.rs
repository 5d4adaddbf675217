//! The whole engine (`fairflow_dataflow::Engine`: ledger, job book, tree
//! dataflow, the core's fair-share factors feeding the priority dataflow)
//! against the oracle (`Replay`, `fairshare::user_factors`,
//! `priority::{evaluate, queue}`): the same seeded random streams as
//! `priority_equivalence` (jobs in every phase, usage, QOS, partitions,
//! association priorities, cluster and configuration changes, time passing
//! across begin times and age caps) are applied batch by batch to both;
//! after every batch `priorities()` must equal `evaluate`, `top(k)` (1, 10,
//! all) the first `k` of `queue`, and `job(id)` the oracle's entry, for 1, 2
//! and 4 workers, under Slurm (with `INCR_ONLY`, `CALCULATE_RUNNING`,
//! `ACCRUE_ALWAYS`, many ties), Flux and Moab.
//!
//! The fair-share factors the engine uses are its own (the core's
//! `user_factors`), so this also checks that they reach the priority
//! dataflow as the oracle's, under every fair-share algorithm (Fair Tree,
//! classic, depth-oblivious, ticket-based, whose factors move with every
//! submission, start, hold and cancel, and level-based with several
//! `PriorityLevels`).

use fairflow_dataflow::Engine;
use fairflow_ingest::reader::read_events;
use fairflow_model::Config;
use fairflow_oracle::{fairshare, priority, Replay};

mod priority_stream;
use priority_stream::{compare, round_lines, Rng, Scenario, FLUX, SLURM_INCR_ONLY, SLURM_TIES, T0};

const SLURM: Scenario = Scenario {
    name: "slurm",
    config: r#"{"PriorityWeightAge":1000,"PriorityMaxAge":"1:00:00","PriorityWeightAssoc":500,"PriorityWeightFairshare":10000,"PriorityWeightJobSize":200,"PriorityWeightPartition":300,"PriorityWeightQOS":400,"PriorityWeightTRES":"CPU=10,GRES/gpu=50"}"#,
    changes: &[
        r#"{"PriorityWeightAge":3000}"#,
        r#"{"PriorityMaxAge":"0:20:00"}"#,
        r#"{"PriorityFlags":"ACCRUE_ALWAYS"}"#,
        r#"{"PriorityFlags":"CALCULATE_RUNNING,NO_NORMAL_QOS"}"#,
        r#"{"PriorityFlags":""}"#,
        r#"{"PriorityFavorSmall":"YES"}"#,
        r#"{"PriorityFlags":"SMALL_RELATIVE_TO_TIME,NO_NORMAL_PART"}"#,
        r#"{"PriorityWeightFairshare":0}"#,
        r#"{"PriorityWeightFairshare":20000}"#,
    ],
    lazy_caps: false,
};

const SLURM_CLASSIC: Scenario = Scenario {
    name: "slurm-classic",
    config: r#"{"PriorityFlags":"NO_FAIR_TREE","PriorityWeightAge":100,"PriorityMaxAge":"1:00:00","PriorityWeightFairshare":100000,"PriorityWeightQOS":400}"#,
    changes: &[
        r#"{"PriorityWeightFairshare":50000}"#,
        r#"{"PriorityFlags":"NO_FAIR_TREE,DEPTH_OBLIVIOUS"}"#,
        r#"{"PriorityFlags":"NO_FAIR_TREE"}"#,
    ],
    lazy_caps: false,
};

const SLURM_TICKET: Scenario = Scenario {
    name: "slurm-ticket",
    config: r#"{"PriorityFlags":"TICKET_BASED","PriorityWeightAge":100,"PriorityMaxAge":"1:00:00","PriorityWeightFairshare":100000,"PriorityWeightQOS":400}"#,
    changes: &[
        r#"{"PriorityWeightFairshare":50000}"#,
        r#"{"PriorityFlags":"TICKET_BASED,INCR_ONLY"}"#,
        r#"{"PriorityFlags":"TICKET_BASED"}"#,
    ],
    lazy_caps: false,
};

const SLURM_LEVEL: Scenario = Scenario {
    name: "slurm-level",
    config: r#"{"PriorityFlags":"LEVEL_BASED","PriorityLevels":3,"PriorityWeightAge":100,"PriorityMaxAge":"1:00:00","PriorityWeightFairshare":100000,"PriorityWeightQOS":400}"#,
    changes: &[
        r#"{"PriorityLevels":1}"#,
        r#"{"PriorityLevels":4}"#,
        r#"{"PriorityLevels":16}"#,
        r#"{"PriorityFlags":"LEVEL_BASED,ACCRUE_ALWAYS"}"#,
    ],
    lazy_caps: false,
};

/// Every family of fair-share algorithms in turn, with jobs queued: each
/// switch moves the tree from one family's dataflow to another's (and
/// ticket-based's pending-job counts with it) in one batch, and the queue
/// must see the old family's factors retracted and the new one's in the same
/// batch.
const SLURM_FAMILY_SWITCHES: Scenario = Scenario {
    name: "slurm-family-switches",
    config: r#"{"PriorityWeightAge":100,"PriorityMaxAge":"1:00:00","PriorityWeightFairshare":100000,"PriorityWeightQOS":400,"PriorityLevels":3}"#,
    changes: &[
        r#"{"PriorityFlags":"TICKET_BASED"}"#,
        r#"{"PriorityFlags":"NO_FAIR_TREE"}"#,
        r#"{"FairTreeTies":"documented"}"#,
        r#"{"PriorityFlags":"LEVEL_BASED"}"#,
        r#"{"PriorityFlags":"NO_FAIR_TREE,DEPTH_OBLIVIOUS"}"#,
        r#"{"PriorityFlags":"","FairTreeTies":"slurm"}"#,
        r#"{"PriorityFlags":"TICKET_BASED"}"#,
        r#"{"PriorityFlags":""}"#,
    ],
    lazy_caps: false,
};

const MOAB: Scenario = Scenario {
    name: "moab",
    config: r#"{"PriorityModel":"moab","PriorityDecayHalfLife":"1:00:00","CREDWEIGHT":2,"USERWEIGHT":1,"QOSWEIGHT":3,"CLASSWEIGHT":5,"ACCOUNTWEIGHT":1,"USERCFG[u1]":"PRIORITY=200 FSTARGET=30","QOSCFG[q1]":"PRIORITY=50 QTWEIGHT=2 QTTARGET=1:00:00","FSUSERWEIGHT":10,"FSGROUPWEIGHT":1,"GROUPCFG[a]":"FSTARGET=40-","FSJPUWEIGHT":3,"FSPSPUWEIGHT":1,"WCACCURACYWEIGHT":100,"PROCWEIGHT":2,"PEWEIGHT":1,"XFACTORWEIGHT":100,"XFMINWCLIMIT":"0:30:00","USAGEEXECUTIONTIMEWEIGHT":1}"#,
    changes: &[
        r#"{"SERVCAP":5000}"#,
        r#"{"QUEUETIMECAP":60}"#,
        r#"{"FSWEIGHT":3}"#,
        r#"{"JOBPRIOACCRUALPOLICY":"ALWAYS"}"#,
    ],
    lazy_caps: false,
};

fn run(scenario: &Scenario, seed: u64, workers: usize, batches: usize) -> Result<(), String> {
    let mut engine = Engine::start(workers, Config::default()).map_err(|e| e.to_string())?;
    let mut replay = Replay::new(Config::default());
    let mut rng = Rng::seeded(seed);
    let mut next_id = 0u64;
    let mut t = T0;
    let mut ranked_seen = 0usize;
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
        let report = engine
            .apply_batch(read_events(text.as_bytes()).map(Result::unwrap).collect())
            .map_err(|e| e.to_string())?;
        let context = format!("{} seed {seed} round {round} t {t}", scenario.name);
        if engine.applied() != replay.report.applied {
            return Err(format!(
                "{context}: applied {} vs the oracle's {} ({report:?})",
                engine.applied(),
                replay.report.applied
            ));
        }
        let fs = fairshare::user_factors(replay.state());
        let want_all = priority::evaluate(replay.state(), &fs);
        let want_queue = priority::entry_queue(&want_all);
        ranked_seen += want_queue.len();
        let got_all = engine.priorities().map_err(|e| e.to_string())?;
        compare(&format!("{context}: priorities"), &got_all, &want_all)?;
        for k in [1, 10, want_queue.len().max(1)] {
            let got = engine.top(k).map_err(|e| e.to_string())?;
            compare(
                &format!("{context}: top {k}"),
                &got,
                &want_queue[..k.min(want_queue.len())],
            )?;
        }
        if let Some(p) = want_all.last() {
            let got = engine.job(&p.job).map_err(|e| e.to_string())?;
            if got.as_ref() != Some(p) {
                return Err(format!("{context}: job {} read {got:?}, want {p:?}", p.job));
            }
        }
    }
    if ranked_seen < batches {
        return Err(format!(
            "{}: the stream ranked too few jobs ({ranked_seen} over {batches} batches)",
            scenario.name
        ));
    }
    Ok(())
}

fn sweep(scenario: &Scenario) {
    let heavy = fairflow_testkit::heavy();
    let (seeds, batches) = if heavy { (6, 120) } else { (1, 30) };
    for seed in 1..=seeds {
        for workers in [1, 2, 4] {
            if let Err(e) = run(scenario, seed, workers, batches) {
                panic!("{workers} workers: {e}");
            }
        }
    }
}

#[test]
fn slurm_priorities_equal_the_oracle() {
    sweep(&SLURM);
}

#[test]
fn slurm_incr_only_priorities_equal_the_oracle() {
    sweep(&SLURM_INCR_ONLY);
}

#[test]
fn slurm_classic_priorities_equal_the_oracle() {
    sweep(&SLURM_CLASSIC);
}

#[test]
fn slurm_tied_priorities_equal_the_oracle() {
    sweep(&SLURM_TIES);
}

#[test]
fn flux_priorities_equal_the_oracle() {
    sweep(&FLUX);
}

#[test]
fn moab_priorities_equal_the_oracle() {
    sweep(&MOAB);
}

#[test]
fn slurm_ticket_based_priorities_equal_the_oracle() {
    sweep(&SLURM_TICKET);
}

#[test]
fn slurm_level_based_priorities_equal_the_oracle() {
    sweep(&SLURM_LEVEL);
}

#[test]
fn slurm_priorities_across_family_switches_equal_the_oracle() {
    sweep(&SLURM_FAMILY_SWITCHES);
}
