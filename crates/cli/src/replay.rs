//! `fairflow replay FILE...`: feeds logs (`.jsonl`, `.jsonl.gz`) and SWF
//! traces (`.swf`, `.swf.gz`, converted on the fly by
//! `fairflow_ingest::swf::convert_swf`) through the incremental engine
//! (`fairflow_engine::IncrementalEngine`) in
//! batches of equal event time (at most `--batch-cap` events each), and
//! reports events applied and rejected, events per second and the latency of
//! each batch's update (p50, p99, p99.9, max, from an HDR histogram).
//! `--top N` prints the top of the queue at the end, `--sshare` the
//! fair-share table. On a terminal, inputs of 100,000 events or more show an
//! `indicatif` progress bar on standard error.

use std::time::Instant;

use anyhow::Context;
use fairflow_engine::{Engine, IncrementalEngine};
use fairflow_ingest::reader::{open_source, read_events};
use fairflow_ingest::LogLine;
use fairflow_serve::OutputFormat;

use crate::input_check::InputTally;
use crate::output::{emit, OutputArgs};
use crate::state_args::ConfigArgs;

/// `fairflow replay` flags.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Logs (`.jsonl`, `.jsonl.gz`) and SWF traces (`.swf`, `.swf.gz`), fed in order.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<String>,
    #[command(flatten)]
    config: ConfigArgs,
    #[command(flatten)]
    output: OutputArgs,
    /// Timely workers.
    #[arg(long, value_name = "N", default_value_t = 1)]
    workers: usize,
    /// Print the first N jobs of the queue at the end.
    #[arg(long, value_name = "N")]
    top: Option<usize>,
    /// Print the fair-share table at the end.
    #[arg(long)]
    sshare: bool,
    /// The most events in one batch.
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    batch_cap: usize,
    /// Fail (exit status 1) at the first rejected line. Without it, only an
    /// input whose every line is rejected is an error.
    #[arg(long)]
    strict: bool,
}

/// Inputs at least this large show their progress on a terminal.
const PROGRESS_FROM_EVENTS: u64 = 100_000;

fn is_swf(path: &str) -> bool {
    path.ends_with(".swf") || path.ends_with(".swf.gz")
}

/// Every line of one input, as log lines.
fn read_input(path: &str) -> anyhow::Result<Vec<LogLine>> {
    let source = open_source(path)?;
    if is_swf(path) {
        return fairflow_ingest::swf::convert_swf(source)
            .with_context(|| format!("cannot read the SWF trace {path}"));
    }
    read_events(source)
        .map(|line| line.with_context(|| format!("cannot read {path}")))
        .collect()
}

/// Split lines into batches of equal event time (a line that did not parse
/// joins the batch it is in), each at most `cap` lines.
fn batches(lines: Vec<LogLine>, cap: usize) -> Vec<Vec<LogLine>> {
    let cap = cap.max(1);
    let mut out: Vec<Vec<LogLine>> = Vec::new();
    let mut current: Vec<LogLine> = Vec::new();
    let mut current_t = None;
    for line in lines {
        let t = line.event.as_ref().ok().map(|e| e.t);
        let new_time = t.is_some() && current_t.is_some() && t != current_t;
        if !current.is_empty() && (new_time || current.len() >= cap) {
            out.push(std::mem::take(&mut current));
        }
        if t.is_some() {
            current_t = t;
        }
        current.push(line);
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// Milliseconds with three decimals, from microseconds.
fn millis(micros: u64) -> String {
    format!("{}.{:03}", micros / 1000, micros % 1000)
}

/// Replay the inputs, print the report (and `--top`, `--sshare`).
pub fn run(args: &Args) -> anyhow::Result<()> {
    let config = args.config.initial_config()?;
    let mut engine = IncrementalEngine::start(args.workers.max(1), config)
        .context("cannot start the incremental engine")?;
    let mut inputs = Vec::new();
    for path in &args.files {
        let reading = fairflow_service::progress::spinner(&format!("reading {path}"));
        let lines = read_input(path)?;
        reading.finish_and_clear();
        inputs.push((path.clone(), batches(lines, args.batch_cap)));
    }
    let total: usize = inputs
        .iter()
        .map(|(_, b)| b.iter().map(Vec::len).sum::<usize>())
        .sum();
    let progress =
        fairflow_service::progress::bar(total as u64, "events", "replaying", PROGRESS_FROM_EVENTS);
    let mut latency = hdrhistogram::Histogram::<u64>::new(3).context("histogram")?;
    let (mut applied, mut rejected, mut batch_count) = (0u64, 0u64, 0u64);
    let started = Instant::now();
    for (path, batches) in inputs {
        let mut tally = InputTally::new(&path, args.strict);
        progress.set_message(format!("replaying {path}"));
        for batch in batches {
            let count = batch.len();
            let before = Instant::now();
            let batch_rejected = engine.apply(batch)?;
            let micros = u64::try_from(before.elapsed().as_micros()).unwrap_or(u64::MAX);
            latency
                .record(micros.max(1))
                .context("cannot record a latency")?;
            batch_count += 1;
            // A line is applied or rejected.
            applied += (count - batch_rejected.len()) as u64;
            for rejection in &batch_rejected {
                rejected += 1;
                if rejected <= 20 {
                    progress.suspend(|| eprintln!("{path}: {rejection}"));
                } else if rejected == 21 {
                    progress
                        .suspend(|| eprintln!("fairflow: further rejected lines are only counted"));
                }
            }
            progress.inc(count as u64);
            tally.record(count, &batch_rejected)?;
        }
        tally.finish()?;
    }
    let elapsed = started.elapsed();
    progress.finish_and_clear();
    let per_second = if elapsed.as_secs_f64() > 0.0 {
        (applied + rejected) as f64 / elapsed.as_secs_f64()
    } else {
        0.0
    };
    let mut report = format!(
        "events applied: {applied}\nevents rejected: {rejected}\nbatches: {batch_count}\nelapsed: {:.3} s\nevents per second: {per_second:.0}\n",
        elapsed.as_secs_f64()
    );
    if batch_count > 0 {
        report.push_str(&format!(
            "update latency (ms): p50 {} p99 {} p99.9 {} max {}\n",
            millis(latency.value_at_quantile(0.5)),
            millis(latency.value_at_quantile(0.99)),
            millis(latency.value_at_quantile(0.999)),
            millis(latency.max()),
        ));
    }
    emit(&report)?;
    let format: OutputFormat = args.output.format();
    if let Some(k) = args.top {
        emit("\n")?;
        emit(&fairflow_serve::top::render(&engine.top(k)?, k, format))?;
    }
    if args.sshare {
        emit("\n")?;
        emit(&fairflow_serve::sshare::render(
            &engine.fairshare()?,
            format,
        ))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(n: u64, t: i64) -> LogLine {
        let text = format!(r#"{{"op":"tick","t":{t}}}"#);
        let mut lines: Vec<LogLine> = read_events(text.as_bytes()).map(Result::unwrap).collect();
        let mut l = lines.pop().unwrap();
        l.line = n;
        l
    }

    #[test]
    fn batches_split_at_new_times_and_at_the_cap() {
        let lines = vec![line(1, 5), line(2, 5), line(3, 5), line(4, 6), line(5, 7)];
        let sizes: Vec<usize> = batches(lines, 2).iter().map(Vec::len).collect();
        // t=5 x3 with cap 2: [2, 1]; t=6: [1]; t=7: [1].
        assert_eq!(sizes, [2, 1, 1, 1]);
    }

    #[test]
    fn millis_has_three_decimals() {
        assert_eq!(millis(1_234_567), "1234.567");
        assert_eq!(millis(5), "0.005");
    }
}
