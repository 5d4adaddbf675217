//! Tests of `import flux --emulate` on flux-accounting's own emulator
//! inputs (`datasets/flux/emulate/`, from its `t/t1098-fairshare-emulate.t`)
//! and on malformed ones, each error naming its JSON path.

use super::*;
use crate::write::event_to_line;

const SMALL_NO_TIE: &str = include_str!("../../../../../datasets/flux/emulate/small_no_tie.json");
const EXPORT_DB: &str = include_str!("../../../../../datasets/flux/emulate/export_db.json");

fn lines(db: &FluxDb) -> Vec<String> {
    db.events.iter().map(event_to_line).collect()
}

/// Every event applies, in order, to a fresh book.
fn applies(db: &FluxDb) {
    let mut book = fairflow_book::Book::new(fairflow_model::Config::default());
    for (i, event) in db.events.iter().enumerate() {
        book.apply(i as u64 + 1, event)
            .unwrap_or_else(|e| panic!("event {}: {e:?}", i + 1));
    }
}

#[test]
fn flux_accountings_small_no_tie_becomes_banks_users_and_bin_0_usage() {
    let read = parse_flux_emulate(SMALL_NO_TIE, "small_no_tie.json", 1_000).unwrap();
    // By hand from the file: the three banks under root in the file's order,
    // their users, each user's usage in bin 0 (leaf.3.1's is 0: no event).
    let expected = [
        r#"{"op":"config","set":{"FluxDecayFactor":0.5,"FluxUsageResetPeriod":"28-00:00:00","PriorityDecayHalfLife":"7-00:00:00","PriorityModel":"flux","UsageModel":"flux"},"t":1000}"#,
        r#"{"name":"account1","op":"account","parent":"root","shares":1000,"t":1000}"#,
        r#"{"name":"account2","op":"account","parent":"root","shares":100,"t":1000}"#,
        r#"{"name":"account3","op":"account","parent":"root","shares":10,"t":1000}"#,
        r#"{"account":"account1","op":"user","shares":10000,"t":1000,"user":"leaf.1.1"}"#,
        r#"{"account":"account1","op":"user","shares":1000,"t":1000,"user":"leaf.1.2"}"#,
        r#"{"account":"account1","op":"user","shares":100000,"t":1000,"user":"leaf.1.3"}"#,
        r#"{"account":"account2","op":"user","shares":100000,"t":1000,"user":"leaf.2.1"}"#,
        r#"{"account":"account2","op":"user","shares":10000,"t":1000,"user":"leaf.2.2"}"#,
        r#"{"account":"account3","op":"user","shares":100,"t":1000,"user":"leaf.3.1"}"#,
        r#"{"account":"account3","op":"user","shares":10,"t":1000,"user":"leaf.3.2"}"#,
        r#"{"account":"account1","amount":100,"op":"usage","period":0,"t":1000,"user":"leaf.1.1"}"#,
        r#"{"account":"account1","amount":11,"op":"usage","period":0,"t":1000,"user":"leaf.1.2"}"#,
        r#"{"account":"account1","amount":10,"op":"usage","period":0,"t":1000,"user":"leaf.1.3"}"#,
        r#"{"account":"account2","amount":8,"op":"usage","period":0,"t":1000,"user":"leaf.2.1"}"#,
        r#"{"account":"account2","amount":3,"op":"usage","period":0,"t":1000,"user":"leaf.2.2"}"#,
        r#"{"account":"account3","amount":1,"op":"usage","period":0,"t":1000,"user":"leaf.3.2"}"#,
    ];
    assert_eq!(lines(&read), expected);
    assert!(read.notes.is_empty(), "{:?}", read.notes);
    assert!(read.users.is_empty() && read.queues.is_empty());
    applies(&read);
}

#[test]
fn what_export_db_writes_users_first_and_usage_as_floats_imports() {
    let read = parse_flux_emulate(EXPORT_DB, "export_db.json", 5).unwrap();
    let expected = [
        r#"{"name":"A","op":"account","parent":"root","shares":1,"t":5}"#,
        r#"{"name":"B","op":"account","parent":"root","shares":1,"t":5}"#,
        r#"{"name":"C","op":"account","parent":"root","shares":1,"t":5}"#,
        r#"{"name":"D","op":"account","parent":"C","shares":1,"t":5}"#,
        r#"{"account":"A","op":"user","shares":1,"t":5,"user":"user1"}"#,
        r#"{"account":"B","op":"user","shares":1,"t":5,"user":"user2"}"#,
        r#"{"account":"D","op":"user","shares":1,"t":5,"user":"user3"}"#,
    ];
    assert_eq!(lines(&read)[1..], expected);
    applies(&read);
}

#[test]
fn a_root_of_another_name_is_an_account_under_fairflows_root() {
    let text = r#"{"root": {"bank": "top", "children": [{"username": "u", "usage": 2.5}]}}"#;
    let read = parse_flux_emulate(text, "x.json", 7).unwrap();
    assert_eq!(
        lines(&read)[1..],
        [
            r#"{"name":"top","op":"account","parent":"root","shares":1,"t":7}"#,
            r#"{"account":"top","op":"user","shares":1,"t":7,"user":"u"}"#,
            r#"{"account":"top","amount":2.5,"op":"usage","period":0,"t":7,"user":"u"}"#,
        ]
    );
    applies(&read);
}

#[test]
fn what_fairflow_reads_differently_is_said_in_the_notes() {
    // Bank a's usage (5) is not its users' sum (3); bank b has a user and a
    // sub-bank: its user is left out, as the database's would be.
    let text = r#"{"root": {"bank": "root", "children": [
        {"bank": "a", "usage": 5, "children": [{"username": "u", "usage": 3}]},
        {"bank": "b", "children": [{"username": "v"}, {"bank": "c", "children": [{"username": "w"}]}]}
    ]}}"#;
    let read = parse_flux_emulate(text, "x.json", 7).unwrap();
    assert_eq!(
        read.notes,
        [
            "1 associations in banks that have sub-banks left out (flux-accounting's fair-share ignores them)",
            "1 banks whose usage is not the sum of their children's: fairflow's bank usage is that sum",
        ]
    );
    assert!(!lines(&read).iter().any(|l| l.contains(r#""user":"v""#)));
    applies(&read);
}

#[test]
fn every_malformed_input_names_its_json_path_and_reason() {
    let node = |inner: &str| format!(r#"{{"root": {{"bank": "root", "children": [{inner}]}}}}"#);
    let cases: Vec<(String, &str)> = vec![
        ("[]".into(), "x.json: the document: must be an object with the key `root`, not an array"),
        ("{}".into(), "x.json: the document: has no key `root`"),
        (r#"{"root": {"bank": "r"}, "extra": 1}"#.into(), "x.json: extra: is not a key of the document (only `root`)"),
        (r#"{"root": {"username": "u"}}"#.into(), "x.json: root: the root must be a bank (`bank`), not a user"),
        (node("5"), "x.json: root.children[0]: must be an object (a node), not a number"),
        (node(r#"{"bank": "a", "shares": -5}"#), "x.json: root.children[0].shares: -5 is not from 0 to"),
        (node(r#"{"bank": "a", "shares": 1.5}"#), "x.json: root.children[0].shares: 1.5 is not a whole number"),
        (node(r#"{"bank": "a", "shares": "many"}"#), "x.json: root.children[0].shares: must be a whole number, not a string"),
        (node(r#"{"bank": "a", "children": [{"username": "u", "usage": -1}]}"#), "x.json: root.children[0].children[0].usage: -1 is not a usage"),
        (node(r#"{"bank": "a", "usage": "lots"}"#), "x.json: root.children[0].usage: must be a number, not a string"),
        (node(r#"{"bank": "a", "username": "u"}"#), "x.json: root.children[0]: has both `bank` and `username`"),
        (node(r#"{"shares": 1}"#), "x.json: root.children[0]: has neither `bank` nor `username`"),
        (node(r#"{"bank": "a", "share": 1}"#), "x.json: root.children[0].share: is not a key of a node (bank or username, shares, usage, children)"),
        (node(r#"{"bank": 7}"#), "x.json: root.children[0].bank: must be a string, not a number"),
        (node(r#"{"bank": "a b"}"#), "x.json: root.children[0].bank: `a b` contains a space"),
        (node(r#"{"bank": ""}"#), "x.json: root.children[0].bank: must not be empty"),
        (node(r#"{"bank": "a", "children": {}}"#), "x.json: root.children[0].children: must be an array, not an object"),
        (node(r#"{"bank": "a", "children": [{"username": "u", "children": [{"username": "v"}]}]}"#), "x.json: root.children[0].children[0].children: a user (`username`) has no children"),
        (node(r#"{"bank": "a"}, {"bank": "a"}"#), "x.json: root.children[1].bank: a second active bank of this name"),
        (node(r#"{"bank": "a", "children": [{"username": "u"}, {"username": "u"}]}"#), "x.json: root.children[0].children[1].username: a second association of `u` in bank `a` (the first is root.children[0].children[0])"),
        (r#"{"root": {"bank": "top", "children": [{"bank": "root"}]}}"#.into(), "x.json: root.children[0].bank: `root` is fairflow's root: only the root bank (no parent) may have this name"),
        ("{\"root\": {\"bank\": \"root\",}}".into(), "x.json: not JSON: trailing comma at line 1 column 26"),
    ];
    for (text, expected) in cases {
        let error = parse_flux_emulate(&text, "x.json", 0)
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with(expected),
            "{text}\n gave: {error}\n want: {expected}"
        );
    }
}

#[test]
fn any_depth_is_an_error_or_a_tree_never_a_panic() {
    for depth in [100, 10_000] {
        let mut text = String::new();
        for i in 0..depth {
            text.push_str(&format!(r#"{{"bank": "b{i}", "children": ["#));
        }
        text.push_str(&"]}".repeat(depth));
        let text = format!(r#"{{"root": {text}}}"#);
        match parse_flux_emulate(&text, "deep.json", 0) {
            Ok(read) => applies(&read),
            Err(error) => assert!(error.to_string().contains("recursion limit"), "{error}"),
        }
    }
}
