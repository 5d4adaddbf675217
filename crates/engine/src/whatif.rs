//! What-if: the current state against the same state with proposed changes
//! (a small event log: share changes, a reorganisation, submissions,
//! `config` events with other weights, flags, a fair-share algorithm or a
//! priority model), both evaluated by the batch oracle on copies of the book,
//! so the live state is never touched. The answer
//! (`fairflow_model::report::whatif::WhatIf`) is per user association the
//! change in fair-share factor and per job the change in priority and queue
//! position, ranked by impact.
//!
//! The proposal is checked and applied by the book like any events
//! (`Book::check`, `Book::apply`); a proposal with any rejected line is
//! refused whole, with every rejection's line, field and reason. An event
//! time before the state's is taken as the state's time (a proposal is about
//! now); both sides are evaluated at the later of the state's time and the
//! proposal's last event.

use std::collections::{BTreeMap, BTreeSet};

use fairflow_book::Book;
use fairflow_ingest::{LogLine, Rejection};
use fairflow_model::report::whatif::{AssocChange, JobChange, WhatIf};
use fairflow_model::report::JobPriority;
use fairflow_oracle::{fairshare, priority, Replay};

/// Why a proposal has no answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WhatIfError {
    /// Lines of the proposal the book rejects (nothing was evaluated).
    #[error("the proposal is refused: {}", list(.0))]
    Rejected(Vec<Rejection>),
}

fn list(rejected: &[Rejection]) -> String {
    rejected
        .iter()
        .map(Rejection::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// One side's answers: factors, listed jobs, ranked positions.
struct Side {
    factors: BTreeMap<(String, String), f64>,
    jobs: BTreeMap<String, JobPriority>,
    positions: BTreeMap<String, u64>,
}

fn evaluate_side(replay: &Replay) -> Side {
    let state = replay.state();
    let factors = fairshare::user_factors(state);
    let listed = priority::evaluate(state, &factors);
    let positions = priority::queue(&listed)
        .into_iter()
        .enumerate()
        .map(|(index, job)| (job.job, index as u64 + 1))
        .collect();
    let jobs = listed.into_iter().map(|j| (j.job.clone(), j)).collect();
    Side {
        factors,
        jobs,
        positions,
    }
}

/// What `proposal` would change in `book` (which applied `applied` events);
/// see the module documentation. `book` is only read.
pub fn evaluate(book: &Book, applied: u64, proposal: Vec<LogLine>) -> Result<WhatIf, WhatIfError> {
    let mut before = Replay::from_book(book.clone(), applied);
    let mut after = before.clone();
    let now = before.state().now;
    let mut count = 0u64;
    for mut line in proposal {
        if let Ok(event) = &mut line.event {
            event.t = event.t.max(now);
        }
        count += u64::from(line.event.is_ok());
        after.feed(line);
    }
    if !after.report.rejected.is_empty() {
        return Err(WhatIfError::Rejected(after.report.rejected));
    }
    let at = after.state().now.max(now);
    before.advance_to(at);
    after.advance_to(at);
    let (old, new) = (evaluate_side(&before), evaluate_side(&after));

    let assoc_keys: BTreeSet<&(String, String)> =
        old.factors.keys().chain(new.factors.keys()).collect();
    let associations = assoc_keys
        .into_iter()
        .map(|key| AssocChange {
            account: key.0.clone(),
            user: key.1.clone(),
            before: old.factors.get(key).copied(),
            after: new.factors.get(key).copied(),
        })
        .collect();
    let job_ids: BTreeSet<&String> = old.jobs.keys().chain(new.jobs.keys()).collect();
    let jobs = job_ids
        .into_iter()
        .map(|id| {
            let either = new
                .jobs
                .get(id)
                .or_else(|| old.jobs.get(id))
                .expect("listed");
            JobChange {
                job: id.clone(),
                user: either.user.clone(),
                account: either.account.clone(),
                priority_before: old.jobs.get(id).map(|j| j.priority),
                priority_after: new.jobs.get(id).map(|j| j.priority),
                position_before: old.positions.get(id).copied(),
                position_after: new.positions.get(id).copied(),
            }
        })
        .collect();
    let mut answer = WhatIf {
        at,
        applied: count,
        associations,
        jobs,
    };
    answer.rank();
    Ok(answer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use fairflow_ingest::reader::read_events;
    use fairflow_model::Config;

    fn book_of(log: &str) -> Book {
        let mut replay = Replay::new(Config::default());
        replay.feed_all(
            read_events(log.as_bytes())
                .map(Result::unwrap)
                .collect::<Vec<_>>(),
        );
        assert!(
            replay.report.rejected.is_empty(),
            "{:?}",
            replay.report.rejected
        );
        replay.book().clone()
    }

    fn lines(log: &str) -> Vec<LogLine> {
        read_events(log.as_bytes()).map(Result::unwrap).collect()
    }

    const STATE: &str = r#"{"op":"config","t":100,"set":{"PriorityWeightFairshare":1000,"PriorityDecayHalfLife":0,"PriorityFlags":"NO_FAIR_TREE"}}
{"op":"account","t":100,"name":"a","shares":1}
{"op":"account","t":100,"name":"b","shares":1}
{"op":"user","t":100,"user":"u","account":"a"}
{"op":"user","t":100,"user":"v","account":"b"}
{"op":"usage","t":100,"account":"a","user":"u","amount":100}
{"op":"usage","t":100,"account":"b","user":"v","amount":100}
{"op":"submit","t":100,"job":"1","user":"u","account":"a"}
{"op":"submit","t":100,"job":"2","user":"v","account":"b"}
"#;

    #[test]
    fn a_share_change_moves_factors_and_the_queue() {
        let book = book_of(STATE);
        // Classic fair-share, no decay: F = 2^(-U/S). Both accounts have
        // half the shares and half the usage: every user's factor is
        // 2^(-0.5/0.5) = 0.5, both jobs priority 500 (tie: job 1 first by id).
        // Giving b 3 shares: b's normalised shares 0.75, usage 0.5:
        // v's F = 2^(-0.5/0.75) = 0.62996..., u's 2^(-0.5/0.25) = 0.25.
        let proposal = lines(r#"{"op":"account","t":50,"name":"b","shares":3}"#);
        let answer = evaluate(&book, 9, proposal).unwrap();
        assert_eq!(answer.at, 100);
        assert_eq!(answer.applied, 1);
        // Largest change first: u's -0.25, then v's +0.13.
        let u = &answer.associations[0];
        assert_eq!((u.account.as_str(), u.user.as_str()), ("a", "u"));
        assert_eq!((u.before, u.after), (Some(0.5), Some(0.25)));
        let v = &answer.associations[1];
        assert_eq!((v.account.as_str(), v.user.as_str()), ("b", "v"));
        assert_eq!(v.before, Some(0.5));
        assert!((v.after.unwrap() - (-0.5f64 / 0.75).exp2()).abs() < 1e-12);
        // Job 2 passes job 1: each moves one place; job 1 loses 250 points
        // (500 -> 250), job 2 gains 129 (500 -> 1000 * 0.62996 = 629.96,
        // truncated as Slurm does: 629): job 1 first.
        type Row<'a> = (&'a str, Option<u64>, Option<u64>, Option<u64>, Option<u64>);
        let moved: Vec<Row> = answer
            .jobs
            .iter()
            .map(|j| {
                (
                    j.job.as_str(),
                    j.priority_before,
                    j.priority_after,
                    j.position_before,
                    j.position_after,
                )
            })
            .collect();
        assert_eq!(
            moved,
            [
                ("1", Some(500), Some(250), Some(1), Some(2)),
                ("2", Some(500), Some(629), Some(2), Some(1)),
            ]
        );
        // The book itself is unchanged.
        assert_eq!(book, book_of(STATE));
    }

    #[test]
    fn a_bad_proposal_is_refused_with_line_field_and_reason() {
        let book = book_of(STATE);
        let proposal = lines(
            r#"{"op":"account","t":100,"name":"b","shares":3}
{"op":"user","t":100,"user":"w","account":"nowhere"}
{"op":"submit","t":100,"job":"3","user":"u","account":"a","urgency":99}
"#,
        );
        let WhatIfError::Rejected(rejected) = evaluate(&book, 9, proposal).unwrap_err();
        let lines: Vec<u64> = rejected.iter().map(|r| r.line).collect();
        assert_eq!(lines, [2, 3]);
        assert_eq!(rejected[0].field.as_deref(), Some("account"));
    }
}
