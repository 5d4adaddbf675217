//! The engine against the oracle on a cluster large enough to cross every
//! size threshold the engine has, with the production values
//! (`fairflow_dataflow::thresholds`): a random tree of 60 accounts and
//! 5,000 user associations (one account of 600 members, for Fair Tree's wide
//! groups), batches of thousands of submits, usage on one member and on
//! hundreds at once, cancels, holds, releases, starts, ends and requeues
//! (retractions), jobs moved between a user's associations, accounts moved
//! to another parent, users removed, share changes, time passing the age
//! cap, a configuration change, and reads of the whole queue.
//!
//! After every batch, every listed job's priority, `top(k)` for
//! k = 1, 10, 1,500 and the whole queue, the last job's entry and every
//! user association's fair-share factor must equal the oracle's, under
//! each fair-share algorithm (Fair Tree with Slurm's and the documented
//! ties, classic, depth-oblivious, ticket-based, level-based) and priority
//! model (Slurm, Flux, Moab), for 1, 2 and 4 workers. Then each threshold
//! must have been crossed (decided both ways) by these runs: the test
//! fails if a change of the engine's constants or of this stream leaves a
//! path unreached. `FAIRFLOW_HEAVY=1` runs three seeds instead of one.

use std::sync::Mutex;

use fairflow_dataflow::thresholds::{decisions, Threshold};
use fairflow_dataflow::Engine;
use fairflow_ingest::reader::read_events;
use fairflow_model::Config;
use fairflow_oracle::{fairshare, priority, Replay};

mod priority_stream;
use priority_stream::{compare, Rng, T0};

/// The counters are process-wide: one run at a time, so each test's
/// crossings are its own.
static SERIAL: Mutex<()> = Mutex::new(());

/// Top-level accounts, sub-accounts each, the wide account's members, and
/// user associations in all.
const TOPS: usize = 8;
const SUBS: usize = 6;
const WIDE_MEMBERS: usize = 600;
const USERS: usize = 5_000;

/// The account of user `u` (0-based): the wide account for the first
/// `WIDE_MEMBERS`, else one of the sub-accounts.
fn account_of(u: usize) -> String {
    if u < WIDE_MEMBERS {
        "wide".to_string()
    } else {
        let leaf = u % (TOPS * SUBS);
        format!("t{}s{}", leaf / SUBS, leaf % SUBS)
    }
}

/// A stream of batches, generated with the oracle's state in view only
/// through what the generator itself did (the ids it submitted and their
/// phases), so it is the same for every configuration.
struct Stream {
    rng: Rng,
    t: i64,
    next_job: u64,
    /// Jobs submitted and not yet ended or cancelled, with their user and
    /// phase (`true`: running).
    live: Vec<(u64, usize, bool)>,
    /// Users whose second association (in `t0s0`) exists.
    second: Vec<bool>,
}

impl Stream {
    fn new(seed: u64) -> Self {
        Stream {
            rng: Rng::seeded(seed),
            t: T0,
            next_job: 1,
            live: Vec::new(),
            second: vec![false; USERS],
        }
    }

    fn line(&self, body: &str) -> String {
        format!(r#"{{"t":{},{body}}}"#, self.t)
    }

    fn setup(&mut self, config: &str) -> Vec<String> {
        let mut lines = vec![self.line(&format!(r#""op":"config","set":{config}"#))];
        lines.push(self.line(r#""op":"qos","name":"q1","priority":100"#));
        lines.push(self.line(r#""op":"partition","name":"p1","priority_job_factor":2"#));
        lines.push(self.line(r#""op":"cluster","nodes":64,"tres":{"cpu":4096}"#));
        lines.push(self.line(r#""op":"account","name":"wide","shares":5,"priority":7"#));
        for top in 0..TOPS {
            let shares = 1 + self.rng.below(9);
            lines.push(self.line(&format!(
                r#""op":"account","name":"t{top}","shares":{shares}"#
            )));
            for sub in 0..SUBS {
                let shares = 1 + self.rng.below(20);
                lines.push(self.line(&format!(
                    r#""op":"account","name":"t{top}s{sub}","parent":"t{top}","shares":{shares}"#
                )));
            }
        }
        for u in 0..USERS {
            let shares = 1 + self.rng.below(4);
            let account = account_of(u);
            lines.push(self.line(&format!(
                r#""op":"user","user":"u{u}","account":"{account}","shares":{shares}"#
            )));
            if u % 10 == 3 && account != "t0s0" {
                self.second[u] = true;
                lines.push(self.line(&format!(r#""op":"user","user":"u{u}","account":"t0s0""#)));
            }
        }
        // Some usage everywhere, so no group starts with every member at 0.
        for u in (0..USERS).step_by(7) {
            let amount = 100 + self.rng.below(100_000);
            lines.push(self.usage(u, amount));
        }
        lines
    }

    fn usage(&self, u: usize, amount: u64) -> String {
        let account = account_of(u);
        self.line(&format!(
            r#""op":"usage","account":"{account}","user":"u{u}","amount":{amount}"#
        ))
    }

    fn submits(&mut self, users: impl Iterator<Item = usize>) -> Vec<String> {
        let mut lines = Vec::new();
        for u in users {
            let job = self.next_job;
            self.next_job += 1;
            let cpus = 1 + self.rng.below(64);
            let qos = if self.rng.chance(30) {
                r#","qos":"q1""#
            } else {
                ""
            };
            let partition = if self.rng.chance(50) {
                r#","partition":"p1""#
            } else {
                ""
            };
            let nice = if self.rng.chance(10) {
                r#","nice":100"#
            } else {
                ""
            };
            lines.push(self.line(&format!(
                r#""op":"submit","job":"{job}","user":"u{u}","account":"{}","tres":{{"cpu":{cpus}}},"time_limit":3600{qos}{partition}{nice}"#,
                account_of(u)
            )));
            self.live.push((job, u, false));
        }
        lines
    }

    /// Cancels, holds and releases, starts, ends and requeues of the live
    /// jobs, and moves of jobs to their user's second association.
    fn churn(&mut self) -> Vec<String> {
        let mut lines = Vec::new();
        let mut kept = Vec::new();
        for (job, u, running) in std::mem::take(&mut self.live) {
            let roll = self.rng.below(100);
            let op = match (running, roll) {
                (false, 0..=5) => Some("cancel"),
                (false, 6..=9) => Some("start"),
                (false, 10..=11) => Some("hold"),
                (true, 0..=39) => Some("end"),
                (true, 40..=44) => Some("requeue"),
                _ => None,
            };
            if let Some(op) = op {
                lines.push(self.line(&format!(r#""op":"{op}","job":"{job}""#)));
                if op == "hold" {
                    lines.push(self.line(&format!(r#""op":"release","job":"{job}""#)));
                }
            }
            let moved = !running && op.is_none() && self.second[u] && roll == 99;
            if moved {
                lines.push(self.line(&format!(r#""op":"update","job":"{job}","account":"t0s0""#)));
            }
            match op {
                Some("cancel") | Some("end") => {}
                Some("start") => kept.push((job, u, true)),
                Some("requeue") => kept.push((job, u, false)),
                _ => kept.push((job, u, running)),
            }
        }
        self.live = kept;
        lines
    }

    fn advance(&mut self, secs: i64) {
        self.t += secs;
    }
}

/// The batches of one run, each generated just before it is applied.
fn batches(stream: &mut Stream, config: &str, change: &str) -> Vec<Vec<String>> {
    let mut out = vec![stream.setup(config)];
    stream.advance(60);
    out.push(stream.submits(0..200));
    stream.advance(60);
    // Thousands of submits while a top is kept: the kept top's bound.
    out.push(stream.submits(200..USERS));
    stream.advance(120);
    // Usage on one member: under classic every factor moves (the queue's
    // bulk refresh); under Fair Tree a span update of one group.
    out.push(vec![stream.usage(4_321, 5_000_000)]);
    stream.advance(120);
    // Usage on a hundred and fifty members of the wide group at once.
    out.push(
        (0..150)
            .map(|i| stream.usage(i * 4, 1_000 + 7_919 * i as u64))
            .collect(),
    );
    stream.advance(300);
    out.push(stream.churn());
    stream.advance(300);
    // A reorganisation: a sub-account moves to another parent, shares
    // change on a whole top account's subtree, a user leaves.
    let mut reorg = vec![
        stream.line(r#""op":"account","name":"t1s2","parent":"t5","shares":3"#),
        stream.line(r#""op":"account","name":"t2","shares":40"#),
        stream.line(r#""op":"remove_user","user":"u4999","account":"t3s5""#),
    ];
    reorg.extend((0..6).map(|s| {
        stream.line(&format!(
            r#""op":"account","name":"t4s{s}","shares":{}"#,
            2 + s
        ))
    }));
    out.push(reorg);
    // Past the age cap (an hour in every configuration below): every job
    // moves from the uncapped rank class to the capped one.
    stream.advance(3_700);
    let mut later = stream.churn();
    later.extend(stream.submits((0..USERS).step_by(3)));
    out.push(later);
    stream.advance(60);
    out.push(vec![
        stream.line(&format!(r#""op":"config","set":{change}"#))
    ]);
    stream.advance(600);
    out.push(vec![stream.line(r#""op":"reset_usage""#)]);
    out
}

/// Every answer of `engine` equal to the oracle's after the batch.
fn check(engine: &Engine, replay: &Replay, context: &str) -> Result<(), String> {
    let fs = fairshare::user_factors(replay.state());
    let got_fs = engine.user_factors().map_err(|e| e.to_string())?;
    if got_fs != fs {
        let first = got_fs.iter().zip(&fs).find(|(g, w)| g != w);
        return Err(format!(
            "{context}: fair-share factors differ, first {first:?}"
        ));
    }
    let want_all = priority::evaluate(replay.state(), &fs);
    let want_queue = priority::entry_queue(&want_all);
    let got_all = engine.priorities().map_err(|e| e.to_string())?;
    compare(&format!("{context}: priorities"), &got_all, &want_all)?;
    for k in [1, 10, 1_500, want_queue.len().max(1)] {
        let got = engine.top(k).map_err(|e| e.to_string())?;
        let want = &want_queue[..k.min(want_queue.len())];
        compare(&format!("{context}: top {k}"), &got, want)?;
    }
    if let Some(p) = want_all.last() {
        let got = engine.job(&p.job).map_err(|e| e.to_string())?;
        if got.as_ref() != Some(p) {
            return Err(format!("{context}: job {} read {got:?}, want {p:?}", p.job));
        }
    }
    Ok(())
}

fn run(name: &str, config: &str, change: &str, seed: u64, workers: usize) -> Result<(), String> {
    let mut engine = Engine::start(workers, Config::default()).map_err(|e| e.to_string())?;
    let mut replay = Replay::new(Config::default());
    let mut stream = Stream::new(seed);
    for (index, lines) in batches(&mut stream, config, change).into_iter().enumerate() {
        let text = lines.join("\n") + "\n";
        replay.feed_all(read_events(text.as_bytes()).map(Result::unwrap));
        engine
            .apply_batch(read_events(text.as_bytes()).map(Result::unwrap).collect())
            .map_err(|e| e.to_string())?;
        let context = format!("{name} seed {seed} {workers} workers batch {index}");
        if engine.applied() != replay.report.applied {
            return Err(format!(
                "{context}: applied {} vs the oracle's {} (rejected: {:?})",
                engine.applied(),
                replay.report.applied,
                replay.report.rejected.first()
            ));
        }
        check(&engine, &replay, &context)?;
    }
    if replay.report.applied < 10_000 {
        return Err(format!(
            "{name}: only {} events applied",
            replay.report.applied
        ));
    }
    Ok(())
}

/// Run `scenarios` for 1, 2 and 4 workers and every seed; return each
/// threshold's decisions taken meanwhile.
fn sweep(scenarios: &[(&str, &str, &str)]) -> Vec<(Threshold, [u64; 2])> {
    let before: Vec<[u64; 2]> = Threshold::ALL.iter().map(|&t| decisions(t)).collect();
    let seeds = if fairflow_testkit::heavy() { 3 } else { 1 };
    for &(name, config, change) in scenarios {
        for seed in 1..=seeds {
            for workers in [1, 2, 4] {
                if let Err(e) = run(name, config, change, seed, workers) {
                    panic!("{e}");
                }
            }
        }
    }
    Threshold::ALL
        .iter()
        .zip(before)
        .map(|(&t, [under, over])| {
            let [u, o] = decisions(t);
            (t, [u - under, o - over])
        })
        .collect()
}

/// Each of `wanted` decided both ways in `taken`.
fn assert_crossed(taken: &[(Threshold, [u64; 2])], wanted: &[Threshold]) {
    for want in wanted {
        let (_, [under, over]) = taken.iter().find(|(t, _)| t == want).unwrap();
        assert!(
            *under > 0 && *over > 0,
            "{want:?} was not decided both ways ({under} under, {over} over): {taken:?}"
        );
    }
}

const AGE: &str = r#""PriorityWeightAge":1000,"PriorityMaxAge":"1:00:00","PriorityWeightFairshare":100000,"PriorityWeightQOS":400,"PriorityWeightPartition":300,"PriorityWeightJobSize":200"#;

#[test]
fn fair_tree_at_scale_equals_the_oracle_and_crosses_its_thresholds() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let slurm = format!("{{{AGE}}}");
    let documented = format!(r#"{{{AGE},"FairTreeTies":"documented"}}"#);
    let taken = sweep(&[
        ("fair-tree", &slurm, r#"{"PriorityWeightAge":3000}"#),
        (
            "fair-tree-documented",
            &documented,
            r#"{"PriorityWeightFairshare":50000}"#,
        ),
    ]);
    assert_crossed(
        &taken,
        &[
            Threshold::KeptTopTooManyChanges,
            Threshold::GroupPositionsMerged,
            Threshold::GroupSpanTooWide,
            Threshold::TopBeyondKept,
        ],
    );
}

#[test]
fn classic_and_depth_oblivious_at_scale_equal_the_oracle_and_refresh_in_bulk() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let classic = format!(r#"{{{AGE},"PriorityFlags":"NO_FAIR_TREE"}}"#);
    let oblivious = format!(r#"{{{AGE},"PriorityFlags":"NO_FAIR_TREE,DEPTH_OBLIVIOUS"}}"#);
    let taken = sweep(&[
        ("classic", &classic, r#"{"FairShareDampeningFactor":4}"#),
        ("depth-oblivious", &oblivious, r#"{"PriorityWeightAge":10}"#),
    ]);
    assert_crossed(
        &taken,
        &[
            Threshold::BulkUserRefresh,
            Threshold::KeptTopTooManyChanges,
            Threshold::TopBeyondKept,
        ],
    );
}

#[test]
fn ticket_and_level_based_at_scale_equal_the_oracle() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let ticket = format!(r#"{{{AGE},"PriorityFlags":"TICKET_BASED"}}"#);
    let level = format!(r#"{{{AGE},"PriorityFlags":"LEVEL_BASED","PriorityLevels":4}}"#);
    let taken = sweep(&[
        ("ticket", &ticket, r#"{"PriorityWeightFairshare":20000}"#),
        ("level", &level, r#"{"PriorityLevels":16}"#),
    ]);
    assert_crossed(&taken, &[Threshold::KeptTopTooManyChanges]);
}

#[test]
fn flux_and_moab_at_scale_equal_the_oracle() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let taken = sweep(&[
        (
            "flux",
            r#"{"PriorityModel":"flux","FluxWeightWaitTime":5000,"FluxMaxWaitTime":"1:00:00","FluxWeightBank":10,"FluxWeightQOS":300,"FluxWeightJobSize":100}"#,
            r#"{"FluxWeightUrgency":0}"#,
        ),
        (
            "moab",
            r#"{"PriorityModel":"moab","PriorityDecayHalfLife":"1:00:00","CREDWEIGHT":2,"USERWEIGHT":1,"QOSWEIGHT":3,"CLASSWEIGHT":5,"ACCOUNTWEIGHT":1,"FSUSERWEIGHT":10,"FSGROUPWEIGHT":1,"FSWEIGHT":1,"QUEUETIMEWEIGHT":1,"PROCWEIGHT":2,"XFACTORWEIGHT":100,"XFMINWCLIMIT":"0:30:00"}"#,
            r#"{"QUEUETIMECAP":60}"#,
        ),
    ]);
    assert_crossed(&taken, &[Threshold::KeptTopTooManyChanges]);
}
