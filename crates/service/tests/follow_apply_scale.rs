//! Applying the Slurm follower's poll to the service at scale (issue 35's
//! target, the other half of `crates/ingest/tests/follow_poll_scale.rs`):
//! the events of a first poll of 100,000 associations and 1,000,000 pending
//! jobs are written through the applier to the incremental engine (one
//! worker, as `serve` runs by default), in writes of 10,000 as the follower
//! makes them; then the second poll's events (1% of the jobs' nice changed,
//! 1,000 jobs finished unseen) as the follower writes them (one write, as a
//! poll with finished jobs is), and the CPU time of this process (applier,
//! engine and log) and the wall time of that write are printed. A
//! measurement, not a test of speed: `#[ignore]`d, run by hand (perf/results/
//! says how).

#[path = "../../ingest/tests/support/slurm_site.rs"]
mod slurm_site;

use std::sync::Arc;
use std::time::{Duration, Instant};

use fairflow_engine::EngineChoice;
use fairflow_ingest::slurm_live::diff::PollWindow;
use fairflow_ingest::slurm_live::jobs::JobTable;
use fairflow_ingest::slurm_live::policy::Policy;
use fairflow_ingest::slurm_live::{poll_events, Poll, TextHashes};
use fairflow_model::{Config, Event};
use fairflow_service::applier::{self, ApplierConfig, ApplierHandle};
use fairflow_service::engine_backend::EngineBackend;
use fairflow_service::follow_slurm::event_lines;
use fairflow_service::metrics::Metrics;
use slurm_site::{at, count, cpu_secs, jobs_text, write_site};

/// Write `events` in writes of at most `batch` lines; every line must be
/// accepted.
async fn write(applier: &ApplierHandle, events: Vec<Event>, batch: usize) {
    let mut lines = event_lines(events);
    while !lines.is_empty() {
        let rest = lines.split_off(lines.len().min(batch));
        let outcome = applier
            .write(std::mem::replace(&mut lines, rest))
            .await
            .unwrap();
        assert!(outcome.rejected.is_empty(), "{:?}", &outcome.rejected[..1]);
    }
}

#[test]
#[ignore = "a measurement at 100k associations / 1M jobs: run by hand"]
fn applying_a_poll_at_scale() {
    let (users, jobs) = (count("FF_USERS", 91_000), count("FF_JOBS", 1_000_000));
    let dir = tempfile::tempdir().unwrap();
    let site = dir.path().join("site");
    std::fs::create_dir_all(&site).unwrap();
    let commands = write_site(&site, users, jobs);
    let first_poll = Poll {
        commands: &commands,
        timeout: Duration::from_secs(600),
        cluster: None,
        finished_since: None,
    };
    let t0 = at("2026-11-28T12:00:00");
    let window = |t| PollWindow {
        since: t,
        now: t,
        submitted_through: Some(at("2026-11-28T10:00:00")),
    };
    let mut table = JobTable::default();
    let first = first_poll.run(&mut table, TextHashes::default()).unwrap();
    let first_events = poll_events(&Policy::default(), &table, None, &first, &window(t0)).unwrap();
    let policy = first.policy.clone().unwrap();
    let texts = first.texts;
    table.apply(first.jobs);
    std::fs::write(site.join("jobs"), jobs_text(jobs, users, jobs / 100, 10)).unwrap();
    let poll = Poll {
        finished_since: Some(t0),
        ..first_poll
    };
    let second = poll.run(&mut table, texts).unwrap();
    let second_events = poll_events(&policy, &table, None, &second, &window(t0 + 10)).unwrap();

    let config = ApplierConfig {
        data_dir: dir.path().join("data"),
        checkpoint_every: u64::MAX,
        queue_capacity: 8,
        max_group: 8,
        recover: false,
    };
    let engine =
        fairflow_engine::start(EngineChoice::Incremental { workers: 1 }, Config::default())
            .unwrap();
    let backend = EngineBackend::new(engine);
    let (handle, _, thread) = applier::start(backend, config, Arc::new(Metrics::new())).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let n_first = first_events.len();
        let (cpu, wall) = (cpu_secs(), Instant::now());
        write(&handle, first_events, 10_000).await;
        println!(
            "first poll applied: {n_first} events, {:.1} s CPU, {:.1} s wall",
            cpu_secs() - cpu,
            wall.elapsed().as_secs_f64()
        );
        let n_second = second_events.len();
        let (cpu, wall) = (cpu_secs(), Instant::now());
        write(&handle, second_events, usize::MAX).await;
        println!(
            "second poll applied (1% changed, 1,000 finished): {n_second} events, {:.2} s CPU, {:.2} s wall",
            cpu_secs() - cpu,
            wall.elapsed().as_secs_f64()
        );
    });
    drop(handle);
    thread.join().unwrap();
}
