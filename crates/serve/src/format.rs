//! Cell formats shared by every rendered command: Slurm's `%f` for
//! normalized values, integers, hexadecimal raw values, JSON numbers (with
//! infinity as the string `"inf"`), and the aligned-table layout.

use serde_json::Value;

use crate::cell::{push_spaces, Cell};

/// A normalized value as Slurm's `printf("%f")` writes it: six decimals,
/// `inf` / `-inf` for infinities, `nan` for a value that is not a number.
pub fn fixed6(value: f64) -> String {
    Cell::Fixed6(Some(value)).text()
}

/// An optional normalized value: [`fixed6`], or the empty cell for `None`.
pub fn opt_fixed6(value: Option<f64>) -> String {
    value.map(fixed6).unwrap_or_default()
}

/// A 64-bit raw value as `0x%016X`.
pub fn hex16(value: u64) -> String {
    Cell::Hex16(Some(value)).text()
}

/// A float as a JSON value: a number when finite, else the string `"inf"`,
/// `"-inf"` or `"nan"` (JSON has no such numbers); `None` is `null`.
pub fn json_f64(value: Option<f64>) -> Value {
    match value {
        None => Value::Null,
        Some(v) => serde_json::Number::from_f64(v)
            .map(Value::Number)
            .unwrap_or_else(|| Value::String(fixed6(v))),
    }
}

/// How a column is justified in an aligned table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Justify {
    /// Padded on the right (Slurm's negative widths: names).
    Left,
    /// Padded on the left (Slurm's positive widths: numbers).
    Right,
}

/// A column of an aligned table: its header, Slurm's default width, and its
/// justification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Column {
    /// The header, as in the parsable form.
    pub name: &'static str,
    /// Slurm's default width; a column widens to fit its longest cell.
    pub width: usize,
    /// Justification of the header and the cells.
    pub justify: Justify,
}

/// A column (a `const` table's entry).
pub const fn column(name: &'static str, width: usize, justify: Justify) -> Column {
    Column {
        name,
        width,
        justify,
    }
}

/// An aligned table as Slurm's `print_fields` writes it: the header, a line of
/// dashes per column, then the rows; cells separated by one space. Unlike
/// Slurm, a cell longer than the column's default width widens the column
/// instead of being truncated with `+`, so no name is ever cut. Trailing
/// spaces are trimmed.
pub fn aligned(columns: &[Column], rows: &[Vec<String>]) -> String {
    let widths = aligned_widths(columns, rows.iter().map(Vec::as_slice));
    let mut out = aligned_head(columns, &widths);
    for row in rows {
        out.push_str(&aligned_line(columns, &widths, row));
    }
    out
}

/// The widths of an aligned table's columns: each the longest of its
/// default width, its header and its cells in `rows`.
pub fn aligned_widths<'a>(
    columns: &[Column],
    rows: impl Iterator<Item = &'a [String]>,
) -> Vec<usize> {
    let mut widths: Vec<usize> = columns.iter().map(|c| c.width.max(c.name.len())).collect();
    for row in rows {
        widen(&mut widths, row);
    }
    widths
}

/// Widen `widths` to fit the cells of `row`.
pub fn widen(widths: &mut [usize], row: &[String]) {
    for (width, cell) in widths.iter_mut().zip(row) {
        *width = (*width).max(Cell::Text(cell).width());
    }
}

/// Widen `widths` to fit `cells`.
pub fn widen_cells(widths: &mut [usize], cells: &[Cell]) {
    for (width, cell) in widths.iter_mut().zip(cells) {
        *width = (*width).max(cell.width());
    }
}

/// An aligned table's header and its line of dashes.
pub fn aligned_head(columns: &[Column], widths: &[usize]) -> String {
    let names: Vec<String> = columns.iter().map(|c| c.name.to_string()).collect();
    let mut out = aligned_line(columns, widths, &names);
    let dashes: Vec<String> = widths.iter().map(|&w| "-".repeat(w)).collect();
    out.push_str(&aligned_line(columns, widths, &dashes));
    out
}

/// One line of an aligned table: `cells` padded to `widths` as their
/// columns justify them, trailing spaces trimmed.
pub fn aligned_line(columns: &[Column], widths: &[usize], cells: &[String]) -> String {
    let cells: Vec<Cell> = cells.iter().map(|cell| Cell::Text(cell)).collect();
    let mut line = String::new();
    write_aligned_line(columns, widths, &cells, &mut line);
    line
}

/// Append one line of an aligned table to `out`: `cells` padded to
/// `widths` as their columns justify them, separated by one space,
/// trailing spaces trimmed, then a line break.
pub fn write_aligned_line(columns: &[Column], widths: &[usize], cells: &[Cell], out: &mut String) {
    let start = out.len();
    for (index, ((cell, column), &width)) in cells.iter().zip(columns).zip(widths).enumerate() {
        if index > 0 {
            out.push(' ');
        }
        let padding = width.saturating_sub(cell.width());
        if column.justify == Justify::Right {
            push_spaces(out, padding);
        }
        cell.write(out);
        if column.justify == Justify::Left {
            push_spaces(out, padding);
        }
    }
    let kept = out[start..].trim_end().len();
    out.truncate(start + kept);
    out.push('\n');
}

/// Append one line of the parsable form to `out`: `cells` separated by `|`,
/// then a line break.
pub fn write_parsable_line(cells: &[Cell], out: &mut String) {
    for (index, cell) in cells.iter().enumerate() {
        if index > 0 {
            out.push('|');
        }
        cell.write(out);
    }
    out.push('\n');
}

/// The parsable form: `|`-separated, header first, no padding, no trailing `|`.
pub fn parsable(columns: &[Column], rows: &[Vec<String>]) -> String {
    let mut out = String::new();
    let header: Vec<&str> = columns.iter().map(|c| c.name).collect();
    out.push_str(&header.join("|"));
    out.push('\n');
    for row in rows {
        let cells: Vec<Cell> = row.iter().map(|cell| Cell::Text(cell)).collect();
        write_parsable_line(&cells, &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed6_is_printf_percent_f() {
        assert_eq!(fixed6(0.3875), "0.387500");
        assert_eq!(fixed6(1.0), "1.000000");
        assert_eq!(fixed6(0.0), "0.000000");
        // 2^(-0.3875/0.3) = 0.408479... (the classic example's user 1).
        assert_eq!(fixed6(0.408_479_3), "0.408479");
        assert_eq!(fixed6(f64::INFINITY), "inf");
        assert_eq!(fixed6(f64::NEG_INFINITY), "-inf");
        assert_eq!(fixed6(f64::NAN), "nan");
        assert_eq!(opt_fixed6(None), "");
    }

    #[test]
    fn hex16_is_zero_padded_upper_case() {
        assert_eq!(hex16(0xAAAA_1234_7777_CCCC), "0xAAAA12347777CCCC");
        assert_eq!(hex16(0xFFFF_0000_0000), "0x0000FFFF00000000");
    }

    #[test]
    fn json_numbers_and_infinity() {
        assert_eq!(json_f64(Some(0.25)), serde_json::json!(0.25));
        assert_eq!(json_f64(Some(f64::INFINITY)), serde_json::json!("inf"));
        assert_eq!(json_f64(None), Value::Null);
    }

    #[test]
    fn aligned_pads_justifies_and_widens() {
        let columns = [
            Column {
                name: "Name",
                width: 6,
                justify: Justify::Left,
            },
            Column {
                name: "N",
                width: 3,
                justify: Justify::Right,
            },
        ];
        let rows = vec![
            vec!["a".to_string(), "1".to_string()],
            vec!["longer_name".to_string(), "".to_string()],
        ];
        let expected = "Name          N\n----------- ---\na             1\nlonger_name\n";
        assert_eq!(aligned(&columns, &rows), expected);
        assert_eq!(parsable(&columns, &rows), "Name|N\na|1\nlonger_name|\n");
    }
}
