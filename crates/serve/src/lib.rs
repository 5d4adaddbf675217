//! The serving layer: the rendering of what an engine computed
//! (`fairflow_model::report`) as Slurm-style tables, parsable `|` text and
//! JSON. It depends on no engine: the renderers know nothing of how the
//! numbers were computed.
//!
//! **API boundary:** the column names, their order and the number formats
//! produced here are a contract with outside tools; columns are only ever
//! appended, never renamed or reordered.

#![warn(missing_docs)]

pub mod audit;
pub mod cell;
pub mod explain;
pub mod flux;
pub mod format;
pub mod overview;
pub mod pieces;
pub mod plot;
pub mod position;
pub mod slurm_json;
pub mod sprio;
pub mod sshare;
pub mod top;
pub mod whatif;

/// How a command's answer is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputFormat {
    /// An aligned table for people, as Slurm prints it.
    #[default]
    Table,
    /// `-P`: `|`-separated, header first, no padding, no trailing `|`.
    Parsable,
    /// `--json`: an array of objects with snake_case keys.
    Json,
    /// `sshare --json --slurm`: Slurm's own JSON (`slurm_json`); the other
    /// commands write their `Json` for it.
    SlurmJson,
}
