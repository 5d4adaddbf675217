//! Trees of any depth in the batch oracle (issue 16, item 2): a chain of
//! 20,000 and of 100,000 accounts, one user at the bottom with usage and a
//! pending job, is built, ranked under every algorithm and evaluated on the
//! test's own (2 MiB) thread stack. Before, the recursive tree walk overflowed
//! the stack (SIGABRT) at 20,000. The timings are printed (perf/ records them;
//! nothing here asserts a time).
//!
//! Expected values by hand: with one user association in the whole tree,
//! Fair Tree ranks it 1 of 1 (factor 1), and every account on the chain holds
//! all of the usage: its raw usage is the user's 3600 TRES-seconds (charged
//! at the frame's epoch and read at the same time, so exactly 3600).

use std::time::Instant;

use fairflow_ingest::reader::read_events;
use fairflow_ingest::LogLine;
use fairflow_model::Config;
use fairflow_oracle::{fairshare, priority, Replay};

fn chain(depth: usize) -> Vec<LogLine> {
    let mut text = Vec::with_capacity(depth + 4);
    let mut parent = "root".to_string();
    for i in 0..depth {
        let name = format!("a{i}");
        text.push(format!(
            r#"{{"op":"account","t":1700000000,"name":"{name}","parent":"{parent}","shares":1}}"#
        ));
        parent = name;
    }
    text.push(format!(
        r#"{{"op":"user","t":1700000000,"user":"u","account":"{parent}","shares":1}}"#
    ));
    text.push(format!(
        r#"{{"op":"usage","t":1700000000,"account":"{parent}","user":"u","amount":3600}}"#
    ));
    text.push(format!(
        r#"{{"op":"submit","t":1700000000,"job":"1","user":"u","account":"{parent}"}}"#
    ));
    read_events(text.join("\n").as_bytes())
        .map(|line| line.expect("in memory"))
        .collect()
}

fn run(depth: usize) {
    let started = Instant::now();
    let mut replay = Replay::new(Config::default());
    replay.feed_all(chain(depth));
    assert_eq!(replay.report.rejected, vec![], "depth {depth}");
    let loaded = started.elapsed();
    let started = Instant::now();
    let table = fairshare::table(&replay.state);
    let table_time = started.elapsed();
    // root, the chain, and the user.
    assert_eq!(table.rows.len(), depth + 2);
    let user = table.rows.last().unwrap();
    assert_eq!(user.user.as_deref(), Some("u"));
    assert_eq!(user.depth, depth + 1);
    assert_eq!(user.fairshare, Some(1.0));
    let usages: std::collections::BTreeSet<u64> = table.rows.iter().map(|r| r.raw_usage).collect();
    assert_eq!(usages, std::collections::BTreeSet::from([3600]));
    let started = Instant::now();
    let factors = fairshare::user_factors(&replay.state);
    let jobs = priority::evaluate(&replay.state, &factors);
    let priority_time = started.elapsed();
    assert_eq!(jobs.len(), 1);
    println!(
        "deep chain {depth}: load {:.3} s, fair-share table {:.3} s, priorities {:.3} s",
        loaded.as_secs_f64(),
        table_time.as_secs_f64(),
        priority_time.as_secs_f64()
    );
}

#[test]
fn a_chain_of_20_000_accounts_works_in_the_oracle() {
    run(20_000);
}

#[test]
fn a_chain_of_100_000_accounts_works_in_the_oracle() {
    run(100_000);
}
