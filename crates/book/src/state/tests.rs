//! The book state's own tests: accrual under each usage model and with a
//! calc period, jobs shared between copies of a book, a job count beyond
//! its bytes; and the replay helpers `state::time`'s tests use too.

use super::*;
use crate::Book;
use fairflow_ingest::reader::read_events;

pub(super) struct Replayed {
    pub(super) state: State,
}

pub(super) fn replay(log: &str) -> Replayed {
    let mut book = Book::new(Config::default());
    for line in read_events(log.as_bytes()) {
        let line = line.unwrap();
        let number = line.line;
        let event = line.event.unwrap();
        book.apply(number, &event).unwrap();
    }
    Replayed {
        state: book.state().clone(),
    }
}

pub(super) fn user_usage_tres_secs(state: &State, account: &str, user: &str) -> f64 {
    let own = state.users[&(account.to_string(), user.to_string())].usage;
    state
        .frame
        .to_tres_secs(state.visible_usage(&own), state.now)
}

pub(super) const SETUP: &str = r#"{"op":"config","t":1000,"set":{"PriorityDecayHalfLife":0}}
{"op":"user","t":1000,"user":"u","account":"root"}
{"op":"submit","t":1000,"job":"1","user":"u","account":"root","tres":{"cpu":4}}
{"op":"start","t":1010,"job":"1"}
"#;

#[test]
fn under_flux_usage_a_job_charges_its_rounded_usage_when_it_ends_and_models_switch() {
    use fairflow_model::usage::FRAME_UNITS_PER_TRES_SEC as NS;
    let log = r#"{"op":"config","t":0,"set":{"UsageModel":"flux","FluxNodeWeight":0.3,"FluxCoreWeight":0.001}}
{"op":"user","t":0,"user":"u","account":"root"}
{"op":"submit","t":0,"job":"1","user":"u","account":"root","tres":{"node":3,"cpu":7}}
{"op":"start","t":10,"job":"1"}
{"op":"tick","t":15}
"#;
    // While it runs, nothing is charged.
    let r = replay(log);
    assert_eq!(user_usage_tres_secs(&r.state, "root", "u"), 0.0);
    // Ending at 17: (3 * 0.3 + 7 * 0.001) * 7 = 6.349 in f64
    // (6.348999999999999), rounded to five decimals as Python does: 6.349 =
    // 634_900 hundred-thousandths.
    let ended = format!("{log}{{\"op\":\"end\",\"t\":17,\"job\":\"1\"}}\n");
    let r = replay(&ended);
    let own = r.state.users[&("root".to_string(), "u".to_string())].usage;
    assert_eq!(own.settled, 634_900 * (NS / 100_000));
    // Back to Slurm's usage model at 20: the usage stays (decaying from
    // 20), a job started then accrues its CPUs per second.
    let back = format!(
        "{ended}{}",
        r#"{"op":"config","t":20,"set":{"UsageModel":"slurm","PriorityDecayHalfLife":0}}
{"op":"submit","t":20,"job":"2","user":"u","account":"root","tres":{"cpu":2}}
{"op":"start","t":20,"job":"2"}
{"op":"tick","t":30}
"#
    );
    let r = replay(&back);
    assert!(r.state.flux_bins.is_none());
    // 6.349 + 2 CPUs * 10 s = 26.349.
    let usage = user_usage_tres_secs(&r.state, "root", "u");
    assert!((usage - 26.349).abs() < 1e-9, "{usage}");
}

#[test]
fn continuous_accrual_is_visible_at_any_time() {
    // 4 CPUs from 1010 to 1110, no decay: 400 CPU-seconds.
    let r = replay(&format!("{SETUP}{{\"op\":\"tick\",\"t\":1110}}\n"));
    assert_eq!(user_usage_tres_secs(&r.state, "root", "u"), 400.0);
}

#[test]
fn a_calc_period_makes_accrual_visible_at_its_boundaries() {
    let log = format!(
        "{}{SETUP}{{\"op\":\"tick\",\"t\":1190}}\n",
        r#"{"op":"config","t":900,"set":{"PriorityCalcPeriod":"1:00"}}"#.to_string() + "\n"
    );
    // Boundaries every 60 s: 1020, 1080, ... The last one <= 1190 is 1140:
    // 4 CPUs from 1010 to 1140 = 520 CPU-seconds.
    let r = replay(&log);
    assert_eq!(user_usage_tres_secs(&r.state, "root", "u"), 520.0);
    // The job ending at 1195 settles exactly 4 * 185 = 740.
    let r = replay(&format!(
        "{log}{{\"op\":\"end\",\"t\":1195,\"job\":\"1\"}}\n"
    ));
    let own = r.state.users[&("root".to_string(), "u".to_string())].usage;
    // 740 TRES-seconds are 740 · 2^20 · 5^6 = 12_124_160_000_000 frame units.
    assert_eq!(own.settled, 12_124_160_000_000);
    assert_eq!((own.rate, own.rate_offset), (0, 0));
}

#[test]
fn a_copy_shares_the_jobs_and_each_side_changes_only_its_own() {
    let apply = |book: &mut Book, log: &str| {
        for line in read_events(log.as_bytes()) {
            let line = line.unwrap();
            book.apply(line.line, &line.event.unwrap()).unwrap();
        }
    };
    let mut book = Book::new(Config::default());
    apply(
        &mut book,
        &format!(
            "{SETUP}{}",
            r#"{"op":"submit","t":1010,"job":"2","user":"u","account":"root"}
{"op":"submit","t":1010,"job":"3","user":"u","account":"root"}
"#
        ),
    );
    let mut copy = book.clone();
    let shared = |a: &Book, b: &Book, id: &str| Arc::ptr_eq(&a.state.jobs[id], &b.state.jobs[id]);
    assert!(["1", "2", "3"].iter().all(|id| shared(&book, &copy, id)));
    apply(
        &mut book,
        r#"{"op":"start","t":1020,"job":"2"}
{"op":"end","t":1030,"job":"1"}
{"op":"submit","t":1030,"job":"4","user":"u","account":"root"}
"#,
    );
    apply(&mut copy, r#"{"op":"hold","t":1040,"job":"3"}"#);
    // The copy kept its jobs as they were, but for its own hold.
    let ids = |b: &Book| b.state.jobs.keys().cloned().collect::<Vec<_>>();
    assert_eq!(ids(&copy), ["1", "2", "3"]);
    assert!(copy.state.jobs["2"].is_pending());
    assert!(matches!(
        copy.state.jobs["1"].phase,
        JobPhase::Running { .. }
    ));
    assert_eq!(copy.state.jobs["3"].phase, JobPhase::Held);
    // The book has its events' changes and not the copy's hold.
    assert_eq!(ids(&book), ["2", "3", "4"]);
    assert!(matches!(
        book.state.jobs["2"].phase,
        JobPhase::Running { since: 1020, .. }
    ));
    assert!(book.state.jobs["3"].is_pending());
    assert!(!shared(&book, &copy, "2") && !shared(&book, &copy, "3"));
}

#[test]
fn a_jobs_count_beyond_the_bytes_is_an_error_not_an_abort() {
    #[derive(serde::Deserialize)]
    struct OnlyJobs {
        #[serde(deserialize_with = "super::deserialize_jobs")]
        _jobs: Jobs,
    }
    // postcard: a map's count as a varint (here 2^35), then no entries.
    let claimed = [0x80, 0x80, 0x80, 0x80, 0x80, 0x01];
    assert!(postcard::from_bytes::<OnlyJobs>(&claimed).is_err());
}
