//! `fairflow serve`: the live service on loopback by default: HTTP
//! (`POST /v1/events`, `GET /v1/top`, `/v1/sshare`, `/v1/sprio`,
//! `/v1/jobs/{id}/explain`, `/metrics`, `/healthz`), the accounting taps, the
//! durable log and checkpoints in `--data-dir`. It runs on the incremental
//! engine (`--engine incremental`, the default, on `--workers N` timely
//! workers) or the batch oracle (`--engine batch`); see
//! `fairflow_engine::start` for the engine choice. Safe defaults: a token file
//! others can read or change is refused, and a `--listen` address other than
//! loopback with reads open to anyone needs `--allow-remote-reads`.

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{bail, Context};
use fairflow_engine::EngineChoice;
use fairflow_service::config_file::{
    config_tokens as config_tokens_of, ConfigFileError, MAX_CONFIG_BYTES,
};
use fairflow_service::engine_backend::EngineBackend;
use fairflow_service::held_tables::HeldTables;
use fairflow_service::history::store::spawn_writer;
use fairflow_service::history::{HistoryRecorder, HistoryStore, Stepper};
use fairflow_service::metrics::{MetricsNames, UserSeries};
use fairflow_service::run::{run_blocking, ServiceConfig};

use crate::state_args::{ConfigArgs, EngineKind};

/// `fairflow serve` flags.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A TOML file of serve flags, each by its long name without the dashes
    /// (`listen = "127.0.0.1:7471"`, `data_dir = "/var/lib/fairflow"` or
    /// `data-dir`, `recover = true`, `workers = 2`); flags given on the
    /// command line override it; an unknown key is an error naming it.
    #[arg(long = "config", value_name = "FILE")]
    config_file: Option<PathBuf>,
    /// The HTTP address.
    #[arg(long, default_value = "127.0.0.1:7471")]
    listen: SocketAddr,
    /// Where the durable event log and the checkpoints live.
    #[arg(long, value_name = "DIR", default_value = "fairflow-data")]
    data_dir: PathBuf,
    /// A file holding the token writers must send as `Authorization: Bearer`;
    /// without it, writing over HTTP and the stream taps is refused.
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// Make reads need the token too.
    #[arg(long)]
    reads_need_token: bool,
    /// Serve reads without a token on an address other than loopback (by
    /// default such a `--listen` needs `--reads-need-token`).
    #[arg(long)]
    allow_remote_reads: bool,
    /// Accept JSON-lines event streams on this TCP address.
    #[arg(long, value_name = "ADDR")]
    tap_tcp: Option<SocketAddr>,
    /// Accept JSON-lines event streams on this Unix socket.
    #[arg(long, value_name = "PATH")]
    tap_unix: Option<PathBuf>,
    /// Follow a Slurm `jobcomp/filetxt` log as it grows (rotation included).
    #[arg(long, value_name = "FILE")]
    follow_jobcomp: Option<PathBuf>,
    /// Follow a running Slurm: poll its commands (squeue, sacctmgr,
    /// scontrol, found on `PATH`, `SLURM_CONF` from the environment) and
    /// apply what changed (README, "Follow your Slurm").
    #[arg(long)]
    follow_slurm: bool,
    /// Seconds between --follow-slurm polls.
    #[arg(long, value_name = "N", default_value_t = 10)]
    slurm_poll_secs: u64,
    /// A Slurm command that runs longer than this is killed and its poll
    /// changes nothing.
    #[arg(long, value_name = "SECS", default_value_t = 60)]
    slurm_command_timeout_secs: u64,
    /// Most events in one --follow-slurm write: a poll with more (a first
    /// poll of a large queue) is applied in several writes, its cursor with
    /// the last; a poll with jobs that finished unseen is always one write.
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    slurm_write_events: usize,
    /// Follow a Flux job-manager events journal (one response a line; `-`:
    /// standard input) as it grows; needs --flux-db.
    #[arg(long, value_name = "FILE", requires = "flux_db")]
    follow_flux_journal: Option<PathBuf>,
    /// The flux-accounting database whose associations the journal's user
    /// ids map to (load its events with `fairflow import flux --db`).
    #[arg(long, value_name = "FILE")]
    flux_db: Option<PathBuf>,
    /// Replay a file (event log or SWF trace) into the service.
    #[arg(long, value_name = "FILE")]
    replay: Option<PathBuf>,
    /// Replay speed: times faster than the file's own clock (0: at once).
    #[arg(long, default_value_t = 0.0)]
    replay_speed: f64,
    /// Log records between checkpoints.
    #[arg(long, default_value_t = 100_000)]
    checkpoint_every: u64,
    /// Largest request body, bytes.
    #[arg(long, default_value_t = 8 << 20)]
    max_body_bytes: usize,
    /// Largest line of a body or stream, bytes.
    #[arg(long, default_value_t = 64 << 10)]
    max_line_bytes: usize,
    /// Most bytes of writes held at once (read, parsed or waiting for the
    /// applier), HTTP bodies and tap batches together; more writers wait
    /// (backpressure in bytes). At least `--max-body-bytes`.
    #[arg(long, default_value_t = 16 << 20)]
    max_inflight_bytes: usize,
    /// Most concurrent connections from one client address; more are closed
    /// at once (behind a proxy, every client has the proxy's address).
    #[arg(long, default_value_t = 64)]
    max_connections_per_client: usize,
    /// Most connections open at once on each stream tap (`--tap-tcp`,
    /// `--tap-unix`); more are answered with an error line and closed.
    #[arg(long, value_name = "N", default_value_t = 64)]
    max_tap_connections: usize,
    /// Most bytes of answers held for readers at once, every connection
    /// together: each answer sent in pieces (`/v1/sprio`, `/slurm/v0.0.46/jobs`,
    /// ...) holds a 2 MiB window while it is sent; a read that finds them
    /// spent gets 503 at once.
    #[arg(long, value_name = "BYTES", default_value_t = fairflow_service::stream::DEFAULT_RESPONSE_BUDGET_BYTES)]
    max_response_bytes: usize,
    /// Most bytes of the tables answers being sent read from, every
    /// connection together: an answer of sprio, sshare, the queue or
    /// slurmrestd's jobs holds its state's rows until its reader has taken
    /// them, counted once however many answers share them; a read whose
    /// table does not fit gets 503 at once (one table larger than this is
    /// held alone).
    #[arg(long, value_name = "BYTES", default_value_t = fairflow_service::held_tables::DEFAULT_HELD_TABLE_BYTES)]
    max_held_table_bytes: usize,
    /// A connection whose client reads nothing of its answer for this long
    /// is closed, and what its answer held is released.
    #[arg(long, value_name = "SECS", default_value_t = 30)]
    write_timeout_secs: u64,
    /// Most what-ifs (`POST /v1/whatif`) evaluated at once; more wait for a
    /// slot until their deadline, then get 503.
    #[arg(long, value_name = "N", default_value_t = fairflow_service::whatif::DEFAULT_MAX_WHATIFS)]
    max_whatifs: usize,
    /// `/healthz` turns unhealthy (503) when the applier has been stuck this
    /// long on one step (an engine call that does not return), so a
    /// supervisor restarts the service.
    #[arg(long, value_name = "SECS", default_value_t = 120)]
    stall_timeout_secs: u64,
    /// Per-association fair-share gauges in `/metrics` (`fairflow_association_fairshare`,
    /// `_level_fs`, `_raw_usage`, `_effective_usage`, by `account` and `user`): for the N
    /// associations with the most raw usage, or `all`. Off by default (a large tree would
    /// make every scrape large).
    #[arg(long, value_name = "N|all", value_parser = parse_associations_limit)]
    metrics_associations: Option<usize>,
    /// `slurm-exporter` adds, beside fairflow's own families, the fair-share
    /// families of the Prometheus exporters sites run, under their names and
    /// labels (`slurm_account_fairshare{account}`, `slurm_account_fairshare_*`,
    /// `slurm_user_fairshare*{account,user}`, `slurm_account_normusage`,
    /// `_normshares`, `_levelfs`), so their dashboards read fairflow
    /// unchanged (`docs/http.md`).
    #[arg(long, value_enum, value_name = "NAMES", default_value = "fairflow")]
    metrics_names: MetricsNames,
    /// With `--metrics-names slurm-exporter`: the user associations of the
    /// `slurm_user_fairshare*` families (five series each): `none`, `all` (the
    /// default, as the exporter's `--collector.fairshare.user-metrics`), or the
    /// N with the most raw usage.
    #[arg(long, value_name = "none|all|N", default_value = "all")]
    metrics_exporter_users: UserSeries,
    /// Settle each `PriorityCalcPeriod` boundary of the wall clock in a
    /// logged `tick` of its own, GRACE_SECS after the boundary (default 2),
    /// as Slurm's decay thread runs once a period, so that the first event
    /// after a boundary does not pay for settling every running job. This is
    /// the default whenever `PriorityCalcPeriod` > 0; the flag sets the
    /// grace. Only a service fed live is ticked (its time within four
    /// periods, at least an hour, of the boundary): a log of past times is
    /// never cut by a tick of today. An event timed before a settled
    /// boundary is rejected as time going backwards (taps charge late
    /// records at the current time).
    #[arg(long, value_name = "GRACE_SECS", num_args = 0..=1, default_missing_value = "2",
          conflicts_with = "no_calc_period_ticks")]
    calc_period_ticks: Option<u64>,
    /// Never settle a boundary apart: the first event after it settles it.
    #[arg(long)]
    no_calc_period_ticks: bool,
    /// Keep the fair-share history in DATA/history (`on`, the default) or
    /// not (`off`: nothing is written, `/v1/history` answers 404). Each step
    /// holds the writes behind one fair-share table read, the queue's
    /// per-user counts and its first `--history-rank-depth` entries.
    #[arg(long, value_name = "on|off", default_value = "on", value_parser = ["on", "off"])]
    history: String,
    /// History steps record a user's best queue rank exactly within the
    /// queue's first D entries, and "beyond D" (`>D`) past them.
    #[arg(long, value_name = "D", default_value_t = fairflow_service::history::DEFAULT_RANK_DEPTH,
          value_parser = clap::value_parser!(u32).range(1..))]
    history_rank_depth: u32,
    /// Seconds of engine time between history steps (default: the
    /// `PriorityCalcPeriod` in force when the first step is due, when > 0, else 300).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    history_step_secs: Option<u64>,
    /// Keep the history steps this long before the newest (default 604800: 7 days).
    #[arg(long, value_name = "S", default_value_t = 604_800,
          value_parser = clap::value_parser!(u64).range(1..))]
    history_retention_secs: u64,
    /// Reject a written event (HTTP, taps) timed more than SECS ahead of the
    /// wall clock, naming its `t`: once applied, it would hold the service's
    /// time there and refuse every later write timed before it. `0` refuses
    /// any event ahead of the clock; `off` lifts the bound (replaying a log
    /// of future times).
    #[arg(long, value_name = "SECS|off", default_value = "300", value_parser = parse_event_lead)]
    max_event_lead_secs: EventLeadSecs,
    /// Start even if the log is damaged (not just a torn tail): keep the
    /// records before the damage, move the rest aside and say what was dropped.
    #[arg(long)]
    recover: bool,
    /// The engine: `incremental` (the default; `auto` is the same here, as a
    /// service updates its answers) or `batch`; both give equal answers.
    #[arg(long, value_enum, default_value = "incremental")]
    engine: EngineKind,
    /// Timely workers of the incremental engine.
    #[arg(long, value_name = "N", default_value_t = 1)]
    workers: usize,
    #[command(flatten)]
    config: ConfigArgs,
}

/// Run the service until SIGTERM or SIGINT.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let _ = &args.config_file; // Read before parsing: `with_config_file`.
    let token = match &args.token_file {
        None => None,
        Some(path) => {
            let token = crate::token_file::read_token_file(path)?;
            check_token_file_permissions(path)?;
            Some(token)
        }
    };
    if args.reads_need_token && token.is_none() {
        bail!("--reads-need-token needs --token-file");
    }
    if !args.listen.ip().is_loopback() && !args.reads_need_token {
        if !args.allow_remote_reads {
            bail!(
                "--listen {} is reachable from other machines and reads need no token: add \
                 --reads-need-token (with --token-file), or --allow-remote-reads to serve reads \
                 to anyone who can connect",
                args.listen
            );
        }
        eprintln!(
            "fairflow serve: warning: reads are open to anyone who can reach {} \
             (--allow-remote-reads)",
            args.listen
        );
    }
    let mut config = ServiceConfig::new(args.listen, args.data_dir.clone());
    config.http.write_token = token;
    config.http.reads_need_token = args.reads_need_token;
    config.http.max_body_bytes = args.max_body_bytes;
    config.http.max_line_bytes = args.max_line_bytes;
    config.http.max_inflight_bytes = args.max_inflight_bytes.max(args.max_body_bytes);
    config.http.max_connections_per_client = args.max_connections_per_client.max(1);
    config.http.stall_timeout = std::time::Duration::from_secs(args.stall_timeout_secs.max(1));
    config.http.metrics_associations = args.metrics_associations;
    config.http.metrics_names = args.metrics_names;
    config.http.metrics_exporter_users = args.metrics_exporter_users;
    config.http.max_response_bytes = args.max_response_bytes;
    config.http.held_tables = HeldTables::new(args.max_held_table_bytes);
    config.http.write_timeout = std::time::Duration::from_secs(args.write_timeout_secs.max(1));
    config.http.max_whatifs = args.max_whatifs.max(1);
    config.max_tap_connections = args.max_tap_connections.max(1);
    config.recover = args.recover;
    config.calc_period_ticks = (!args.no_calc_period_ticks).then(|| {
        std::time::Duration::from_secs(
            args.calc_period_ticks
                .unwrap_or(fairflow_service::ticks::DEFAULT_TICK_GRACE_SECS),
        )
    });
    config.max_event_lead_secs = args.max_event_lead_secs.0;
    config.checkpoint_every = args.checkpoint_every;
    config.tap_tcp = args.tap_tcp;
    config.tap_unix = args.tap_unix.clone();
    config.follow_jobcomp = args.follow_jobcomp.clone();
    config.follow_slurm = args.follow_slurm.then(|| {
        let poll = std::time::Duration::from_secs(args.slurm_poll_secs.max(1));
        let mut follow = fairflow_service::follow_slurm::FollowSlurm::every(poll);
        follow.command_timeout =
            std::time::Duration::from_secs(args.slurm_command_timeout_secs.max(1));
        follow.batch_events = args.slurm_write_events.max(1);
        follow
    });
    if let (Some(journal), Some(db)) = (&args.follow_flux_journal, &args.flux_db) {
        let db = fairflow_ingest::import_flux::read_flux_db(db, 0)?;
        config.follow_flux_journal = Some((
            journal.clone(),
            fairflow_ingest::flux_journal::FluxJournal::new(&db),
        ));
    }
    config.replay = args.replay.clone().map(|path| (path, args.replay_speed));
    if args.workers == 0 {
        bail!("--workers must be at least 1");
    }
    let choice = match args.engine {
        EngineKind::Incremental | EngineKind::Auto => EngineChoice::Incremental {
            workers: args.workers,
        },
        EngineKind::Batch => EngineChoice::Batch,
    };
    let engine = fairflow_engine::start(choice, args.config.initial_config()?)
        .context("cannot start the engine")?;
    let workers = args.workers;
    let backend = EngineBackend::new(engine).with_held_tables(config.http.held_tables.clone());
    let backend = with_history(args, backend, &mut config.http)?;
    run_blocking(config, backend, |report, address| {
        let engine = match report.engine {
            "incremental" if workers == 1 => "engine incremental, 1 worker".to_string(),
            "incremental" => format!("engine incremental, {workers} workers"),
            other => format!("engine {other}"),
        };
        eprintln!(
            "fairflow serve: listening on http://{address} ({engine}; recovered: checkpoint {}, {} log records replayed, {} bytes of torn tail cut)",
            report.checkpoint_sequence, report.replayed, report.truncated_bytes
        );
        print_recovery_warnings(report);
    })
    .map_err(|e| anyhow::Error::msg(e.to_string()))
}

/// `backend` keeping the history in DATA/history (unless `--history off`),
/// which `http` reads.
fn with_history(
    args: &Args,
    backend: EngineBackend,
    http: &mut fairflow_service::http::HttpConfig,
) -> anyhow::Result<EngineBackend> {
    if args.history == "off" {
        return Ok(backend);
    }
    let retention = args.history_retention_secs.min(i64::MAX as u64) as i64;
    let store = HistoryStore::open(&args.data_dir.join("history"), retention)?;
    let stepper = Stepper::new(
        args.history_step_secs
            .map(|s| s.min(i64::MAX as u64) as i64),
        retention,
        store.last_step(),
    )
    .with_rank_depth(args.history_rank_depth);
    let store = std::sync::Arc::new(std::sync::Mutex::new(store));
    let writer = spawn_writer(store.clone()).context("cannot start the history's writer")?;
    http.history = Some(store);
    Ok(backend.with_history(HistoryRecorder::new(stepper, writer)))
}

/// `--metrics-associations`: a count, or `all`.
fn parse_associations_limit(text: &str) -> Result<usize, String> {
    if text.eq_ignore_ascii_case("all") {
        return Ok(usize::MAX);
    }
    text.parse()
        .map_err(|_| format!("`{text}` is neither a number of associations nor `all`"))
}

/// `--max-event-lead-secs`: seconds, or none for `off`.
#[derive(Debug, Clone, Copy)]
struct EventLeadSecs(Option<i64>);

fn parse_event_lead(text: &str) -> Result<EventLeadSecs, String> {
    if text.eq_ignore_ascii_case("off") {
        return Ok(EventLeadSecs(None));
    }
    text.parse::<u32>()
        .map(|secs| EventLeadSecs(Some(i64::from(secs))))
        .map_err(|_| format!("`{text}` is neither a number of seconds nor `off`"))
}

/// What recovery dropped, quarantined or skipped, loudly, on standard error.
fn print_recovery_warnings(report: &fairflow_service::applier::RecoveryReport) {
    if let Some(dropped) = &report.dropped {
        eprintln!("fairflow serve: WARNING: {dropped}");
    }
    for message in &report.newly_quarantined {
        eprintln!("fairflow serve: WARNING: {message}");
    }
    if report.quarantined > 0 {
        eprintln!(
            "fairflow serve: WARNING: {} quarantined log record(s) skipped (see the data \
             directory's quarantine/)",
            report.quarantined
        );
    }
}

/// Refuse a token file that users other than its owner can read or change
/// (any group or other permission bit, on Unix): whoever can read it can
/// write events, whoever can change it can choose the token.
fn check_token_file_permissions(path: &std::path::Path) -> anyhow::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path)
            .with_context(|| format!("cannot read {}", path.display()))?
            .permissions()
            .mode();
        if mode & 0o077 != 0 {
            bail!(
                "the token file {} has mode {:o}: other users can read or change it; make it \
                 private to its owner (chmod 600)",
                path.display(),
                mode & 0o777
            );
        }
    }
    Ok(())
}

/// The command line with `serve --config FILE`'s settings in it, when it has
/// one: the file's flags right after `serve`, so the flags given after them
/// override them (the caller parses with `args_override_self`); `None` when
/// the command is not `serve` or names no `--config`.
pub fn with_config_file(argv: &[OsString]) -> anyhow::Result<Option<Vec<OsString>>> {
    // The subcommand: the first argument that is not the global
    // `--log-format` (or its value).
    let mut at = 1;
    while argv
        .get(at)
        .is_some_and(|a| a.to_string_lossy().starts_with("--log-format"))
    {
        at += if argv[at] == "--log-format" { 2 } else { 1 };
    }
    if argv.get(at).is_none_or(|a| a != "serve") {
        return Ok(None);
    }
    let mut path = None;
    let mut rest = argv[at + 1..].iter();
    while let Some(arg) = rest.next() {
        let text = arg.to_string_lossy();
        if text == "--config" {
            path = rest.next().map(PathBuf::from);
        } else if let Some(value) = text.strip_prefix("--config=") {
            path = Some(PathBuf::from(value));
        }
    }
    let Some(path) = path else {
        return Ok(None);
    };
    let text = fairflow_ingest::files::read_small_text(&path, MAX_CONFIG_BYTES)
        .context("cannot read the serve config")?;
    let tokens = config_tokens(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let mut out = argv[..=at].to_vec();
    out.extend(tokens.into_iter().map(OsString::from));
    out.extend_from_slice(&argv[at + 1..]);
    Ok(Some(out))
}

/// A serve config file's settings as serve flags
/// ([`fairflow_service::config_file::config_tokens`] on serve's flags).
fn config_tokens(text: &str) -> Result<Vec<String>, ConfigFileError> {
    let command = <Args as clap::Args>::augment_args(clap::Command::new("serve"));
    config_tokens_of(text, &command)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_config_file_becomes_serve_flags_and_unknown_keys_are_named() {
        let tokens = config_tokens(
            "listen = \"127.0.0.1:9\"\ndata_dir = \"/d\"\nworkers = 2\nrecover = true\n\
             reads-need-token = false\nreplay_speed = 2.5\n",
        )
        .unwrap();
        assert_eq!(
            tokens,
            [
                "--data-dir",
                "/d",
                "--listen",
                "127.0.0.1:9",
                "--recover",
                "--replay-speed",
                "2.5",
                "--workers",
                "2"
            ]
        );
        let error = config_tokens("lisen = \"x\"").unwrap_err().to_string();
        assert!(error.starts_with("unknown key `lisen`"), "{error}");
        let error = config_tokens("recover = 1").unwrap_err().to_string();
        assert_eq!(error, "key `recover`: must be true or false");
        let error = config_tokens("workers = [1]").unwrap_err().to_string();
        assert_eq!(error, "key `workers`: must be a string or a number");
        // A value of the wrong type is named by its key, with the reason.
        let error = config_tokens("workers = \"two\"").unwrap_err().to_string();
        assert!(
            error.starts_with("key `workers`: invalid value 'two' for '--workers <N>'"),
            "{error}"
        );
        let error = config_tokens("listen = 7471").unwrap_err().to_string();
        assert!(
            error.starts_with("key `listen`: invalid value '7471' for '--listen <LISTEN>'"),
            "{error}"
        );
        let error = config_tokens("engine = \"fast\"").unwrap_err().to_string();
        assert!(
            error.starts_with("key `engine`: invalid value 'fast'"),
            "{error}"
        );
        assert!(config_tokens("= 1").is_err());
    }

    #[test]
    fn the_metrics_names_and_user_series_keys_are_checked_by_their_flags() {
        let tokens =
            config_tokens("metrics_names = \"slurm-exporter\"\nmetrics_exporter_users = 50\n")
                .unwrap();
        assert_eq!(
            tokens,
            [
                "--metrics-exporter-users",
                "50",
                "--metrics-names",
                "slurm-exporter"
            ]
        );
        assert!(config_tokens("metrics_exporter_users = \"none\"").is_ok());
        let error = config_tokens("metrics_names = \"prometheus\"")
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("key `metrics_names`: invalid value 'prometheus'"),
            "{error}"
        );
        let error = config_tokens("metrics_exporter_users = \"some\"")
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("key `metrics_exporter_users`: invalid value 'some'"),
            "{error}"
        );
        assert!(
            error.contains("neither `none`, `all` nor a number"),
            "{error}"
        );
    }

    #[test]
    fn the_history_keys_are_checked_by_their_flags() {
        assert_eq!(
            config_tokens(
                "history = \"off\"\nhistory_step_secs = 3600\nhistory_retention_secs = 86400\n"
            )
            .unwrap(),
            [
                "--history",
                "off",
                "--history-retention-secs",
                "86400",
                "--history-step-secs",
                "3600"
            ]
        );
        let error = config_tokens("history = \"sometimes\"")
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("key `history`: invalid value 'sometimes'"),
            "{error}"
        );
        let error = config_tokens("history_step_secs = 0")
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("key `history_step_secs`: invalid value '0'"),
            "{error}"
        );
    }

    #[test]
    fn the_file_goes_after_serve_and_before_the_command_lines_flags() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("serve.toml");
        std::fs::write(&file, "engine = \"batch\"\n").unwrap();
        let argv: Vec<OsString> = ["fairflow", "--log-format", "json", "serve", "--config"]
            .iter()
            .map(OsString::from)
            .chain([
                file.clone().into_os_string(),
                "--engine".into(),
                "incremental".into(),
            ])
            .collect();
        let got = with_config_file(&argv).unwrap().unwrap();
        let got: Vec<String> = got
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            got[..6],
            [
                "fairflow",
                "--log-format",
                "json",
                "serve",
                "--engine",
                "batch"
            ]
        );
        assert_eq!(got[8..], ["--engine", "incremental"]);
        let plain: Vec<OsString> = ["fairflow", "sshare"].iter().map(OsString::from).collect();
        assert!(with_config_file(&plain).unwrap().is_none());
    }
}
