//! The reads `audit` and `explain` make, on seeded random streams: the
//! incremental engine's usage rows (read from its tree, no factor), its
//! waiting users (read from its queue's submit-time
//! order, only as far as the answer needs), each user's pending job count
//! (the fair-share history's, read from the queue's per-user sets, and
//! placed beside the table's rows by their order) and
//! each user's fair-share path
//! (read from the path's associations only) equal the batch oracle's (which
//! groups every listed job, and cuts the path from the whole table), for
//! every limit around the users' count, several minimum factors, many jobs
//! submitted in the same second (ties), holds, releases, starts, cancels,
//! share changes and usage, under Fair Tree, classic and level-based, with
//! 1, 2 and 4 workers.

use fairflow_engine::{BatchEngine, Engine, IncrementalEngine};
use fairflow_ingest::reader::read_events;
use fairflow_ingest::LogLine;
use fairflow_model::Config;

/// A small deterministic generator (xorshift64*).
struct Random(u64);

impl Random {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

const ACCOUNTS: [&str; 3] = ["a", "b", "c"];
const USERS: [&str; 4] = ["u1", "u2", "u3", "u4"];

fn lines(text: &str) -> Vec<LogLine> {
    read_events(text.as_bytes()).map(Result::unwrap).collect()
}

/// The tree: three accounts (c under a), four users in each.
fn tree(t: i64) -> String {
    let mut out = String::new();
    for (index, account) in ACCOUNTS.iter().enumerate() {
        let parent = if *account == "c" { "a" } else { "root" };
        out += &format!(
            "{{\"op\":\"account\",\"t\":{t},\"name\":\"{account}\",\"parent\":\"{parent}\",\"shares\":{}}}\n",
            index + 1
        );
        for user in USERS {
            out += &format!(
                "{{\"op\":\"user\",\"t\":{t},\"user\":\"{user}\",\"account\":\"{account}\",\"shares\":1}}\n"
            );
        }
    }
    out
}

/// The `n`th job's id: distinct, and not in submission order (the queue's
/// job-id order differs from the order the engine interns jobs in).
fn job_id(n: u64) -> u64 {
    (n * 7919) % 10_007 + 1
}

/// One random event at `t` (the `n`th job submitted is `job_id(n)`).
fn event(random: &mut Random, t: i64, jobs: &mut u64) -> String {
    let account = ACCOUNTS[random.below(3) as usize];
    let user = USERS[random.below(4) as usize];
    // Any job submitted so far (before the first: one not known yet).
    let some_job = job_id(1 + random.below((*jobs).max(1)));
    match random.below(10) {
        0..=4 => {
            *jobs += 1;
            // Few distinct seconds: many jobs of one second (ties by id).
            let submitted = t - 10 * random.below(3) as i64;
            format!(
                "{{\"op\":\"submit\",\"t\":{t},\"job\":\"{}\",\"user\":\"{user}\",\"account\":\"{account}\",\"submitted\":{submitted}}}\n",
                job_id(*jobs)
            )
        }
        5 => format!("{{\"op\":\"hold\",\"t\":{t},\"job\":\"{some_job}\"}}\n"),
        6 => format!("{{\"op\":\"release\",\"t\":{t},\"job\":\"{some_job}\"}}\n"),
        7 => format!("{{\"op\":\"start\",\"t\":{t},\"job\":\"{some_job}\"}}\n"),
        8 => format!(
            "{{\"op\":\"usage\",\"t\":{t},\"account\":\"{account}\",\"user\":\"{user}\",\"amount\":{}}}\n",
            random.below(1000)
        ),
        _ => format!(
            "{{\"op\":\"user\",\"t\":{t},\"user\":\"{user}\",\"account\":\"{account}\",\"shares\":{}}}\n",
            random.below(4)
        ),
    }
}

fn compare(context: &str, batch: &mut BatchEngine, incremental: &mut IncrementalEngine) {
    // The rows audit reads (the incremental engine's from its tree alone)
    // are the oracle's table's columns, and the incremental table's.
    let oracle_rows = batch.fairshare().unwrap().usage_rows();
    assert_eq!(
        incremental.usage_rows().unwrap(),
        oracle_rows,
        "{context}: usage rows"
    );
    assert_eq!(
        batch.usage_rows().unwrap(),
        oracle_rows,
        "{context}: usage rows"
    );
    assert_eq!(
        incremental.fairshare().unwrap().usage_rows(),
        oracle_rows,
        "{context}: usage rows of the table"
    );
    for min_factor in [0.0, 0.3, 0.5, 0.9] {
        for limit in [0, 1, 2, 3, 5, 8, 13, usize::MAX] {
            assert_eq!(
                incremental.waiting_users(min_factor, limit).unwrap(),
                batch.waiting_users(min_factor, limit).unwrap(),
                "{context}: waiting users, min factor {min_factor}, limit {limit}"
            );
        }
    }
    let pending = |engine: &mut dyn Engine| {
        let mut counts = engine.pending_jobs_by_user().unwrap();
        counts.sort();
        counts
    };
    assert_eq!(
        pending(incremental),
        pending(batch),
        "{context}: pending jobs by user"
    );
    // The history's joined read: the incremental engine places its counts
    // by its rows' order, the oracle joins them by name.
    let (table, by_row) = incremental.fairshare_with_pending().unwrap();
    let placed: u64 = by_row.iter().sum();
    let counted: u64 = pending(batch).iter().map(|(_, jobs)| jobs).sum();
    assert_eq!(placed, counted, "{context}: every pending job beside a row");
    assert_eq!(
        (table.rows, by_row),
        {
            let (table, by_row) = batch.fairshare_with_pending().unwrap();
            (table.rows, by_row)
        },
        "{context}: the table with each row's pending jobs"
    );
    for account in ACCOUNTS {
        for user in USERS.iter().chain(&["nobody"]) {
            assert_eq!(
                incremental.fairshare_path(account, user).unwrap(),
                batch.fairshare_path(account, user).unwrap(),
                "{context}: path of {account}/{user}"
            );
        }
    }
}

fn run(seed: u64, workers: usize, flags: &str) {
    let mut set = std::collections::BTreeMap::new();
    set.insert("PriorityFlags".to_string(), serde_json::Value::from(flags));
    let config = Config::default().patched(&set).expect("valid flags");
    let mut batch = BatchEngine::new(config.clone());
    let mut incremental = IncrementalEngine::start(workers, config).unwrap();
    let mut random = Random(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut jobs = 0;
    let mut t = 1_000_000;
    let start = tree(t);
    batch.apply(lines(&start)).unwrap();
    incremental.apply(lines(&start)).unwrap();
    let mut most_waiting = 0;
    for round in 0..30 {
        t += 10 * random.below(3) as i64;
        let text: String = (0..5).map(|_| event(&mut random, t, &mut jobs)).collect();
        let want = batch.apply(lines(&text)).unwrap();
        assert_eq!(incremental.apply(lines(&text)).unwrap(), want);
        let context = format!("seed {seed}, {workers} workers, {flags:?}, round {round}");
        compare(&context, &mut batch, &mut incremental);
        most_waiting = most_waiting.max(batch.waiting_users(0.0, usize::MAX).unwrap().len());
    }
    // The streams are not trivial: many users wait at once.
    assert!(
        most_waiting >= 6,
        "seed {seed}: at most {most_waiting} users waiting"
    );
}

#[test]
fn waiting_users_and_paths_equal_the_oracle_one_worker() {
    for seed in 0..6 {
        for flags in ["", "NO_FAIR_TREE", "LEVEL_BASED", "DEPTH_OBLIVIOUS"] {
            run(seed, 1, flags);
        }
    }
}

#[test]
fn waiting_users_and_paths_equal_the_oracle_two_and_four_workers() {
    for seed in 10..13 {
        run(seed, 2, "");
        run(seed, 4, "TICKET_BASED");
    }
}
