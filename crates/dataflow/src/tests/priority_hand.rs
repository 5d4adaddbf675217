//! Hand-computed checks of the priority dataflow on one worker: two Slurm
//! jobs whose order flips as one reaches the age cap and the other does not,
//! a tie broken by submit time, the number of records an update touches,
//! top reads answered from the kept top after batches of job changes, and a
//! what-if tally (walked, or one pass over every record when deep) and its
//! places tally answered from the first one's keys.

use crate::names::{JobIds, JobNames};
use crate::priority::crossings::{age_capped_at, next_crossing, Crossings};
use crate::priority::reader::whatif::{ProbeJob, ProbeKey, TallyPaths, TallyRequest};
use crate::priority::{Fact, JobRow, Phase, PriorityParams, PriorityReader};
use crate::types::AssocId;
use fairflow_model::Config;

use super::priority_dataflow::PriorityDataflow;
use timely::worker::Worker;

fn params() -> PriorityParams {
    PriorityParams::from_config(&Config {
        weight_age: 2000,
        max_age_secs: 2000,
        weight_fairshare: 4000,
        ..Config::default()
    })
}

/// The user associations `(a, ua)` and `(a, ub)`, interned.
const UA: AssocId = 0;
const UB: AssocId = 1;

fn fairshare(assoc: AssocId, factor: f64) -> Fact {
    Fact::Fairshare {
        assoc,
        factor_bits: factor.to_bits(),
    }
}

/// The configuration of [`params`] and the factors of `ua` (0.5: a
/// fair-share term of 2000) and `ub` (0.75: 3000).
fn two_users(h: &mut PriorityDataflow) {
    h.facts.insert(Fact::Config(Box::new(params())));
    h.facts.insert(fairshare(UA, 0.5));
    h.facts.insert(fairshare(UB, 0.75));
}

/// A pending job of account 0, partition 1 and QOS 2, named `id` in `ids`.
fn job(ids: &mut JobIds, id: &str, assoc: AssocId, queued_at: i64, now: i64) -> JobRow {
    let mut row = JobRow {
        job: ids.intern(id),
        assoc,
        account: 0,
        partition: 1,
        qos: 2,
        phase: Phase::Pending,
        submit_at: queued_at,
        queued_at,
        begun: true,
        nodes_bits: 1f64.to_bits(),
        cpus_bits: 1f64.to_bits(),
        ..JobRow::default()
    };
    row.age_capped = age_capped_at(&params(), &row, now);
    row
}

/// The first `k` jobs of the queue at `now`, with their priorities.
fn top(reader: &mut PriorityReader, k: usize, now: i64) -> Vec<(String, u64)> {
    reader
        .top(k, now)
        .into_iter()
        .map(|p| (p.job, p.priority))
        .collect()
}

#[test]
fn ages_cross_the_cap_ties_break_by_submit_time_and_updates_touch_few_records() {
    timely::execute_directly(|worker| {
        let names = JobNames::default();
        let mut h = PriorityDataflow::build(worker, names.clone());
        let ids = &mut JobIds::new(names);

        // Fair-share weight 4000, age weight 2000 over 2000 s.
        // A: factor 0.5 (2000), queued at 0. B: factor 0.75 (3000), queued at 1000.
        two_users(&mut h);
        h.jobs.insert(job(ids, "A", UA, 0, 1500));
        h.jobs.insert(job(ids, "B", UB, 1000, 1500));
        h.step(worker);

        // At 1500: A = 2000 + 2000·1500/2000 = 3500; B = 3000 + 2000·500/2000 = 3500.
        // A tie: A was submitted first.
        assert_eq!(
            top(&mut h.reader, 10, 1500),
            vec![("A".to_string(), 3500), ("B".to_string(), 3500)]
        );
        // At 2500, read without the cap crossing applied (A's row still
        // uncapped): A = 2000 + 2000 (capped) = 4000; B = 3000 + 1500 = 4500.
        assert_eq!(
            top(&mut h.reader, 10, 2500),
            vec![("B".to_string(), 4500), ("A".to_string(), 4000)]
        );
        // The driver's schedule: A crosses at 0 + 2000, B at 1000 + 2000.
        let mut crossings = Crossings::new();
        for row in [job(ids, "A", UA, 0, 1500), job(ids, "B", UB, 1000, 1500)] {
            crossings.schedule(row.job, next_crossing(&params(), &row, 1500));
        }
        assert_eq!(crossings.due(2500), vec![ids.get("A").unwrap()]);
        h.jobs.remove(job(ids, "A", UA, 0, 1500));
        h.jobs.insert(job(ids, "A", UA, 0, 2500));
        let moved = h.step(worker);
        // Moving A to the capped class: its combination (association, QOS,
        // partition) is still named, so no context moves; retract + insert of
        // its record (2), its entry out of ua's uncapped jobs and into its
        // capped jobs (2), and ua's entries in the user orders: out of the
        // uncapped order (A was its only uncapped job), into the capped (2).
        assert_eq!(moved, 6);
        assert_eq!(
            top(&mut h.reader, 10, 2500),
            vec![("B".to_string(), 4500), ("A".to_string(), 4000)]
        );
        let explained = h.reader.job(ids.get("A").unwrap(), 2500).unwrap();
        assert_eq!(explained.factor("age").unwrap().normalized, 1.0);
        assert_eq!(explained.factor("fairshare").unwrap().weighted, 2000.0);

        // A submit into a combination (association, QOS, partition) that
        // already has jobs: its record (1), its entry in ua's uncapped jobs
        // (1), and ua's new entry in the uncapped user order (1): 3; no
        // context and no reduce's output changes.
        h.jobs.insert(job(ids, "C", UA, 2500, 2500));
        assert_eq!(h.step(worker), 3);

        // A fair-share change for ua (jobs A and C, both ranked): no context,
        // no record and no job entry changes; ua's two entries in the user
        // orders (uncapped: C, capped: A) are re-keyed: 2.
        h.facts.remove(fairshare(UA, 0.5));
        h.facts.insert(fairshare(UA, 0.25));
        assert_eq!(h.step(worker), 2);
        // At 2500: A = 1000 + 2000 = 3000; C = 1000 + 0 = 1000; B = 4500.
        assert_eq!(
            top(&mut h.reader, 10, 2500),
            vec![
                ("B".to_string(), 4500),
                ("A".to_string(), 3000),
                ("C".to_string(), 1000)
            ]
        );
        // Passing time alone sends nothing and touches nothing: at 3000,
        // B = 3000 + 2000 (capped) = 5000, A = 3000, C = 1000 + 500 = 1500.
        assert_eq!(
            top(&mut h.reader, 10, 3000),
            vec![
                ("B".to_string(), 5000),
                ("A".to_string(), 3000),
                ("C".to_string(), 1500)
            ]
        );
        assert_eq!(h.touched.get(), 0);
    });
}

#[test]
fn jobs_at_the_floor_are_read_in_submit_then_id_order() {
    timely::execute_directly(|worker| {
        let names = JobNames::default();
        let mut h = PriorityDataflow::build(worker, names.clone());
        let mut ids = JobIds::new(names);
        // Slurm with every weight 0: the priority is site - nice, at least 1.
        h.facts.insert(Fact::Config(Box::default()));
        let mut row = |id: &str, submit_at: i64, site: Option<i64>| JobRow {
            job: ids.intern(id),
            submit_at,
            queued_at: submit_at,
            begun: true,
            site_factor: site.unwrap_or(0),
            ..JobRow::default()
        };
        h.jobs.insert(row("10", 100, None));
        h.jobs.insert(row("9", 100, None));
        h.jobs.insert(row("j1", 50, None));
        h.jobs.insert(row("3", 200, Some(5)));
        h.step(worker);
        // "3": site 5 -> 5. The others: 0 -> 1 (Slurm's floor), by submit
        // time (j1 at 50), then numeric id (9 before 10).
        let all = vec![
            ("3".to_string(), 5),
            ("j1".to_string(), 1),
            ("9".to_string(), 1),
            ("10".to_string(), 1),
        ];
        assert_eq!(top(&mut h.reader, 1, 300), all[..1].to_vec());
        assert_eq!(top(&mut h.reader, 3, 300), all[..3].to_vec());
        assert_eq!(top(&mut h.reader, 10, 300), all);
    });
}

/// The reader's top `k` at `now` is `expected` (job names and priorities),
/// and it has answered `kept_reads` reads from its kept top so far.
fn assert_top_and_kept_reads(
    reader: &mut PriorityReader,
    (k, now): (usize, i64),
    expected: &[(&str, u64)],
    kept_reads: u64,
) {
    let expected: Vec<(String, u64)> = expected
        .iter()
        .map(|&(name, priority)| (name.to_string(), priority))
        .collect();
    assert_eq!(top(reader, k, now), expected, "top {k} at {now}");
    assert_eq!(
        reader.kept_reads(),
        kept_reads,
        "kept reads after top {k} at {now}"
    );
}

#[test]
fn job_batches_are_read_from_the_kept_top_and_a_fact_makes_the_reader_search() {
    timely::execute_directly(|worker| {
        let names = JobNames::default();
        let mut h = PriorityDataflow::build(worker, names.clone());
        let ids = &mut JobIds::new(names);
        // Fair-share weight 4000, age weight 2000 over 2000 s (no job
        // reaches the cap here). ua: factor 0.5 (2000), ub: 0.75 (3000).
        two_users(&mut h);
        h.jobs.insert(job(ids, "A", UA, 0, 1500));
        h.jobs.insert(job(ids, "B", UB, 1000, 1500));
        h.jobs.insert(job(ids, "D", UA, 1200, 1500));
        h.step(worker);
        // At 1500: A = 2000 + 1500 = 3500, B = 3000 + 500 = 3500 (A first:
        // submitted first), D = 2000 + 300 = 2300. A search.
        assert_top_and_kept_reads(&mut h.reader, (2, 1500), &[("A", 3500), ("B", 3500)], 0);

        // A submit: E of ub at 1500. At 1600: A = 3600, B = 3600,
        // E = 3000 + 100 = 3100, D = 2400: the kept A and B stay first.
        h.jobs.insert(job(ids, "E", UB, 1500, 1600));
        h.step(worker);
        assert_top_and_kept_reads(&mut h.reader, (2, 1600), &[("A", 3600), ("B", 3600)], 1);

        // A starts (its record leaves the ranking). At 1700: B = 3700,
        // E = 3200, D = 2500: E, changed in the last batch, follows B.
        let running = JobRow {
            phase: Phase::Running,
            ..job(ids, "A", UA, 0, 1600)
        };
        h.jobs.remove(job(ids, "A", UA, 0, 1500));
        h.jobs.insert(running);
        h.step(worker);
        assert_top_and_kept_reads(&mut h.reader, (2, 1700), &[("B", 3700), ("E", 3200)], 2);
        // A smaller k at the same time is a prefix, from the kept top too.
        assert_top_and_kept_reads(&mut h.reader, (1, 1700), &[("B", 3700)], 3);

        // A fact: ua's factor becomes 1 (4000). D = 4000 + 500 = 4500
        // leads, which the kept top (B, E) does not hold: a search.
        h.facts.remove(fairshare(UA, 0.5));
        h.facts.insert(fairshare(UA, 1.0));
        h.step(worker);
        assert_top_and_kept_reads(&mut h.reader, (2, 1700), &[("D", 4500), ("B", 3700)], 3);

        // D leaves: that search read only D and B (E's bound was below
        // B's priority), so one job is left of the kept top, fewer than k:
        // a search. At 1800, B = 3800, E = 3300.
        h.jobs.remove(job(ids, "D", UA, 1200, 1500));
        h.step(worker);
        assert_top_and_kept_reads(&mut h.reader, (2, 1800), &[("B", 3800), ("E", 3300)], 3);
        // A hold-free change of E's nice (its record changes): at 1900,
        // B = 3900, E = 3000 + 400 - 100 = 3300, read from the kept top.
        let nicer = JobRow {
            nice: 100,
            ..job(ids, "E", UB, 1500, 1800)
        };
        h.jobs.remove(job(ids, "E", UB, 1500, 1600));
        h.jobs.insert(nicer);
        h.step(worker);
        assert_top_and_kept_reads(&mut h.reader, (2, 1900), &[("B", 3900), ("E", 3300)], 4);
    });
}

#[test]
fn the_driver_sends_a_combination_only_when_the_first_job_names_it_or_the_last_stops() {
    use crate::priority::{Combo, ComboRefs};
    let mut ids = JobIds::new(JobNames::default());
    let mut refs = ComboRefs::default();
    let a = job(&mut ids, "A", UA, 0, 0);
    let b = job(&mut ids, "B", UA, 10, 10);
    let combo = Combo::of(&a);
    // Pending and begun: category 0 of partition 1.
    let pending_pair = ((1, 0), 1);
    // Two jobs of one combination in one batch: the combination once.
    assert_eq!(
        refs.deltas(&[(a.clone(), 1), (b.clone(), 1)]),
        (vec![(combo, 1)], vec![pending_pair])
    );
    // A starts: its row changes within the combination, which B still
    // names; the running category of partition 1 appears.
    let mut running = a.clone();
    running.phase = Phase::Running;
    assert_eq!(
        refs.deltas(&[(a.clone(), -1), (running.clone(), 1)]),
        (vec![], vec![((1, 4), 1)])
    );
    // B goes: A still names the combination; no pending job names partition 1.
    assert_eq!(refs.deltas(&[(b, -1)]), (vec![], vec![((1, 0), -1)]));
    // A goes: the combination and its pair go.
    assert_eq!(
        refs.deltas(&[(running, -1)]),
        (vec![(combo, -1)], vec![((1, 4), -1)])
    );
    // Another association's job: a new combination.
    let c = job(&mut ids, "C", UB, 0, 0);
    assert_eq!(
        refs.deltas(&[(c.clone(), 1)]),
        (vec![(Combo::of(&c), 1)], vec![pending_pair])
    );
}

/// The what-if tallies' queue: two users, nine jobs, at 1500 (fair-share
/// 4000 · factor + age 2000 · age / 2000 s): A = 2000 + 1500 = 3500, B =
/// 3000 + 500 = 3500 (after A: later submit), E = 3000 + 100 = 3100, D =
/// 2000 + 300 = 2300, and F to J = 2000 + 0 = 2000.
fn tally_queue(h: &mut PriorityDataflow, worker: &mut Worker, ids: &mut JobIds) {
    two_users(h);
    let queued = [
        ("A", UA, 0),
        ("B", UB, 1000),
        ("D", UA, 1200),
        ("E", UB, 1400),
    ];
    let late = ["F", "G", "H", "I", "J"].map(|name| (name, UA, 1500));
    for (name, assoc, queued_at) in queued.into_iter().chain(late) {
        h.jobs.insert(job(ids, name, assoc, queued_at, 1500));
    }
    h.step(worker);
}

/// A changed job's key.
fn probe(priority: u64, submit_at: i64, job: &str) -> ProbeKey {
    ProbeKey {
        priority,
        submit_at,
        job: ProbeJob::Name(job.into()),
    }
}

/// The proposal both tally tests ask about: E moves from 3100 to 2200 (its
/// two keys cut the queue into A, B ahead of both, shift 0; D between, one
/// place up, shift -1; F to J behind both, shift 0), keeping the one job
/// that moves; and the places tally of that job, D (at 2300).
fn e_moves_down(ids: &mut JobIds) -> (TallyRequest, TallyRequest) {
    let e = ids.intern("E");
    let excluded = vec![e];
    // The changed job's probes by id, as the driver of one process sends them.
    let by_id = |priority| ProbeKey {
        job: ProbeJob::Id(e),
        ..probe(priority, 1400, "E")
    };
    let request = TallyRequest {
        probes: vec![by_id(3100), by_id(2200)],
        shifts: vec![0, -1, 0],
        excluded: excluded.clone(),
        excluded_are_probes: true,
        keep: 1,
        now: 1500,
    };
    let places = TallyRequest {
        probes: vec![probe(2300, 1200, "D")],
        shifts: vec![0, 0],
        excluded,
        excluded_are_probes: false,
        keep: 0,
        now: 1500,
    };
    (request, places)
}

/// A tally's counts and its kept jobs as (interval, id, priority).
fn tallied(
    h: &mut PriorityDataflow,
    request: &TallyRequest,
) -> (Vec<u64>, Vec<(u64, String, u64)>) {
    let tally = h.reader.tally_probes(request).expect("Slurm's model");
    let moved = (tally.moved.iter())
        .map(|(at, job)| (*at, job.job.clone(), job.priority))
        .collect();
    (tally.counts, moved)
}

/// A places tally's count of the jobs ahead of its one probe (itself
/// included).
fn place(h: &mut PriorityDataflow, request: &TallyRequest) -> u64 {
    h.reader
        .tally_probes(request)
        .expect("Slurm's model")
        .counts[0]
}

#[test]
fn a_whatif_tally_counts_its_window_and_its_places_come_from_its_keys() {
    timely::execute_directly(|worker| {
        let names = JobNames::default();
        let mut h = PriorityDataflow::build(worker, names.clone());
        let ids = &mut JobIds::new(names);
        tally_queue(&mut h, worker, ids);
        let paths = |windowed, keyed| TallyPaths {
            scanned: 0,
            keyed,
            windowed,
        };
        // F to J, at 2000, are below the window [2200, 3100] of the keys:
        // not counted.
        let (request, places) = e_moves_down(ids);
        let moved = vec![(1, "D".to_string(), 2300)];
        assert_eq!(tallied(&mut h, &request), (vec![2, 1, 0], moved));
        assert_eq!(h.reader.tally_paths(), paths(1, 0));
        // D's place: the unchanged jobs ahead of it, itself included (A
        // and B above the window, D), from the first tally's keys.
        assert_eq!(place(&mut h, &places), 3);
        assert_eq!(h.reader.tally_paths(), paths(1, 1));
        // Asked again (the keys were taken): the window [2300, 2300], to
        // the same count (E, left out, is above it at 3100: taken back out
        // of the count above the window).
        assert_eq!(place(&mut h, &places), 3);
        assert_eq!(h.reader.tally_paths(), paths(2, 1));
        // A probe above the keys' window is not answered from them: B's
        // place (A ahead of it at 3500, submitted earlier) is counted.
        h.reader.tally_probes(&request).expect("Slurm's model");
        let b = TallyRequest {
            probes: vec![probe(3500, 1000, "B")],
            ..places
        };
        assert_eq!(place(&mut h, &b), 2);
        assert_eq!(h.reader.tally_paths(), paths(4, 1));
    });
}

#[test]
fn a_whatif_tally_read_job_by_job_counts_intervals_and_its_places_come_from_its_keys() {
    timely::execute_directly(|worker| {
        let names = JobNames::default();
        let mut h = PriorityDataflow::build(worker, names.clone());
        let ids = &mut JobIds::new(names);
        tally_queue(&mut h, worker, ids);
        // As where the bounds do not count (Flux, a bound that does not
        // hold at the time).
        h.reader.tally_job_by_job();
        let paths = |scanned, keyed| TallyPaths {
            scanned,
            keyed,
            windowed: 0,
        };
        // Four of the nine jobs (A, B, E, D) are at 2200 or above, a
        // quarter or more: one pass over every record, which counts F to J
        // too.
        let (request, places) = e_moves_down(ids);
        let moved = vec![(1, "D".to_string(), 2300)];
        assert_eq!(tallied(&mut h, &request), (vec![2, 1, 5], moved));
        assert_eq!(h.reader.tally_paths(), paths(1, 0));
        // The kept job's place: the unchanged jobs ahead of it, itself
        // included (A, B, D), counted from the first tally's keys.
        assert_eq!(place(&mut h, &places), 3);
        assert_eq!(h.reader.tally_paths(), paths(1, 1));
        // Asked again, the keys are gone (taken by the tally above): a pass
        // over every record, to the same count.
        assert_eq!(place(&mut h, &places), 3);
        assert_eq!(h.reader.tally_paths(), paths(2, 1));
        // B's place: two of the nine jobs (A, B) are at 3500, less than a
        // quarter: the walk.
        let shallow = TallyRequest {
            probes: vec![probe(3500, 1000, "B")],
            ..places.clone()
        };
        assert_eq!(place(&mut h, &shallow), 2);
        assert_eq!(h.reader.tally_paths(), paths(2, 1));
        // At another time nothing is answered from keys: at 1600 D is
        // 2400 and still third.
        h.reader.tally_probes(&request).expect("Slurm's model");
        let later = TallyRequest {
            probes: vec![probe(2400, 1200, "D")],
            now: 1600,
            ..places
        };
        assert_eq!(place(&mut h, &later), 3);
        assert_eq!(h.reader.tally_paths().keyed, 1);
    });
}
