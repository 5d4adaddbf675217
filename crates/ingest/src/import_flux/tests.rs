//! Tests of `import flux` on databases built here from flux-accounting's v38
//! schema (`datasets/flux/schema_v38.sql`) and its own test tree.

use super::*;
use crate::write::event_to_line;
use rusqlite::Connection;

const SCHEMA: &str = include_str!("../../../../datasets/flux/schema_v38.sql");
const SITE: &str = include_str!("../../../../datasets/flux/site.sql");

/// A database file made of `sql` after the schema, removed when dropped.
struct TempDb(std::path::PathBuf);

impl TempDb {
    fn new(name: &str, sql: &[&str]) -> TempDb {
        let path = std::env::temp_dir().join(format!(
            "fairflow-import-flux-{}-{name}.db",
            std::process::id()
        ));
        let _ = std::fs::remove_file(&path);
        let conn = Connection::open(&path).unwrap();
        for batch in sql {
            conn.execute_batch(batch).unwrap();
        }
        TempDb(path)
    }
}

impl Drop for TempDb {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn lines(db: &FluxDb) -> Vec<String> {
    db.events.iter().map(event_to_line).collect()
}

#[test]
fn the_test_tree_becomes_accounts_users_queues_and_usage() {
    let db = TempDb::new("site", &[SCHEMA, SITE]);
    let read = read_flux_db(&db.0, 1_000).unwrap();
    let got = lines(&read);
    assert_eq!(
        got[0],
        r#"{"op":"config","set":{"FluxCoreWeight":0.0,"FluxDecayFactor":0.5,"FluxGpuWeight":0.0,"FluxNodeWeight":1.0,"FluxUsageResetPeriod":"28-00:00:00","FluxWeightBank":0,"FluxWeightFairshare":100000,"FluxWeightQueue":10000,"FluxWeightUrgency":1000,"PriorityDecayHalfLife":"7-00:00:00","PriorityModel":"flux","UsageModel":"flux"},"t":1000}"#
    );
    let expected = [
        r#"{"name":"account1","op":"account","parent":"root","priority":0,"shares":1000,"t":1000}"#,
        r#"{"name":"account2","op":"account","parent":"root","priority":0,"shares":100,"t":1000}"#,
        r#"{"name":"account3","op":"account","parent":"root","priority":0,"shares":10,"t":1000}"#,
        r#"{"account":"account1","op":"user","shares":10000,"t":1000,"user":"leaf.1.1"}"#,
        r#"{"account":"account1","op":"user","shares":1000,"t":1000,"user":"leaf.1.2"}"#,
        r#"{"account":"account1","op":"user","shares":100000,"t":1000,"user":"leaf.1.3"}"#,
        r#"{"account":"account2","op":"user","shares":100000,"t":1000,"user":"leaf.2.1"}"#,
        r#"{"account":"account2","op":"user","shares":10000,"t":1000,"user":"leaf.2.2"}"#,
        r#"{"account":"account3","op":"user","shares":100,"t":1000,"user":"leaf.3.1"}"#,
        r#"{"account":"account3","op":"user","shares":10,"t":1000,"user":"leaf.3.2"}"#,
        r#"{"name":"batch","op":"partition","priority":0,"t":1000}"#,
        r#"{"name":"debug","op":"partition","priority":1,"t":1000}"#,
        r#"{"account":"account1","amount":100,"op":"usage","period":0,"t":1000,"user":"leaf.1.1"}"#,
        r#"{"account":"account1","amount":11,"op":"usage","period":0,"t":1000,"user":"leaf.1.2"}"#,
        r#"{"account":"account1","amount":10,"op":"usage","period":0,"t":1000,"user":"leaf.1.3"}"#,
        r#"{"account":"account2","amount":8,"op":"usage","period":0,"t":1000,"user":"leaf.2.1"}"#,
        r#"{"account":"account2","amount":3,"op":"usage","period":0,"t":1000,"user":"leaf.2.2"}"#,
        r#"{"account":"account3","amount":1,"op":"usage","period":0,"t":1000,"user":"leaf.3.2"}"#,
    ];
    assert_eq!(got[1..], expected);
    assert_eq!(read.users.len(), 7);
    assert_eq!(read.users[&5021].username, "leaf.2.1");
    assert_eq!(read.users[&5021].default_bank, "account2");
    assert_eq!(read.queues.iter().collect::<Vec<_>>(), ["batch", "debug"]);
    assert!(!read.deny_unknown_queues);
    // The site has no bins: each job_usage goes into bin 0, and the notes say so.
    assert!(read
        .notes
        .iter()
        .any(|n| n
            .contains("6 associations with usage but no rows in job_usage_per_association_table")));
    // What the book accepts, in order.
    let mut book = fairflow_book::Book::new(fairflow_model::Config::default());
    for (i, event) in read.events.iter().enumerate() {
        book.apply(i as u64 + 1, event).unwrap();
    }
}

#[test]
fn another_schema_version_names_both() {
    let db = TempDb::new("v37", &[SCHEMA, "PRAGMA user_version = 37;"]);
    let error = read_flux_db(&db.0, 0).unwrap_err().to_string();
    assert!(
        error.contains("schema version 37") && error.contains("reads version 38"),
        "{error}"
    );
}

#[test]
fn a_bad_row_names_table_key_and_column() {
    let cases: [(&str, &str); 6] = [
        (
            "UPDATE association_table SET shares = 'many' WHERE username = 'leaf.2.2';",
            "association_table row leaf.2.2/account2: column `shares`: `many` is not an integer",
        ),
        (
            "UPDATE association_table SET job_usage = -1 WHERE username = 'leaf.1.1';",
            "association_table row leaf.1.1/account1: column `job_usage`: -1 is not a usage",
        ),
        (
            "UPDATE bank_table SET priority = 0.5 WHERE bank = 'account2';",
            "bank_table row account2: column `priority`: 0.5 is not a whole number",
        ),
        (
            "UPDATE bank_table SET parent_bank = 'nowhere' WHERE bank = 'account3';",
            "bank_table row account3: column `parent_bank`: `nowhere` is not in bank_table",
        ),
        (
            "INSERT INTO priority_factor_weight_table VALUES ('age', 5);",
            "priority_factor_weight_table row age: column `factor`: `age` is not fairshare",
        ),
        (
            "UPDATE config_table SET value = 'week' WHERE key = 'priority_decay_half_life';",
            "config_table row priority_decay_half_life: column `value`: `week` is not a number",
        ),
    ];
    for (i, (sql, expected)) in cases.iter().enumerate() {
        let db = TempDb::new(&format!("bad{i}"), &[SCHEMA, SITE, sql]);
        let error = read_flux_db(&db.0, 0).unwrap_err().to_string();
        assert!(error.contains(expected), "{sql}: {error}");
    }
}

#[test]
fn decay_factor_inactive_rows_and_a_named_root() {
    let db = TempDb::new(
        "decay",
        &[
            SCHEMA,
            "UPDATE config_table SET value = '0.25' WHERE key = 'decay_factor';
             UPDATE config_table SET value = 'true' WHERE key = 'deny_unknown_queues';
             UPDATE priority_factor_weight_table SET weight = 7 WHERE factor = 'bank';
             INSERT INTO bank_table (bank, parent_bank, shares, priority) VALUES ('top', '', 1, 0),
                 ('A', 'top', 3, 100), ('gone', 'top', 1, 0), ('under', 'gone', 1, 0);
             UPDATE bank_table SET active = 0 WHERE bank = 'gone';
             INSERT INTO association_table (creation_time, username, userid, bank, default_bank, active)
                 VALUES (0, 'u1', 1001, 'A', 'A', 1), (0, 'u2', 1002, 'A', 'A', 0),
                        (0, 'u3', 1003, 'under', 'under', 1);",
        ],
    );
    let read = read_flux_db(&db.0, 5).unwrap();
    let got = lines(&read);
    // The bins' period stays a week; their decay is 0.25.
    assert!(
        got[0].contains(r#""FluxDecayFactor":0.25"#)
            && got[0].contains(r#""PriorityDecayHalfLife":"7-00:00:00""#),
        "{}",
        got[0]
    );
    assert!(got[0].contains(r#""FluxWeightBank":7"#));
    assert_eq!(
        got[1..],
        [
            r#"{"name":"top","op":"account","parent":"root","priority":0,"shares":1,"t":5}"#,
            r#"{"name":"A","op":"account","parent":"top","priority":100,"shares":3,"t":5}"#,
            r#"{"account":"A","op":"user","shares":1,"t":5,"user":"u1"}"#,
        ]
    );
    assert!(read.deny_unknown_queues);
    assert_eq!(read.users.keys().collect::<Vec<_>>(), [&1001]);
}

#[test]
fn not_a_database_is_an_error() {
    let path = std::env::temp_dir().join(format!(
        "fairflow-import-flux-{}-text.db",
        std::process::id()
    ));
    std::fs::write(
        &path,
        "this is not a database, just some text long enough to look like one",
    )
    .unwrap();
    let error = read_flux_db(&path, 0).unwrap_err();
    let _ = std::fs::remove_file(&path);
    assert!(matches!(error, FluxImportError::Open { .. }), "{error}");
    let missing = read_flux_db(Path::new("/nonexistent/flux.db"), 0).unwrap_err();
    assert!(matches!(missing, FluxImportError::File(_)), "{missing}");
    // A device (or a FIFO) is refused before SQLite opens it, which would
    // hang on a FIFO.
    let device = read_flux_db(Path::new("/dev/null"), 0).unwrap_err();
    assert_eq!(
        device.to_string(),
        "/dev/null: is a device, not a regular file"
    );
}

#[test]
fn usage_bins_and_the_period_clock_are_imported_and_the_book_keeps_them() {
    use fairflow_model::usage::FRAME_UNITS_PER_TRES_SEC as NS;
    // leaf.1.1's bins [60, 30, 10, 0] (sum 100, its job_usage); leaf.2.1's
    // [0, 0, 0, 6] (job_usage 8: not the sum, the bins win); the period
    // clock's end at 1_000_500.4 (rounded: 1_000_500).
    let bins = "INSERT INTO job_usage_per_association_table VALUES
            ('leaf.1.1', 5011, 'account1', 0, 60.0), ('leaf.1.1', 5011, 'account1', 1, 30.0),
            ('leaf.1.1', 5011, 'account1', 2, 10.0), ('leaf.1.1', 5011, 'account1', 3, 0.0),
            ('leaf.2.1', 5021, 'account2', 3, 6.0);
        INSERT INTO t_half_life_period_table VALUES ('cluster', 1000500.4);";
    let db = TempDb::new("bins", &[SCHEMA, SITE, bins]);
    let read = read_flux_db(&db.0, 1_000_000).unwrap();
    let got = lines(&read);
    assert!(
        got[0].contains(r#""FluxHalfLifePeriodEnd":1000500"#),
        "{}",
        got[0]
    );
    let usage: Vec<&String> = got
        .iter()
        .filter(|l| l.contains(r#""op":"usage""#))
        .collect();
    assert_eq!(
        usage[..4],
        [
            r#"{"account":"account1","amount":60,"op":"usage","period":0,"t":1000000,"user":"leaf.1.1"}"#,
            r#"{"account":"account1","amount":30,"op":"usage","period":1,"t":1000000,"user":"leaf.1.1"}"#,
            r#"{"account":"account1","amount":10,"op":"usage","period":2,"t":1000000,"user":"leaf.1.1"}"#,
            r#"{"account":"account1","amount":11,"op":"usage","period":0,"t":1000000,"user":"leaf.1.2"}"#,
        ]
    );
    assert!(usage.contains(
        &&r#"{"account":"account2","amount":6,"op":"usage","period":3,"t":1000000,"user":"leaf.2.1"}"#
            .to_string()
    ));
    assert!(read
        .notes
        .iter()
        .any(|n| n.contains("1 associations whose job_usage is not the sum of their bins")));
    let mut book = fairflow_book::Book::new(fairflow_model::Config::default());
    for (i, event) in read.events.iter().enumerate() {
        book.apply(i as u64 + 1, event).unwrap();
    }
    let state = book.state();
    let flux = state.flux_bins.as_ref().unwrap();
    let key = ("account1".to_string(), Some("leaf.1.1".to_string()));
    assert_eq!(flux.bins[&key], [60 * NS, 30 * NS, 10 * NS, 0]);
    assert_eq!(flux.period_end, Some(1_000_500));
    let own = state.users[&("account2".to_string(), "leaf.2.1".to_string())].usage;
    assert_eq!(state.visible_usage(&own), 6 * NS);

    // A bin beyond the 4 kept is an error naming the row.
    let db = TempDb::new(
        "badbin",
        &[
            SCHEMA,
            SITE,
            "INSERT INTO job_usage_per_association_table VALUES ('leaf.1.1', 5011, 'account1', 4, 1.0);",
        ],
    );
    let error = read_flux_db(&db.0, 0).unwrap_err().to_string();
    assert!(
        error.contains(
            "job_usage_per_association_table row leaf.1.1/account1/4: column `period`: 4 is not a bin from 0 to 3"
        ),
        "{error}"
    );
}
