//! `fairflow audit`: who is over- and under-served. Per level of the tree,
//! the associations whose usage share among their siblings is furthest above
//! and below their normalised shares, with the same figures against the
//! whole cluster; then the users with a high fair-share factor whose pending
//! jobs have waited longest. Tables (or `--json`), from `--events` or a
//! running `--server` (`GET /v1/audit`).

use fairflow_serve::audit::render;
use fairflow_service::engine_backend::run_audit;

use crate::output::emit;
use crate::state_args::StateArgs;

/// `fairflow audit` flags.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    state: StateArgs,
    /// How many associations per level and side, and waiting users.
    #[arg(long, value_name = "N", default_value_t = 5)]
    top: usize,
    /// The least fair-share factor of a waiting user listed (0 to 1).
    #[arg(long, value_name = "F", default_value_t = 0.5)]
    min_factor: f64,
    /// One JSON object instead of tables.
    #[arg(long)]
    json: bool,
}

/// Load the state, audit it, print it.
pub fn run(args: &Args) -> anyhow::Result<()> {
    if !(0.0..=1.0).contains(&args.min_factor) {
        anyhow::bail!(
            "--min-factor {}: a fair-share factor is within 0..1",
            args.min_factor
        );
    }
    let (format, name) = if args.json {
        (fairflow_serve::OutputFormat::Json, "json")
    } else {
        (fairflow_serve::OutputFormat::Table, "table")
    };
    let path = format!(
        "/v1/audit?top={}&min_factor={}&format={name}",
        args.top, args.min_factor
    );
    if let Some(answer) = args.state.remote(&path)? {
        return emit(&answer);
    }
    let Some(mut engine) = args.state.engine()? else {
        // A non-zero process of the cluster mode: process 0 answers.
        return Ok(());
    };
    let found = run_audit(engine.as_mut(), args.min_factor, args.top)?;
    emit(&render(&found, args.top, format))
}
