//! Log records on standard error, through `tracing-subscriber`: `RUST_LOG`
//! chooses what is logged (default: `info` for fairflow's own crates, `warn`
//! for the rest), `--log-format` how (`text`, readable, or `json`, one object
//! a line for a log collector). Standard output carries only answers.

use tracing_subscriber::EnvFilter;

/// How log records are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Readable lines: time, level, target, message and fields.
    #[default]
    Text,
    /// One JSON object a line (`timestamp`, `level`, `fields`, `target`).
    Json,
}

/// What is logged when `RUST_LOG` is not set.
const DEFAULT_FILTER: &str = "warn,fairflow=info,fairflow_service=info,fairflow_ingest=info";

/// Install the subscriber for the whole process (once, at start).
pub fn init(format: LogFormat) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}
