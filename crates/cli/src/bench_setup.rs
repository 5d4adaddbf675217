//! What `fairflow bench` generates and measures: the fair-share algorithms
//! (`--algorithm`), the update kinds (`--kinds`) with their sample counts
//! and targets, the generated workload (`fairflow_workload`) with the
//! configuration pinned, the batches drawn for each sample, and the record
//! of the stream the engine went through ([`Recorder`]).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use anyhow::{bail, Context};
use fairflow_ingest::write::event_to_line;
use fairflow_ingest::LogLine;
use fairflow_model::event::Op;
use fairflow_model::Event;
use fairflow_workload::{Generator, WorkloadParams};
use serde_json::Value;

use crate::bench_args::{Args, BenchAlgorithm, Kind, ReadCheck};

/// The most running jobs by default: the generated cluster has 64,000
/// CPUs, and its jobs' mean size (powers of two with a heavy tail) is a few
/// CPUs.
pub(crate) const MAX_DEFAULT_RUNNING_JOBS: usize = 10_000;
/// Accounts a reorganisation moves (at most the accounts there are).
pub(crate) const REORG_ACCOUNTS: usize = 10_000;
/// Usage events in one `usage_batch_1000` batch.
pub(crate) const USAGE_BATCH: usize = 1_000;

pub(crate) fn scaled(count: usize, scale: f64) -> usize {
    ((count as f64 * scale).round() as usize).max(1)
}

/// Numbers log lines as they are handed out.
#[derive(Debug, Default)]
pub(crate) struct Lines {
    next: u64,
}

impl Lines {
    pub(crate) fn of(&mut self, events: Vec<Event>) -> Vec<LogLine> {
        events
            .into_iter()
            .map(|event| {
                self.next += 1;
                LogLine {
                    line: self.next,
                    event: Ok(event),
                }
            })
            .collect()
    }
}

/// The generator's parameters for these flags.
pub(crate) fn workload(args: &Args) -> WorkloadParams {
    WorkloadParams {
        seed: args.seed,
        user_associations: args.associations.max(1),
        max_depth: 6,
        users_per_account: args.users_per_account.max(1),
        pending_jobs: args.jobs,
        running_jobs: args
            .running_jobs
            .unwrap_or((args.jobs / 10).min(MAX_DEFAULT_RUNNING_JOBS)),
        tiered_partitions: args.tiered_partitions,
        ..WorkloadParams::default()
    }
}

/// Pin `PriorityCalcPeriod` to `--calc-period` and select the algorithm in
/// the generator's configuration event (the first event).
fn pin_config(events: &mut [Event], algorithm: BenchAlgorithm, calc_period_secs: u32) {
    // Slurm's `minutes:seconds`.
    let calc_period = format!("{}:{:02}", calc_period_secs / 60, calc_period_secs % 60);
    for event in events.iter_mut() {
        if let Op::Config { set } = &mut event.op {
            set.insert(
                "PriorityCalcPeriod".to_string(),
                Value::from(calc_period.clone()),
            );
            if let Some(flags) = algorithm.priority_flags() {
                set.insert("PriorityFlags".to_string(), Value::from(flags));
            }
        }
    }
}

/// Feed the initial state in chunks through `feed`, stopping at its first error.
pub(crate) fn generate_initial(
    params: &WorkloadParams,
    algorithm: BenchAlgorithm,
    calc_period_secs: u32,
    chunk_len: usize,
    mut feed: impl FnMut(Vec<Event>) -> anyhow::Result<()>,
) -> anyhow::Result<Generator> {
    let mut generator = Generator::new(params.clone());
    let mut outcome: anyhow::Result<()> = Ok(());
    let mut first = true;
    generator.initial_events_in_chunks(chunk_len, &mut |mut chunk| {
        if outcome.is_err() {
            return;
        }
        if first {
            pin_config(&mut chunk, algorithm, calc_period_secs);
            first = false;
        }
        outcome = feed(chunk);
    });
    outcome.map(|()| generator)
}

/// Fail loudly on a rejected or unapplied event: the generator drew an
/// impossible one, which is a bug.
pub(crate) fn check_report(
    what: &str,
    sent: usize,
    report: &fairflow_dataflow::BatchReport,
) -> anyhow::Result<()> {
    if let Some(rejection) = report.rejected.first() {
        bail!(
            "{} of {sent} events of the {what} batch were rejected (a generator bug), first: {rejection}",
            report.rejected.len()
        );
    }
    if report.applied != sent as u64 {
        bail!(
            "the {what} batch applied {} of {sent} events",
            report.applied
        );
    }
    Ok(())
}

/// The update events of one batch of `kind` at the generator's time; for
/// `start_end`, the start only (its end is drawn 3 s later).
pub(crate) fn draw(generator: &mut Generator, kind: Kind) -> anyhow::Result<Vec<Event>> {
    Ok(match kind {
        Kind::Submit => vec![generator.submit()],
        Kind::StartEnd => vec![generator
            .start()
            .context("no pending job left to start: use more --jobs")?],
        Kind::UsageEvent => vec![generator.usage()],
        Kind::UsageBatch => (0..USAGE_BATCH).map(|_| generator.usage()).collect(),
        Kind::ShareChange => vec![generator.share_change()],
        Kind::Reorg => generator.reorganisation(REORG_ACCOUNTS),
        Kind::CalcPeriodTick => bail!("a calc-period tick is not drawn"),
    })
}
/// One step of the stream the engine went through, replayed in order by
/// the oracle.
pub(crate) enum Step {
    /// A batch of an update kind (the oracle times the first of each kind).
    Batch(Kind, Vec<Event>),
    /// A batch that only moves the state before a read (never timed).
    Apply(Vec<Event>),
    /// A read whose answer the oracle gives at this place.
    Check(ReadCheck),
    /// The end of the top-k reads: the oracle's top `k` here is compared
    /// with the engine's last top-k read (`topk_matches_oracle`).
    TopkEnd,
}

/// Numbers the events the engine is handed, keeps them as steps for the
/// oracle (with `--oracle-samples` above 0), and writes them as the
/// generated log (`bench_restart`'s one-off top reads it) when asked.
pub(crate) struct Recorder {
    lines: Lines,
    keep: bool,
    pub steps: Vec<Step>,
    log: Option<BufWriter<File>>,
}

impl Recorder {
    /// Keep the steps when `keep`; write the log to `log` when given.
    pub(crate) fn new(keep: bool, log: Option<&Path>) -> anyhow::Result<Self> {
        let log = match log {
            Some(path) => Some(BufWriter::new(File::create(path).with_context(|| {
                format!("cannot write the generated log {}", path.display())
            })?)),
            None => None,
        };
        Ok(Recorder {
            lines: Lines::default(),
            keep,
            steps: Vec::new(),
            log,
        })
    }

    /// Write `events` to the log (when one is written).
    fn write(&mut self, events: &[Event]) -> anyhow::Result<()> {
        if let Some(log) = &mut self.log {
            for event in events {
                writeln!(log, "{}", event_to_line(event)).context("cannot write the log")?;
            }
        }
        Ok(())
    }

    /// The initial state's `chunk`, numbered (logged, never replayed: the
    /// oracle generates it again).
    pub(crate) fn initial(&mut self, chunk: Vec<Event>) -> anyhow::Result<Vec<LogLine>> {
        self.write(&chunk)?;
        Ok(self.lines.of(chunk))
    }

    /// An update batch of `kind`, numbered.
    pub(crate) fn batch(&mut self, kind: Kind, events: Vec<Event>) -> anyhow::Result<Vec<LogLine>> {
        self.write(&events)?;
        if self.keep {
            self.steps.push(Step::Batch(kind, events.clone()));
        }
        Ok(self.lines.of(events))
    }

    /// A batch that moves the state before a read, numbered.
    pub(crate) fn apply(&mut self, events: Vec<Event>) -> anyhow::Result<Vec<LogLine>> {
        self.write(&events)?;
        if self.keep {
            self.steps.push(Step::Apply(events.clone()));
        }
        Ok(self.lines.of(events))
    }

    /// A read for the oracle to answer here.
    pub(crate) fn check(&mut self, check: ReadCheck) {
        if self.keep {
            self.steps.push(Step::Check(check));
        }
    }

    /// Mark the end of the top-k reads.
    pub(crate) fn topk_end(&mut self) {
        if self.keep {
            self.steps.push(Step::TopkEnd);
        }
    }

    /// Flush the log; nothing is written after.
    pub(crate) fn finish_log(&mut self) -> anyhow::Result<()> {
        if let Some(mut log) = self.log.take() {
            log.flush().context("cannot write the log")?;
        }
        Ok(())
    }
}
