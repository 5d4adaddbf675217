//! `fairflow sshare`: the fair-share table ([`FairshareTable`]) as Slurm's
//! `sshare -a -l` shows it, in three forms (aligned table, `-P` parsable,
//! `--json`).
//!
//! Columns, in this order: `Account|User|RawShares|NormShares|RawUsage|
//! NormUsage|EffectvUsage|FairShare|LevelFS`, then the algorithm's own:
//! `Tickets` for ticket-based; `FairShareRaw` for level-based, whose `LevelFS`
//! cell holds the association's level value in hex (`0x%016X`).

use std::sync::Arc;

use fairflow_model::report::{FairshareRow, FairshareTable};
use fairflow_model::{Algorithm, Shares};
use serde_json::{json, Value};

use crate::cell::Cell;
use crate::format::{json_f64, Column, Justify};
use crate::pieces::{aligned_cell_pieces, parsable_cell_pieces, pretty_array, CellRows, Pieces};
use crate::OutputFormat;

const fn column(name: &'static str, width: usize, justify: Justify) -> Column {
    Column {
        name,
        width,
        justify,
    }
}

/// The columns every algorithm shows, with Slurm's default widths (also the
/// columns of `explain`'s fair-share path).
pub const BASE_COLUMNS: [Column; 9] = [
    column("Account", 20, Justify::Left),
    column("User", 10, Justify::Right),
    column("RawShares", 10, Justify::Right),
    column("NormShares", 11, Justify::Right),
    column("RawUsage", 11, Justify::Right),
    column("NormUsage", 11, Justify::Right),
    column("EffectvUsage", 13, Justify::Right),
    column("FairShare", 10, Justify::Right),
    column("LevelFS", 10, Justify::Right),
];

/// The columns of the table under `algorithm`, in order.
pub fn columns(algorithm: Algorithm) -> Vec<Column> {
    let mut columns = BASE_COLUMNS.to_vec();
    match algorithm {
        Algorithm::TicketBased => columns.push(column("Tickets", 10, Justify::Right)),
        Algorithm::LevelBased => columns.push(column("FairShareRaw", 18, Justify::Right)),
        Algorithm::FairTree | Algorithm::Classic | Algorithm::DepthOblivious => {}
    }
    columns
}

fn raw_shares_cell(shares: Option<Shares>) -> Cell<'static> {
    match shares {
        None => Cell::Integer(None),
        Some(Shares::Value(value)) => Cell::Integer(Some(u64::from(value))),
        Some(Shares::Parent) => Cell::Text("parent"),
    }
}

/// A row's cells, in [`columns`] order; the account indented by depth in
/// the aligned table (`indent`).
fn row_cells<'r>(
    algorithm: Algorithm,
    row: &'r FairshareRow,
    indent: bool,
    cells: &mut Vec<Cell<'r>>,
) {
    let level_fs = match algorithm {
        Algorithm::LevelBased => Cell::Hex16(row.level_value),
        _ => Cell::Fixed6(row.level_fs),
    };
    let depth = if indent { row.depth } else { 0 };
    cells.extend([
        Cell::Indented(depth, &row.account),
        Cell::Text(row.user.as_deref().unwrap_or_default()),
        raw_shares_cell(row.raw_shares),
        Cell::Fixed6(row.norm_shares),
        Cell::Integer(Some(row.raw_usage)),
        Cell::Fixed6(row.norm_usage),
        Cell::Fixed6(row.effective_usage),
        Cell::Fixed6(row.fairshare),
        level_fs,
    ]);
    match algorithm {
        Algorithm::TicketBased => cells.push(Cell::Integer(row.tickets)),
        Algorithm::LevelBased => cells.push(Cell::Hex16(row.fairshare_raw)),
        Algorithm::FairTree | Algorithm::Classic | Algorithm::DepthOblivious => {}
    }
}

/// A shared table's rows as [`CellRows`].
struct TableRows {
    table: Arc<FairshareTable>,
    indent: bool,
}

impl CellRows for TableRows {
    fn count(&self) -> usize {
        self.table.rows.len()
    }

    fn cells<'r>(&'r self, index: usize, cells: &mut Vec<Cell<'r>>) {
        row_cells(
            self.table.algorithm,
            &self.table.rows[index],
            self.indent,
            cells,
        );
    }
}

/// The `-P` form: header first, `|`-separated, no padding, no trailing `|`,
/// account names without indentation.
pub fn render_parsable(table: &FairshareTable) -> String {
    render(table, OutputFormat::Parsable)
}

/// The aligned table: the `Account` cell indented one space per depth, as
/// Slurm's `sshare` does (a user row shows its account's name one level
/// deeper than the account's own row).
pub fn render_table(table: &FairshareTable) -> String {
    render(table, OutputFormat::Table)
}

fn shares_json(shares: Option<Shares>) -> Value {
    match shares {
        None => Value::Null,
        Some(Shares::Value(v)) => json!(v),
        Some(Shares::Parent) => json!("parent"),
    }
}

/// One row of the `--json` form. Keys follow the column order; the
/// algorithm-specific keys appear only under their algorithm.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct FairshareRowJson {
    /// `Account`.
    pub account: String,
    /// `User` (`null` for an account).
    pub user: Option<String>,
    /// `RawShares`: an integer, `"parent"`, or `null` (root).
    pub raw_shares: Value,
    /// `NormShares`.
    pub norm_shares: Value,
    /// `RawUsage`.
    pub raw_usage: u64,
    /// `NormUsage`.
    pub norm_usage: Value,
    /// `EffectvUsage`.
    pub effective_usage: Value,
    /// `FairShare`.
    pub fairshare: Value,
    /// `LevelFS`.
    pub level_fs: Value,
    /// `Tickets` (ticket-based only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tickets: Option<Value>,
    /// The level value (level-based only; the `LevelFS` cell of the table).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub level_value: Option<Value>,
    /// `FairShareRaw` (level-based only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fairshare_raw: Option<Value>,
}

/// One row as its JSON object.
pub fn row_json(algorithm: Algorithm, row: &FairshareRow) -> FairshareRowJson {
    let integer = |v: Option<u64>| v.map_or(Value::Null, Value::from);
    let ticket_based = algorithm == Algorithm::TicketBased;
    let level_based = algorithm == Algorithm::LevelBased;
    FairshareRowJson {
        account: row.account.clone(),
        user: row.user.clone(),
        raw_shares: shares_json(row.raw_shares),
        norm_shares: json_f64(row.norm_shares),
        raw_usage: row.raw_usage,
        norm_usage: json_f64(row.norm_usage),
        effective_usage: json_f64(row.effective_usage),
        fairshare: json_f64(row.fairshare),
        level_fs: json_f64(row.level_fs),
        tickets: ticket_based.then(|| integer(row.tickets)),
        level_value: level_based.then(|| integer(row.level_value)),
        fairshare_raw: level_based.then(|| integer(row.fairshare_raw)),
    }
}

/// The `--json` form: an array of objects, one per row, with a final newline.
pub fn render_json(table: &FairshareTable) -> String {
    render(table, OutputFormat::Json)
}

/// The table in `format`.
pub fn render(table: &FairshareTable, format: OutputFormat) -> String {
    render_pieces(Arc::new(table.clone()), format).collect()
}

/// [`render`] in pieces (`crate::pieces`), each row rendered as its piece
/// is taken.
pub fn render_pieces(table: Arc<FairshareTable>, format: OutputFormat) -> Pieces {
    let algorithm = table.algorithm;
    let count = table.rows.len();
    match format {
        OutputFormat::Table => aligned_cell_pieces(
            columns(algorithm),
            TableRows {
                table,
                indent: true,
            },
        ),
        OutputFormat::Parsable => parsable_cell_pieces(
            &columns(algorithm),
            TableRows {
                table,
                indent: false,
            },
        ),
        OutputFormat::Json => pretty_array(count, move |i| row_json(algorithm, &table.rows[i])),
        OutputFormat::SlurmJson => crate::slurm_json::render_shares_pieces(table),
    }
}

#[cfg(test)]
mod tests;
