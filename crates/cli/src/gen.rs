//! `fairflow gen`: a deterministic synthetic workload as an event log (the
//! same seed and flags always write the same log): an account tree of the
//! given depth with skewed fan-out, heavy-tailed users per account, a usage
//! history, running and pending jobs, then `--activity-secs` of activity
//! (bursts of submissions, starts, ends, usage, share changes and small
//! reorganisations). See `fairflow_workload`.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Context};
use fairflow_ingest::write::event_to_line;
use fairflow_workload::{Generator, WorkloadParams};

/// `fairflow gen` flags.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Seed of every random choice.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// User associations.
    #[arg(long, default_value_t = 1_000)]
    associations: usize,
    /// Maximum depth of a user association (root's children are depth 1), 2 to 8.
    #[arg(long, default_value_t = 4)]
    depth: usize,
    /// Pending jobs at the end of the initial state.
    #[arg(long, default_value_t = 5_000)]
    jobs: usize,
    /// Running jobs at the end of the initial state.
    #[arg(long, default_value_t = 500)]
    running: usize,
    /// Seconds of activity after the initial state.
    #[arg(long, default_value_t = 0)]
    activity_secs: i64,
    /// Accounts moved by one reorganisation at the end (0: none).
    #[arg(long, default_value_t = 0)]
    reorganise: usize,
    /// Write the log here instead of standard output (`.gz` is not added).
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    output: Option<PathBuf>,
}

/// Generate and write the log.
pub fn run(args: &Args) -> anyhow::Result<()> {
    if !(2..=8).contains(&args.depth) {
        bail!("--depth must be from 2 to 8");
    }
    if args.associations == 0 {
        bail!("--associations must be at least 1");
    }
    let mut generator = Generator::new(WorkloadParams {
        seed: args.seed,
        user_associations: args.associations,
        max_depth: args.depth,
        pending_jobs: args.jobs,
        running_jobs: args.running,
        ..WorkloadParams::default()
    });
    let mut events = generator.initial_events();
    if args.activity_secs > 0 {
        events.extend(generator.activity(args.activity_secs));
    }
    if args.reorganise > 0 {
        events.extend(generator.reorganisation(args.reorganise));
    }
    let mut out: Box<dyn Write> = match &args.output {
        None => Box::new(std::io::stdout().lock()),
        Some(path) => Box::new(
            std::fs::File::create(path)
                .with_context(|| format!("cannot create {}", path.display()))?,
        ),
    };
    let mut out = std::io::BufWriter::new(&mut out);
    writeln!(
        out,
        "# fairflow gen --seed {} --associations {} --depth {} --jobs {}",
        args.seed, args.associations, args.depth, args.jobs
    )?;
    for event in &events {
        match writeln!(out, "{}", event_to_line(event)) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(()),
            other => other?,
        }
    }
    out.flush().or_else(|e| {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            Ok(())
        } else {
            Err(e)
        }
    })?;
    Ok(())
}
