//! `Engine::queue_through` (a job's place in line, read from the queue
//! index) against the oracle's plain sort (`priority::entry_queue`, cut after the
//! job): the seeded random streams of `engine_priority_equivalence`, after
//! every batch moved on to a random later `now`, for every ranked job, and
//! `None` for every listed job that is not ranked (held, running); 1, 2 and
//! 4 workers; Slurm under Fair Tree, classic and many ties (jobs at the
//! floor), `INCR_ONLY` (a full read), Flux and Moab.

use fairflow_model::report::JobState;

mod priority_stream;
mod stream_run;
use priority_stream::{
    compare, Scenario, FLUX, MOAB, SLURM, SLURM_CLASSIC, SLURM_INCR_ONLY, SLURM_TIES,
};
use stream_run::Run;

fn run(scenario: &Scenario, seed: u64, workers: usize, batches: usize) -> Result<usize, String> {
    let mut run = Run::start(workers, seed)?;
    let mut checked = 0usize;
    for round in 0..batches {
        run.round(round, scenario, false)?;
        let t = run.t;
        let context = format!("{} seed {seed} round {round} now {t}", scenario.name);
        let (listed, queue) = run.oracle();
        for (index, job) in queue.iter().enumerate() {
            // A job's place is its first entry's.
            if queue[..index].iter().any(|ahead| ahead.job == job.job) {
                continue;
            }
            let got = run
                .engine
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
            let got = run
                .engine
                .queue_through(&job.job)
                .map_err(|e| e.to_string())?;
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
