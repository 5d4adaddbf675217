//! `fairflow demo`: the worked example of Slurm's classic fair-share
//! documentation, built in as events, shown under every algorithm.
//!
//! The tree: accounts A (40 shares) and D (60) under root; B (30) and C (10)
//! under A; E (25) and F (35) under D. user1 is in B, user2 and user3 in C,
//! user4 in E, user5 in F, one share each. User 1 used 0.2 of the machine,
//! users 2 and 4 0.25 each: with the machine's total at 1 000 000 TRES-seconds
//! that is 200 000, 250 000 and 250 000; the other 300 000 were used outside
//! this tree and are charged to root itself, so that every normalized usage is
//! the document's fraction. There is no decay (`PriorityDecayHalfLife=0`).
//! Users 2 and 5 have a pending job each, which only the ticket-based
//! algorithm looks at.

use std::collections::BTreeMap;

use anyhow::bail;
use fairflow_ingest::reader::LogLine;
use fairflow_model::event::{JobSpec, Op};
use fairflow_model::tres::TresCounts;
use fairflow_model::{Config, Event, Shares};
use fairflow_oracle::Replay;
use fairflow_serve::sshare::render;
use fairflow_serve::OutputFormat;

use crate::output::emit;

/// `fairflow demo` flags.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print each table `|`-separated instead of aligned.
    #[arg(short = 'P', long = "parsable")]
    parsable: bool,
}

/// The time of every built-in event.
const DEMO_T: i64 = 1_700_000_000;

/// One algorithm the demo shows: its title, its `PriorityFlags`, and any
/// other parameter it needs.
struct Shown {
    title: &'static str,
    flags: &'static str,
    extra: &'static [(&'static str, &'static str)],
}

/// The algorithms shown, in order.
const ALGORITHMS: [Shown; 5] = [
    Shown {
        title: "Fair Tree (PriorityFlags=FAIR_TREE, Slurm's default)",
        flags: "FAIR_TREE",
        extra: &[],
    },
    Shown {
        title: "Classic (PriorityFlags=NO_FAIR_TREE)",
        flags: "NO_FAIR_TREE",
        extra: &[],
    },
    Shown {
        title: "Depth-oblivious (PriorityFlags=DEPTH_OBLIVIOUS)",
        flags: "DEPTH_OBLIVIOUS",
        extra: &[],
    },
    Shown {
        title: "Ticket-based (PriorityFlags=TICKET_BASED; users 2 and 5 have pending jobs)",
        flags: "TICKET_BASED",
        extra: &[],
    },
    Shown {
        title: "Level-based (PriorityFlags=LEVEL_BASED, PriorityLevels=3)",
        flags: "LEVEL_BASED",
        extra: &[("PriorityLevels", "3")],
    },
];

fn account(name: &str, parent: &str, shares: u32) -> Op {
    Op::Account {
        name: name.to_string(),
        parent: Some(parent.to_string()),
        shares: Some(Shares::Value(shares)),
        priority: None,
    }
}

fn user(user: &str, account: &str) -> Op {
    Op::User {
        user: user.to_string(),
        account: account.to_string(),
        shares: Some(Shares::Value(1)),
        priority: None,
    }
}

fn usage(account: &str, user: Option<&str>, amount: f64) -> Op {
    Op::Usage {
        account: account.to_string(),
        user: user.map(str::to_string),
        amount,
    }
}

fn submit(job: &str, user: &str, account: &str) -> Op {
    let tres: TresCounts = [("cpu".to_string(), 1.0)].into_iter().collect();
    Op::Submit {
        job: job.to_string(),
        user: user.to_string(),
        account: account.to_string(),
        spec: JobSpec {
            tres: Some(tres),
            ..JobSpec::default()
        },
    }
}

/// The example's events under `PriorityFlags=flags` (and `extra` parameters).
pub fn example_events(flags: &str, extra: &[(&str, &str)]) -> Vec<Event> {
    let mut set: BTreeMap<String, serde_json::Value> = BTreeMap::new();
    set.insert("PriorityFlags".into(), flags.into());
    set.insert("PriorityDecayHalfLife".into(), "0".into());
    for (key, value) in extra {
        set.insert((*key).into(), (*value).into());
    }
    let ops = vec![
        Op::Config { set },
        account("A", "root", 40),
        account("D", "root", 60),
        account("B", "A", 30),
        account("C", "A", 10),
        account("E", "D", 25),
        account("F", "D", 35),
        user("user1", "B"),
        user("user2", "C"),
        user("user3", "C"),
        user("user4", "E"),
        user("user5", "F"),
        usage("B", Some("user1"), 200_000.0),
        usage("C", Some("user2"), 250_000.0),
        usage("E", Some("user4"), 250_000.0),
        usage("root", None, 300_000.0),
        submit("1", "user2", "C"),
        submit("2", "user5", "F"),
    ];
    ops.into_iter().map(|op| Event { t: DEMO_T, op }).collect()
}

/// Replay the example under one algorithm; any rejection is a bug.
fn replay(flags: &str, extra: &[(&str, &str)]) -> anyhow::Result<Replay> {
    let mut replay = Replay::new(Config::default());
    for (i, event) in example_events(flags, extra).into_iter().enumerate() {
        replay.feed(LogLine {
            line: i as u64 + 1,
            event: Ok(event),
        });
    }
    if let Some(rejection) = replay.report.rejected.first() {
        bail!("the built-in example was rejected under {flags} (this is a bug): {rejection}");
    }
    Ok(replay)
}

/// Print the example's table under every algorithm, each with a title line.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let mut text = String::from(
        "Slurm's classic fair-share example: accounts A (40 shares) and D (60); B (30) and C (10)\n\
         under A; E (25) and F (35) under D; user1 in B, user2 and user3 in C, user4 in E, user5 in F.\n\
         Usage: user1 0.2 of the machine, user2 0.25, user4 0.25; no decay.\n",
    );
    let format = if args.parsable {
        OutputFormat::Parsable
    } else {
        OutputFormat::Table
    };
    for shown in &ALGORITHMS {
        let replay = replay(shown.flags, shown.extra)?;
        let table = fairflow_oracle::fairshare::table(&replay.state);
        text.push_str(&format!("\n== {}\n", shown.title));
        text.push_str(&render(&table, format));
    }
    emit(&text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_example_replays_without_rejection_under_every_algorithm() {
        for shown in &ALGORITHMS {
            let replay = replay(shown.flags, shown.extra).unwrap();
            assert_eq!(replay.report.applied, 18);
            assert_eq!(replay.state.config.algorithm().name(), {
                match shown.flags {
                    "FAIR_TREE" => "fair_tree",
                    "NO_FAIR_TREE" => "classic",
                    "DEPTH_OBLIVIOUS" => "depth_oblivious",
                    "TICKET_BASED" => "ticket_based",
                    _ => "level_based",
                }
            });
        }
    }
}
