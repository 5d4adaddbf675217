//! What-if answered from the incremental engine's live state
//! (`whatif::evaluate_rows` over `Engine::whatif_rows`): on random states
//! and random proposals, with 1, 2 and 4 workers, the answer's first `k`
//! rows and its row counts equal the batch oracle's whole answer
//! (`whatif::evaluate`) cut to `k`; every read after equals the read
//! before, and a later batch's answers equal those of an engine that never
//! saw the what-if. A case worked by hand.

use fairflow_engine::whatif::{evaluate, evaluate_rows};
use fairflow_engine::{BatchEngine, Engine, IncrementalEngine};
use fairflow_ingest::reader::read_events;
use fairflow_ingest::LogLine;
use fairflow_model::event::{Op, Shares};
use fairflow_model::report::whatif::{Evaluator, WhatIfRows};
use fairflow_model::{Config, Event};
use fairflow_workload::{Generator, WorkloadParams};

/// A small deterministic random stream (xorshift64*) for the proposals.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

fn lines(text: &str) -> Vec<LogLine> {
    read_events(text.as_bytes()).map(Result::unwrap).collect()
}

fn as_lines(events: &[Event]) -> Vec<LogLine> {
    events
        .iter()
        .enumerate()
        .map(|(i, event)| LogLine {
            line: i as u64 + 1,
            event: Ok(event.clone()),
        })
        .collect()
}

/// Everything a client can read of an engine's state.
#[derive(Debug, PartialEq)]
struct Reads {
    applied: u64,
    now: Option<fairflow_model::Time>,
    table: String,
    priorities: Vec<fairflow_model::report::JobPriority>,
    top: Vec<fairflow_model::report::JobPriority>,
    top_10: Vec<fairflow_model::report::JobPriority>,
    snapshot: Vec<u8>,
}

fn reads(engine: &mut dyn Engine) -> Reads {
    Reads {
        applied: engine.applied(),
        now: engine.now(),
        table: format!("{:?}", engine.fairshare().unwrap()),
        priorities: engine.priorities().unwrap(),
        top: engine.top(usize::MAX).unwrap().to_vec(),
        top_10: engine.top(10).unwrap().to_vec(),
        snapshot: engine.snapshot().unwrap(),
    }
}

/// A random cluster: Fair Tree (the generator's), classic or Flux.
fn state(seed: u64, variant: usize) -> (Vec<Event>, Generator) {
    let mut generator = Generator::new(WorkloadParams {
        seed,
        user_associations: 40 + (seed as usize % 5) * 20,
        users_per_account: 4,
        pending_jobs: 150 + (seed as usize % 3) * 100,
        running_jobs: 20,
        ..WorkloadParams::default()
    });
    let mut events = generator.initial_events();
    let now = generator.now();
    let switch = match variant {
        1 => Some(r#"{"PriorityFlags":"NO_FAIR_TREE"}"#),
        2 => Some(r#"{"PriorityModel":"flux"}"#),
        _ => None,
    };
    if let Some(set) = switch {
        let line = format!(r#"{{"op":"config","t":{now},"set":{set}}}"#);
        events.extend(lines(&line).into_iter().map(|l| l.event.unwrap()));
    }
    events.extend(generator.activity(120));
    (events, generator)
}

/// A random proposal of one to three share changes (accounts and users),
/// some at times before the state's.
fn share_changes(generator: &mut Generator, rng: &mut Rng) -> Vec<Event> {
    let count = 1 + rng.below(3);
    (0..count)
        .map(|_| {
            let mut event = if rng.below(2) == 0 {
                generator.share_change()
            } else {
                let users = generator.associations();
                let (account, user) = users[rng.below(users.len() as u64) as usize].clone();
                Event {
                    t: generator.now(),
                    op: Op::User {
                        user,
                        account,
                        shares: Some(Shares::Value(1 + rng.below(500) as u32)),
                        priority: None,
                    },
                }
            };
            event.t -= rng.below(100) as i64;
            event
        })
        .collect()
}

/// The oracle's whole answer cut to `k`, as the engine would report it.
fn oracle_rows(engine: &dyn Engine, proposal: &[Event], k: usize) -> WhatIfRows {
    let whole = evaluate(engine.book(), engine.applied(), as_lines(proposal)).unwrap();
    WhatIfRows::of_whole(whole, k, Evaluator::Engine)
}

#[test]
fn share_changes_answered_live_equal_the_oracle_and_leave_no_trace() {
    let mut rng = Rng(36);
    let mut live_answers = 0;
    for seed in 0..6u64 {
        let variant = seed as usize % 3;
        let (events, mut generator) = state(seed + 1, variant);
        let proposals: Vec<Vec<Event>> = (0..3)
            .map(|_| share_changes(&mut generator, &mut rng))
            .collect();
        let later = vec![
            generator.usage(),
            generator.submit(),
            generator.share_change(),
        ];
        for workers in [1, 2, 4] {
            let name = format!("seed {seed}, variant {variant}, {workers} workers");
            let mut engine = IncrementalEngine::start(workers, Config::default()).unwrap();
            let mut untouched = IncrementalEngine::start(workers, Config::default()).unwrap();
            assert!(
                engine.apply(as_lines(&events)).unwrap().is_empty(),
                "{name}"
            );
            untouched.apply(as_lines(&events)).unwrap();
            let before = reads(&mut engine);
            for proposal in &proposals {
                for k in [3, 20, usize::MAX] {
                    let rows = evaluate_rows(&mut engine, as_lines(proposal), k).unwrap();
                    assert_eq!(rows.evaluator, Evaluator::Engine, "{name}: {proposal:?}");
                    live_answers += 1;
                    let expected = oracle_rows(&engine, proposal, k);
                    assert_eq!(rows, expected, "{name}, k {k}: {proposal:?}");
                }
                assert_eq!(reads(&mut engine), before, "{name}: a read changed");
            }
            // A later batch: the same answers as an engine never asked.
            assert!(engine.apply(as_lines(&later)).unwrap().is_empty(), "{name}");
            untouched.apply(as_lines(&later)).unwrap();
            assert_eq!(reads(&mut engine), reads(&mut untouched), "{name}: later");
        }
    }
    assert_eq!(live_answers, 6 * 3 * 3 * 3);
}

#[test]
fn other_proposals_keep_the_oracle_and_equal_it() {
    let (events, mut generator) = state(11, 0);
    let mixed = vec![
        generator.share_change(),
        generator.submit(),
        generator.share_change(),
    ];
    let submissions = vec![generator.submit(), generator.submit()];
    let later = {
        let mut change = generator.share_change();
        change.t = generator.now() + 60;
        vec![change]
    };
    for workers in [1, 2] {
        let mut engine = IncrementalEngine::start(workers, Config::default()).unwrap();
        engine.apply(as_lines(&events)).unwrap();
        let before = reads(&mut engine);
        for proposal in [&mixed, &submissions, &later] {
            let rows = evaluate_rows(&mut engine, as_lines(proposal), 20).unwrap();
            assert_eq!(rows.evaluator, Evaluator::Oracle, "{proposal:?}");
            let mut expected = oracle_rows(&engine, proposal, 20);
            expected.evaluator = Evaluator::Oracle;
            assert_eq!(rows, expected);
        }
        assert_eq!(reads(&mut engine), before);
    }
    // The batch engine always keeps the oracle.
    let mut batch = BatchEngine::new(Config::default());
    batch.apply(as_lines(&events)).unwrap();
    let rows = evaluate_rows(&mut batch, as_lines(&mixed[..1]), 20).unwrap();
    assert_eq!(rows.evaluator, Evaluator::Oracle);
}

const STATE: &str = r#"{"op":"config","t":100,"set":{"PriorityWeightFairshare":1000,"PriorityDecayHalfLife":0,"PriorityFlags":"NO_FAIR_TREE"}}
{"op":"account","t":100,"name":"a","shares":1}
{"op":"account","t":100,"name":"b","shares":1}
{"op":"user","t":100,"user":"u","account":"a"}
{"op":"user","t":100,"user":"v","account":"b"}
{"op":"user","t":100,"user":"w","account":"b"}
{"op":"usage","t":100,"account":"a","user":"u","amount":100}
{"op":"usage","t":100,"account":"b","user":"v","amount":100}
{"op":"submit","t":100,"job":"1","user":"u","account":"a"}
{"op":"submit","t":100,"job":"2","user":"v","account":"b"}
{"op":"submit","t":100,"job":"3","user":"w","account":"b"}
"#;

#[test]
fn a_share_change_worked_by_hand() {
    // Classic fair-share, no decay, priority = 1000 · F truncated:
    // F = 2^(-UE/S), S the normalised shares, UN the usage over root's
    // (u 0.5, v 0.5, w 0), UE = UN under root and
    // UN + (UE_parent - UN) · shares / level_shares below (a and b: 0.5;
    // u: 0.5; v: 0.5 + 0 = 0.5; w: 0 + 0.5 · 1/2 = 0.25).
    // Before (a, b 1 share each): S_u = 0.5, S_v = S_w = 0.25:
    //   u 2^(-1) = 0.5 (job 1: 500), v 2^(-2) = 0.25 (job 2: 250),
    //   w 2^(-1) = 0.5 (job 3: 500); queue 1, 3 (ties by id), 2.
    // b's shares to 3: S_u = 0.25, S_v = S_w = 0.375 (UE unchanged):
    //   u 2^(-2) = 0.25 (250), v 2^(-4/3) = 0.39685 (396),
    //   w 2^(-2/3) = 0.62996 (629); queue 3, 2, 1.
    // Job 1 loses two places, 2 and 3 gain one (2 first: +146 > +129);
    // factors: u -0.25, v +0.14685, w +0.12996.
    let proposal = lines(r#"{"op":"account","t":50,"name":"b","shares":3}"#);
    for workers in [1, 2] {
        let mut engine = IncrementalEngine::start(workers, Config::default()).unwrap();
        engine.apply(lines(STATE)).unwrap();
        let rows = evaluate_rows(&mut engine, proposal.clone(), 20).unwrap();
        assert_eq!(rows.evaluator, Evaluator::Engine);
        assert_eq!((rows.answer.at, rows.answer.applied), (100, 1));
        assert_eq!((rows.associations_changed, rows.jobs_changed), (3, 3));
        let factors: Vec<(&str, Option<f64>, Option<f64>)> = (rows.answer.associations.iter())
            .map(|a| (a.user.as_str(), a.before, a.after))
            .collect();
        assert_eq!(factors[0], ("u", Some(0.5), Some(0.25)));
        assert_eq!((factors[1].0, factors[1].1), ("v", Some(0.25)));
        assert!((factors[1].2.unwrap() - (-4.0f64 / 3.0).exp2()).abs() < 1e-12);
        assert_eq!((factors[2].0, factors[2].1), ("w", Some(0.5)));
        assert!((factors[2].2.unwrap() - (-2.0f64 / 3.0).exp2()).abs() < 1e-12);
        type Row<'a> = (&'a str, Option<u64>, Option<u64>, Option<u64>, Option<u64>);
        let jobs: Vec<Row> = (rows.answer.jobs.iter())
            .map(|j| {
                let (pb, pa) = (j.priority_before, j.priority_after);
                (j.job.as_str(), pb, pa, j.position_before, j.position_after)
            })
            .collect();
        assert_eq!(
            jobs,
            [
                ("1", Some(500), Some(250), Some(1), Some(3)),
                ("2", Some(250), Some(396), Some(3), Some(2)),
                ("3", Some(500), Some(629), Some(2), Some(1)),
            ]
        );
    }
}
