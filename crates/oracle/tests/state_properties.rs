//! Property tests of the oracle's state machine: random event streams over a
//! small vocabulary (so that events often refer to things that exist) never
//! panic the validator or the state, and usage is conserved: without decay,
//! root's usage is exactly the sum of every amount charged plus every ended
//! job's accrual, whatever moves, share changes and removals happened.

use fairflow_ingest::reader::LogLine;
use fairflow_model::event::{JobSpec, Op};
use fairflow_model::tres::TresCounts;
use fairflow_model::{Config, Event, Shares};
use fairflow_oracle::tree::Tree;
use fairflow_oracle::Replay;
use proptest::prelude::*;

const ACCOUNTS: [&str; 4] = ["a", "b", "c", "d"];
const USERS: [&str; 3] = ["u", "v", "w"];

fn op() -> impl Strategy<Value = Op> {
    let account = prop::sample::select(ACCOUNTS.to_vec()).prop_map(str::to_string);
    let parent = prop::sample::select(vec!["root", "a", "b", "c", "d"]).prop_map(str::to_string);
    let user = prop::sample::select(USERS.to_vec()).prop_map(str::to_string);
    let job = (0u8..6).prop_map(|j| j.to_string());
    let shares = prop_oneof![(0u32..5).prop_map(Shares::Value), Just(Shares::Parent)];
    prop_oneof![
        (account.clone(), parent, shares.clone()).prop_map(|(name, parent, shares)| Op::Account {
            name,
            parent: Some(parent),
            shares: Some(shares),
            priority: None
        }),
        (user.clone(), account.clone(), shares).prop_map(|(user, account, shares)| Op::User {
            user,
            account,
            shares: Some(shares),
            priority: None
        }),
        account.clone().prop_map(|name| Op::RemoveAccount { name }),
        (user.clone(), account.clone())
            .prop_map(|(user, account)| Op::RemoveUser { user, account }),
        (account.clone(), prop::option::of(user.clone()), 0u32..1000).prop_map(
            |(account, user, amount)| Op::Usage {
                account,
                user,
                amount: f64::from(amount),
                period: None,
            }
        ),
        (
            job.clone(),
            user,
            account,
            1u32..8,
            prop::option::of(0i64..200)
        )
            .prop_map(|(job, user, account, cpus, submitted)| Op::Submit {
                job,
                user,
                account,
                spec: JobSpec {
                    tres: Some(TresCounts::from([("cpu".to_string(), f64::from(cpus))])),
                    ..JobSpec::default()
                },
                submitted,
            }),
        job.clone().prop_map(|job| Op::Start { job, tres: None }),
        job.clone().prop_map(|job| Op::End { job }),
        (job.clone(), any::<bool>()).prop_map(|(job, expedite)| Op::Requeue { job, expedite }),
        job.clone().prop_map(|job| Op::Hold { job }),
        job.clone().prop_map(|job| Op::Release { job }),
        job.prop_map(|job| Op::Cancel { job }),
        Just(Op::Tick),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn usage_is_conserved_without_decay(ops in prop::collection::vec((0i64..30, op()), 1..120)) {
        let config = Config { decay_half_life_secs: 0, ..Config::default() };
        let mut replay = Replay::new(config);
        let mut t = 1_000;
        let mut charged = 0.0;
        for (i, (dt, op)) in ops.into_iter().enumerate() {
            t += dt;
            let event = Event { t, op };
            let before = replay.report.applied;
            let running_before: Vec<(String, i64, f64)> = replay.state().jobs.values().filter_map(|j| match j.phase {
                fairflow_oracle::state::JobPhase::Running { since, rate } => Some((j.id.clone(), since, rate as f64 / 1024.0)),
                _ => None,
            }).collect();
            replay.feed(LogLine { line: i as u64 + 1, event: Ok(event.clone()) });
            if replay.report.applied > before {
                match &event.op {
                    Op::Usage { amount, .. } => charged += amount,
                    Op::End { job } | Op::Requeue { job, .. } => {
                        let (_, since, rate) = running_before.iter().find(|(id, _, _)| id == job).unwrap();
                        charged += rate * (t - since) as f64;
                    }
                    _ => {}
                }
            }
        }
        let tree = Tree::build(replay.state());
        // Running jobs' accrual so far is visible too (continuous accrual).
        let running: f64 = replay.state().jobs.values().filter_map(|j| match j.phase {
            fairflow_oracle::state::JobPhase::Running { since, rate } => Some(rate as f64 / 1024.0 * (replay.state().now - since) as f64),
            _ => None,
        }).sum();
        prop_assert_eq!(tree.usage_tres_secs(0), charged + running);
    }
}
