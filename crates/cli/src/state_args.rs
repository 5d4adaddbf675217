//! Where a query command's state comes from: `--events FILE` (repeatable, `-`
//! for standard input) replayed through the validator and the oracle, as of
//! the last event or `--at T`, with the configuration of `--slurm-conf` and
//! `--moab-cfg` in force before the log's own `config` events.
//!
//! The answers come from the incremental engine (`--engine incremental`, the
//! default, with `--workers N` timely workers) or the batch oracle
//! (`--engine batch`); both are fed the same lines, under every fair-share
//! algorithm.
//!
//! Rejected lines are reported on standard error as
//! `FILE: line N: field `F`: reason`, followed by their count; they never stop
//! the replay. Only a file that cannot be read is an error.

use std::path::PathBuf;

use anyhow::{bail, Context};
use fairflow_dataflow::cluster::WorkerLayout;
use fairflow_ingest::reader::{open_source, read_events};
use fairflow_ingest::slurm_conf::apply_slurm_conf;
use fairflow_ingest::{LogLine, Rejection};
use fairflow_model::{Config, Time};
use fairflow_serve::engine::{BatchEngine, Engine, IncrementalEngine};

/// Which engine answers a query.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum EngineKind {
    /// The incremental engine (timely/differential dataflow).
    #[default]
    Incremental,
    /// The batch oracle (recomputes from scratch).
    Batch,
}

/// Lines fed to an engine per batch (one logical time of the incremental engine).
const BATCH_LINES: usize = 10_000;

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
    /// Answer as of this time (Unix seconds) instead of the last event's; it
    /// may not be earlier than the last event.
    #[arg(long, value_name = "T", conflicts_with = "server")]
    pub at: Option<Time>,
    /// The engine answering: `incremental` (default) or `batch`; both give
    /// equal answers.
    #[arg(
        long,
        value_enum,
        default_value = "incremental",
        conflicts_with = "server"
    )]
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

    /// The engine answering this command (`--engine`), loaded with the
    /// logs and brought to `--at`, every rejected line reported on standard
    /// error; `None` in a process of the incremental engine's cluster mode
    /// other than process 0 (its workers ran until process 0 finished).
    pub fn engine(&self) -> anyhow::Result<Option<Box<dyn Engine>>> {
        let mut reporter = Reporter { rejected: 0 };
        let config = self.config.initial_config_reporting(&mut reporter)?;
        check_layout(self.workers, self.processes, self.process)?;
        // Every source is opened first (a missing file fails before anything
        // starts), then read as a stream, one batch in memory at a time.
        let mut logs = Vec::new();
        for path in &self.events {
            let name = if path == "-" {
                "<stdin>"
            } else {
                path.as_str()
            };
            logs.push((name.to_string(), read_events(open_source(path)?)));
        }
        let mut engine: Box<dyn Engine> = match self.engine {
            EngineKind::Batch => Box::new(BatchEngine::new(config)),
            EngineKind::Incremental => {
                let layout = WorkerLayout {
                    workers: self.workers,
                    processes: self.processes,
                    process: self.process,
                    hostfile: self.hostfile.clone(),
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
        for (name, lines) in logs {
            let mut lines = lines.peekable();
            while lines.peek().is_some() {
                let chunk = lines
                    .by_ref()
                    .take(BATCH_LINES)
                    .collect::<Result<Vec<LogLine>, _>>()
                    .with_context(|| format!("cannot read {name}"))?;
                lines_read += chunk.len() as u64;
                for rejection in engine.apply(chunk) {
                    reporter.report(&name, &rejection);
                }
            }
        }
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
            engine.advance_to(at);
        }
        Ok(Some(engine))
    }
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

/// The most timely workers per process, and processes, a command accepts.
pub const MAX_WORKERS: usize = 256;

/// Refuse a worker layout that cannot run: no workers or processes, absurd
/// counts, or a process index outside `0..processes`.
pub fn check_layout(workers: usize, processes: usize, process: usize) -> anyhow::Result<()> {
    if !(1..=MAX_WORKERS).contains(&workers) {
        bail!("--workers must be from 1 to {MAX_WORKERS}, not {workers}");
    }
    if !(1..=MAX_WORKERS).contains(&processes) {
        bail!("--processes must be from 1 to {MAX_WORKERS}, not {processes}");
    }
    if process >= processes {
        bail!("--process must be below --processes ({processes}), not {process}");
    }
    Ok(())
}
