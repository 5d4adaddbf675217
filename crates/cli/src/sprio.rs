//! `fairflow sprio`: every listed job's priority and factors under the
//! configured model, as Slurm's `sprio -l` shows them; `-n` for the
//! normalized factors, Slurm's `-j JOBS`, `-u USERS`, `-p PARTITIONS`,
//! `-A ACCOUNTS` selections, `-o FIELDS` (by column name, or Slurm's `%`
//! format), `-l` (Slurm's long format), `-w` (the weights row) and
//! `-h`/`--noheader`, on a log or with `--server`.

use fairflow_serve::sprio::render;
use fairflow_serve::sprio::slurm_format::{answer, Format, SlurmView};
use fairflow_serve::OutputFormat;

use crate::output::{emit, OutputArgs};
use crate::slurm_flags::{route, shaped, JobSelectionArgs};
use crate::state_args::StateArgs;

/// `fairflow sprio` flags. `-h` is Slurm's `--noheader` here, so help is
/// `--help` only.
#[derive(Debug, clap::Args)]
#[command(disable_help_flag = true)]
pub struct Args {
    /// Print help.
    #[arg(long, action = clap::ArgAction::Help)]
    help: Option<bool>,
    #[command(flatten)]
    state: StateArgs,
    #[command(flatten)]
    output: OutputArgs,
    /// The normalized factors (0..1, seven decimals) instead of the weighted ones.
    #[arg(short = 'n', long = "norm")]
    norm: bool,
    /// Slurm's long format as sprio -l prints it (fixed-width, with QOSNAME):
    /// "%.15i %9r %.8u %.8o %.10Y %.10S %.10A %.10B %.10F %.10J %.10P %.10n
    /// %.10Q %.11N %.20T" (with -n: "%.15i %9r %.8u %.8o %10y %10a %10b %10f
    /// %10j %10p %10n %10q %20t"). Without -l the table has fairflow's
    /// columns (sprio -l's but QOSNAME); -P and --json are not changed by -l.
    #[arg(short = 'l', long = "long", conflicts_with = "fields")]
    long: bool,
    /// Slurm's `sprio -w`: the header and the weights row (PriorityWeight*,
    /// in the -o, -l or Slurm's short default format) instead of the jobs.
    #[arg(short = 'w', long = "weights", conflicts_with = "json")]
    weights: bool,
    /// Only these jobs (comma-separated ids).
    #[arg(short = 'j', long = "jobs", value_name = "JOBS", value_delimiter = ',')]
    jobs: Vec<String>,
    #[command(flatten)]
    select: JobSelectionArgs,
    /// The columns to show: by header name, in this order (comma-separated,
    /// any case): JOBID,PARTITION,USER,ACCOUNT,PRIORITY,SITE,AGE,ASSOC,
    /// FAIRSHARE,JOBSIZE,PARTITION,QOS,NICE,TRES; or Slurm's `%` format
    /// ("%.15i %9r %.10Y %.10n ..."): %a/%A age normalized/weighted, %b/%B
    /// assoc, %c cluster, %f/%F fair-share, %i job id, %j/%J job size,
    /// %n QOS name, %N nice, %o account, %p/%P partition factor, %q/%Q QOS
    /// factor, %r partition, %s SLUID, %S site, %t/%T TRES, %u user,
    /// %y/%Y priority; "%.10" right-justifies in 10 characters, "%10"
    /// left-justifies.
    #[arg(
        short = 'o',
        long = "format",
        value_name = "FIELDS",
        value_delimiter = ',',
        conflicts_with = "json"
    )]
    fields: Vec<String>,
    /// No header line (Slurm's `sprio -h`).
    #[arg(short = 'h', long = "noheader")]
    noheader: bool,
}

/// Load the state (or ask the service), select, print.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let format = args.output.format();
    let selection = args.select.selection(&args.jobs);
    // Slurm's `%` format (it may hold commas, which clap split).
    let percent = args
        .fields
        .iter()
        .any(|f| f.contains('%'))
        .then(|| args.fields.join(","));
    if let Some(text) = &percent {
        Format::parse(text).map_err(|e| anyhow::anyhow!("-o: {e}"))?;
    }
    let named: &[String] = if percent.is_some() { &[] } else { &args.fields };
    let slurm = (percent.is_some() || args.weights || (args.long && format == OutputFormat::Table))
        .then(|| SlurmView {
            format: percent.clone(),
            long: args.long,
            weights: args.weights,
            noheader: args.noheader,
        });
    if args.state.server.is_some() {
        let flag = |on: bool| {
            if on {
                "true".to_string()
            } else {
                String::new()
            }
        };
        let extra = [
            ("norm", flag(args.norm)),
            ("o", percent.clone().unwrap_or_default()),
            ("long", flag(args.long)),
            ("weights", flag(args.weights)),
            ("noheader", flag(args.noheader && slurm.is_some())),
        ];
        let asked = |f| {
            let path = route("/v1/sprio", f, &selection, &extra);
            Ok(args.state.remote(&path)?.unwrap_or_default())
        };
        if slurm.is_some() {
            return emit(&asked(format)?);
        }
        return emit(&shaped(asked, format, named, !args.noheader)?);
    }
    let Some(mut engine) = args.state.engine()? else {
        // A non-zero process of the cluster mode: process 0 answers.
        return Ok(());
    };
    let mut jobs = engine.priorities()?;
    engine.resolve_selection(&selection).jobs(&mut jobs);
    if let Some(view) = &slurm {
        let users = !args.select.users.is_empty();
        let sluids = std::sync::Arc::new(engine.book().sluids_by_job());
        return emit(&answer(
            &jobs,
            engine.config(),
            args.norm,
            view,
            users,
            sluids,
        )?);
    }
    emit(&shaped(
        |f| Ok(render(&jobs, args.norm, f)),
        format,
        named,
        !args.noheader,
    )?)
}
