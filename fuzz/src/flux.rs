//! The Flux targets: the job manager's events journal
//! (`fairflow_ingest::flux_journal`) mapped to a real flux-accounting
//! database, the import of a flux-accounting database
//! (`fairflow_ingest::import_flux`) from random bytes or from random rows,
//! and the import of the fair-share emulator's JSON hierarchy
//! (`import flux --emulate`).

use std::sync::OnceLock;

use fairflow_book::Book;
use fairflow_ingest::flux_journal::FluxJournal;
use fairflow_ingest::import_flux::{parse_flux_emulate, read_flux_db, FluxDb};
use rusqlite::types::Value;
use rusqlite::Connection;

/// flux-accounting's v38 schema, with its default weights and configuration.
const SCHEMA: &str = include_str!("../../datasets/flux/schema_v38.sql");
/// flux-accounting's own test tree: four banks, seven users, two queues.
const SITE: &str = include_str!("../../datasets/flux/site.sql");
/// The time the databases are imported at.
const IMPORT_T: i64 = 1_700_000_000;

/// The site's database (`schema_v38.sql` and `site.sql`) as imported, and
/// the book its events give.
fn site() -> &'static (FluxDb, Book) {
    static SITE_DB: OnceLock<(FluxDb, Book)> = OnceLock::new();
    SITE_DB.get_or_init(|| {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("site.db");
        let conn = Connection::open(&path).expect("a new database");
        conn.execute_batch(SCHEMA).expect("the v38 schema");
        conn.execute_batch(SITE).expect("the site's rows");
        drop(conn);
        let db = read_flux_db(&path, IMPORT_T).expect("the site imports");
        let mut book = Book::default();
        for (index, event) in db.events.iter().enumerate() {
            book.apply(index as u64 + 1, event)
                .expect("the site's events apply");
        }
        (db, book)
    })
}

/// The events journal: any text, one journal line a line, mapped to the
/// site's associations; the events each line gives are applied to the
/// site's book (as `serve --follow-flux-journal` does), and the lines held
/// or dropped are taken as the follower takes them.
pub fn flux_journal(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (db, base) = site();
    let mut book = base.clone();
    let mut journal = FluxJournal::new(db);
    for (index, line) in text.lines().enumerate() {
        let number = index as u64 + 1;
        let _ = FluxJournal::first_time(line);
        if let Ok(events) = journal.line(number, line) {
            for event in &events {
                let _ = book.apply(number, event);
            }
        }
        let _ = journal.take_dropped();
    }
    let _ = (journal.held_lines(), journal.active_jobs());
}

/// A flux-accounting database: the first byte chooses how it is made.
/// Even: the other bytes are the database file itself. Odd: the v38 schema
/// (with its default rows), then the other bytes as text, one statement a
/// line ([`apply_row_line`]); the file is then imported.
pub fn import_flux(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("fuzzed.db");
    if mode % 2 == 0 {
        std::fs::write(&path, rest).expect("writing the database");
    } else {
        let Ok(text) = std::str::from_utf8(rest) else {
            return;
        };
        let conn = Connection::open(&path).expect("a new database");
        conn.execute_batch(SCHEMA).expect("the v38 schema");
        for line in text.lines() {
            // A row SQLite refuses (a constraint, a missing column) is
            // left out, as flux-accounting's own writes would be.
            let _ = apply_row_line(&conn, line);
        }
    }
    let _ = read_flux_db(&path, IMPORT_T);
}

/// The fair-share emulator's JSON hierarchy (`import flux --emulate`): any
/// bytes as the file. A hierarchy that imports gives events that a fresh
/// book accepts, every one, in order (asserted: an import that writes what
/// the log then refuses would lose the site's data).
pub fn flux_emulate(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(db) = parse_flux_emulate(text, "fuzzed.json", IMPORT_T) else {
        return;
    };
    let mut book = Book::default();
    for (index, event) in db.events.iter().enumerate() {
        if let Err(rejection) = book.apply(index as u64 + 1, event) {
            panic!(
                "event {} of an imported hierarchy is refused: {rejection:?}",
                index + 1
            );
        }
    }
}

/// One line of an `import_flux` input made of rows:
/// - `TABLE|COLUMN=VALUE|COLUMN=VALUE...` inserts a row;
/// - `pragma|user_version=N` sets the schema version;
/// - `drop|TABLE` drops a table.
///
/// A VALUE is `~` (NULL), an integer, a real, `x:HEX` (a blob) or text.
/// Names are letters, digits and `_` only; another line is skipped.
fn apply_row_line(conn: &Connection, line: &str) -> rusqlite::Result<()> {
    let mut cells = line.split('|');
    let table = cells.next().unwrap_or_default();
    let mut columns = Vec::new();
    let mut values = Vec::new();
    for cell in cells {
        let (column, value) = cell.split_once('=').unwrap_or((cell, ""));
        if !is_name(column) {
            return Ok(());
        }
        columns.push(column);
        values.push(cell_value(value));
    }
    match (table, columns.as_slice(), values.as_slice()) {
        ("pragma", ["user_version"], [Value::Integer(version)]) => {
            conn.execute_batch(&format!("PRAGMA user_version = {version}"))
        }
        ("drop", [name], _) => conn.execute_batch(&format!("DROP TABLE IF EXISTS \"{name}\"")),
        (_, [], _) if is_name(table) => conn
            .execute(&format!("INSERT INTO \"{table}\" DEFAULT VALUES"), [])
            .map(drop),
        _ if is_name(table) => {
            let names: Vec<String> = columns.iter().map(|c| format!("\"{c}\"")).collect();
            let marks = vec!["?"; values.len()].join(",");
            let sql = format!(
                "INSERT INTO \"{table}\" ({}) VALUES ({marks})",
                names.join(",")
            );
            conn.execute(&sql, rusqlite::params_from_iter(values))
                .map(drop)
        }
        _ => Ok(()),
    }
}

/// Letters, digits and `_`, at least one.
fn is_name(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// A cell's value: `~` NULL, an integer, a real, `x:HEX` a blob, else text.
fn cell_value(text: &str) -> Value {
    if text == "~" {
        Value::Null
    } else if let Ok(integer) = text.parse::<i64>() {
        Value::Integer(integer)
    } else if let Ok(real) = text.parse::<f64>() {
        Value::Real(real)
    } else if let Some(hex) = text.strip_prefix("x:") {
        let bytes = hex
            .as_bytes()
            .chunks(2)
            .filter_map(|pair| u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok())
            .collect();
        Value::Blob(bytes)
    } else {
        Value::Text(text.to_string())
    }
}
