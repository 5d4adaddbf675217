//! Answers in pieces: a long answer (every job's priority, every listed job
//! in slurmrestd's shape, the fair-share table, a long page of the queue)
//! written a few hundred rows at a time, so a server can send it while it
//! renders and never holds the whole text. Each renderer that can be long
//! builds its whole answer from these pieces too, so the text sent in
//! pieces and the text rendered at once are one rule: pretty JSON arrays
//! (alone or inside a document), `|`-separated tables
//! (`format::parsable`) and aligned ones (`format::aligned`).

use serde::Serialize;
use serde_json::Value;

use crate::cell::Cell;
use crate::format::{
    aligned_head, aligned_line, aligned_widths, widen, widen_cells, write_aligned_line,
    write_parsable_line, Column,
};

/// Rows rendered into one piece.
pub const ROWS_PER_PIECE: usize = 256;

/// A row's text from its index.
pub type RowText = Box<dyn FnMut(usize) -> String + Send>;

/// Appends a row's text, from its index, to the piece being built.
pub type RowWriter = Box<dyn FnMut(usize, &mut String) + Send>;

/// An answer as a head, `rows` rows and a tail, yielded as pieces of at
/// most [`ROWS_PER_PIECE`] rows (the head with the first, the tail with the
/// last; an answer without rows is one piece).
pub struct Pieces {
    head: Option<String>,
    rows: usize,
    next_row: usize,
    row_writer: RowWriter,
    tail: Option<String>,
    /// The last piece's length: the next one is built with that capacity.
    last_piece_bytes: usize,
}

impl Pieces {
    /// The pieces of `head`, the texts of rows `0..rows` and `tail`.
    pub fn new(head: String, rows: usize, mut row_text: RowText, tail: String) -> Self {
        let writer = move |row: usize, out: &mut String| out.push_str(&row_text(row));
        Pieces::writing(head, rows, Box::new(writer), tail)
    }

    /// The pieces of `head`, rows `0..rows` as `row_writer` appends them,
    /// and `tail` (no `String` per row).
    pub fn writing(head: String, rows: usize, row_writer: RowWriter, tail: String) -> Self {
        Pieces {
            head: Some(head),
            rows,
            next_row: 0,
            row_writer,
            tail: Some(tail),
            last_piece_bytes: 0,
        }
    }

    /// One piece holding `text`.
    pub fn whole(text: String) -> Self {
        Pieces::new(text, 0, Box::new(|_| String::new()), String::new())
    }
}

impl Iterator for Pieces {
    type Item = String;

    fn next(&mut self) -> Option<String> {
        if self.head.is_none() && self.tail.is_none() {
            return None;
        }
        let mut piece = self.head.take().unwrap_or_default();
        piece.reserve(self.last_piece_bytes);
        let end = (self.next_row + ROWS_PER_PIECE).min(self.rows);
        for row in self.next_row..end {
            (self.row_writer)(row, &mut piece);
        }
        self.last_piece_bytes = piece.len();
        self.next_row = end;
        if self.next_row == self.rows {
            piece.push_str(&self.tail.take().unwrap_or_default());
        }
        Some(piece)
    }
}

/// `value` pretty-printed as an element of a JSON array nested `depth`
/// levels deep, as `serde_json::to_string_pretty` of the whole writes it
/// (JSON strings hold no raw line break, so indenting every line is exact).
pub fn pretty_element(value: &impl Serialize, depth: usize) -> String {
    let indent = "  ".repeat(depth);
    let text = serde_json::to_string_pretty(value).expect("plain values always serialize");
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    for (index, line) in text.split('\n').enumerate() {
        if index > 0 {
            out.push('\n');
        }
        out.push_str(&indent);
        out.push_str(line);
    }
    out
}

/// The pieces of a pretty JSON array (as `serde_json::to_string_pretty`
/// writes it, then a line break) of `rows` values, the `index`th from
/// `value`: `[`, then each element on its own lines, `]`.
pub fn pretty_array<T: Serialize>(
    rows: usize,
    value: impl FnMut(usize) -> T + Send + 'static,
) -> Pieces {
    nested_array("[".to_string(), rows, 1, value, "]\n".to_string())
}

/// The pieces of a pretty JSON array at `depth` inside a document:
/// `head` ends with its `[`, `rest` starts with its `]`.
pub fn nested_array<T: Serialize>(
    head: String,
    rows: usize,
    depth: usize,
    mut value: impl FnMut(usize) -> T + Send + 'static,
    rest: String,
) -> Pieces {
    let row_text = Box::new(move |index: usize| {
        let separator = if index == 0 { "\n" } else { ",\n" };
        format!("{separator}{}", pretty_element(&value(index), depth))
    });
    let tail = if rows == 0 {
        rest
    } else {
        format!("\n{}{rest}", "  ".repeat(depth - 1))
    };
    Pieces::new(head, rows, row_text, tail)
}

/// The pieces of `document` pretty-printed (with a line break after it)
/// with `rows` values in its array that opens with `open` (such as
/// `"jobs": [`, empty in `document`), `depth` levels deep.
pub fn array_in_document<T: Serialize>(
    document: &Value,
    open: &str,
    depth: usize,
    rows: usize,
    value: impl FnMut(usize) -> T + Send + 'static,
) -> Pieces {
    let mut text = serde_json::to_string_pretty(document).expect("plain values always serialize");
    text.push('\n');
    let at = text
        .find(open)
        .map(|at| at + open.len())
        .unwrap_or_else(|| panic!("the document holds `{open}`"));
    let rest = text.split_off(at);
    nested_array(text, rows, depth, value, rest)
}

/// The pieces of the `|`-separated table of `columns` (`format::parsable`)
/// with `rows` rows, the `index`th's cells from `cells`.
pub fn parsable_pieces(
    columns: &[Column],
    rows: usize,
    mut cells: impl FnMut(usize) -> Vec<String> + Send + 'static,
) -> Pieces {
    let names: Vec<&str> = columns.iter().map(|c| c.name).collect();
    let head = format!("{}\n", names.join("|"));
    let row_writer = move |index: usize, out: &mut String| {
        let row = cells(index);
        let texts: Vec<Cell> = row.iter().map(|cell| Cell::Text(cell)).collect();
        write_parsable_line(&texts, out);
    };
    Pieces::writing(head, rows, Box::new(row_writer), String::new())
}

/// The pieces of the aligned table of `columns` (`format::aligned`) with
/// `rows` rows, the `index`th's cells from `cells`: the columns' widths
/// from a first pass over every row, each row's text as its piece is taken.
pub fn aligned_pieces(
    columns: Vec<Column>,
    rows: usize,
    mut cells: impl FnMut(usize) -> Vec<String> + Send + 'static,
) -> Pieces {
    let mut widths = aligned_widths(&columns, std::iter::empty());
    for index in 0..rows {
        widen(&mut widths, &cells(index));
    }
    let head = aligned_head(&columns, &widths);
    let row_text = move |index: usize| aligned_line(&columns, &widths, &cells(index));
    Pieces::new(head, rows, Box::new(row_text), String::new())
}

/// Rows whose cells borrow from the rows themselves ([`Cell`]s, no
/// `String` per cell): a table's rows rendered by
/// [`aligned_cell_pieces`] and [`parsable_cell_pieces`].
pub trait CellRows: Send + 'static {
    /// How many rows there are.
    fn count(&self) -> usize;
    /// Row `index`'s cells, in the columns' order, into `cells` (empty).
    fn cells<'r>(&'r self, index: usize, cells: &mut Vec<Cell<'r>>);
}

/// [`parsable_pieces`] of rows given as [`CellRows`].
pub fn parsable_cell_pieces(columns: &[Column], rows: impl CellRows) -> Pieces {
    let names: Vec<&str> = columns.iter().map(|c| c.name).collect();
    let head = format!("{}\n", names.join("|"));
    let count = rows.count();
    let row_writer = move |index: usize, out: &mut String| {
        let mut cells = Vec::new();
        rows.cells(index, &mut cells);
        write_parsable_line(&cells, out);
    };
    Pieces::writing(head, count, Box::new(row_writer), String::new())
}

/// [`aligned_pieces`] of rows given as [`CellRows`]: the widths' pass
/// writes no cell (`Cell::width`).
pub fn aligned_cell_pieces(columns: Vec<Column>, rows: impl CellRows) -> Pieces {
    let mut widths = aligned_widths(&columns, std::iter::empty());
    let count = rows.count();
    let mut cells = Vec::new();
    for index in 0..count {
        cells.clear();
        rows.cells(index, &mut cells);
        widen_cells(&mut widths, &cells);
    }
    drop(cells);
    let head = aligned_head(&columns, &widths);
    let row_writer = move |index: usize, out: &mut String| {
        let mut cells = Vec::new();
        rows.cells(index, &mut cells);
        write_aligned_line(&columns, &widths, &cells, out);
    };
    Pieces::writing(head, count, Box::new(row_writer), String::new())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_pretty_array_in_pieces_is_serde_jsons_pretty_text() {
        for rows in [
            0,
            1,
            2,
            ROWS_PER_PIECE,
            ROWS_PER_PIECE + 1,
            3 * ROWS_PER_PIECE,
        ] {
            let values: Vec<Value> = (0..rows)
                .map(|i| json!({"id": i, "nested": {"list": [i, "a\nb"]}, "empty": []}))
                .collect();
            let mut expected = serde_json::to_string_pretty(&values).unwrap();
            expected.push('\n');
            let copy = values.clone();
            let pieces: Vec<String> = pretty_array(rows, move |i| copy[i].clone()).collect();
            assert_eq!(
                pieces.len(),
                rows.div_ceil(ROWS_PER_PIECE).max(1),
                "{rows} rows"
            );
            assert_eq!(pieces.concat(), expected, "{rows} rows");
        }
    }

    #[test]
    fn tables_in_pieces_are_the_whole_tables() {
        use crate::format::{aligned, parsable, Justify};
        let columns = vec![
            Column {
                name: "NAME",
                width: 2,
                justify: Justify::Left,
            },
            Column {
                name: "N",
                width: 3,
                justify: Justify::Right,
            },
        ];
        for count in [0, 1, ROWS_PER_PIECE + 1] {
            let rows: Vec<Vec<String>> = (0..count)
                .map(|i| vec!["x".repeat(i % 7), i.to_string()])
                .collect();
            let copy = rows.clone();
            let pieces = parsable_pieces(&columns, count, move |i| copy[i].clone());
            assert_eq!(pieces.collect::<String>(), parsable(&columns, &rows));
            let copy = rows.clone();
            let pieces = aligned_pieces(columns.clone(), count, move |i| copy[i].clone());
            assert_eq!(pieces.collect::<String>(), aligned(&columns, &rows));
        }
    }

    #[test]
    fn an_array_in_a_document_in_pieces_is_the_whole_document() {
        let rows: Vec<Value> = (0..300).map(|i| json!({"i": i, "s": "x"})).collect();
        let whole = json!({"m": {}, "t": {"list": rows, "n": 0}, "z": []});
        let mut expected = serde_json::to_string_pretty(&whole).unwrap();
        expected.push('\n');
        let empty = json!({"m": {}, "t": {"list": [], "n": 0}, "z": []});
        let copy = rows.clone();
        let pieces = array_in_document(&empty, "\"list\": [", 3, 300, move |i| copy[i].clone());
        assert_eq!(pieces.collect::<String>(), expected);
    }

    #[test]
    fn an_array_nested_in_an_object_in_pieces_is_the_whole_text() {
        let rows: Vec<Value> = (0..3).map(|i| json!({"i": i})).collect();
        let whole = json!({"a": 1, "jobs": rows, "z": {"k": []}});
        let expected = serde_json::to_string_pretty(&whole).unwrap();
        let empty =
            serde_json::to_string_pretty(&json!({"a": 1, "jobs": [], "z": {"k": []}})).unwrap();
        let at = empty.find("\"jobs\": [").unwrap() + "\"jobs\": [".len();
        let copy = rows.clone();
        let pieces = nested_array(
            empty[..at].to_string(),
            3,
            2,
            move |i: usize| copy[i].clone(),
            empty[at..].to_string(),
        );
        assert_eq!(pieces.collect::<String>(), expected);
    }
}
