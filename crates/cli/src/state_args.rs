//! Where a query command's state comes from: `--events FILE` (repeatable, `-`
//! for standard input) replayed through the validator and the oracle, as of
//! the last event or `--at T`, with the configuration of `--slurm-conf` and
//! `--moab-cfg` in force before the log's own `config` events.
//!
//! Rejected lines are reported on standard error as
//! `FILE: line N: field `F`: reason`, followed by their count; they never stop
//! the replay. Only a file that cannot be read is an error.

use std::path::PathBuf;

use anyhow::{bail, Context};
use fairflow_ingest::reader::{open_source, read_events};
use fairflow_ingest::slurm_conf::apply_slurm_conf;
use fairflow_ingest::Rejection;
use fairflow_model::{Config, Time};
use fairflow_oracle::Replay;

/// The state flags of every query command.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct StateArgs {
    /// An event log (`.jsonl` or `.jsonl.gz`; `-` is standard input). Repeat
    /// to replay several logs in order.
    #[arg(long = "events", value_name = "FILE", required = true)]
    pub events: Vec<String>,
    /// Answer as of this time (Unix seconds) instead of the last event's; it
    /// may not be earlier than the last event.
    #[arg(long, value_name = "T")]
    pub at: Option<Time>,
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

impl StateArgs {
    /// The configuration of `--slurm-conf` then `--moab-cfg`.
    fn initial_config(&self, reporter: &mut Reporter) -> anyhow::Result<Config> {
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
                if let Err(e) = config.set_text(&name, &value) {
                    let rejection = Rejection::new(line, Some(&name), e.reason);
                    reporter.report(&path.display().to_string(), &rejection);
                }
            }
        }
        Ok(config)
    }

    /// Replay the logs and bring the state to `--at`, reporting every
    /// rejected line on standard error.
    pub fn load(&self) -> anyhow::Result<Replay> {
        let mut reporter = Reporter { rejected: 0 };
        let mut replay = Replay::new(self.initial_config(&mut reporter)?);
        let mut lines_read = 0u64;
        for path in &self.events {
            let name = if path == "-" {
                "<stdin>"
            } else {
                path.as_str()
            };
            for line in read_events(open_source(path)?) {
                let line = line.with_context(|| format!("cannot read {name}"))?;
                lines_read += 1;
                let before = replay.report.rejected.len();
                replay.feed(line);
                if let Some(rejection) = replay.report.rejected.get(before) {
                    reporter.report(name, rejection);
                }
            }
        }
        if reporter.rejected > 0 {
            eprintln!(
                "fairflow: {} rejected ({lines_read} lines read, {} applied)",
                plural(reporter.rejected, "line"),
                replay.report.applied
            );
        }
        if let Some(at) = self.at {
            if let Some(last) = replay.validator.now() {
                if at < last {
                    bail!("--at {at} is earlier than the last event of the log ({last})");
                }
            }
            replay.state.advance_to(at);
        }
        Ok(replay)
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
