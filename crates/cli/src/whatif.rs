//! `fairflow whatif`: what proposed changes would do. The proposal is an
//! event log (`--propose LOG`: share changes, a reorganisation, submissions,
//! `config` events) and/or a `slurm.conf` (`--conf FILE`: its priority
//! parameters as one `config` event after the log's); the answer is, per
//! user association, the change in fair-share factor and, per job, the
//! change in priority and queue position, ranked by impact
//! (`fairflow_engine::whatif::evaluate_rows`: share changes from the
//! incremental engine's live state, other proposals by the oracle on a
//! copy). From `--events` (the current state) or a running `--server`
//! (`POST /v1/whatif`). Read-only either way.

use std::path::PathBuf;

use anyhow::Context;
use fairflow_ingest::reader::read_events;
use fairflow_serve::plot::whatif::WhatIfPicture;
use fairflow_serve::plot::ImageFormat;
use fairflow_serve::whatif::render_rows;
use fairflow_serve::OutputFormat;

use crate::output::emit;
use crate::state_args::StateArgs;

/// `fairflow whatif` flags.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    state: StateArgs,
    /// The proposed changes: an event log (JSON Lines; `-`: standard input).
    /// An event time before the state's is taken as the state's.
    #[arg(long, value_name = "LOG", required_unless_present = "conf")]
    propose: Option<String>,
    /// New priority parameters from a `slurm.conf` (or `scontrol show
    /// config`), applied as one `config` event after the proposal's events.
    #[arg(long, value_name = "FILE")]
    conf: Option<PathBuf>,
    /// Rows of each list (associations, jobs), most changed first.
    #[arg(short = 'k', long, value_name = "K", default_value_t = 20)]
    k: usize,
    /// One JSON object instead of tables.
    #[arg(long, conflicts_with = "parsable")]
    json: bool,
    /// `|`-separated tables.
    #[arg(short = 'P', long)]
    parsable: bool,
    /// Draw the answer instead (bars of the `k` largest factor changes and
    /// queue moves) into this file: SVG or PNG by its extension.
    #[arg(short = 'o', long, value_name = "FILE", conflicts_with_all = ["json", "parsable"])]
    output: Option<PathBuf>,
    /// The picture's width in pixels (with `-o`).
    #[arg(long, value_name = "PX", default_value_t = 1200)]
    width_px: u32,
}

/// Draw `answer` into the file `-o` names.
fn draw(
    args: &Args,
    path: &std::path::Path,
    answer: &fairflow_model::report::whatif::WhatIf,
) -> anyhow::Result<()> {
    let name = path.to_string_lossy();
    let Some(format) = ImageFormat::from_path(&name) else {
        anyhow::bail!("-o {name}: the file name must end in .svg or .png");
    };
    let picture = WhatIfPicture::new(answer, args.k, args.width_px);
    let bytes = fairflow_serve::plot::render(&picture, format)?;
    std::fs::write(path, bytes).with_context(|| format!("cannot write {name}"))
}

/// The proposal as JSON Lines: the log's lines, then the `slurm.conf`'s
/// parameters as one `config` event (at time 0: taken as the state's).
fn proposal_text(args: &Args) -> anyhow::Result<String> {
    let mut text = match &args.propose {
        None => String::new(),
        Some(name) => {
            let mut text = String::new();
            std::io::Read::read_to_string(
                &mut fairflow_ingest::reader::open_source(name)?,
                &mut text,
            )
            .with_context(|| format!("cannot read {name}"))?;
            text
        }
    };
    if let Some(path) = &args.conf {
        let conf = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let set: serde_json::Map<String, serde_json::Value> =
            fairflow_ingest::slurm_conf::priority_lines(&conf)
                .into_iter()
                .map(|(_, key, value)| (key, serde_json::Value::String(value)))
                .collect();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&serde_json::json!({"op": "config", "t": 0, "set": set}).to_string());
        text.push('\n');
    }
    Ok(text)
}

/// Evaluate the proposal on the state and print the changes.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let (format, name) = if args.json {
        (OutputFormat::Json, "json")
    } else if args.parsable {
        (OutputFormat::Parsable, "parsable")
    } else {
        (OutputFormat::Table, "table")
    };
    let proposal = proposal_text(args)?;
    if let Some(server) = &args.state.server {
        let name = if args.output.is_some() { "json" } else { name };
        let path = format!("/v1/whatif?k={}&format={name}", args.k);
        let answer =
            crate::remote::post(server, &path, &proposal, args.state.token_file.as_deref())?;
        if let Some(output) = &args.output {
            let answer = serde_json::from_str(&answer).context("reading the service's answer")?;
            return draw(args, output, &answer);
        }
        return emit(&answer);
    }
    let lines = read_events(proposal.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .context("reading the proposal")?;
    let Some(mut engine) = args.state.engine()? else {
        // A non-zero process of the cluster mode: process 0 answers.
        return Ok(());
    };
    let rows = fairflow_engine::whatif::evaluate_rows(engine.as_mut(), lines, args.k)?;
    if let Some(output) = &args.output {
        return draw(args, output, &rows.answer);
    }
    emit(&render_rows(&rows, format))
}
