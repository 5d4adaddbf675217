//! The follower's poll at scale (issue 35's target): 100,000 associations
//! and 1,000,000 pending jobs printed by stand-in commands (`cat` of
//! generated files, the real commands' formats), a first poll, then 1% of
//! the jobs changed and 1,000 jobs finished unseen, and a second poll, whose
//! CPU time (this process's, the stand-ins' own excluded) and events are
//! printed. A measurement, not a test of speed: `#[ignore]`d, run by hand
//! (perf/results/ says how).

#[path = "support/slurm_site.rs"]
mod slurm_site;

use std::time::{Duration, Instant};

use fairflow_ingest::slurm_live::diff::{queue_events, PollWindow};
use fairflow_ingest::slurm_live::jobs::{JobTable, JobsFormat};
use fairflow_ingest::slurm_live::policy::Policy;
use fairflow_ingest::slurm_live::{poll_events, Poll, TextHashes};
use slurm_site::{at, count, cpu_secs, jobs_text, write_site};

#[test]
#[ignore = "a measurement at 100k associations / 1M jobs: run by hand"]
fn one_poll_at_scale() {
    let (users, jobs) = (count("FF_USERS", 91_000), count("FF_JOBS", 1_000_000));
    let accounts = users / 10;
    let dir = std::env::temp_dir().join(format!("ff-poll-scale-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = |name: &str| dir.join(name);
    let commands = write_site(&dir, users, jobs);
    let first_poll = Poll {
        commands: &commands,
        timeout: Duration::from_secs(600),
        cluster: None,
        finished_since: None,
    };
    let mut table = JobTable::default();
    let window = |t| PollWindow {
        since: t,
        now: t,
        submitted_through: Some(at("2026-11-28T10:00:00")),
    };
    let (cpu, wall) = (cpu_secs(), Instant::now());
    let first = first_poll.run(&mut table, TextHashes::default()).unwrap();
    let events = poll_events(&Policy::default(), &table, None, &first, &window(1)).unwrap();
    println!(
        "first poll: {} associations, {} jobs, {} events, {:.2} s CPU, {:.2} s wall",
        accounts + users,
        first.jobs.n_listed,
        events.len(),
        cpu_secs() - cpu,
        wall.elapsed().as_secs_f64()
    );
    let policy = first.policy.clone().unwrap();
    let texts = first.texts;
    table.apply(first.jobs);
    // 1% of the jobs change (their nice), the rest is as it was; sacct
    // lists 1,000 jobs that ran and finished between the polls, unseen.
    let changed = jobs / 100;
    std::fs::write(file("jobs"), jobs_text(jobs, users, changed, 10)).unwrap();
    let poll = Poll {
        finished_since: Some(1),
        ..first_poll
    };
    let (cpu, wall) = (cpu_secs(), Instant::now());
    let second = poll.run(&mut table, texts).unwrap();
    let events = poll_events(&policy, &table, None, &second, &window(2)).unwrap();
    let cpu = cpu_secs() - cpu;
    println!(
        "poll with 1% changed and 1,000 finished unseen: {} events, {cpu:.2} s CPU, {:.2} s wall",
        events.len(),
        wall.elapsed().as_secs_f64()
    );
    // Each changed job an update, each finished one a submit, start, end.
    assert_eq!(events.len(), changed + 3 * 1_000, "only what changed");
    // Where the second poll's time goes, piece by piece.
    let text = std::fs::read_to_string(file("jobs")).unwrap();
    let cpu = cpu_secs();
    let changes = table
        .read_changes("squeue", &text, JobsFormat::Plain)
        .unwrap();
    println!(
        "  squeue's {} lines read against the table: {:.2} s CPU",
        changes.n_listed,
        cpu_secs() - cpu
    );
    let cpu = cpu_secs();
    let _ = queue_events(&table, None, &changes, &second.finished, &window(2));
    println!("  the job diff: {:.2} s CPU", cpu_secs() - cpu);
    let cpu = cpu_secs();
    let _ = poll.run(&mut table, second.texts).unwrap();
    println!("  a whole poll's reading: {:.2} s CPU", cpu_secs() - cpu);
    std::fs::remove_dir_all(&dir).unwrap();
}
