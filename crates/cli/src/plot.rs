//! `fairflow plot tree` and `fairflow plot history`: pictures written to a
//! file, SVG or PNG by its extension (drawn by `fairflow_serve::plot`).
//!
//! - `tree`: the fair-share tree as an icicle, from `--events` or a running
//!   `--server` (`GET /v1/plot/tree.svg`, SVG only).
//! - `history`: the fair-share factor, raw usage and queue position of the
//!   asked users (each of their associations) and accounts over a replay of
//!   the log by the batch oracle, sampled every `--every` seconds of event
//!   time (the state as of each sampled time: every event before it
//!   applied, then time advanced to it) and after the last event. A user
//!   association's position is its best pending job's place in the whole
//!   queue (1 is first); an account's, the best of the jobs charged to it.

use std::collections::BTreeMap;

use anyhow::{bail, Context};
use fairflow_engine::{BatchEngine, Engine};
use fairflow_ingest::reader::{open_source, read_events};
use fairflow_ingest::LogLine;
use fairflow_model::Time;
use fairflow_serve::plot::history::{HistoryPicture, Panel, Series};
use fairflow_serve::plot::tree::{TreeColor, TreeOptions, TreePicture};
use fairflow_serve::plot::{render, ImageFormat};

use crate::state_args::{ConfigArgs, StateArgs};

/// `fairflow plot` subcommands.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    picture: PictureArgs,
}

#[derive(Debug, clap::Subcommand)]
enum PictureArgs {
    /// The fair-share tree as an icicle: widths by shares, colour by usage
    /// against shares or by fair-share factor.
    Tree(TreeArgs),
    /// Fair-share factor, usage and queue position over a replay, as line charts.
    History(HistoryArgs),
}

/// `fairflow plot tree` flags.
#[derive(Debug, clap::Args)]
pub struct TreeArgs {
    #[command(flatten)]
    state: StateArgs,
    /// What colour shows: `usage` (usage against shares: blue under-served,
    /// red over-served) or `factor` (the fair-share factor).
    #[arg(long, value_name = "WHAT", default_value = "usage", value_parser = ["usage", "factor"])]
    color: String,
    /// Children narrower than this are drawn as one "N others" box per parent.
    #[arg(long, value_name = "N", default_value_t = 4)]
    min_width_px: u32,
    /// The picture's width in pixels.
    #[arg(long, value_name = "N", default_value_t = 1200)]
    width_px: u32,
    /// The file to write: `.svg` or `.png`.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: String,
}

/// `fairflow plot history` flags.
#[derive(Debug, clap::Args)]
pub struct HistoryArgs {
    /// The event log (`.jsonl` or `.jsonl.gz`; `-` is standard input).
    /// Repeat to replay several logs in order.
    #[arg(long = "events", value_name = "FILE", required = true)]
    events: Vec<String>,
    #[command(flatten)]
    config: ConfigArgs,
    /// Users to follow (each of their associations), comma-separated.
    #[arg(long, value_name = "U1,U2", value_delimiter = ',')]
    users: Vec<String>,
    /// Accounts to follow, comma-separated.
    #[arg(long, value_name = "A1,A2", value_delimiter = ',')]
    accounts: Vec<String>,
    /// Seconds of event time between samples (default: the log's span over 100).
    #[arg(long, value_name = "SECS")]
    every: Option<u64>,
    /// The picture's width in pixels.
    #[arg(long, value_name = "N", default_value_t = 1200)]
    width_px: u32,
    /// The file to write: `.svg` or `.png`.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: String,
}

/// The most samples a history takes.
const MAX_SAMPLES: u64 = 5_000;

/// Draw the asked picture.
pub fn run(args: &Args) -> anyhow::Result<()> {
    match &args.picture {
        PictureArgs::Tree(tree) => run_tree(tree),
        PictureArgs::History(history) => run_history(history),
    }
}

fn image_format(path: &str) -> anyhow::Result<ImageFormat> {
    ImageFormat::from_path(path)
        .with_context(|| format!("-o {path}: the file's name must end in .svg or .png"))
}

fn write(path: &str, bytes: &[u8]) -> anyhow::Result<()> {
    std::fs::write(path, bytes).with_context(|| format!("cannot write {path}"))
}

fn run_tree(args: &TreeArgs) -> anyhow::Result<()> {
    let format = image_format(&args.output)?;
    let color = TreeColor::parse(&args.color).expect("clap keeps to the listed values");
    if args.state.server.is_some() && format == ImageFormat::Png {
        bail!("with --server the tree comes as SVG: write it to a .svg file");
    }
    let path = format!(
        "/v1/plot/tree.svg?color={}&min_width_px={}&width_px={}",
        color.name(),
        args.min_width_px,
        args.width_px
    );
    if let Some(answer) = args.state.remote(&path)? {
        return write(&args.output, answer.as_bytes());
    }
    let Some(mut engine) = args.state.engine()? else {
        return Ok(());
    };
    let options = TreeOptions {
        color,
        min_width_px: args.min_width_px as f64,
        width_px: args.width_px,
    };
    let picture = TreePicture::new(&engine.fairshare()?, &options);
    write(&args.output, &render(&picture, format)?)
}

fn read_logs(paths: &[String]) -> anyhow::Result<Vec<(String, Vec<LogLine>)>> {
    paths
        .iter()
        .map(|path| {
            let name = if path == "-" { "<stdin>" } else { path };
            let lines = read_events(open_source(path)?)
                .map(|line| line.with_context(|| format!("cannot read {name}")))
                .collect::<anyhow::Result<Vec<LogLine>>>()?;
            Ok((name.to_string(), lines))
        })
        .collect()
}

/// A followed association: `(account, user)`; an account has no user.
type Key = (String, Option<String>);

/// One sample's values: per followed association, its fair-share factor,
/// raw usage and queue position.
type Values = BTreeMap<Key, [Option<f64>; 3]>;

/// One sample: each followed association's fair-share factor, raw usage
/// and queue position.
fn sample(
    engine: &mut dyn Engine,
    users: &[String],
    accounts: &[String],
) -> anyhow::Result<Values> {
    let table = engine.fairshare()?;
    let factors = engine.user_factors()?;
    let queue = engine.top(usize::MAX)?;
    let followed = table.rows.iter().filter(|r| match &r.user {
        Some(user) => users.contains(user),
        None => accounts.contains(&r.account),
    });
    Ok(followed
        .map(|row| {
            let key = (row.account.clone(), row.user.clone());
            let factor = match &row.user {
                Some(user) => factors.get(&(row.account.clone(), user.clone())).copied(),
                None => row.fairshare,
            };
            let position = queue
                .iter()
                .position(|job| {
                    job.account == row.account && row.user.as_ref().is_none_or(|u| job.user == *u)
                })
                .map(|index| (index + 1) as f64);
            (key, [factor, Some(row.raw_usage as f64), position])
        })
        .collect())
}

/// The sampled times, each with the lines to apply before it (the last
/// with every line left).
fn sampled_times(
    logs: Vec<(String, Vec<LogLine>)>,
    first: Time,
    every: Time,
) -> Vec<(Option<Time>, Vec<LogLine>)> {
    let mut out = Vec::new();
    let mut pending = Vec::new();
    let mut next = first;
    for line in logs.into_iter().flat_map(|(_, lines)| lines) {
        if let Ok(event) = &line.event {
            while event.t > next {
                out.push((Some(next), std::mem::take(&mut pending)));
                next += every;
            }
        }
        pending.push(line);
    }
    out.push((None, pending));
    out
}

/// The history's panels (fair-share factor, raw usage, queue position),
/// one series per followed association, over `samples`.
fn history_panels(
    keys: &std::collections::BTreeSet<&Key>,
    samples: &[(Time, Values)],
) -> Vec<Panel> {
    let titles = [
        "Fair-share factor",
        "Raw usage (decayed billable TRES-seconds)",
        "Queue position of the best pending job (1 = first in line)",
    ];
    titles
        .iter()
        .enumerate()
        .map(|(q, title)| Panel {
            title: title.to_string(),
            series: keys
                .iter()
                .map(|key| Series {
                    name: match key {
                        (account, Some(user)) => format!("{user} ({account})"),
                        (account, None) => format!("account {account}"),
                    },
                    points: samples
                        .iter()
                        .map(|(t, values)| (*t, values.get(*key).and_then(|v| v[q])))
                        .collect(),
                })
                .collect(),
        })
        .collect()
}

fn run_history(args: &HistoryArgs) -> anyhow::Result<()> {
    let format = image_format(&args.output)?;
    if args.users.is_empty() && args.accounts.is_empty() {
        bail!("nothing to follow: give --users, --accounts or both");
    }
    if args.every == Some(0) {
        bail!("--every 0: samples are at least a second apart");
    }
    let logs = read_logs(&args.events)?;
    let times = logs.iter().flat_map(|(_, lines)| {
        lines
            .iter()
            .filter_map(|l| l.event.as_ref().ok().map(|e| e.t))
    });
    let (Some(first), Some(last)) = (times.clone().min(), times.max()) else {
        bail!("the log has no event");
    };
    let span = (last - first).max(0) as u64;
    let every = args.every.unwrap_or((span / 100).max(1));
    if span / every > MAX_SAMPLES {
        bail!(
            "--every {every}: {} samples over {span} s, at most {MAX_SAMPLES}: take a larger --every",
            span / every
        );
    }

    let mut engine = BatchEngine::new(args.config.initial_config()?);
    let mut rejected = 0usize;
    let source = args.events.join(", ");
    let mut samples: Vec<(Time, Values)> = Vec::new();
    for (at, batch) in sampled_times(logs, first, every as Time) {
        if !batch.is_empty() {
            for rejection in engine.apply(batch)? {
                // Lines are numbered within their log.
                eprintln!("{source}: {rejection}");
                rejected += 1;
            }
        }
        if let Some(at) = at {
            engine.advance_to(at)?;
        }
        let Some(now) = engine.now() else {
            continue;
        };
        samples.push((now, sample(&mut engine, &args.users, &args.accounts)?));
    }
    if rejected > 0 {
        eprintln!("fairflow: {rejected} lines rejected");
    }
    let keys: std::collections::BTreeSet<&Key> = samples
        .iter()
        .flat_map(|(_, values)| values.keys())
        .collect();
    for user in &args.users {
        if !keys.iter().any(|(_, u)| u.as_ref() == Some(user)) {
            bail!("--users: no association of user `{user}` in the log");
        }
    }
    for account in &args.accounts {
        if !keys.iter().any(|(a, u)| u.is_none() && a == account) {
            bail!("--accounts: no account `{account}` in the log");
        }
    }

    let panels = history_panels(&keys, &samples);
    let picture = HistoryPicture {
        caption: format!(
            "fairflow history · {} samples every {every} s · {}",
            samples.len(),
            engine.config().algorithm().name()
        ),
        panels,
        width_px: args.width_px,
        panel_height_px: 300,
    };
    write(&args.output, &render(&picture, format)?)
}
