//! `fairflow demo`: the worked example of Slurm's classic fair-share
//! documentation, built in as events, shown under every algorithm.
//!
//! The tree: accounts A (40 shares) and D (60) under root; B (30) and C (10)
//! under A; E (25) and F (35) under D. user1 is in B, user2 and user3 in C,
//! user4 in E, user5 in F, one share each. User 1 used 0.2 of the machine,
//! users 2 and 4 0.25 each: with the machine's total at 1 000 000 TRES-seconds
//! that is 200 000, 250 000 and 250 000; the other 300 000 were used outside
//! this tree and are charged to root itself, so that every normalized usage is
//! the document's fraction. There is no decay (`PriorityDecayHalfLife=0`).
//! Users 2 and 5 have a pending job each, which only the ticket-based
//! algorithm looks at.
//!
//! The second part replays a built-in synthetic cluster ([`cluster_params`]:
//! the workload generator with a fixed seed, 2,000 user associations and
//! 10,000 pending jobs, then [`ACTIVITY_SECS`] of activity cut into one batch
//! per event time) through the incremental engine, and shows the top 10 of
//! the queue (sprio's columns, after a rank) with the per-batch latency
//! (apply plus top-10 read: p50, p99, max, events per second) and the
//! latency of a top-10 read alone, computed at a moved time (never the
//! engine's kept answer).

use std::collections::BTreeMap;

use std::time::Instant;

use anyhow::{bail, Context};
use fairflow_engine::{BatchEngine, Engine, IncrementalEngine};
use fairflow_ingest::reader::LogLine;
use fairflow_model::event::{JobSpec, Op};
use fairflow_model::report::{JobPriority, SharedJobs};
use fairflow_model::tres::TresCounts;
use fairflow_model::{Config, Event, Shares};
use fairflow_serve::format::{aligned, parsable, Column, Justify};
use fairflow_serve::sshare::render;
use fairflow_serve::OutputFormat;
use fairflow_workload::{Generator, WorkloadParams};

use crate::measure::Latency;
use crate::output::emit;

/// `fairflow demo` flags.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print each table `|`-separated instead of aligned.
    #[arg(short = 'P', long = "parsable")]
    parsable: bool,
}

/// The time of every built-in event.
const DEMO_T: i64 = 1_700_000_000;

/// One algorithm the demo shows: its title, its `PriorityFlags`, and any
/// other parameter it needs.
struct Shown {
    title: &'static str,
    flags: &'static str,
    extra: &'static [(&'static str, &'static str)],
}

/// The algorithms shown, in order.
const ALGORITHMS: [Shown; 5] = [
    Shown {
        title: "Fair Tree (PriorityFlags=FAIR_TREE, Slurm's default)",
        flags: "FAIR_TREE",
        extra: &[],
    },
    Shown {
        title: "Classic (PriorityFlags=NO_FAIR_TREE)",
        flags: "NO_FAIR_TREE",
        extra: &[],
    },
    Shown {
        title: "Depth-oblivious (PriorityFlags=DEPTH_OBLIVIOUS)",
        flags: "DEPTH_OBLIVIOUS",
        extra: &[],
    },
    Shown {
        title: "Ticket-based (PriorityFlags=TICKET_BASED; users 2 and 5 have pending jobs)",
        flags: "TICKET_BASED",
        extra: &[],
    },
    Shown {
        title: "Level-based (PriorityFlags=LEVEL_BASED, PriorityLevels=3)",
        flags: "LEVEL_BASED",
        extra: &[("PriorityLevels", "3")],
    },
];

fn account(name: &str, parent: &str, shares: u32) -> Op {
    Op::Account {
        name: name.to_string(),
        parent: Some(parent.to_string()),
        shares: Some(Shares::Value(shares)),
        priority: None,
    }
}

fn user(user: &str, account: &str) -> Op {
    Op::User {
        user: user.to_string(),
        account: account.to_string(),
        shares: Some(Shares::Value(1)),
        priority: None,
    }
}

fn usage(account: &str, user: Option<&str>, amount: f64) -> Op {
    Op::Usage {
        account: account.to_string(),
        user: user.map(str::to_string),
        amount,
        period: None,
    }
}

fn submit(job: &str, user: &str, account: &str) -> Op {
    let tres: TresCounts = [("cpu".to_string(), 1.0)].into_iter().collect();
    Op::Submit {
        job: job.to_string(),
        user: user.to_string(),
        account: account.to_string(),
        spec: JobSpec {
            tres: Some(tres),
            ..JobSpec::default()
        },
        submitted: None,
    }
}

/// The example's events under `PriorityFlags=flags` (and `extra` parameters).
pub fn example_events(flags: &str, extra: &[(&str, &str)]) -> Vec<Event> {
    let mut set: BTreeMap<String, serde_json::Value> = BTreeMap::new();
    set.insert("PriorityFlags".into(), flags.into());
    set.insert("PriorityDecayHalfLife".into(), "0".into());
    for (key, value) in extra {
        set.insert((*key).into(), (*value).into());
    }
    let ops = vec![
        Op::Config { set },
        account("A", "root", 40),
        account("D", "root", 60),
        account("B", "A", 30),
        account("C", "A", 10),
        account("E", "D", 25),
        account("F", "D", 35),
        user("user1", "B"),
        user("user2", "C"),
        user("user3", "C"),
        user("user4", "E"),
        user("user5", "F"),
        usage("B", Some("user1"), 200_000.0),
        usage("C", Some("user2"), 250_000.0),
        usage("E", Some("user4"), 250_000.0),
        usage("root", None, 300_000.0),
        submit("1", "user2", "C"),
        submit("2", "user5", "F"),
    ];
    ops.into_iter().map(|op| Event { t: DEMO_T, op }).collect()
}

/// Replay the example under one algorithm through the batch engine; any
/// rejection is a bug.
fn replay(flags: &str, extra: &[(&str, &str)]) -> anyhow::Result<BatchEngine> {
    let mut engine = BatchEngine::new(Config::default());
    let mut next_line = 0;
    let rejected = engine.apply(numbered(example_events(flags, extra), &mut next_line))?;
    if let Some(rejection) = rejected.first() {
        bail!("the built-in example was rejected under {flags} (this is a bug): {rejection}");
    }
    Ok(engine)
}

/// Print the example's table under every algorithm, each with a title line.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let mut text = String::from(
        "Slurm's classic fair-share example: accounts A (40 shares) and D (60); B (30) and C (10)\n\
         under A; E (25) and F (35) under D; user1 in B, user2 and user3 in C, user4 in E, user5 in F.\n\
         Usage: user1 0.2 of the machine, user2 0.25, user4 0.25; no decay.\n",
    );
    let format = if args.parsable {
        OutputFormat::Parsable
    } else {
        OutputFormat::Table
    };
    for shown in &ALGORITHMS {
        let table = replay(shown.flags, shown.extra)?.fairshare()?;
        text.push_str(&format!("\n== {}\n", shown.title));
        text.push_str(&render(&table, format));
    }
    text.push_str(&cluster(format)?.text);
    emit(&text)
}

/// The built-in synthetic cluster: fixed seed, 2,000 user associations in a
/// tree of depth up to 5, 10,000 pending and 200 running jobs, with the
/// generator's multifactor weights under Slurm's default Fair Tree.
pub fn cluster_params() -> WorkloadParams {
    WorkloadParams {
        seed: 42,
        user_associations: 2_000,
        max_depth: 5,
        users_per_account: 8,
        pending_jobs: 10_000,
        running_jobs: 200,
        ..WorkloadParams::default()
    }
}

/// Seconds of generated activity after the initial state.
pub const ACTIVITY_SECS: i64 = 600;

/// Jobs of the queue shown.
const SHOWN_JOBS: usize = 10;

/// Top-10 reads timed on their own.
const READS: usize = 200;

/// The synthetic cluster's events: the initial state, then the activity cut
/// into one batch per event time.
pub fn cluster_events() -> (Vec<Event>, Vec<Vec<Event>>) {
    let mut generator = Generator::new(cluster_params());
    let initial = generator.initial_events();
    let mut batches: Vec<Vec<Event>> = Vec::new();
    for event in generator.activity(ACTIVITY_SECS) {
        match batches.last_mut() {
            Some(batch) if batch[0].t == event.t => batch.push(event),
            _ => batches.push(vec![event]),
        }
    }
    (initial, batches)
}

/// What the synthetic part showed.
pub struct ClusterRun {
    /// The text printed.
    pub text: String,
    /// The queue's first jobs after the last batch.
    #[cfg_attr(not(test), allow(dead_code))]
    pub top: Vec<JobPriority>,
}

fn numbered(events: Vec<Event>, next_line: &mut u64) -> Vec<LogLine> {
    events
        .into_iter()
        .map(|event| {
            *next_line += 1;
            LogLine {
                line: *next_line,
                event: Ok(event),
            }
        })
        .collect()
}

fn millis(us: f64) -> String {
    format!("{:.3} ms", us / 1_000.0)
}

/// Replay the synthetic cluster through the incremental engine; show the
/// queue and the latencies.
pub fn cluster(format: OutputFormat) -> anyhow::Result<ClusterRun> {
    let params = cluster_params();
    let (initial, batches) = cluster_events();
    let mut engine = IncrementalEngine::start(1, Config::default())
        .context("cannot start the incremental engine")?;
    let mut next_line = 0;
    let initial_len = initial.len();
    let started = Instant::now();
    let rejected = engine.apply(numbered(initial, &mut next_line))?;
    let load_secs = started.elapsed().as_secs_f64();
    if let Some(rejection) = rejected.first() {
        bail!("the synthetic cluster was rejected (this is a bug): {rejection}");
    }
    let mut per_batch = Latency::new()?;
    let (mut events, mut busy_secs) = (0usize, 0.0f64);
    let batch_count = batches.len();
    let mut top = SharedJobs::default();
    for batch in batches {
        let len = batch.len();
        let started = Instant::now();
        let rejected = engine.apply(numbered(batch, &mut next_line))?;
        top = engine.top(SHOWN_JOBS)?;
        let elapsed = started.elapsed();
        if let Some(rejection) = rejected.first() {
            bail!("the synthetic activity was rejected (this is a bug): {rejection}");
        }
        per_batch.record(elapsed)?;
        busy_secs += elapsed.as_secs_f64();
        events += len;
    }
    // The queue shown is the last batch's; the reads then compute, each at a
    // time one second on (the engine keeps its answer only while neither
    // its time nor its facts move).
    let now = |engine: &IncrementalEngine| engine.book().state().now;
    let shown_at = now(&engine);
    let mut reads = Latency::new()?;
    for _ in 0..READS {
        engine.advance_to(now(&engine) + 1)?;
        let started = Instant::now();
        std::hint::black_box(engine.top(SHOWN_JOBS)?);
        reads.record(started.elapsed())?;
    }
    let per_second = if busy_secs > 0.0 {
        events as f64 / busy_secs
    } else {
        0.0
    };
    let mut text = format!(
        "\n== A synthetic cluster through the incremental engine\n\
         {} user associations (depth up to {}), {} pending and {} running jobs (seed {}), Fair Tree,\n\
         multifactor priority; loaded as {initial_len} events in {load_secs:.3} s, then {ACTIVITY_SECS} s of \
         activity:\n{events} events in {batch_count} batches (submissions, starts, ends, usage, share changes, \
         reorganisations).\n",
        params.user_associations,
        params.max_depth,
        params.pending_jobs,
        params.running_jobs,
        params.seed,
    );
    text.push_str(&format!(
        "Latency per batch (apply + top-{SHOWN_JOBS} read): p50 {}, p99 {}, max {}; {per_second:.0} events/s\n",
        millis(per_batch.quantile_us(0.5)),
        millis(per_batch.quantile_us(0.99)),
        millis(per_batch.max_us()),
    ));
    text.push_str(&format!(
        "Latency of a top-{SHOWN_JOBS} read alone, computed at a moved time: p50 {:.1} us, p99 {:.1} us\n",
        reads.quantile_us(0.5),
        reads.quantile_us(0.99),
    ));
    text.push_str(&format!(
        "\nTop {SHOWN_JOBS} of the queue at t={shown_at}:\n"
    ));
    text.push_str(&queue_table(&top, format));
    Ok(ClusterRun {
        text,
        top: top.to_vec(),
    })
}

/// The queue with a rank before sprio's columns.
fn queue_table(top: &[JobPriority], format: OutputFormat) -> String {
    let model = top
        .first()
        .map_or(fairflow_model::PriorityModel::Slurm, |j| j.model);
    let mut columns = vec![Column {
        name: "RANK",
        width: 4,
        justify: Justify::Right,
    }];
    columns.extend(fairflow_serve::sprio::columns(model));
    let rows: Vec<Vec<String>> = top
        .iter()
        .enumerate()
        .map(|(i, job)| {
            let mut cells = vec![(i + 1).to_string()];
            cells.extend(fairflow_serve::sprio::cells(job, false));
            cells
        })
        .collect();
    match format {
        OutputFormat::Parsable => parsable(&columns, &rows),
        _ => aligned(&columns, &rows),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cluster_queue_starts_with_the_oracles_first_job() {
        let run = cluster(OutputFormat::Parsable).unwrap();
        // The oracle on the same generated events, from scratch.
        let (initial, batches) = cluster_events();
        let mut replay = fairflow_oracle::Replay::new(Config::default());
        let mut next_line = 0;
        replay.feed_all(numbered(initial, &mut next_line));
        for batch in batches {
            replay.feed_all(numbered(batch, &mut next_line));
        }
        assert!(replay.report.rejected.is_empty());
        let factors = fairflow_oracle::fairshare::user_factors(replay.state());
        let all = fairflow_oracle::priority::evaluate(replay.state(), &factors);
        let queue = fairflow_oracle::priority::entry_queue(&all);
        let first = &queue[0];
        assert_eq!(run.top[0].job, first.job);
        assert_eq!(run.top[0].priority, first.priority);
        // The printed queue's first row is rank 1, that job.
        let header = run
            .text
            .lines()
            .position(|l| l.starts_with("RANK|JOBID|"))
            .expect("the queue header");
        let row: Vec<&str> = run
            .text
            .lines()
            .nth(header + 1)
            .unwrap()
            .split('|')
            .collect();
        assert_eq!(row[0], "1");
        assert_eq!(row[1], first.job);
        assert_eq!(run.top.len(), SHOWN_JOBS);
    }

    #[test]
    fn the_example_replays_without_rejection_under_every_algorithm() {
        for shown in &ALGORITHMS {
            let replay = replay(shown.flags, shown.extra).unwrap();
            assert_eq!(replay.applied(), 18);
            assert_eq!(replay.config().algorithm().name(), {
                match shown.flags {
                    "FAIR_TREE" => "fair_tree",
                    "NO_FAIR_TREE" => "classic",
                    "DEPTH_OBLIVIOUS" => "depth_oblivious",
                    "TICKET_BASED" => "ticket_based",
                    _ => "level_based",
                }
            });
        }
    }
}
