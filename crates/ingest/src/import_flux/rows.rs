//! Reading a flux-accounting database's rows: [`Db`] (the open database
//! and its path, for errors) reads every row of a query, and [`Cells`] reads
//! one row's cells by type, each failure naming the column and the reason;
//! the checks of a name, shares and usage that both inputs (the database and
//! the emulator's JSON) apply; and [`RowErrors`], how an error names its row.

use std::path::Path;

use fairflow_model::Shares;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags, Row};

use super::{FluxImportError, FLUX_DB_SCHEMA_VERSION};
use crate::parse::MAX_SHARES;

/// The error of one row: the column and the reason.
pub(super) type RowError = (&'static str, String);

fn type_name(value: ValueRef<'_>) -> &'static str {
    match value {
        ValueRef::Null => "NULL",
        ValueRef::Integer(_) => "an integer",
        ValueRef::Real(_) => "a real",
        ValueRef::Text(_) => "text",
        ValueRef::Blob(_) => "a blob",
    }
}

/// The cells of one row, read by column index with the column's name for
/// errors.
pub(super) struct Cells<'r, 's> {
    row: &'r Row<'s>,
}

impl Cells<'_, '_> {
    fn value(&self, index: usize, column: &'static str) -> Result<ValueRef<'_>, RowError> {
        self.row
            .get_ref(index)
            .map_err(|e| (column, format!("cannot be read: {e}")))
    }

    pub(super) fn text(&self, index: usize, column: &'static str) -> Result<String, RowError> {
        match self.value(index, column)? {
            ValueRef::Text(bytes) => String::from_utf8(bytes.to_vec())
                .map_err(|_| (column, "is not UTF-8 text".to_string())),
            other => Err((column, format!("must be text, not {}", type_name(other)))),
        }
    }

    /// Text, NULL read as empty.
    pub(super) fn text_or_empty(
        &self,
        index: usize,
        column: &'static str,
    ) -> Result<String, RowError> {
        match self.value(index, column)? {
            ValueRef::Null => Ok(String::new()),
            _ => self.text(index, column),
        }
    }

    pub(super) fn name(&self, index: usize, column: &'static str) -> Result<String, RowError> {
        let text = self.text(index, column)?;
        check_name(&text).map_err(|reason| (column, reason.to_string()))?;
        Ok(text)
    }

    pub(super) fn integer(&self, index: usize, column: &'static str) -> Result<i64, RowError> {
        match self.value(index, column)? {
            ValueRef::Integer(i) => Ok(i),
            ValueRef::Real(r) if r.fract() == 0.0 && r.abs() < 9.0e15 => Ok(r as i64),
            ValueRef::Text(bytes) => std::str::from_utf8(bytes)
                .ok()
                .and_then(|s| s.trim().parse::<i64>().ok())
                .ok_or_else(|| {
                    let shown = String::from_utf8_lossy(bytes);
                    (column, format!("`{shown}` is not an integer"))
                }),
            other => Err((
                column,
                format!("must be an integer, not {}", type_name(other)),
            )),
        }
    }

    pub(super) fn real(&self, index: usize, column: &'static str) -> Result<f64, RowError> {
        let value = match self.value(index, column)? {
            ValueRef::Integer(i) => i as f64,
            ValueRef::Real(r) => r,
            other => {
                return Err((
                    column,
                    format!("must be a number, not {}", type_name(other)),
                ));
            }
        };
        if value.is_finite() {
            Ok(value)
        } else {
            Err((column, format!("{value} is not a finite number")))
        }
    }

    pub(super) fn flag(&self, index: usize, column: &'static str) -> Result<bool, RowError> {
        match self.integer(index, column)? {
            0 => Ok(false),
            1 => Ok(true),
            other => Err((column, format!("{other} is not 0 or 1"))),
        }
    }

    pub(super) fn shares(&self, index: usize, column: &'static str) -> Result<Shares, RowError> {
        shares_of(self.integer(index, column)?).map_err(|reason| (column, reason.to_string()))
    }
}

/// Why a value of flux-accounting's (a name, shares, usage) is not one
/// fairflow's log holds; the caller names the column or field.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(super) enum ValueError {
    /// Shares outside `0..=MAX_SHARES`.
    #[error("{0} is not from 0 to {max}", max = MAX_SHARES)]
    NotShares(i64),
    /// A usage outside `0..=MAX_USAGE_AMOUNT_TRES_SECS`.
    #[error("{0} is not a usage")]
    NotUsage(f64),
    /// An empty name.
    #[error("must not be empty")]
    EmptyName,
    /// A name over 256 bytes.
    #[error("is longer than 256 bytes")]
    LongName,
    /// A name with a space, a control character, `|` or `,`.
    #[error("`{0}` contains a space, a control character, `|` or `,`")]
    BadName(String),
    /// A JSON number that is not a whole number in range.
    #[error("{0} is not a whole number from 0 to {max}", max = MAX_SHARES)]
    NotWholeNumber(serde_json::Number),
    /// A JSON value that is not a number (what it is).
    #[error("must be a whole number, not {0}")]
    NotNumber(&'static str),
    /// A JSON number fairflow cannot read as a float.
    #[error("{0} is not a number fairflow reads")]
    UnreadableNumber(serde_json::Number),
}

/// A bank's or association's shares: a whole number from 0 to
/// [`MAX_SHARES`], as the log's parser accepts.
pub(super) fn shares_of(shares: i64) -> Result<Shares, ValueError> {
    u32::try_from(shares)
        .ok()
        .filter(|s| u64::from(*s) <= MAX_SHARES)
        .map(Shares::Value)
        .ok_or(ValueError::NotShares(shares))
}

/// An association's usage: from 0 to the largest usage an event carries.
pub(super) fn usage_of(usage: f64) -> Result<f64, ValueError> {
    if (0.0..=fairflow_model::limits::MAX_USAGE_AMOUNT_TRES_SECS).contains(&usage) {
        Ok(usage)
    } else {
        Err(ValueError::NotUsage(usage))
    }
}

/// The names fairflow's log accepts (as its parser does): not empty, at most
/// 256 bytes, no spaces, control characters, `|` or `,`.
pub(super) fn check_name(name: &str) -> Result<(), ValueError> {
    if name.is_empty() {
        Err(ValueError::EmptyName)
    } else if name.len() > 256 {
        Err(ValueError::LongName)
    } else if name
        .chars()
        .any(|c| c.is_whitespace() || c.is_control() || c == '|' || c == ',')
    {
        Err(ValueError::BadName(name.to_string()))
    } else {
        Ok(())
    }
}

/// One open database and its path, for errors.
pub(super) struct Db<'a> {
    path: &'a str,
    conn: Connection,
}

impl<'a> Db<'a> {
    /// Open the database at `path` (shown as `shown`) read-only and check
    /// its schema version.
    pub(super) fn open(path: &Path, shown: &'a str) -> Result<Db<'a>, FluxImportError> {
        let open_error = |source| FluxImportError::Open {
            path: shown.to_string(),
            source,
        };
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(open_error)?;
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |row| row.get(0))
            .map_err(open_error)?;
        if version != FLUX_DB_SCHEMA_VERSION {
            return Err(FluxImportError::Version {
                path: shown.to_string(),
                found: version,
                expected: FLUX_DB_SCHEMA_VERSION,
            });
        }
        Ok(Db { path: shown, conn })
    }

    /// Read every row of `sql` (from `table`) with `read`, which returns the
    /// row's key (for errors) and its value or the column at fault.
    pub(super) fn rows<T>(
        &self,
        table: &'static str,
        sql: &str,
        mut read: impl FnMut(&Cells<'_, '_>) -> (String, Result<T, RowError>),
    ) -> Result<Vec<T>, FluxImportError> {
        let table_error = |source| FluxImportError::Table {
            path: self.path.to_string(),
            table,
            source,
        };
        let mut statement = self.conn.prepare(sql).map_err(table_error)?;
        let mut rows = statement.query([]).map_err(table_error)?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(table_error)? {
            let (key, value) = read(&Cells { row });
            out.push(value.map_err(|(column, reason)| self.row_error(table, key, column, reason))?);
        }
        Ok(out)
    }
}

/// Where the rows of the bank tree came from, so that an error found in them
/// names its place there: the database's table, row key and column, or the
/// emulator input's JSON path.
pub(super) trait RowErrors {
    /// The error of row `key` of `table` at `column`.
    fn row_error(
        &self,
        table: &'static str,
        key: String,
        column: &'static str,
        reason: String,
    ) -> FluxImportError;
}

impl RowErrors for Db<'_> {
    fn row_error(
        &self,
        table: &'static str,
        key: String,
        column: &'static str,
        reason: String,
    ) -> FluxImportError {
        FluxImportError::Row {
            path: self.path.to_string(),
            table,
            key,
            column,
            reason,
        }
    }
}

/// A row's key cell as text for errors, whatever its type.
pub(super) fn key_text(cells: &Cells<'_, '_>, index: usize) -> String {
    match cells.row.get_ref(index) {
        Ok(ValueRef::Text(bytes)) => String::from_utf8_lossy(bytes).into_owned(),
        Ok(ValueRef::Integer(i)) => i.to_string(),
        Ok(ValueRef::Real(r)) => r.to_string(),
        _ => "?".to_string(),
    }
}
