//! `Engine::top_page_counted` (`top --offset`: a page of the queue counted
//! from the shards' bounds, the entries before it not read) against the
//! oracle's whole sorted queue (`priority::entry_queue`) cut at the page:
//! - the seeded random streams of `engine_priority_equivalence`
//!   (submissions, holds, starts, ends, requeues, usage, configuration
//!   changes: retractions of every kind), after every batch at a random
//!   later `now`, pages at the queue's edges and at random offsets and
//!   sizes; 1, 2 and 4 workers. Slurm's pages are counted (under Fair
//!   Tree, classic, ties at one priority, every job at the floor); Flux's
//!   and Moab's are not (`None`: the read of the first entries answers);
//!   under `INCR_ONLY` only while it is off.
//! - a queue of thousands of jobs of hundreds of users (Fair Tree and
//!   classic) with cancels, holds, new jobs, usage, accounts moved under
//!   others and back, users' shares set to `parent` and back, and time
//!   moving between reads, where the search narrows the window
//!   (`PageWindowNarrowed` crossed both ways).

use fairflow_dataflow::thresholds::{decisions, Threshold};
use fairflow_dataflow::Engine;
use fairflow_ingest::reader::read_events;
use fairflow_model::report::JobPriority;
use fairflow_model::Config;
use fairflow_oracle::Replay;

mod priority_stream;
mod stream_run;
use priority_stream::{
    compare, Rng, Scenario, FLUX, MOAB, SLURM, SLURM_CLASSIC, SLURM_FLOOR, SLURM_INCR_ONLY,
    SLURM_TIES, T0,
};
use stream_run::{oracle, Run};

/// Each page of `pages` the engine counts equal to the oracle's queue cut
/// there; how many were counted.
fn check_pages(
    engine: &Engine,
    queue: &[JobPriority],
    pages: &[(usize, usize)],
    context: &str,
) -> Result<usize, String> {
    let mut counted = 0;
    for &(offset, k) in pages {
        let got = engine
            .top_page_counted(offset, k)
            .map_err(|e| e.to_string())?;
        let Some(got) = got else { continue };
        let from = offset.min(queue.len());
        let want = &queue[from..offset.saturating_add(k).min(queue.len())];
        compare(&format!("{context}: page {offset}+{k}"), &got, want)?;
        // An empty queue's pages are empty whatever the model.
        counted += usize::from(!queue.is_empty());
    }
    Ok(counted)
}

/// Pages at the edges of a queue of `len` entries and at random places.
fn pages_of(len: usize, rng: &mut Rng) -> Vec<(usize, usize)> {
    let mut pages = vec![
        (1, 1),
        (1, len + 1),
        (len.saturating_sub(1), 1),
        (len.saturating_sub(2), 5),
        (len, 3),
        (len + 4, 2),
    ];
    for _ in 0..6 {
        let offset = rng.below(len as u64 + 2) as usize;
        let k = rng.below(len as u64 + 2) as usize + 1;
        pages.push((offset, k));
    }
    pages
}

/// The pages counted in one run of a random stream.
fn run(scenario: &Scenario, seed: u64, workers: usize, batches: usize) -> Result<usize, String> {
    let mut run = Run::start(workers, seed)?;
    let mut counted = 0usize;
    for round in 0..batches {
        run.round(round, scenario, true)?;
        let t = run.t;
        let context = format!("{} seed {seed} round {round} now {t}", scenario.name);
        let (_, queue) = run.oracle();
        let pages = pages_of(queue.len(), &mut run.rng);
        counted += check_pages(&run.engine, &queue, &pages, &context)?;
    }
    Ok(counted)
}

/// Every run of a scenario; `counted`: its pages are counted (at least
/// one per batch), else none is.
fn sweep(scenario: &Scenario, counted: Option<bool>) {
    let heavy = fairflow_testkit::heavy();
    let (seeds, batches) = if heavy { (4, 80) } else { (1, 20) };
    for seed in 1..=seeds {
        for workers in [1, 2, 4] {
            let pages = run(scenario, seed, workers, batches)
                .unwrap_or_else(|e| panic!("{workers} workers: {e}"));
            match counted {
                Some(true) => assert!(
                    pages >= batches,
                    "{} {workers} workers: too few pages counted ({pages})",
                    scenario.name
                ),
                Some(false) => assert_eq!(pages, 0, "{}: pages counted", scenario.name),
                None => {}
            }
        }
    }
}

#[test]
fn slurm_counted_pages_equal_the_oracle() {
    sweep(&SLURM, Some(true));
}

#[test]
fn slurm_classic_counted_pages_equal_the_oracle() {
    sweep(&SLURM_CLASSIC, Some(true));
}

#[test]
fn slurm_tied_counted_pages_equal_the_oracle() {
    sweep(&SLURM_TIES, Some(true));
}

#[test]
fn slurm_floor_counted_pages_equal_the_oracle() {
    sweep(&SLURM_FLOOR, Some(true));
}

#[test]
fn incr_only_pages_are_counted_only_while_it_is_off() {
    sweep(&SLURM_INCR_ONLY, None);
}

#[test]
fn flux_and_moab_pages_are_left_to_the_first_entries_read() {
    sweep(&FLUX, Some(false));
    sweep(&MOAB, Some(false));
}

/// A cluster of `accounts` accounts of ten users each under `config`,
/// with a usage history.
fn cluster(config: &str, accounts: u64, rng: &mut Rng) -> Vec<String> {
    let mut lines = vec![format!(r#"{{"op":"config","t":{T0},"set":{config}}}"#)];
    for account in 0..accounts {
        lines.push(format!(
            r#"{{"op":"account","t":{T0},"name":"a{account}","shares":{}}}"#,
            account % 7 + 1
        ));
        for user in 0..10 {
            lines.push(format!(
                r#"{{"op":"user","t":{T0},"user":"u{user}","account":"a{account}","shares":{}}}"#,
                user % 3 + 1
            ));
        }
    }
    for index in 0..500 {
        lines.push(usage(rng, accounts, T0 + index));
    }
    lines
}

fn usage(rng: &mut Rng, accounts: u64, t: i64) -> String {
    let (account, user) = (rng.below(accounts), rng.below(10));
    let amount = rng.below(100_000) + 1;
    format!(r#"{{"op":"usage","t":{t},"account":"a{account}","user":"u{user}","amount":{amount}}}"#)
}

fn submit(rng: &mut Rng, accounts: u64, job: u64, t: i64) -> String {
    let (account, user) = (rng.below(accounts), rng.below(10));
    let nice = rng.below(2_000) as i64 - 1_000;
    format!(
        r#"{{"op":"submit","t":{t},"job":"{job}","user":"u{user}","account":"a{account}","nice":{nice},"tres":{{"cpu":{}}}}}"#,
        rng.below(64) + 1
    )
}

/// One batch of the large queue's changes: cancels and holds of pending
/// jobs, new jobs, usage.
fn changes(rng: &mut Rng, accounts: u64, queue: &[JobPriority], next: &mut u64, t: i64) -> String {
    let mut lines = Vec::new();
    for _ in 0..40 {
        let job = &queue[rng.below(queue.len() as u64) as usize].job;
        let op = if rng.chance(50) { "cancel" } else { "hold" };
        lines.push(format!(r#"{{"op":"{op}","t":{t},"job":"{job}"}}"#));
    }
    for _ in 0..60 {
        lines.push(submit(rng, accounts, *next, t));
        *next += 1;
    }
    for _ in 0..20 {
        lines.push(usage(rng, accounts, t));
    }
    // Reorganisations: an account of the second half moves under one of
    // the first half or back under the root (no cycle), and a user's
    // shares become `parent` or a number (its slot changes group).
    for _ in 0..2 {
        let moved = accounts / 2 + rng.below(accounts / 2);
        let parent = if rng.chance(30) {
            "root".to_string()
        } else {
            format!("a{}", rng.below(accounts / 2))
        };
        lines.push(format!(
            r#"{{"op":"account","t":{t},"name":"a{moved}","parent":"{parent}"}}"#
        ));
    }
    let (account, user) = (rng.below(accounts), rng.below(10));
    let shares = if rng.chance(50) { r#""parent""# } else { "2" };
    lines.push(format!(
        r#"{{"op":"user","t":{t},"user":"u{user}","account":"a{account}","shares":{shares}}}"#
    ));
    lines.join("\n") + "\n"
}

/// Pages over a queue of `jobs` jobs under `config`, for `workers`.
fn large_queue(config: &str, workers: usize, jobs: u64) -> Result<(), String> {
    let (accounts, mut rng) = (40, Rng::seeded(11));
    let mut engine = Engine::start(workers, Config::default()).map_err(|e| e.to_string())?;
    let mut replay = Replay::new(Config::default());
    let mut lines = cluster(config, accounts, &mut rng);
    let mut t = T0 + 500;
    for job in 0..jobs {
        t += rng.below(3) as i64;
        lines.push(submit(&mut rng, accounts, job, t));
    }
    let mut text = lines.join("\n") + "\n";
    let mut next = jobs;
    for round in 0..6 {
        replay.feed_all(read_events(text.as_bytes()).map(Result::unwrap));
        engine
            .apply_batch(read_events(text.as_bytes()).map(Result::unwrap).collect())
            .map_err(|e| e.to_string())?;
        t += rng.below(3_000) as i64 + 1;
        replay.advance_to(t);
        engine.advance_to(t).map_err(|e| e.to_string())?;
        let (_, queue) = oracle(&replay);
        let mut pages = pages_of(queue.len(), &mut rng);
        for _ in 0..6 {
            let offset = rng.below(queue.len() as u64) as usize;
            pages.push((offset, *rng.pick(&[1, 10, 100])));
        }
        let context = format!("{workers} workers, round {round}, now {t}");
        let counted = check_pages(&engine, &queue, &pages, &context)?;
        if counted < pages.len() {
            return Err(format!("{context}: {counted} of {} counted", pages.len()));
        }
        t += 1;
        text = changes(&mut rng, accounts, &queue, &mut next, t);
    }
    Ok(())
}

#[test]
fn large_queues_are_paged_by_narrowed_windows_equal_to_the_oracle() {
    let [under, over] = decisions(Threshold::PageWindowNarrowed);
    let fair_tree = r#"{"PriorityWeightAge":1000,"PriorityMaxAge":"7-0","PriorityWeightFairshare":10000,"PriorityWeightJobSize":200}"#;
    let classic = r#"{"PriorityFlags":"NO_FAIR_TREE","PriorityWeightAge":100,"PriorityMaxAge":"1-0","PriorityWeightFairshare":100000}"#;
    let jobs = if fairflow_testkit::heavy() {
        20_000
    } else {
        6_000
    };
    for config in [fair_tree, classic] {
        for workers in [1, 2, 4] {
            large_queue(config, workers, jobs).unwrap_or_else(|e| panic!("{e}"));
        }
    }
    let [under_now, over_now] = decisions(Threshold::PageWindowNarrowed);
    assert!(
        under_now > under && over_now > over,
        "windows narrowed {} times, held at once {} times",
        over_now - over,
        under_now - under
    );
}
