//! The sshare renderers on hand-built tables; every expected line is written
//! from the column rules of interfaces.md and Slurm's formats, not from output.

use fairflow_model::report::{FairshareRow, FairshareTable};
use fairflow_model::{Algorithm, Shares};
use serde_json::Value;

use super::*;

fn row(account: &str, user: Option<&str>, depth: usize) -> FairshareRow {
    FairshareRow::new(account, user, depth)
}

/// A Fair Tree table: Slurm's root row (test24.4's form: blank RawShares,
/// NormShares 0, blank NormUsage, EffectvUsage 1, blank FairShare and
/// LevelFS), an account, a `parent` user with LevelFS infinite, and a user.
fn fair_tree_table() -> FairshareTable {
    let mut root = row("root", None, 0);
    root.norm_shares = Some(0.0);
    root.raw_usage = 240;
    root.effective_usage = Some(1.0);

    let mut a = row("a", None, 1);
    a.raw_shares = Some(Shares::Value(40));
    a.norm_shares = Some(0.4);
    a.raw_usage = 108;
    a.norm_usage = Some(0.45);
    a.effective_usage = Some(0.45);
    a.level_fs = Some(0.4 / 0.45);

    let mut u1 = row("a", Some("u1"), 2);
    u1.raw_shares = Some(Shares::Parent);
    u1.norm_shares = Some(0.4);
    u1.raw_usage = 0;
    u1.norm_usage = Some(0.0);
    u1.effective_usage = Some(0.0);
    u1.fairshare = Some(1.0);
    u1.level_fs = Some(f64::INFINITY);

    let mut u2 = row("a", Some("u2"), 2);
    u2.raw_shares = Some(Shares::Value(1));
    u2.norm_shares = Some(1.0);
    u2.raw_usage = 108;
    u2.norm_usage = Some(0.45);
    u2.effective_usage = Some(1.0);
    u2.fairshare = Some(0.5);
    u2.level_fs = Some(1.0);

    FairshareTable {
        algorithm: Algorithm::FairTree,
        as_of: 1_700_000_000,
        rows: vec![root, a, u1, u2],
    }
}

#[test]
fn parsable_has_the_contract_header_and_slurm_number_formats() {
    let text = render_parsable(&fair_tree_table());
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines,
        [
            "Account|User|RawShares|NormShares|RawUsage|NormUsage|EffectvUsage|FairShare|LevelFS",
            "root|||0.000000|240||1.000000||",
            // LevelFS 0.4 / 0.45 = 0.888888...
            "a||40|0.400000|108|0.450000|0.450000||0.888889",
            "a|u1|parent|0.400000|0|0.000000|0.000000|1.000000|inf",
            "a|u2|1|1.000000|108|0.450000|1.000000|0.500000|1.000000",
        ]
    );
    assert!(text.ends_with('\n'));
}

#[test]
fn the_table_indents_accounts_one_space_per_depth() {
    let text = render_table(&fair_tree_table());
    let lines: Vec<&str> = text.lines().collect();
    // Slurm's default widths: Account -20, User 10, RawShares 10, NormShares 11,
    // RawUsage 11, NormUsage 11, EffectvUsage 13, FairShare 10, LevelFS 10.
    let line = |cells: [&str; 9]| {
        format!(
            "{:<20} {:>10} {:>10} {:>11} {:>11} {:>11} {:>13} {:>10} {:>10}",
            cells[0],
            cells[1],
            cells[2],
            cells[3],
            cells[4],
            cells[5],
            cells[6],
            cells[7],
            cells[8]
        )
        .trim_end()
        .to_string()
    };
    assert_eq!(
        lines[0],
        line([
            "Account",
            "User",
            "RawShares",
            "NormShares",
            "RawUsage",
            "NormUsage",
            "EffectvUsage",
            "FairShare",
            "LevelFS"
        ])
    );
    assert_eq!(
        lines[1],
        line([
            &"-".repeat(20),
            &"-".repeat(10),
            &"-".repeat(10),
            &"-".repeat(11),
            &"-".repeat(11),
            &"-".repeat(11),
            &"-".repeat(13),
            &"-".repeat(10),
            &"-".repeat(10)
        ])
    );
    assert_eq!(
        lines[2],
        line(["root", "", "", "0.000000", "240", "", "1.000000", "", ""])
    );
    assert_eq!(
        lines[3],
        line([" a", "", "40", "0.400000", "108", "0.450000", "0.450000", "", "0.888889"])
    );
    // A user row shows its account's name, one level deeper than the account.
    assert_eq!(
        lines[4],
        line(["  a", "u1", "parent", "0.400000", "0", "0.000000", "0.000000", "1.000000", "inf"])
    );
    assert_eq!(lines.len(), 6);
}

#[test]
fn a_long_name_widens_its_column_instead_of_being_cut() {
    let mut table = fair_tree_table();
    table.rows[1].account = "a_very_long_account_name".to_string();
    let text = render_table(&table);
    let lines: Vec<&str> = text.lines().collect();
    // 1 space of indentation + 24 characters: the column is 25 wide.
    assert!(lines[1].starts_with(&format!("{} ", "-".repeat(25))));
    assert!(lines[3].starts_with(" a_very_long_account_name      "));
    let user_column_end = lines[0].find("User").unwrap() + 4;
    assert_eq!(user_column_end, 25 + 1 + 10);
}

#[test]
fn json_uses_snake_case_numbers_inf_and_null() {
    let text = render_json(&fair_tree_table());
    let rows: Vec<Value> = serde_json::from_str(&text).unwrap();
    assert_eq!(rows.len(), 4);
    let root = &rows[0];
    assert_eq!(root["account"], "root");
    assert_eq!(root["user"], Value::Null);
    assert_eq!(root["raw_shares"], Value::Null);
    assert_eq!(root["norm_shares"], 0.0);
    assert_eq!(root["raw_usage"], 240);
    assert_eq!(root["norm_usage"], Value::Null);
    assert_eq!(root["effective_usage"], 1.0);
    assert_eq!(root["fairshare"], Value::Null);
    assert_eq!(root["level_fs"], Value::Null);
    assert_eq!(rows[1]["raw_shares"], 40);
    assert_eq!(rows[2]["raw_shares"], "parent");
    assert_eq!(rows[2]["level_fs"], "inf");
    assert_eq!(rows[2]["user"], "u1");
    assert_eq!(rows[3]["fairshare"], 0.5);
    // Exactly the contract's keys, and no algorithm-specific ones for Fair Tree.
    let keys: Vec<&str> = root
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let mut expected = [
        "account",
        "user",
        "raw_shares",
        "norm_shares",
        "raw_usage",
        "norm_usage",
        "effective_usage",
        "fairshare",
        "level_fs",
    ];
    expected.sort_unstable();
    let mut keys_sorted = keys.clone();
    keys_sorted.sort_unstable();
    assert_eq!(keys_sorted, expected);
    // Keys are written in column order.
    assert!(text.find("\"account\"").unwrap() < text.find("\"level_fs\"").unwrap());
}

/// The ticket-based seed example: users 2 and 5 pending, 1000 tickets at the
/// root; A gets 1000 * 0.4 * 0.89 / (0.4 * 0.89 + 0.6 * 2.40) = 198 and user 2
/// all of them; user 5 gets D's 802.
fn ticket_table() -> FairshareTable {
    let mut root = row("root", None, 0);
    root.norm_shares = Some(1.0);
    let mut c = row("C", Some("user2"), 3);
    c.raw_shares = Some(Shares::Value(1));
    c.norm_shares = Some(0.05);
    c.raw_usage = 250_000;
    c.norm_usage = Some(0.25);
    c.effective_usage = Some(0.25);
    c.fairshare = Some(198.0 / 802.0);
    c.tickets = Some(198);
    let mut u3 = row("C", Some("user3"), 3);
    u3.raw_shares = Some(Shares::Value(1));
    FairshareTable {
        algorithm: Algorithm::TicketBased,
        as_of: 0,
        rows: vec![root, c, u3],
    }
}

#[test]
fn ticket_based_appends_tickets() {
    let text = render_parsable(&ticket_table());
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "Account|User|RawShares|NormShares|RawUsage|NormUsage|EffectvUsage|FairShare|LevelFS|Tickets"
    );
    // 198 / 802 = 0.246882793...
    assert_eq!(
        lines[2],
        "C|user2|1|0.050000|250000|0.250000|0.250000|0.246883||198"
    );
    assert_eq!(lines[3], "C|user3|1||0|||||");
    let rows: Vec<Value> = serde_json::from_str(&render_json(&ticket_table())).unwrap();
    assert_eq!(rows[1]["tickets"], 198);
    assert_eq!(rows[2]["tickets"], Value::Null);
    assert!(rows[0].get("fairshare_raw").is_none());
    let table = render_table(&ticket_table());
    assert!(table.lines().next().unwrap().ends_with(" Tickets"));
}

/// The level-based blog example: PriorityLevels=4, the grad student's own
/// level value 0x000000000000CCCC and priority_fs_raw 0xAAAA12347777CCCC.
#[test]
fn level_based_shows_level_values_in_hex_and_appends_fairshare_raw() {
    let mut student = row("bob", Some("grad"), 4);
    student.raw_shares = Some(Shares::Value(1));
    student.level_value = Some(0x0000_0000_0000_CCCC);
    student.fairshare_raw = Some(0xAAAA_1234_7777_CCCC);
    student.fairshare = Some(0.5);
    let table = FairshareTable {
        algorithm: Algorithm::LevelBased,
        as_of: 0,
        rows: vec![student],
    };
    let text = render_parsable(&table);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "Account|User|RawShares|NormShares|RawUsage|NormUsage|EffectvUsage|FairShare|LevelFS|FairShareRaw"
    );
    assert_eq!(
        lines[1],
        "bob|grad|1||0|||0.500000|0x000000000000CCCC|0xAAAA12347777CCCC"
    );
    let rows: Vec<Value> = serde_json::from_str(&render_json(&table)).unwrap();
    assert_eq!(rows[0]["level_value"], 0xCCCC);
    assert_eq!(
        rows[0]["fairshare_raw"].as_u64(),
        Some(0xAAAA_1234_7777_CCCC)
    );
    assert!(rows[0].get("tickets").is_none());
    // In the table, the hex values are right-justified and never cut.
    let aligned = render_table(&table);
    assert!(aligned
        .lines()
        .nth(2)
        .unwrap()
        .ends_with(" 0xAAAA12347777CCCC"));
}

#[test]
fn an_empty_table_is_just_the_header() {
    let table = FairshareTable {
        algorithm: Algorithm::Classic,
        as_of: 0,
        rows: Vec::new(),
    };
    assert_eq!(
        render(&table, OutputFormat::Parsable),
        "Account|User|RawShares|NormShares|RawUsage|NormUsage|EffectvUsage|FairShare|LevelFS\n"
    );
    assert_eq!(render(&table, OutputFormat::Json).trim(), "[]");
    assert_eq!(render(&table, OutputFormat::Table).lines().count(), 2);
}
