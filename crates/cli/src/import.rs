//! `fairflow import slurm`: a real Slurm's outputs (sacctmgr associations,
//! sshare usage, slurm.conf, an squeue queue) to an event log; see
//! `fairflow_ingest::import_slurm` for the exact formats. `fairflow import
//! swf`: a Standard Workload Format trace to an event log (as interfaces.md
//! says: submit, start at submit + wait, end at start + run time). Both show
//! `indicatif` progress on standard error when it is a terminal.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use fairflow_ingest::import_slurm::{import_slurm, SlurmImport, Source};
use fairflow_ingest::write::event_to_line;
use fairflow_model::Time;

use fairflow_service::progress;

use crate::output::emit;

/// Imports at least this large show their progress on a terminal (standard
/// error only), as `replay` does.
const PROGRESS_FROM_EVENTS: u64 = 100_000;

/// `fairflow import` flags.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    from: From,
}

// Parsed once per run: the size of the larger variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, clap::Subcommand)]
enum From {
    /// From Slurm: `sacctmgr`, `sshare`, `slurm.conf` and `squeue` outputs.
    ///
    /// Which input feeds which factor: --assoc gives the tree and shares
    /// (FAIRSHARE's shares); --sshare the usage (FAIRSHARE's usage; without
    /// it every association has used nothing); --slurm-conf the weights and
    /// flags (without it Slurm's defaults: every weight 0, so every priority 0)
    /// and, with NodeName= lines, the cluster's size; --nodes the cluster's
    /// size (JOBSIZE and the TRES factors; without a size both are 0); --qos
    /// each QOS's priority and usage factor (QOS; without it the QOS factor
    /// is 0 and every usage factor 1); --squeue the pending jobs with their
    /// submit and eligible times (AGE). A missing one is named on standard
    /// error.
    Slurm(SlurmArgs),
    /// From an SWF trace (`.swf` or `.swf.gz`, e.g. the Parallel Workloads Archive's).
    Swf(SwfArgs),
    /// From Flux: a flux-accounting database (schema version 38, v0.60) and,
    /// optionally, a recorded job-manager events journal; or the fair-share
    /// emulator's JSON hierarchy (--emulate).
    ///
    /// The database gives the banks and their shares and priorities, the
    /// associations, the queues' priorities, the factor weights, each
    /// association's usage and the decay (PriorityModel=flux and
    /// UsageModel=flux). The journal (one events-journal response a line)
    /// gives the jobs: submitted, held at urgency 0, started at alloc, ended
    /// at clean; the database's events are then written at the journal's
    /// first time (or --time, if earlier). The emulator's JSON gives the
    /// banks, their shares, the associations and their usage, with
    /// flux-accounting's default weights and decay.
    Flux(FluxArgs),
}

/// `fairflow import flux` flags.
#[derive(Debug, clap::Args)]
struct FluxArgs {
    /// The flux-accounting database (`flux account -p FILE`'s file).
    #[arg(long, value_name = "FILE", required_unless_present = "emulate")]
    db: Option<PathBuf>,
    /// flux-accounting's fair-share emulator input instead of a database:
    /// the JSON hierarchy `flux account fairshare-emulate -i FILE` reads and
    /// `flux account export-db -F` writes (`{"root": {"bank": ..., "shares":
    /// ..., "usage": ..., "children": [...]}}`).
    #[arg(long, value_name = "FILE.json", conflicts_with_all = ["db", "journal"])]
    emulate: Option<PathBuf>,
    /// A recorded events journal: one JSON response a line
    /// (`{"id":I,"events":[...],"jobspec"?,"R"?}`), `-` for standard input.
    #[arg(long, value_name = "FILE")]
    journal: Option<String>,
    /// The time of the database's events (default: now); with a journal,
    /// the log ends with a tick at this time when it is later than the
    /// journal's last event.
    #[arg(long, value_name = "T", value_parser = crate::state_args::parse_slurm_time_arg)]
    time: Option<Time>,
    /// Write the log here instead of standard output.
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    output: Option<PathBuf>,
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
    /// `sacctmgr -nP show assoc format=Cluster,Account,User,Share,ParentName`,
    /// or `sacctmgr show assoc tree -P` (Slurm's default columns, with the
    /// header): the tree and shares.
    #[arg(
        long,
        value_name = "FILE",
        required_unless_present_any = ["dump", "live"],
        conflicts_with = "dump"
    )]
    assoc: Option<PathBuf>,
    /// Run the site's own commands instead of reading files (found on
    /// `PATH`, `SLURM_CONF` from the environment): `sacctmgr -nP show assoc
    /// format=Cluster,Account,User,Share,ParentName`, `sshare -a -l -P`,
    /// `scontrol show config`, `squeue -h -t PD -O ...` (with the eligible
    /// time), `sacctmgr -P show qos format=Name,Priority,UsageFactor` and
    /// `scontrol show node`; the same events as their outputs given as files.
    #[arg(long, conflicts_with_all = ["assoc", "dump", "sshare", "sacct", "slurm_conf", "squeue", "qos", "nodes"])]
    live: bool,
    /// `sacctmgr dump CLUSTER file=F`'s file (the cluster's associations
    /// backup: `Cluster - `, `Parent - `, `Account - ...:Fairshare=N`, `User -
    /// ...`), instead of --assoc.
    #[arg(long, value_name = "FILE")]
    dump: Option<PathBuf>,
    /// `sshare -a -l -P`, for each association's `RawUsage` (FAIRSHARE's usage).
    #[arg(long, value_name = "FILE", conflicts_with = "sacct")]
    sshare: Option<PathBuf>,
    /// `sacct -a -X -P -S START --format=JobID,User,Account,Partition,QOS,Start,End,AllocTRES,State`:
    /// the usage as the jobs that ran, charged while they ran and decayed to
    /// --time (FAIRSHARE's usage), instead of --sshare.
    #[arg(long, value_name = "FILE")]
    sacct: Option<PathBuf>,
    /// `slurm.conf` or `scontrol show config` output: the `Priority*` and
    /// `FairShareDampeningFactor` parameters (every factor's weight); a
    /// slurm.conf's `NodeName=` lines give the cluster's size unless --nodes.
    #[arg(long, value_name = "FILE")]
    slurm_conf: Option<PathBuf>,
    /// `squeue -h -t PD -o "%i|%u|%a|%P|%q|%V|%C|%D|%l"`: the pending jobs
    /// with their submit times (AGE); a tenth cell, squeue's `EligibleTime`
    /// (its `-O` form), is each job's eligible time.
    #[arg(long, value_name = "FILE")]
    squeue: Option<PathBuf>,
    /// `sacctmgr show qos -P` (with its header): each QOS's `Priority` (the
    /// QOS factor) and `UsageFactor` (billing).
    #[arg(long, value_name = "FILE")]
    qos: Option<PathBuf>,
    /// `scontrol show node`: the cluster's nodes, CPUs, memory and GPUs
    /// (JOBSIZE and the TRES factors are relative to them).
    #[arg(long, value_name = "FILE")]
    nodes: Option<PathBuf>,
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
        From::Flux(flux) => run_flux(flux),
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

fn run_flux(args: &FluxArgs) -> anyhow::Result<()> {
    use fairflow_ingest::flux_journal::FluxJournal;
    use fairflow_ingest::import_flux::{read_flux_db, read_flux_emulate};
    use std::io::BufRead;

    let journal_lines: Vec<String> = match &args.journal {
        None => Vec::new(),
        Some(name) => fairflow_ingest::reader::open_source(name)?
            .lines()
            .collect::<Result<_, _>>()
            .with_context(|| format!("cannot read {name}"))?,
    };
    let t = match args.time {
        Some(t) => t,
        None => now()?,
    };
    let first = journal_lines
        .iter()
        .find_map(|line| FluxJournal::first_time(line));
    let db_t = first.map_or(t, |first| first.min(t));
    let (db, source) = match (&args.emulate, &args.db) {
        (Some(hierarchy), _) => (
            read_flux_emulate(hierarchy, db_t)?,
            format!("flux-accounting emulator hierarchy {}", hierarchy.display()),
        ),
        (None, Some(path)) => (
            read_flux_db(path, db_t)?,
            format!("flux-accounting database {}", path.display()),
        ),
        (None, None) => anyhow::bail!("give --db or --emulate"),
    };
    for note in &db.notes {
        eprintln!("fairflow import flux: {note}");
    }
    let mut log = format!("# fairflow import flux at t={db_t}: {source}");
    if let Some(name) = &args.journal {
        log.push_str(&format!(", jobs from the events journal {name}"));
    }
    log.push('\n');
    let push = |log: &mut String, event: &fairflow_model::Event| {
        log.push_str(&event_to_line(event));
        log.push('\n');
    };
    for event in &db.events {
        push(&mut log, event);
    }
    let mut journal = FluxJournal::new(&db);
    let mut last_t = db_t;
    let mut rejected = 0u64;
    for (i, line) in journal_lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match journal.line(i as u64 + 1, line) {
            Ok(events) => {
                for event in &events {
                    last_t = last_t.max(event.t);
                    push(&mut log, event);
                }
            }
            Err(rejection) => {
                rejected += 1;
                let name = args.journal.as_deref().unwrap_or("-");
                eprintln!("{name}: {rejection}");
            }
        }
    }
    if rejected > 0 {
        eprintln!("fairflow: {rejected} journal lines rejected");
    }
    if args.journal.is_some() && args.time.is_some() && t > last_t {
        push(
            &mut log,
            &fairflow_model::Event {
                t,
                op: fairflow_model::event::Op::Tick,
            },
        );
    }
    write_log(&log, &args.output)
}

fn run_swf(args: &SwfArgs) -> anyhow::Result<()> {
    let source = fairflow_ingest::reader::open_source(&args.trace)?;
    let reading = progress::spinner(&format!("reading {}", args.trace));
    let lines = fairflow_ingest::swf::convert_swf(source)
        .with_context(|| format!("cannot read {}", args.trace))?;
    reading.finish_and_clear();
    let mut log = format!("# fairflow import swf: {}\n", args.trace);
    let mut skipped = 0u64;
    let progress = progress::bar(
        lines.len() as u64,
        "events",
        "writing",
        PROGRESS_FROM_EVENTS,
    );
    for line in lines {
        match line.event {
            Ok(event) => {
                log.push_str(&event_to_line(&event));
                log.push('\n');
            }
            Err(rejection) => {
                progress.suspend(|| eprintln!("{}: {rejection}", args.trace));
                skipped += 1;
            }
        }
        progress.inc(1);
    }
    progress.finish_and_clear();
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

/// How long `import slurm --live` lets one command run.
const LIVE_COMMAND_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(300);

fn run_slurm(args: &SlurmArgs) -> anyhow::Result<()> {
    let (assoc, sshare, slurm_conf, squeue, qos, nodes, sacct) = if args.live {
        let commands = fairflow_ingest::slurm_live::SlurmCommands::default();
        let outputs =
            fairflow_ingest::slurm_live::LiveImportOutputs::run(&commands, LIVE_COMMAND_TIMEOUT)?;
        let [assoc, sshare, config, queue, qos, nodes] = outputs.outputs;
        (
            assoc,
            Some(sshare),
            Some(config),
            Some(queue),
            Some(qos),
            Some(nodes),
            None,
        )
    } else {
        let assoc = match (&args.assoc, &args.dump) {
            (Some(path), _) | (None, Some(path)) => read(path)?,
            (None, None) => anyhow::bail!("give --assoc, --dump or --live"),
        };
        (
            assoc,
            read_optional(&args.sshare)?,
            read_optional(&args.slurm_conf)?,
            read_optional(&args.squeue)?,
            read_optional(&args.qos)?,
            read_optional(&args.nodes)?,
            read_optional(&args.sacct)?,
        )
    };
    let t = match args.time {
        Some(t) => t,
        None => now()?,
    };
    let converting = progress::spinner("converting Slurm's outputs");
    let events = import_slurm(&SlurmImport {
        assoc: Source {
            name: &assoc.0,
            text: &assoc.1,
        },
        sshare: source(&sshare),
        slurm_conf: source(&slurm_conf),
        squeue: source(&squeue),
        qos: source(&qos),
        nodes: source(&nodes),
        sacct: source(&sacct),
        cluster: args.cluster.as_deref(),
        t,
    })?;
    converting.finish_and_clear();
    for note in missing_inputs(args, &events)
        .into_iter()
        .filter(|_| !args.live)
    {
        eprintln!("fairflow import slurm: {note}");
    }

    let mut log = format!(
        "# fairflow import slurm at t={t}: associations from {}",
        assoc.0
    );
    for (what, input) in [
        ("usage", &sshare),
        ("configuration", &slurm_conf),
        ("queue", &squeue),
        ("QOS", &qos),
        ("nodes", &nodes),
        ("jobs", &sacct),
    ] {
        if let Some((name, _)) = input {
            log.push_str(&format!(", {what} from {name}"));
        }
    }
    log.push('\n');
    let progress = progress::bar(
        events.len() as u64,
        "events",
        "writing",
        PROGRESS_FROM_EVENTS,
    );
    for event in &events {
        log.push_str(&event_to_line(event));
        log.push('\n');
        progress.inc(1);
    }
    progress.finish_and_clear();
    write_log(&log, &args.output)
}

/// What the import could not give, and which factor it leaves at its
/// default, for standard error.
fn missing_inputs(args: &SlurmArgs, events: &[fairflow_model::Event]) -> Vec<&'static str> {
    use fairflow_model::event::Op;
    let mut notes = Vec::new();
    if args.sshare.is_none() && args.sacct.is_none() {
        notes.push("no --sshare or --sacct: every association's usage is 0 (FAIRSHARE)");
    }
    if args.slurm_conf.is_none() {
        notes.push(
            "no --slurm-conf: Slurm's default weights (every factor's weight is 0, every priority 0)",
        );
    }
    if args.squeue.is_none() {
        notes.push("no --squeue: no pending jobs (sprio and top are empty)");
    }
    if args.qos.is_none() {
        notes.push("no --qos: every QOS has priority 0 and usage factor 1 (QOS)");
    }
    if !events.iter().any(|e| matches!(e.op, Op::Cluster { .. })) {
        notes.push(
            "no cluster size (--nodes, or NodeName= lines in --slurm-conf): JOBSIZE and the TRES factors are 0",
        );
    }
    notes
}
