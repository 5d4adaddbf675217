//! `fairflow history`: one association's fair-share history, from a running
//! service (`--server`: `GET /v1/history`) or computed from a log without one
//! (`--events`, the batch path): the log applied through the same step rule
//! and step records as the service (`fairflow_service::history`), so a
//! service fed a log and this command on the same log give the same series
//! (at the same `--step-secs` and retention). Printed as an aligned table
//! (as `sshare`), `-P` (`|`-separated), `--json` (`/v1/history`'s answer),
//! or drawn with `-o FILE.svg|png`: the factor, LevelFS and rank over time
//! (`fairflow_serve::plot::history`).

use anyhow::{bail, Context};
use fairflow_ingest::slurm_time::format_site_time;
use fairflow_model::Time;
use fairflow_serve::format::{aligned, column, opt_fixed6, parsable, Column, Justify};
use fairflow_serve::plot::history::{HistoryPicture, Panel, Series};
use fairflow_serve::plot::{render, ImageFormat};
use fairflow_service::history::record::{decode_row, encode_step};
use fairflow_service::history::store::{check_range, find_id};
use fairflow_service::history::{
    Dictionary, HistoryPoint, HistorySeries, Stepper, DEFAULT_RETENTION_SECS, ROW_BYTES,
};

use crate::output::emit;
use crate::state_args::{parse_slurm_time_arg, StateArgs};

/// `fairflow history` flags.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    state: StateArgs,
    /// The account whose history to show (with `--user`, the user's
    /// association in it).
    #[arg(long, value_name = "A")]
    account: String,
    /// The user (of `--account`) whose history to show.
    #[arg(long, value_name = "U")]
    user: Option<String>,
    /// The first step shown (as `--at` takes times); default: the oldest kept.
    #[arg(long, value_name = "T", value_parser = parse_slurm_time_arg)]
    from: Option<Time>,
    /// The last step shown; default: the newest.
    #[arg(long, value_name = "T", value_parser = parse_slurm_time_arg)]
    to: Option<Time>,
    /// With `--events`: seconds between steps (default: `PriorityCalcPeriod`
    /// when > 0, else 300), as `serve --history-step-secs`.
    #[arg(long, value_name = "N", conflicts_with = "server")]
    step_secs: Option<u64>,
    /// With `--events`: keep the steps this long before the newest (default 7
    /// days), as `serve --history-retention-secs`.
    #[arg(long, value_name = "S", conflicts_with = "server")]
    retention_secs: Option<u64>,
    /// With `--events`: best queue ranks exact within the queue's first D
    /// entries, `>D` past them, as `serve --history-rank-depth`.
    #[arg(long, value_name = "D", conflicts_with = "server",
          default_value_t = fairflow_service::history::DEFAULT_RANK_DEPTH,
          value_parser = clap::value_parser!(u32).range(1..))]
    rank_depth: u32,
    /// `|`-separated, with a header, no padding.
    #[arg(short = 'P', long, conflicts_with = "json")]
    parsable: bool,
    /// `/v1/history`'s JSON.
    #[arg(long)]
    json: bool,
    /// Draw the factor, LevelFS and rank over time to this `.svg` or `.png`.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<String>,
}

/// Read the history, print or draw it.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let image = match &args.output {
        Some(path) => Some(
            ImageFormat::from_path(path)
                .with_context(|| format!("-o {path}: the file's name must end in .svg or .png"))?,
        ),
        None => None,
    };
    if args.step_secs == Some(0) {
        bail!("--step-secs 0: steps are at least a second apart");
    }
    check_range(args.from, args.to).map_err(|e| anyhow::anyhow!("--{e}"))?;
    let history = match remote(args)? {
        Some(history) => history,
        None => match batch(args)? {
            Some(history) => history,
            // A non-zero process of the cluster mode: process 0 answers.
            None => return Ok(()),
        },
    };
    if let (Some(format), Some(path)) = (image, &args.output) {
        let bytes = render(&picture(&history), format)?;
        return std::fs::write(path, bytes).with_context(|| format!("cannot write {path}"));
    }
    if args.json {
        return emit(&(serde_json::to_string_pretty(&history)? + "\n"));
    }
    emit(&table(&history, args.parsable))
}

/// With `--server`: the service's answer.
fn remote(args: &Args) -> anyhow::Result<Option<HistorySeries>> {
    let mut query = form_urlencoded::Serializer::new(String::new());
    query.append_pair("account", &args.account);
    if let Some(user) = &args.user {
        query.append_pair("user", user);
    }
    if let Some(from) = args.from {
        query.append_pair("from", &from.to_string());
    }
    if let Some(to) = args.to {
        query.append_pair("to", &to.to_string());
    }
    let path = format!("/v1/history?{}", query.finish());
    let Some(answer) = args.state.remote(&path)? else {
        return Ok(None);
    };
    Ok(Some(
        serde_json::from_str(&answer).context("the service's history does not parse")?,
    ))
}

/// The batch path: the log applied through the service's step rule, the
/// asked association's row decoded from each step's record.
fn batch(args: &Args) -> anyhow::Result<Option<HistorySeries>> {
    let retention = args
        .retention_secs
        .map_or(DEFAULT_RETENTION_SECS, |s| s as Time);
    let mut stepper = Stepper::new(args.step_secs.map(|s| s as Time), retention, None)
        .with_rank_depth(args.rank_depth);
    let mut dictionary = Dictionary::default();
    let mut points: Vec<HistoryPoint> = Vec::new();
    let mut newest = Time::MIN;
    let user = args.user.as_deref();
    let loaded = args.state.engine_applying(&mut |engine, lines| {
        stepper
            .apply(engine, lines, &mut |step| {
                newest = step.at;
                let (rows, _) = encode_step(&step, &mut dictionary);
                if let Some(id) = dictionary.id(&args.account, user) {
                    let row = &rows[id as usize * ROW_BYTES..][..ROW_BYTES];
                    points.extend(decode_row(step.at, row));
                }
            })
            .map(|applied| applied.rejected)
    })?;
    if loaded.is_none() {
        return Ok(None);
    }
    find_id(&dictionary, &args.account, user).map_err(|e| anyhow::anyhow!("--{e}"))?;
    // The retention before the newest step, as the store keeps it.
    let (from, to) = (args.from.unwrap_or(Time::MIN), args.to.unwrap_or(Time::MAX));
    points.retain(|p| p.t >= newest.saturating_sub(retention) && p.t >= from && p.t <= to);
    Ok(Some(HistorySeries {
        account: args.account.clone(),
        user: args.user.clone(),
        steps: points,
    }))
}

/// The table's columns; a user association's add its queue.
const COLUMNS: [Column; 10] = [
    column("Time", 19, Justify::Left),
    column("RawUsage", 11, Justify::Right),
    column("NormShares", 11, Justify::Right),
    column("NormUsage", 11, Justify::Right),
    column("EffectvUsage", 11, Justify::Right),
    column("LevelFS", 10, Justify::Right),
    column("FairShare", 10, Justify::Right),
    column("Rank", 6, Justify::Right),
    column("Pending", 7, Justify::Right),
    column("BestQueueRank", 13, Justify::Right),
];

/// The history as an aligned table, or `|`-separated.
fn table(history: &HistorySeries, parsable_form: bool) -> String {
    let user = history.user.is_some();
    let columns = if user { &COLUMNS[..] } else { &COLUMNS[..8] };
    let number = |n: Option<u32>| n.map_or(String::new(), |n| n.to_string());
    let rows: Vec<Vec<String>> = (history.steps.iter())
        .map(|p| {
            let level_fs = if p.level_fs_infinite {
                "inf".to_string()
            } else {
                opt_fixed6(p.level_fs)
            };
            let mut cells = vec![
                format_site_time(p.t),
                p.raw_usage.to_string(),
                opt_fixed6(p.norm_shares),
                opt_fixed6(p.norm_usage),
                opt_fixed6(p.effective_usage),
                level_fs,
                opt_fixed6(p.fairshare),
                number(p.rank),
            ];
            if user {
                let best = match p.best_queue_rank_beyond {
                    Some(depth) => format!(">{depth}"),
                    None => number(p.best_queue_rank),
                };
                cells.extend([number(p.pending_jobs), best]);
            }
            cells
        })
        .collect();
    if parsable_form {
        parsable(columns, &rows)
    } else {
        aligned(columns, &rows)
    }
}

/// The factor, LevelFS and rank over time, one panel each.
fn picture(history: &HistorySeries) -> HistoryPicture {
    let name = match &history.user {
        Some(user) => format!("{user} ({})", history.account),
        None => format!("account {}", history.account),
    };
    let panel = |title: &str, value: fn(&HistoryPoint) -> Option<f64>| Panel {
        title: title.to_string(),
        series: vec![Series {
            name: name.clone(),
            points: history.steps.iter().map(|p| (p.t, value(p))).collect(),
        }],
    };
    HistoryPicture {
        caption: format!("fairflow history · {name} · {} steps", history.steps.len()),
        panels: vec![
            panel("Fair-share factor", |p| p.fairshare),
            panel("LevelFS (Fair Tree)", |p| p.level_fs),
            panel("Fair-share rank (1 = first)", |p| p.rank.map(f64::from)),
        ],
        width_px: 1200,
        panel_height_px: 300,
    }
}
