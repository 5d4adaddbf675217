//! `fairflow import slurm`: a real Slurm's outputs (sacctmgr associations,
//! sshare usage, slurm.conf, an squeue queue) to an event log; see
//! `fairflow_ingest::import_slurm` for the exact formats. `fairflow import
//! swf`: a Standard Workload Format trace to an event log (as interfaces.md
//! says: submit, start at submit + wait, end at start + run time).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use fairflow_ingest::import_slurm::{import_slurm, SlurmImport, Source};
use fairflow_ingest::write::event_to_line;
use fairflow_model::Time;

use crate::output::emit;

/// `fairflow import` flags.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    from: From,
}

#[derive(Debug, clap::Subcommand)]
enum From {
    /// From Slurm: `sacctmgr`, `sshare`, `slurm.conf` and `squeue` outputs.
    Slurm(SlurmArgs),
    /// From an SWF trace (`.swf` or `.swf.gz`, e.g. the Parallel Workloads Archive's).
    Swf(SwfArgs),
}

/// `fairflow import swf` flags.
#[derive(Debug, clap::Args)]
struct SwfArgs {
    /// The trace.
    trace: String,
    /// Write the log here instead of standard output.
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    output: Option<PathBuf>,
}

/// `fairflow import slurm` flags.
#[derive(Debug, clap::Args)]
struct SlurmArgs {
    /// `sacctmgr -nP show assoc format=Cluster,Account,User,Share,ParentName`.
    #[arg(long, value_name = "FILE")]
    assoc: PathBuf,
    /// `sshare -a -l -P`, for each association's `RawUsage`.
    #[arg(long, value_name = "FILE")]
    sshare: Option<PathBuf>,
    /// `slurm.conf`: its `Priority*` and `FairShareDampeningFactor` lines.
    #[arg(long, value_name = "FILE")]
    slurm_conf: Option<PathBuf>,
    /// `squeue -h -t PD -o "%i|%u|%a|%P|%q|%V|%C|%D|%l"`: the pending jobs.
    #[arg(long, value_name = "FILE")]
    squeue: Option<PathBuf>,
    /// Only this cluster's associations (needed when the output has several).
    #[arg(long, value_name = "NAME")]
    cluster: Option<String>,
    /// The time of every event (default: now): `2026-11-24T10:00:00` (local
    /// time), `now-1hour`, or Unix seconds.
    #[arg(long, value_name = "T", value_parser = crate::state_args::parse_slurm_time_arg)]
    time: Option<Time>,
    /// Write the log here instead of standard output.
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    output: Option<PathBuf>,
}

/// Run `fairflow import ...`.
pub fn run(args: &Args) -> anyhow::Result<()> {
    match &args.from {
        From::Slurm(slurm) => run_slurm(slurm),
        From::Swf(swf) => run_swf(swf),
    }
}

/// Write a log to `output`, or standard output.
fn write_log(log: &str, output: &Option<PathBuf>) -> anyhow::Result<()> {
    match output {
        None => emit(log),
        Some(path) => {
            let mut file = std::fs::File::create(path)
                .with_context(|| format!("cannot create {}", path.display()))?;
            file.write_all(log.as_bytes())
                .with_context(|| format!("cannot write {}", path.display()))
        }
    }
}

fn run_swf(args: &SwfArgs) -> anyhow::Result<()> {
    let source = fairflow_ingest::reader::open_source(&args.trace)?;
    let lines = fairflow_ingest::swf::convert_swf(source)
        .with_context(|| format!("cannot read {}", args.trace))?;
    let mut log = format!("# fairflow import swf: {}\n", args.trace);
    let mut skipped = 0u64;
    for line in lines {
        match line.event {
            Ok(event) => {
                log.push_str(&event_to_line(&event));
                log.push('\n');
            }
            Err(rejection) => {
                eprintln!("{}: {rejection}", args.trace);
                skipped += 1;
            }
        }
    }
    if skipped > 0 {
        eprintln!("fairflow: {skipped} trace lines skipped");
    }
    write_log(&log, &args.output)
}

/// A file as `(name, text)`.
fn read(path: &Path) -> anyhow::Result<(String, String)> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    Ok((path.display().to_string(), text))
}

fn read_optional(path: &Option<PathBuf>) -> anyhow::Result<Option<(String, String)>> {
    path.as_deref().map(read).transpose()
}

fn source(input: &Option<(String, String)>) -> Option<Source<'_>> {
    input.as_ref().map(|(name, text)| Source {
        name: name.as_str(),
        text: text.as_str(),
    })
}

fn now() -> anyhow::Result<Time> {
    let since_epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .context("the system clock is before 1970")?;
    Ok(Time::try_from(since_epoch.as_secs())?)
}

fn run_slurm(args: &SlurmArgs) -> anyhow::Result<()> {
    let assoc = read(&args.assoc)?;
    let (sshare, slurm_conf, squeue) = (
        read_optional(&args.sshare)?,
        read_optional(&args.slurm_conf)?,
        read_optional(&args.squeue)?,
    );
    let t = match args.time {
        Some(t) => t,
        None => now()?,
    };
    let events = import_slurm(&SlurmImport {
        assoc: Source {
            name: &assoc.0,
            text: &assoc.1,
        },
        sshare: source(&sshare),
        slurm_conf: source(&slurm_conf),
        squeue: source(&squeue),
        cluster: args.cluster.as_deref(),
        t,
    })?;

    let mut log = format!(
        "# fairflow import slurm at t={t}: associations from {}",
        assoc.0
    );
    for (what, input) in [
        ("usage", &sshare),
        ("configuration", &slurm_conf),
        ("queue", &squeue),
    ] {
        if let Some((name, _)) = input {
            log.push_str(&format!(", {what} from {name}"));
        }
    }
    log.push('\n');
    for event in &events {
        log.push_str(&event_to_line(event));
        log.push('\n');
    }
    write_log(&log, &args.output)
}
