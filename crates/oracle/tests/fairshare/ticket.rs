//! Ticket-based fair-share: the seed document's example with its 1000
//! tickets (`ticket::compute`, the oracle's own API). The full `u32::MAX`
//! distribution and activity run on both engines from data:
//! `crates/engine/tests/cases/ticket_seed_example.toml`.

use super::support::*;
use fairflow_oracle::fairshare::ticket;
use fairflow_oracle::tree::Tree;
use serde_json::json;

/// The seed example's tree (the same as the classic one), usage 0.2, 0.25,
/// 0.25 for users 1, 2, 4 plus 0.3 of history on root itself, and pending
/// jobs for users 2 and 5 only.
fn seed_lines() -> Vec<String> {
    let mut lines = seed_tree("TICKET_BASED");
    lines.push(submit(T0, "2", "C", "user2", json!({"tres": {"cpu": 1}})));
    lines.push(submit(T0, "5", "F", "user5", json!({"tres": {"cpu": 1}})));
    lines
}

#[test]
fn the_seed_example_with_1000_tickets() {
    let replayed = replay(&seed_lines());
    let tree = Tree::build(replayed.state());
    let computed = ticket::compute(replayed.state(), &tree, 1000);
    let find = |account: &str, user: Option<&str>| {
        computed
            .rows
            .iter()
            .find(|r| r.account == account && r.user.as_deref() == user)
            .unwrap()
    };
    // F = S / max(UN, 0.01 S), from the document:
    // A .4/.45 = .888889; B .3/.2 = 1.5; C .1/.25 = .4; D .6/.25 = 2.4;
    // E .25/.25 = 1; F .35/.0035 = 100; users 1.5, .2, 100 (.05/.0005), 1, 100.
    let eps = 1e-9;
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
        assert_close(
            find(account, user).fairshare,
            f,
            eps,
            &format!("F {account}/{user:?}"),
        );
    }
    // Effective usage: F .0035, user3 .0005, user5 .0035; the others their UN.
    assert_close(find("F", None).effective_usage, 0.0035, 1e-15, "UE F");
    assert_close(
        find("C", Some("user3")).effective_usage,
        0.0005,
        1e-15,
        "UE user3",
    );
    assert_close(
        find("C", Some("user2")).effective_usage,
        0.25,
        1e-15,
        "UE user2",
    );
    // Tickets: A 1000 * .4 * .888889 / (.355556 + 1.44) = 198.02 -> 198;
    // D 1000 * 1.44 / 1.795556 = 801.98 -> 802. C (only active child of A)
    // 198, F 802; user2 198, user5 802; everything inactive 0.
    for (account, user, tickets) in [
        ("root", None, 1000),
        ("A", None, 198),
        ("D", None, 802),
        ("C", None, 198),
        ("F", None, 802),
        ("C", Some("user2"), 198),
        ("F", Some("user5"), 802),
        ("B", None, 0),
        ("E", None, 0),
        ("B", Some("user1"), 0),
        ("C", Some("user3"), 0),
        ("E", Some("user4"), 0),
    ] {
        assert_eq!(
            find(account, user).tickets,
            Some(tickets),
            "{account}/{user:?}"
        );
    }
    // PriorityFS: user5 1.0; user2 198 / 802 = 0.246883; the rest 0.
    let factors = &computed.user_factors;
    assert_eq!(factors[&("F".to_string(), "user5".to_string())], 1.0);
    assert_close(
        Some(factors[&("C".to_string(), "user2".to_string())]),
        198.0 / 802.0,
        1e-15,
        "user2",
    );
    assert_eq!(factors[&("B".to_string(), "user1".to_string())], 0.0);
    assert_eq!(factors[&("C".to_string(), "user3".to_string())], 0.0);
}
