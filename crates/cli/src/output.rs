//! Output flags every query command shares (`-P`, `--json`) and writing an
//! answer to standard output (a closed pipe, as with `| head`, is not an error).

use std::io::Write;

use fairflow_serve::OutputFormat;

/// `-P` / `--json`; without either, an aligned table.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct OutputArgs {
    /// `|`-separated output: header first, no padding, no trailing `|`.
    #[arg(short = 'P', long = "parsable", conflicts_with = "json")]
    pub parsable: bool,
    /// A JSON array of objects with snake_case keys.
    #[arg(long)]
    pub json: bool,
}

impl OutputArgs {
    /// The format these flags select.
    pub fn format(&self) -> OutputFormat {
        if self.json {
            OutputFormat::Json
        } else if self.parsable {
            OutputFormat::Parsable
        } else {
            OutputFormat::Table
        }
    }
}

/// Write `text` to standard output.
pub fn emit(text: &str) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}
