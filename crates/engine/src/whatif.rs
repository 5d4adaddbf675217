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
//!
//! [`evaluate_rows`] answers the first `k` rows of each list: from the
//! incremental engine's live state when it takes the proposal (share
//! changes of existing associations at its time: `Engine::whatif_rows`),
//! else as [`evaluate`] does.
//!
//! A server bounds a proposal's work before anything is copied
//! ([`check_bounds`]: at most [`MAX_PROPOSAL_EVENTS`] events and
//! [`MAX_PROPOSAL_TIMES`] distinct later event times; under `INCR_ONLY` each
//! later time costs a whole evaluation); the command evaluates what it is
//! given. [`evaluate_base`] takes its own copy of the book and a `stop`
//! question asked between events and between the two sides, so a server can
//! give up on a what-if whose client left or whose time ran out.

use std::collections::{BTreeMap, BTreeSet};

use fairflow_book::Book;
use fairflow_ingest::{LogLine, Rejection};
use fairflow_model::report::whatif::{AssocChange, Evaluator, JobChange, WhatIf, WhatIfRows};
use fairflow_model::report::JobPriority;
use fairflow_oracle::{fairshare, priority, Replay};

/// The most events a proposal may hold.
pub const MAX_PROPOSAL_EVENTS: usize = 10_000;

/// The most distinct event times a proposal may step through (each time
/// later than every earlier one in the proposal counts once).
pub const MAX_PROPOSAL_TIMES: usize = 1_000;

/// Why a proposal has no answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WhatIfError {
    /// Lines of the proposal the book rejects (nothing was evaluated).
    #[error("the proposal is refused: {}", list(.0))]
    Rejected(Vec<Rejection>),
    /// The proposal is larger than a what-if evaluates (nothing was
    /// evaluated): the line where it crosses the limit, and the limit.
    #[error("the proposal is refused: {0}")]
    TooLarge(Rejection),
    /// The evaluation was stopped before it ended (its `stop` said so).
    #[error("the what-if was stopped before it ended")]
    Stopped,
    /// The engine failed while it answered from its live state.
    // String: `EngineError` is neither `Clone` nor `PartialEq`.
    #[error("the engine failed: {0}")]
    Engine(String),
}

/// A proposal as a read carries it: its lines (`Eq` for the service's
/// query type, whose other reads compare whole).
#[derive(Debug, Clone, PartialEq)]
pub struct Proposal(pub Vec<LogLine>);

impl Eq for Proposal {}

/// The state a what-if starts from: a copy of the book and how many events
/// it applied.
#[derive(Debug, Clone)]
pub struct Base {
    /// The book, copied.
    pub book: Book,
    /// Events it applied.
    pub applied: u64,
}

/// Refuse a proposal over [`MAX_PROPOSAL_EVENTS`] events or
/// [`MAX_PROPOSAL_TIMES`] distinct later times, naming the line that
/// crosses the limit and the limit.
pub fn check_bounds(proposal: &[LogLine]) -> Result<(), WhatIfError> {
    let mut events = 0usize;
    let mut times = 0usize;
    let mut latest = None;
    for line in proposal {
        let Ok(event) = &line.event else { continue };
        events += 1;
        if events > MAX_PROPOSAL_EVENTS {
            return Err(WhatIfError::TooLarge(Rejection::new(
                line.line,
                None,
                format!("a proposal holds at most {MAX_PROPOSAL_EVENTS} events"),
            )));
        }
        if latest.is_none_or(|t| event.t > t) {
            latest = Some(event.t);
            times += 1;
            if times > MAX_PROPOSAL_TIMES {
                return Err(WhatIfError::TooLarge(Rejection::new(
                    line.line,
                    Some("t"),
                    format!(
                        "a proposal steps through at most {MAX_PROPOSAL_TIMES} distinct event \
                         times (ticks included)"
                    ),
                )));
            }
        }
    }
    Ok(())
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
    // A job's position is its first entry's in the scheduler's queue.
    let mut positions = BTreeMap::new();
    for (index, entry) in priority::entry_queue(&listed).into_iter().enumerate() {
        positions.entry(entry.job).or_insert(index as u64 + 1);
    }
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
    let base = Base {
        book: book.clone(),
        applied,
    };
    evaluate_base(base, proposal, &|| false)
}

/// The first `k` rows of each list of the what-if of `proposal` on
/// `engine`'s state (see the module documentation), with how many rows
/// each list has in all and who evaluated it; `engine` is left as it was.
pub fn evaluate_rows(
    engine: &mut dyn crate::Engine,
    proposal: Vec<LogLine>,
    k: usize,
) -> Result<WhatIfRows, WhatIfError> {
    match engine.whatif_rows(&proposal, k) {
        Ok(Some(rows)) => Ok(rows),
        Ok(None) => {
            let whole = evaluate(engine.book(), engine.applied(), proposal)?;
            Ok(WhatIfRows::of_whole(whole, k, Evaluator::Oracle))
        }
        Err(e) => Err(WhatIfError::Engine(e.to_string())),
    }
}

/// [`evaluate`] on a copy of the state taken before, stopped with
/// [`WhatIfError::Stopped`] as soon as `stop` answers true (asked between
/// events and between the sides).
pub fn evaluate_base(
    base: Base,
    proposal: Vec<LogLine>,
    stop: &dyn Fn() -> bool,
) -> Result<WhatIf, WhatIfError> {
    // The proposal's side first, on a second copy, so a refused proposal
    // costs no evaluation and the two sides are never evaluated at once.
    let mut after = Replay::from_book(base.book.clone(), base.applied);
    let now = after.state().now;
    let mut count = 0u64;
    for mut line in proposal {
        if stop() {
            return Err(WhatIfError::Stopped);
        }
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
    after.advance_to(at);
    if stop() {
        return Err(WhatIfError::Stopped);
    }
    let new = evaluate_side(&after);
    drop(after);
    if stop() {
        return Err(WhatIfError::Stopped);
    }
    let mut before = Replay::from_book(base.book, base.applied);
    before.advance_to(at);
    let old = evaluate_side(&before);
    drop(before);

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
        let Err(WhatIfError::Rejected(rejected)) = evaluate(&book, 9, proposal) else {
            panic!("lines 2 and 3 are refused");
        };
        let lines: Vec<u64> = rejected.iter().map(|r| r.line).collect();
        assert_eq!(lines, [2, 3]);
        assert_eq!(rejected[0].field.as_deref(), Some("account"));
    }

    #[test]
    fn a_proposal_over_the_limits_is_refused_at_the_line_that_crosses_them() {
        // 1,000 ticks at distinct later times pass; the 1,001st time is
        // refused at its line (line 1,001), naming `t` and the limit.
        let ticks = |n: usize| -> String {
            (1..=n)
                .map(|i| format!("{{\"op\":\"tick\",\"t\":{}}}\n", 100 + i))
                .collect()
        };
        assert!(check_bounds(&lines(&ticks(MAX_PROPOSAL_TIMES))).is_ok());
        let Err(WhatIfError::TooLarge(at)) = check_bounds(&lines(&ticks(1_001))) else {
            panic!("1,001 times are too many");
        };
        assert_eq!((at.line, at.field.as_deref()), (1_001, Some("t")));
        assert!(at.reason.contains("at most 1000 distinct"), "{}", at.reason);
        // 10,001 events at one time: refused at line 10,001.
        let same_time: String = (0..=MAX_PROPOSAL_EVENTS)
            .map(|_| "{\"op\":\"tick\",\"t\":100}\n")
            .collect();
        let Err(WhatIfError::TooLarge(at)) = check_bounds(&lines(&same_time)) else {
            panic!("10,001 events are too many");
        };
        assert_eq!((at.line, at.field), (10_001, None));
    }

    #[test]
    fn a_stopped_evaluation_ends_without_an_answer() {
        let book = book_of(STATE);
        let proposal = lines(r#"{"op":"account","t":50,"name":"b","shares":3}"#);
        let base = Base {
            book: book.clone(),
            applied: 9,
        };
        let asked = std::cell::Cell::new(0);
        let stop = || {
            asked.set(asked.get() + 1);
            true
        };
        assert_eq!(
            evaluate_base(base, proposal, &stop),
            Err(WhatIfError::Stopped)
        );
        assert_eq!(asked.get(), 1, "stopped before the first event");
    }
}
