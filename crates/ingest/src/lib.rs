//! Everything that enters fairflow passes through here: the event log reader
//! (`.jsonl`, `.jsonl.gz`), the JSON-to-event parser, and the converters from
//! other systems' records (Slurm's `sacctmgr`/`sshare`/`slurm.conf`, Moab's
//! `moab.cfg`, SWF traces, jobcomp files). Whether a well-formed event is
//! *possible* (an unknown account, time going backwards, a cycle, a job that
//! is not pending) is the book's question (`fairflow-book`).
//!
//! **Architecture invariant:** malformed input becomes a [`Rejection`] naming
//! the line, the field and the reason; nothing here panics on input, and a
//! rejected event changes no state.

#![warn(missing_docs)]

pub mod check;
pub mod files;
pub mod flux_journal;
pub mod follow;
pub mod import_flux;
pub mod import_slurm;
pub mod jobcomp;
pub mod moab_cfg;
pub mod parse;
pub mod reader;
pub mod slurm_conf;
pub mod slurm_live;
pub mod slurm_time;
pub mod swf;
pub mod write;

pub use check::check_event;
pub use parse::parse_event;
pub use reader::{read_log, LogLine};

/// Why one line of input was not applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize, serde::Deserialize)]
pub struct Rejection {
    /// 1-based line number in its source (0 when there is no line).
    pub line: u64,
    /// The field at fault (`amount`, `set.PriorityFlags`, ...), if one is.
    pub field: Option<String>,
    /// What is wrong.
    pub reason: String,
}

impl Rejection {
    /// A rejection of `field` (if any) on `line`.
    pub fn new(line: u64, field: Option<&str>, reason: impl Into<String>) -> Self {
        Rejection {
            line,
            field: field.map(str::to_string),
            reason: reason.into(),
        }
    }
}

impl std::fmt::Display for Rejection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: ", self.line)?;
        if let Some(field) = &self.field {
            write!(f, "field `{field}`: ")?;
        }
        f.write_str(&self.reason)
    }
}

/// Errors reading a source as a whole (the file cannot be opened, ...), as
/// opposed to a bad line in it, which is a [`Rejection`].
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    /// The source could not be read.
    #[error("cannot read {path}")]
    Io {
        /// The path or name of the source.
        path: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The source is not in the expected format at all.
    #[error("{path}: {reason}")]
    Format {
        /// The path or name of the source.
        path: String,
        /// What is wrong.
        reason: String,
    },
}
