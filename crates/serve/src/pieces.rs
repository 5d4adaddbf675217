//! Answers in pieces: a long answer (every job's priority, every listed job
//! in slurmrestd's shape) written a few hundred rows at a time, so a server
//! can send it while it renders and never holds the whole text. Each
//! renderer that can be long builds its whole answer from these pieces too,
//! so the text sent in pieces and the text rendered at once are one rule.

use serde_json::Value;

/// Rows rendered into one piece.
pub const ROWS_PER_PIECE: usize = 256;

/// A row's text from its index.
pub type RowText = Box<dyn FnMut(usize) -> String + Send>;

/// An answer as a head, `rows` rows and a tail, yielded as pieces of at
/// most [`ROWS_PER_PIECE`] rows (the head with the first, the tail with the
/// last; an answer without rows is one piece).
pub struct Pieces {
    head: Option<String>,
    rows: usize,
    next_row: usize,
    row_text: RowText,
    tail: Option<String>,
}

impl Pieces {
    /// The pieces of `head`, the texts of rows `0..rows` and `tail`.
    pub fn new(head: String, rows: usize, row_text: RowText, tail: String) -> Self {
        Pieces {
            head: Some(head),
            rows,
            next_row: 0,
            row_text,
            tail: Some(tail),
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
        let end = (self.next_row + ROWS_PER_PIECE).min(self.rows);
        for row in self.next_row..end {
            piece.push_str(&(self.row_text)(row));
        }
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
pub fn pretty_element(value: &Value, depth: usize) -> String {
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
pub fn pretty_array(rows: usize, value: impl FnMut(usize) -> Value + Send + 'static) -> Pieces {
    nested_array("[".to_string(), rows, 1, Box::new(value), "]\n".to_string())
}

/// The pieces of a pretty JSON array at `depth` inside a document:
/// `head` ends with its `[`, `rest` starts with its `]`.
pub fn nested_array(
    head: String,
    rows: usize,
    depth: usize,
    mut value: Box<dyn FnMut(usize) -> Value + Send>,
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
            Box::new(move |i| copy[i].clone()),
            empty[at..].to_string(),
        );
        assert_eq!(pieces.collect::<String>(), expected);
    }
}
