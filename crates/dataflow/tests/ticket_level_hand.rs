//! The seed documents' ticket-based and level-based worked examples through
//! the incremental engine (the same trees and expected values as the
//! oracle's tests in `crates/oracle/tests/fairshare/{ticket,level_based}.rs`),
//! with the arithmetic in the comments, then changed by job events.

use fairflow_dataflow::Engine;
use fairflow_ingest::{parse_event, LogLine};
use fairflow_model::report::{FairshareRow, FairshareTable};
use fairflow_model::Config;

const T0: i64 = 1_700_000_000;

fn lines(texts: &[String]) -> Vec<LogLine> {
    texts
        .iter()
        .enumerate()
        .map(|(i, text)| LogLine {
            line: i as u64 + 1,
            event: parse_event(i as u64 + 1, text),
        })
        .collect()
}

fn apply(engine: &mut Engine, texts: &[String]) {
    let report = engine.apply_batch(lines(texts)).expect("batch applies");
    assert!(report.rejected.is_empty(), "{:?}", report.rejected);
}

fn row<'a>(table: &'a FairshareTable, account: &str, user: Option<&str>) -> &'a FairshareRow {
    table
        .rows
        .iter()
        .find(|r| r.account == account && r.user.as_deref() == user)
        .unwrap_or_else(|| panic!("no row {account}/{user:?}"))
}

fn factor(engine: &Engine, account: &str, user: &str) -> f64 {
    engine.user_factors().expect("factors")[&(account.to_string(), user.to_string())]
}

fn account(name: &str, parent: &str, shares: u64) -> String {
    format!(r#"{{"op":"account","t":{T0},"name":"{name}","parent":"{parent}","shares":{shares}}}"#)
}

fn user(name: &str, account: &str, shares: u64) -> String {
    format!(r#"{{"op":"user","t":{T0},"user":"{name}","account":"{account}","shares":{shares}}}"#)
}

fn usage(account: &str, user: &str, amount: f64) -> String {
    format!(r#"{{"op":"usage","t":{T0},"account":"{account}","user":"{user}","amount":{amount}}}"#)
}

fn job_op(t: i64, op: &str, job: &str) -> String {
    format!(r#"{{"op":"{op}","t":{t},"job":"{job}"}}"#)
}

/// The seed example: root -> A (40) -> B (30) -> user1, C (10) -> user2,
/// user3; root -> D (60) -> E (25) -> user4, F (35) -> user5. Usage 200,
/// 250, 250 for users 1, 2, 4 and 300 on root itself (root 1000); pending
/// jobs for users 2 and 5 only.
fn seed_lines() -> Vec<String> {
    vec![
        format!(r#"{{"op":"config","t":{T0},"set":{{"PriorityFlags":"TICKET_BASED"}}}}"#),
        account("A", "root", 40),
        account("D", "root", 60),
        account("B", "A", 30),
        account("C", "A", 10),
        account("E", "D", 25),
        account("F", "D", 35),
        user("user1", "B", 1),
        user("user2", "C", 1),
        user("user3", "C", 1),
        user("user4", "E", 1),
        user("user5", "F", 1),
        usage("B", "user1", 200.0),
        usage("C", "user2", 250.0),
        usage("E", "user4", 250.0),
        format!(r#"{{"op":"usage","t":{T0},"account":"root","amount":300}}"#),
        format!(
            r#"{{"op":"submit","t":{T0},"job":"2","account":"C","user":"user2","tres":{{"cpu":1}}}}"#
        ),
        format!(
            r#"{{"op":"submit","t":{T0},"job":"5","account":"F","user":"user5","tres":{{"cpu":1}}}}"#
        ),
    ]
}

#[test]
fn the_ticket_seed_example_through_the_engine() {
    let mut engine = Engine::start(2, Config::default()).expect("engine");
    apply(&mut engine, &seed_lines());
    let table = engine.fairshare_table().expect("table");
    // F = S / max(UN, 0.01 S), from the document:
    // A .4/.45; B .3/.2 = 1.5; C .1/.25 = .4; D .6/.25 = 2.4; E .25/.25 = 1;
    // F .35/.0035 = 100; users 1.5, .2, 100 (.05/.0005), 1, 100.
    for (account, user, f) in [
        ("A", None, 0.4 / 0.45),
        ("B", None, 1.5),
        ("C", None, 0.4),
        ("D", None, 2.4),
        ("E", None, 1.0),
        ("F", None, 100.0),
        ("B", Some("user1"), 1.5),
        ("C", Some("user2"), 0.2),
        ("C", Some("user3"), 100.0),
        ("E", Some("user4"), 1.0),
        ("F", Some("user5"), 100.0),
    ] {
        let got = row(&table, account, user).fairshare.expect("F shown");
        assert!((got - f).abs() < 1e-9, "F {account}/{user:?}: {got} vs {f}");
    }
    // Tickets from root's u32::MAX = 4294967295. Weights S·F: A .4 · .4/.45
    // = 16/45, D .6 · 2.4 = 1.44 = 64.8/45; A's part 16 / 80.8 = 20/101:
    // A 4294967295 · 20/101 = 850488573.27 -> 850488573;
    // D 4294967295 · 81/101 = 3444478721.73 -> 3444478722.
    // C is A's only active child and user2 C's: they keep A's; F and user5
    // keep D's. The inactive get 0. (The document's 1000 gives 198 / 802.)
    for (account, user, tickets) in [
        ("root", None, 4_294_967_295),
        ("A", None, 850_488_573),
        ("D", None, 3_444_478_722),
        ("C", None, 850_488_573),
        ("F", None, 3_444_478_722),
        ("C", Some("user2"), 850_488_573),
        ("F", Some("user5"), 3_444_478_722),
        ("B", None, 0),
        ("E", None, 0),
        ("B", Some("user1"), 0),
        ("C", Some("user3"), 0),
        ("E", Some("user4"), 0),
    ] {
        assert_eq!(
            row(&table, account, user).tickets,
            Some(tickets),
            "{account}/{user:?}"
        );
    }
    // PriorityFS = tickets / max user tickets: user5 1, user2 20/81 (the
    // document's 198/802 up to its rounding), the rest 0.
    assert_eq!(factor(&engine, "F", "user5"), 1.0);
    let user2 = factor(&engine, "C", "user2");
    assert!((user2 - 20.0 / 81.0).abs() < 1e-9, "{user2}");
    assert!((user2 - 198.0 / 802.0).abs() < 1e-3, "{user2}");
    assert_eq!(factor(&engine, "B", "user1"), 0.0);
    assert_eq!(factor(&engine, "C", "user3"), 0.0);

    // A held job does not make its user active: user2 holds every ticket.
    apply(&mut engine, &[job_op(T0 + 1, "hold", "5")]);
    let table = engine.fairshare_table().expect("table");
    assert_eq!(row(&table, "F", Some("user5")).tickets, Some(0));
    assert_eq!(row(&table, "D", None).tickets, Some(0));
    assert_eq!(row(&table, "C", Some("user2")).tickets, Some(4_294_967_295));
    assert_eq!(factor(&engine, "C", "user2"), 1.0);
    assert_eq!(factor(&engine, "F", "user5"), 0.0);

    // Released, then both jobs cancelled: no tickets anywhere, every factor 0.
    apply(&mut engine, &[job_op(T0 + 2, "release", "5")]);
    assert_eq!(factor(&engine, "F", "user5"), 1.0);
    apply(
        &mut engine,
        &[job_op(T0 + 3, "cancel", "2"), job_op(T0 + 3, "cancel", "5")],
    );
    let table = engine.fairshare_table().expect("table");
    assert!(table.rows.iter().all(|r| r.tickets == Some(0)));
    assert!(engine
        .user_factors()
        .expect("factors")
        .values()
        .all(|f| *f == 0.0));
}

/// PriorityLevels=4, the blog's four tiers (the oracle test's tree):
/// root -> L (1) -> bio (1) -> bob (1) -> grad (1), prof (1), zed (0);
/// root -> M (1) -> m1 (1). Usage grad 30.25, prof 24.75, m1 45: root 100,
/// L = bio = bob = 55. Bucket v = trunc(1 + 2^(-U/S') · 65534), S' = 0.1 +
/// 0.9 S:
/// - L: S .5, U .55, ratio 1: 32768 = 0x8000; M: U .45, ratio 9/11:
///   1 + 0.5671563 · 65534 = 37169.018 -> 0x9131.
/// - bio, bob: only children, S 1, U 1: 0x8000.
/// - grad: S .5, U .55: 0x8000; prof: U .45: 0x9131; zed: S 0, the quirk:
///   0xFFFF. m1: S 1, U 1: 0x8000 at bits 32..47.
///
/// Raw: m1 0x9131_8000_0000_0000 > zed 0x8000_8000_8000_FFFF >
/// prof 0x8000_8000_8000_9131 > grad 0x8000_8000_8000_8000; n = 4: ranks
/// 3, 2, 1, 0, factors .75, .5, .25, 0.
#[test]
fn the_level_four_tiers_through_the_engine() {
    let mut engine = Engine::start(2, Config::default()).expect("engine");
    apply(
        &mut engine,
        &[
            format!(
                r#"{{"op":"config","t":{T0},"set":{{"PriorityFlags":"LEVEL_BASED","PriorityLevels":4}}}}"#
            ),
            account("L", "root", 1),
            account("M", "root", 1),
            account("bio", "L", 1),
            account("bob", "bio", 1),
            user("grad", "bob", 1),
            user("prof", "bob", 1),
            user("zed", "bob", 0),
            user("m1", "M", 1),
            usage("bob", "grad", 30.25),
            usage("bob", "prof", 24.75),
            usage("M", "m1", 45.0),
        ],
    );
    let table = engine.fairshare_table().expect("table");
    let cells = |account: &str, user: Option<&str>| {
        let r = row(&table, account, user);
        (r.level_value, r.fairshare_raw)
    };
    assert_eq!(
        cells("L", None),
        (Some(0x8000_0000_0000_0000), Some(0x8000_0000_0000_0000))
    );
    assert_eq!(
        cells("M", None),
        (Some(0x9131_0000_0000_0000), Some(0x9131_0000_0000_0000))
    );
    assert_eq!(
        cells("bob", None),
        (Some(0x0000_0000_8000_0000), Some(0x8000_8000_8000_0000))
    );
    assert_eq!(
        cells("bob", Some("zed")),
        (Some(0xFFFF), Some(0x8000_8000_8000_FFFF))
    );
    assert_eq!(
        cells("M", Some("m1")),
        (Some(0x0000_8000_0000_0000), Some(0x9131_8000_0000_0000))
    );
    for (account, user, f) in [
        ("M", "m1", 0.75),
        ("bob", "zed", 0.5),
        ("bob", "prof", 0.25),
        ("bob", "grad", 0.0),
    ] {
        assert_eq!(factor(&engine, account, user), f, "{user}");
        assert_eq!(row(&table, account, Some(user)).fairshare, Some(f));
    }

    // PriorityLevels=1: one 64-bit bucket for root's children only, so the
    // users under L tie with each other: L 2^63 = 0x8000_0000_0000_0000 (S
    // .5, U .55, ratio 1: 1 + 2^-1 · (2^64 - 2) = 2^63), M's ratio 9/11 gives
    // more. m1 rank 3 (.75); grad, prof, zed tied below it at rank 2 (.5).
    apply(
        &mut engine,
        &[format!(
            r#"{{"op":"config","t":{T0},"set":{{"PriorityLevels":1}}}}"#
        )],
    );
    assert_eq!(factor(&engine, "M", "m1"), 0.75);
    for user in ["grad", "prof", "zed"] {
        assert_eq!(factor(&engine, "bob", user), 0.5, "{user}");
    }
}
