//! Where a query command's state comes from: `--events FILE` (repeatable, `-`
//! for standard input) replayed through the validator and the oracle, as of
//! the last event or `--at T`, with the configuration of `--slurm-conf` and
//! `--moab-cfg` in force before the log's own `config` events.
//!
//! The answers come from the batch oracle (`--engine batch`) or the
//! incremental engine (`--engine incremental`, with `--workers N` timely
//! workers); both are fed the same lines, under every fair-share algorithm,
//! and give equal answers. `--engine auto`, the default, takes the oracle for
//! these one-off answers (loading is several times cheaper: see
//! `perf/results/`), and the incremental engine when its layout is asked for.
//!
//! Rejected lines are reported on standard error as
//! `FILE: line N: field `F`: reason`, followed by their count; they do not
//! stop the replay, unless `--strict` is given. A file that cannot be read, a
//! file every line of which was rejected, and under `--strict` any rejected
//! line, are errors (exit status 1).

use std::path::PathBuf;
use std::sync::atomic::Ordering;

use anyhow::{bail, Context};
use fairflow_dataflow::cluster::WorkerLayout;
use fairflow_engine::{BatchEngine, Engine, EngineError, IncrementalEngine};
use fairflow_ingest::slurm_conf::apply_slurm_conf;
use fairflow_ingest::{LogLine, Rejection};
use fairflow_model::{Config, Time};

use crate::input_check::InputTally;
use crate::log_batches::{open_logs, read_ahead};

/// Which engine answers a query.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum EngineKind {
    /// The batch oracle for a one-off answer (nothing will be updated, so
    /// maintaining incremental state would be wasted), unless the incremental
    /// engine's layout is asked for (`--workers`/`--processes` above 1, or
    /// `--hostfile`).
    #[default]
    Auto,
    /// The incremental engine (timely/differential dataflow).
    Incremental,
    /// The batch oracle (recomputes from scratch).
    Batch,
}

/// Lines fed to an engine per batch (one logical time of the incremental engine).
const BATCH_LINES: usize = 10_000;

/// Logs of at least this many bytes (about 100,000 lines) show a progress
/// bar on a terminal.
const PROGRESS_FROM_BYTES: u64 = 16 << 20;

/// A time on the command line, as Slurm takes it (see
/// `fairflow_ingest::slurm_time::parse_time_arg`).
pub fn parse_slurm_time_arg(text: &str) -> Result<Time, fairflow_ingest::slurm_time::TimeError> {
    fairflow_ingest::slurm_time::parse_time_arg(text)
}

/// How a batch of lines is applied to an engine: the rejected lines.
pub type ApplyBatch<'a> =
    dyn FnMut(&mut dyn Engine, Vec<LogLine>) -> Result<Vec<Rejection>, EngineError> + 'a;

/// The state flags of every query command.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct StateArgs {
    /// An event log (`.jsonl` or `.jsonl.gz`; `-` is standard input). Repeat
    /// to replay several logs in order.
    #[arg(
        long = "events",
        value_name = "FILE",
        required_unless_present = "server",
        conflicts_with = "server"
    )]
    pub events: Vec<String>,
    /// Ask a running `fairflow serve` at this URL (e.g. `http://127.0.0.1:7471`)
    /// instead of replaying a log.
    #[arg(long, value_name = "URL")]
    pub server: Option<String>,
    /// With `--server`: the token to send, for a service whose reads need it.
    #[arg(long, value_name = "FILE", requires = "server")]
    pub token_file: Option<PathBuf>,
    /// Answer as of this time instead of the last event's; it may not be
    /// earlier than the last event. As Slurm takes times: `2026-11-24T10:00:00`
    /// (local time: `TZ`, else the system's zone), `now`, `now-1hour`,
    /// `now+2days`, or Unix seconds.
    #[arg(long, value_name = "T", conflicts_with = "server", value_parser = parse_slurm_time_arg)]
    pub at: Option<Time>,
    /// The engine answering; both give equal answers. `auto` (the default)
    /// takes the batch oracle, which loads a log several times faster and in
    /// less memory than the incremental engine when the answer is asked once
    /// (as here: nothing is updated after loading), and the incremental
    /// engine when `--workers`/`--processes` above 1 or `--hostfile` ask for
    /// its layout.
    #[arg(long, value_enum, default_value = "auto", conflicts_with = "server")]
    pub engine: EngineKind,
    /// Timely workers of the incremental engine.
    #[arg(long, value_name = "N", default_value_t = 1, conflicts_with = "server")]
    pub workers: usize,
    /// Processes of the incremental engine (timely's cluster mode); every
    /// process is started with the same arguments and its own `--process`.
    #[arg(long, value_name = "P", default_value_t = 1, conflicts_with = "server")]
    pub processes: usize,
    /// This process's index, from 0; process 0 answers, the others print nothing.
    #[arg(long, value_name = "I", default_value_t = 0, conflicts_with = "server")]
    pub process: usize,
    /// The processes' `host:port` addresses, one a line, process 0 first
    /// (default `localhost:2101`, `localhost:2102`, ...).
    #[arg(long, value_name = "FILE", conflicts_with = "server")]
    pub hostfile: Option<PathBuf>,
    /// With `--processes`: seconds the processes may take to connect to
    /// each other; a process whose peers are not all there by then exits
    /// with status 1, naming them.
    #[arg(long, value_name = "SECS", default_value_t = 60.0, conflicts_with = "server", value_parser = parse_connect_timeout)]
    pub connect_timeout: f64,
    /// After loading, print on standard error what the driver and each
    /// timely worker hold (`fairflow layout: ...` lines, `docs/commands.md`).
    #[arg(long, conflicts_with = "server")]
    pub report_layout: bool,
    /// Fail (exit status 1) at the first rejected line instead of reporting
    /// it and going on. Without it, only an input whose every line is
    /// rejected is an error.
    #[arg(long, conflicts_with = "server")]
    pub strict: bool,
    #[command(flatten)]
    pub config: ConfigArgs,
}

/// Where the configuration in force before the log's own `config` events
/// comes from.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ConfigArgs {
    /// A `slurm.conf`: its `Priority*` and `FairShareDampeningFactor` lines
    /// apply first (other lines are ignored).
    #[arg(long, value_name = "FILE")]
    pub slurm_conf: Option<PathBuf>,
    /// A Moab `moab.cfg` (`NAME VALUE` lines): applies after `--slurm-conf`.
    #[arg(long, value_name = "FILE")]
    pub moab_cfg: Option<PathBuf>,
}

/// Every `NAME VALUE` line of a `moab.cfg` (`#` starts a comment), as
/// `(line, name, value)`.
fn moab_lines(text: &str) -> Vec<(u64, String, String)> {
    text.lines()
        .enumerate()
        .filter_map(|(i, raw)| {
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                return None;
            }
            let (name, value) = line
                .split_once(char::is_whitespace)
                .map_or((line, ""), |(n, v)| (n, v.trim()));
            Some((i as u64 + 1, name.to_string(), value.to_string()))
        })
        .collect()
}

fn read_text(path: &std::path::Path) -> anyhow::Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))
}

/// Counts rejections as they are reported.
struct Reporter {
    rejected: u64,
}

impl Reporter {
    fn report(&mut self, source: &str, rejection: &Rejection) {
        eprintln!("{source}: {rejection}");
        self.rejected += 1;
    }
}

impl ConfigArgs {
    /// The configuration of `--slurm-conf` then `--moab-cfg`; invalid lines
    /// are reported on standard error and skipped.
    pub fn initial_config(&self) -> anyhow::Result<Config> {
        let mut reporter = Reporter { rejected: 0 };
        let config = self.initial_config_reporting(&mut reporter)?;
        if reporter.rejected > 0 {
            eprintln!(
                "fairflow: {} of configuration rejected",
                plural(reporter.rejected, "line")
            );
        }
        Ok(config)
    }

    fn initial_config_reporting(&self, reporter: &mut Reporter) -> anyhow::Result<Config> {
        let mut config = Config::default();
        if let Some(path) = &self.slurm_conf {
            let text = read_text(path)?;
            for rejection in apply_slurm_conf(&mut config, &text) {
                reporter.report(&path.display().to_string(), &rejection);
            }
        }
        if let Some(path) = &self.moab_cfg {
            let text = read_text(path)?;
            for (line, name, value) in moab_lines(&text) {
                // Moab's other parameters (limits, intervals, resource
                // managers, ...) do not change priorities: skipped.
                if fairflow_model::config::is_moab_key(&name)
                    && !fairflow_model::moab::is_priority_parameter(&name)
                {
                    continue;
                }
                if let Err(e) = config.set_text(&name, &value) {
                    let rejection = Rejection::new(line, Some(&name), e.reason);
                    reporter.report(&path.display().to_string(), &rejection);
                }
            }
        }
        Ok(config)
    }
}

impl StateArgs {
    /// With `--server`, the service's answer to `path` (query string
    /// included); `None` when the state comes from logs.
    pub fn remote(&self, path: &str) -> anyhow::Result<Option<String>> {
        match &self.server {
            Some(server) => Ok(Some(crate::remote::get(
                server,
                path,
                self.token_file.as_deref(),
            )?)),
            None => Ok(None),
        }
    }

    /// The engine `--engine` resolves to: never `Auto`.
    pub fn resolved_engine(&self) -> EngineKind {
        match self.engine {
            EngineKind::Auto
                if self.workers > 1 || self.processes > 1 || self.hostfile.is_some() =>
            {
                EngineKind::Incremental
            }
            EngineKind::Auto => EngineKind::Batch,
            chosen => chosen,
        }
    }

    fn engine_name(&self) -> &'static str {
        match self.resolved_engine() {
            EngineKind::Incremental => "incremental",
            _ => "batch",
        }
    }

    /// The engine answering this command (`--engine`), loaded with the
    /// logs and brought to `--at`, every rejected line reported on standard
    /// error; `None` in a process of the incremental engine's cluster mode
    /// other than process 0 (its workers ran until process 0 finished).
    pub fn engine(&self) -> anyhow::Result<Option<Box<dyn Engine>>> {
        self.engine_applying(&mut |engine, lines| engine.apply(lines))
    }

    /// [`StateArgs::engine`], each batch of lines handed to `apply` with
    /// the engine (`fairflow history`'s steps are taken there).
    pub fn engine_applying(
        &self,
        apply: &mut ApplyBatch,
    ) -> anyhow::Result<Option<Box<dyn Engine>>> {
        let mut reporter = Reporter { rejected: 0 };
        let config = self.config.initial_config_reporting(&mut reporter)?;
        let logs = open_logs(&self.events)?;
        let mut engine: Box<dyn Engine> = match self.resolved_engine() {
            EngineKind::Batch | EngineKind::Auto => Box::new(BatchEngine::new(config)),
            EngineKind::Incremental => {
                let layout = WorkerLayout {
                    workers: self.workers,
                    processes: self.processes,
                    process: self.process,
                    hostfile: self.hostfile.clone(),
                    connect_timeout: std::time::Duration::from_secs_f64(self.connect_timeout),
                };
                match IncrementalEngine::start_layout(&layout, config)
                    .context("cannot start the incremental engine")?
                {
                    Some(engine) => Box::new(engine),
                    None => return Ok(None),
                }
            }
        };
        let mut lines_read = 0u64;
        let loading = format!("loading ({} engine)", self.engine_name());
        let progress = match logs.total_bytes {
            Some(total) => {
                fairflow_service::progress::bar(total, "bytes", &loading, PROGRESS_FROM_BYTES)
            }
            None => fairflow_service::progress::spinner(&loading),
        };
        let by_bytes = logs.total_bytes.is_some();
        let mut tally: Option<InputTally> = None;
        read_ahead(logs.sources, BATCH_LINES, &mut |_, name, batch| {
            let Some(chunk) = batch else {
                // The log ended: every log is tallied on its own.
                let ended = tally.take();
                return ended
                    .unwrap_or_else(|| InputTally::new(name, self.strict))
                    .finish();
            };
            let tally = tally.get_or_insert_with(|| InputTally::new(name, self.strict));
            let count = chunk.len();
            lines_read += count as u64;
            let rejections = apply(engine.as_mut(), chunk)?;
            progress.suspend(|| {
                for rejection in &rejections {
                    reporter.report(name, rejection);
                }
            });
            if by_bytes {
                progress.set_position(logs.bytes_read.load(Ordering::Relaxed));
            } else {
                progress.inc(count as u64);
            }
            tally.record(count, &rejections)
        })?;
        progress.finish_and_clear();
        if reporter.rejected > 0 {
            eprintln!(
                "fairflow: {} rejected ({lines_read} lines read, {} applied)",
                plural(reporter.rejected, "line"),
                engine.applied()
            );
        }
        if let Some(at) = self.at {
            if let Some(last) = engine.now() {
                if at < last {
                    bail!("--at {at} is earlier than the last event of the log ({last})");
                }
            }
            // Through the engine, so that INCR_ONLY remembers the last event time.
            engine.advance_to(at)?;
        }
        if self.report_layout {
            report_layout(engine.as_mut())?;
        }
        Ok(Some(engine))
    }
}

/// `--connect-timeout`: a positive number of seconds, at most a day.
fn parse_connect_timeout(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(secs) if secs > 0.0 && secs <= 86_400.0 => Ok(secs),
        _ => Err(format!(
            "`{text}` is not a number of seconds from 0 (excluded) to 86400"
        )),
    }
}

/// `--report-layout`: what the driver (process 0) and each worker's shard
/// hold, one `fairflow layout:` line each on standard error, as
/// `key=value` fields.
fn report_layout(engine: &mut dyn Engine) -> anyhow::Result<()> {
    let state = engine.book().state();
    eprintln!(
        "fairflow layout: process=0 driver engine={} jobs={} accounts={} user_associations={} peak_rss_kib={}",
        engine.name(),
        state.jobs.len(),
        state.accounts.len(),
        state.users.len(),
        fairflow_dataflow::cluster::own_status_kib("VmHWM").unwrap_or(0)
    );
    for shard in engine.shard_holdings()? {
        eprintln!(
            "fairflow layout: process={} worker={} jobs={} ranked={} user_associations={} combinations={} peak_rss_kib={}",
            shard.process,
            shard.worker,
            shard.jobs,
            shard.ranked,
            shard.user_associations,
            shard.combinations,
            shard.peak_rss_kib
        );
    }
    Ok(())
}

fn plural(n: u64, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moab_lines_are_name_value_pairs_without_comments() {
        let text = "# Moab\nFSWEIGHT 100\n\nUSERCFG[john]  PRIORITY=2000 # vip\nRESCAP\n";
        assert_eq!(
            moab_lines(text),
            [
                (2, "FSWEIGHT".to_string(), "100".to_string()),
                (4, "USERCFG[john]".to_string(), "PRIORITY=2000".to_string()),
                (5, "RESCAP".to_string(), String::new()),
            ]
        );
    }
}
