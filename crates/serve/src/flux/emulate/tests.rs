//! The emulator's three forms on flux-accounting's own examples
//! (`datasets/flux/emulate/`), from bank trees written here by hand with the
//! fair-shares its tests expect.

use super::*;

const TIE_ALL_PARSABLE: &str =
    include_str!("../../../../../datasets/flux/emulate/small_tie_all.parsable.expected");
const TIE_ALL_JSON: &str =
    include_str!("../../../../../datasets/flux/emulate/small_tie_all.json.expected");
const NO_TIE_TABLE: &str =
    include_str!("../../../../../datasets/flux/emulate/small_no_tie.table.expected");

fn bank(name: &str, depth: usize, shares: u32, usage: f64) -> BankTreeRow {
    BankTreeRow {
        bank: name.into(),
        user: None,
        depth,
        shares: (depth > 0).then_some(Shares::Value(shares)),
        usage,
        fairshare: None,
    }
}

fn user(bank: &str, name: &str, shares: u32, usage: f64, fairshare: f64) -> BankTreeRow {
    BankTreeRow {
        bank: bank.into(),
        user: Some(name.into()),
        depth: 2,
        shares: Some(Shares::Value(shares)),
        usage,
        fairshare: Some(fairshare),
    }
}

/// `small_tie_all.json` as fairflow's tree (by name), with the fair-shares
/// of flux-accounting's test: three tied banks, so 9/9 for the three users
/// of weight 10.8 and 6/9 for the six others.
fn small_tie_all() -> Vec<BankTreeRow> {
    let (top, rest) = (1.0, 6.0 / 9.0);
    vec![
        bank("root", 0, 0, 1332.0),
        bank("account1", 1, 1000, 120.0),
        user("account1", "leaf.1.1", 10000, 100.0, rest),
        user("account1", "leaf.1.2", 1000, 10.0, rest),
        user("account1", "leaf.1.3", 100000, 10.0, top),
        bank("account2", 1, 100, 12.0),
        user("account2", "leaf.2.1", 10000, 10.0, rest),
        user("account2", "leaf.2.2", 1000, 1.0, rest),
        user("account2", "leaf.2.3", 100000, 1.0, top),
        bank("account3", 1, 10000, 1200.0),
        user("account3", "leaf.3.1", 10000, 1000.0, rest),
        user("account3", "leaf.3.2", 1000, 100.0, rest),
        user("account3", "leaf.3.3", 100000, 100.0, top),
    ]
}

#[test]
fn tied_users_come_in_the_emulators_order_in_its_parsable_form() {
    // leaf.1.2's weight is 0.10810810810810811 in floating point, leaf.1.1's
    // 0.1081081081081081: equal in exact arithmetic, and the emulator's sort
    // puts 1.2 first.
    let users = emulated_users(&small_tie_all(), "root").unwrap();
    assert_eq!(
        render_emulate(&users, EmulateFormat::Parsable),
        TIE_ALL_PARSABLE
    );
}

#[test]
fn the_json_form_is_the_emulators_byte_for_byte() {
    let users = emulated_users(&small_tie_all(), "root").unwrap();
    assert_eq!(render_emulate(&users, EmulateFormat::Json), TIE_ALL_JSON);
}

#[test]
fn the_table_is_format_results_table() {
    // small_no_tie.json: no ties, ranks 7..1 of 7 by hand.
    let f = |rank: f64| rank / 7.0;
    let rows = vec![
        bank("root", 0, 0, 133.0),
        bank("account1", 1, 1000, 121.0),
        user("account1", "leaf.1.1", 10000, 100.0, f(2.0)),
        user("account1", "leaf.1.2", 1000, 11.0, f(1.0)),
        user("account1", "leaf.1.3", 100000, 10.0, f(3.0)),
        bank("account2", 1, 100, 11.0),
        user("account2", "leaf.2.1", 100000, 8.0, f(5.0)),
        user("account2", "leaf.2.2", 10000, 3.0, f(4.0)),
        bank("account3", 1, 10, 1.0),
        user("account3", "leaf.3.1", 100, 0.0, f(7.0)),
        user("account3", "leaf.3.2", 10, 1.0, f(6.0)),
    ];
    let users = emulated_users(&rows, "root").unwrap();
    assert_eq!(render_emulate(&users, EmulateFormat::Table), NO_TIE_TABLE);
}

#[test]
fn usage_is_written_as_python_writes_it() {
    let mut rows = vec![
        bank("root", 0, 0, 2.5),
        bank("a", 1, 1, 2.5),
        user("a", "u", 1, 2.345, 1.0),
    ];
    let users = emulated_users(&rows, "a").unwrap();
    assert_eq!(
        render_emulate(&users, EmulateFormat::Parsable),
        "u|a|1|2.345|1.0\n"
    );
    let table = render_emulate(&users, EmulateFormat::Table);
    assert_eq!(
        table.lines().nth(2),
        Some("u        | a    | 1      | 2.35  | 1.0      ")
    );
    rows[2].usage = 0.000_05;
    let users = emulated_users(&rows, "a").unwrap();
    assert_eq!(
        render_emulate(&users, EmulateFormat::Parsable),
        "u|a|1|5e-05|1.0\n"
    );
}

#[test]
fn an_unknown_bank_or_one_without_users_is_an_error() {
    let rows = small_tie_all();
    assert_eq!(
        emulated_users(&rows, "nowhere"),
        Err(EmulateOutputError::NoBank("nowhere".into()))
    );
    let empty = vec![bank("root", 0, 0, 0.0), bank("a", 1, 1, 0.0)];
    assert_eq!(
        emulated_users(&empty, "a"),
        Err(EmulateOutputError::NoUsers("a".into()))
    );
}
