//! The worked examples as data: loads every case in `tests/cases/*.toml`
//! (the format is in `tests/cases/README.md`), replays its event log step by
//! step through the `Engine` interface on the batch oracle and on the
//! incremental engine with 1, 2 and 4 workers, and checks every expected
//! value. It also holds the engines to each other: after every step each
//! incremental run's table, user factors and priorities equal the batch
//! engine's, bit for bit. Every mismatch is reported with its case file,
//! step, row or job, field and engine, then the test fails once at the end.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use fairflow_engine::{BatchEngine, Engine, IncrementalEngine};
use fairflow_ingest::{parse_event, LogLine};
use fairflow_model::report::{partition_queue, FairshareRow, FairshareTable, JobPriority};
use fairflow_model::Config;
use serde::Deserialize;

/// Float cells compare within this much of the expected value, relative to
/// its size (at least 1): hand arithmetic in decimals and the engines' `f64`
/// operations agree to about 1e-15; a looser bound comes from the case.
const FLOAT_NOISE: f64 = 1e-12;

/// One case file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    /// What the case shows.
    title: String,
    /// Where the expected values come from, unless a step or check says.
    source: String,
    /// A recorded defect: the case must still fail (its mismatches are
    /// printed, not reported); once every check passes, the runner asks for
    /// this marker to be removed.
    known_defect: Option<String>,
    /// Event batches with the checks after each.
    #[serde(rename = "step")]
    steps: Vec<Step>,
}

/// One batch of events and what holds after it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Step {
    /// Events, one JSON object a line (`docs/events.md`); numbered from 1
    /// after `events_file`'s lines.
    #[serde(default)]
    events: String,
    /// Events from a file, relative to the case file (before `events`).
    events_file: Option<String>,
    /// Answer as of this time (`Engine::advance_to`) after the events.
    at: Option<i64>,
    /// Line numbers of this step's events the book must reject (others must
    /// be accepted).
    #[serde(default)]
    rejected: Vec<u64>,
    /// The source of this step's expected values.
    source: Option<String>,
    /// The algorithm the table names (`fair_tree`, `classic`, ...).
    algorithm: Option<String>,
    /// The table's rows in order: `account` or `account/user`.
    order: Option<Vec<String>>,
    /// The table as `sshare -l -p` lines with test24.4's columns (compared
    /// as a set; `order` checks the order).
    sshare_lines: Option<Vec<String>>,
    /// Every row's tickets.
    all_tickets: Option<u64>,
    /// Every user association's factor.
    all_factors: Option<Real>,
    /// Checks of table rows and user factors.
    #[serde(default, rename = "row")]
    rows: Vec<RowCheck>,
    /// Checks of job priorities.
    #[serde(default, rename = "job")]
    jobs: Vec<JobCheck>,
    /// The ranked queue's first jobs (all of `top_k`, default the list's
    /// length).
    top: Option<Vec<String>>,
    /// How many jobs `top` asks for.
    top_k: Option<usize>,
    /// One partition's queue (`top --partition`): `(job, priority there)`
    /// in order, every pending job in it.
    partition_top: Option<PartitionTop>,
}

/// Expected queue of one partition.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PartitionTop {
    partition: String,
    jobs: Vec<(String, u64)>,
}

/// Expected (partition, QOS) pair of a job.
#[derive(Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct PairCheck {
    partition: String,
    qos: String,
    priority: u64,
}

/// Expected cells of one association's row.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RowCheck {
    account: String,
    user: Option<String>,
    source: Option<String>,
    depth: Option<Int>,
    raw_shares: Option<Text>,
    norm_shares: Option<Real>,
    raw_usage: Option<Int>,
    norm_usage: Option<Real>,
    effective_usage: Option<Real>,
    fairshare: Option<Real>,
    level_fs: Option<Real>,
    tickets: Option<Int>,
    level_value: Option<Int>,
    fairshare_raw: Option<Int>,
    /// The user association's fair-share factor (`Engine::user_factors`).
    factor: Option<Real>,
}

/// Expected values of one job.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct JobCheck {
    job: String,
    source: Option<String>,
    /// `false`: the job has no priority row now.
    listed: Option<bool>,
    priority: Option<Int>,
    state: Option<String>,
    /// The job's own (primary) partition.
    partition: Option<String>,
    /// Normalized factor values by factor name.
    #[serde(default)]
    factors: BTreeMap<String, Real>,
    /// Weighted factor values by factor name.
    #[serde(default)]
    weighted: BTreeMap<String, Real>,
    /// The (partition, QOS) pairs with their priorities, in order (empty
    /// for a job with one pair).
    pairs: Option<Vec<PairCheck>>,
}

/// An expected floating-point cell.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum Real {
    /// Equal within `FLOAT_NOISE`.
    Number(f64),
    /// Within a tolerance the source's rounding needs.
    Tolerance { value: f64, tolerance: f64 },
    /// `"empty"`, `"inf"`, a fraction `"p/q"`, or a decimal as the source
    /// prints it (`"0.408479"`: the value printed with as many decimals).
    Text(String),
}

/// An expected integer cell: a number, `"0x..."` hex, or `"empty"`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum Int {
    Number(u64),
    Text(String),
}

/// An expected text cell: a number or a word (`"parent"`, `"empty"`).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum Text {
    Number(u64),
    Text(String),
}

impl Real {
    /// `None` when `got` matches, else what was expected.
    fn mismatch(&self, got: Option<f64>) -> Option<String> {
        let close = |got: f64, want: f64, tolerance: f64| {
            (got - want).abs() <= tolerance * want.abs().max(1.0)
        };
        let ok = match (self, got) {
            (Real::Text(t), None) => t == "empty",
            (_, None) => false,
            (Real::Number(want), Some(got)) => close(got, *want, FLOAT_NOISE),
            (Real::Tolerance { value, tolerance }, Some(got)) => (got - value).abs() <= *tolerance,
            (Real::Text(t), Some(got)) => match t.as_str() {
                "empty" => false,
                "inf" => got == f64::INFINITY,
                t if t.contains('/') => {
                    let (p, q) = t.split_once('/').expect("a fraction");
                    let p: f64 = p.trim().parse().expect("a fraction's numerator");
                    let q: f64 = q.trim().parse().expect("a fraction's denominator");
                    close(got, p / q, FLOAT_NOISE)
                }
                t => {
                    let decimals = t.split_once('.').map_or(0, |(_, d)| d.len());
                    format!("{got:.decimals$}") == t
                }
            },
        };
        (!ok).then(|| format!("{self:?}"))
    }
}

impl Int {
    fn mismatch(&self, got: Option<u64>) -> Option<String> {
        let want = match self {
            Int::Number(n) => Some(*n),
            Int::Text(t) if t == "empty" => None,
            Int::Text(t) => Some(
                u64::from_str_radix(&t.trim_start_matches("0x").replace('_', ""), 16)
                    .unwrap_or_else(|_| panic!("{t:?} is not 0x-hex or \"empty\"")),
            ),
        };
        (want != got).then(|| format!("{self:?}"))
    }
}

impl Text {
    fn mismatch(&self, got: Option<String>) -> Option<String> {
        let want = match self {
            Text::Number(n) => Some(n.to_string()),
            Text::Text(t) if t == "empty" => None,
            Text::Text(t) => Some(t.clone()),
        };
        (want != got).then(|| format!("{self:?}"))
    }
}

/// The engines every case runs on.
fn engines() -> Vec<(String, Box<dyn Engine>)> {
    let mut all: Vec<(String, Box<dyn Engine>)> = vec![(
        "batch".to_string(),
        Box::new(BatchEngine::new(Config::default())),
    )];
    for workers in [1, 2, 4] {
        let engine = IncrementalEngine::start(workers, Config::default()).expect("workers start");
        all.push((format!("incremental, {workers} workers"), Box::new(engine)));
    }
    all
}

/// A step's log lines, numbered from 1 within the step.
fn step_lines(dir: &Path, step: &Step) -> Vec<LogLine> {
    let mut text = String::new();
    if let Some(file) = &step.events_file {
        let path = dir.join(file);
        text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
    text.push_str(&step.events);
    // Blank lines and `#` comments are skipped, as the log reader does;
    // line numbers count every line.
    text.lines()
        .enumerate()
        .map(|(i, l)| (i as u64 + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
        .map(|(line, l)| LogLine {
            line,
            event: parse_event(line, l),
        })
        .collect()
}

/// What one engine answered after one step.
#[derive(Debug, PartialEq)]
struct Answers {
    table: FairshareTable,
    factors: BTreeMap<(String, String), f64>,
    priorities: Vec<JobPriority>,
    top: Vec<JobPriority>,
}

fn row_name(account: &str, user: Option<&str>) -> String {
    match user {
        Some(user) => format!("{account}/{user}"),
        None => account.to_string(),
    }
}

/// One row as test24.4's `sshare -l -p` line: nine columns, the empty
/// GrpTRESMins, TRESRunMins `cpu=0` and `-p`'s trailing `|`.
fn sshare_line(row: &FairshareRow) -> String {
    let cell = |v: Option<f64>| v.map(|v| format!("{v:.6}")).unwrap_or_default();
    format!(
        "{}|{}|{}|{}|{}|{}|{}|{}|{}||cpu=0|",
        row.account,
        row.user.clone().unwrap_or_default(),
        row.raw_shares.map(|s| s.to_string()).unwrap_or_default(),
        cell(row.norm_shares),
        row.raw_usage,
        cell(row.norm_usage),
        cell(row.effective_usage),
        cell(row.fairshare),
        cell(row.level_fs),
    )
}

/// Check one step's expectations against one engine's answers.
fn check_step(step: &Step, answers: &Answers, fail: &mut dyn FnMut(String, &str, String)) {
    let table = &answers.table;
    if let Some(algorithm) = &step.algorithm {
        if table.algorithm.name() != algorithm {
            fail(
                "algorithm".into(),
                table.algorithm.name(),
                algorithm.clone(),
            );
        }
    }
    if let Some(order) = &step.order {
        let got: Vec<String> = table
            .rows
            .iter()
            .map(|r| row_name(&r.account, r.user.as_deref()))
            .collect();
        if &got != order {
            fail("order".into(), &format!("{got:?}"), format!("{order:?}"));
        }
    }
    if let Some(lines) = &step.sshare_lines {
        let mut got: Vec<String> = table.rows.iter().map(sshare_line).collect();
        let mut want = lines.clone();
        got.sort();
        want.sort();
        for line in want.iter().filter(|l| !got.contains(l)) {
            fail("sshare_lines".into(), "absent", line.clone());
        }
        for line in got.iter().filter(|l| !want.contains(l)) {
            fail("sshare_lines".into(), line, "not expected".into());
        }
    }
    if let Some(tickets) = step.all_tickets {
        for r in table.rows.iter().filter(|r| r.tickets != Some(tickets)) {
            let name = row_name(&r.account, r.user.as_deref());
            fail(
                format!("{name} tickets (all_tickets)"),
                &format!("{:?}", r.tickets),
                tickets.to_string(),
            );
        }
    }
    if let Some(factor) = &step.all_factors {
        for ((account, user), got) in &answers.factors {
            if let Some(want) = factor.mismatch(Some(*got)) {
                fail(
                    format!("{account}/{user} factor (all_factors)"),
                    &got.to_string(),
                    want,
                );
            }
        }
    }
    for check in &step.rows {
        let name = row_name(&check.account, check.user.as_deref());
        let Some(row) = table
            .rows
            .iter()
            .find(|r| r.account == check.account && r.user == check.user)
        else {
            fail(name, "no such row", "a row".into());
            continue;
        };
        let mut field = |field: &str, got: String, want: Option<String>| {
            if let Some(want) = want {
                let what = match &check.source {
                    Some(source) => format!("{name} {field} (source: {source})"),
                    None => format!("{name} {field}"),
                };
                fail(what, &got, want);
            }
        };
        let real =
            |want: &Option<Real>, got: Option<f64>| want.as_ref().and_then(|w| w.mismatch(got));
        let int =
            |want: &Option<Int>, got: Option<u64>| want.as_ref().and_then(|w| w.mismatch(got));
        field(
            "depth",
            row.depth.to_string(),
            int(&check.depth, Some(row.depth as u64)),
        );
        let shares = row.raw_shares.map(|s| s.to_string());
        field(
            "raw_shares",
            format!("{shares:?}"),
            check
                .raw_shares
                .as_ref()
                .and_then(|w| w.mismatch(shares.clone())),
        );
        for (name, want, got) in [
            ("norm_shares", &check.norm_shares, row.norm_shares),
            ("norm_usage", &check.norm_usage, row.norm_usage),
            (
                "effective_usage",
                &check.effective_usage,
                row.effective_usage,
            ),
            ("fairshare", &check.fairshare, row.fairshare),
            ("level_fs", &check.level_fs, row.level_fs),
        ] {
            field(name, format!("{got:?}"), real(want, got));
        }
        for (name, want, got) in [
            ("raw_usage", &check.raw_usage, Some(row.raw_usage)),
            ("tickets", &check.tickets, row.tickets),
            ("level_value", &check.level_value, row.level_value),
            ("fairshare_raw", &check.fairshare_raw, row.fairshare_raw),
        ] {
            field(name, format!("{got:?}"), int(want, got));
        }
        if check.factor.is_some() {
            let key = (
                check.account.clone(),
                check.user.clone().unwrap_or_default(),
            );
            let got = answers.factors.get(&key).copied();
            field("factor", format!("{got:?}"), real(&check.factor, got));
        }
    }
    for check in &step.jobs {
        let found = answers.priorities.iter().find(|p| p.job == check.job);
        let name = format!("job {}", check.job);
        let what = |field: &str| match &check.source {
            Some(source) => format!("{name} {field} (source: {source})"),
            None => format!("{name} {field}"),
        };
        let listed = check.listed.unwrap_or(true);
        let Some(job) = found else {
            if listed {
                fail(what("listed"), "not listed", "listed".into());
            }
            continue;
        };
        if !listed {
            fail(what("listed"), "listed", "not listed".into());
            continue;
        }
        if let Some(want) = check
            .priority
            .as_ref()
            .and_then(|w| w.mismatch(Some(job.priority)))
        {
            fail(what("priority"), &job.priority.to_string(), want);
        }
        if let Some(partition) = &check.partition {
            if &job.partition != partition {
                fail(what("partition"), &job.partition, partition.clone());
            }
        }
        if let Some(state) = &check.state {
            if job.state.name() != state {
                fail(what("state"), job.state.name(), state.clone());
            }
        }
        for (kind, expected) in [("factors", &check.factors), ("weighted", &check.weighted)] {
            for (factor, want) in expected {
                let got = job.factor(factor).map(|f| match kind {
                    "factors" => f.normalized,
                    _ => f.weighted,
                });
                if let Some(want) = want.mismatch(got) {
                    fail(what(&format!("{kind}.{factor}")), &format!("{got:?}"), want);
                }
            }
        }
        if let Some(pairs) = &check.pairs {
            let got: Vec<PairCheck> = job
                .pairs
                .iter()
                .map(|p| PairCheck {
                    partition: p.partition.clone(),
                    qos: p.qos.clone(),
                    priority: p.priority,
                })
                .collect();
            if &got != pairs {
                fail(what("pairs"), &format!("{got:?}"), format!("{pairs:?}"));
            }
        }
    }
    if let Some(expected) = &step.partition_top {
        let queue = partition_queue(
            &answers.priorities,
            std::slice::from_ref(&expected.partition),
        );
        let got: Vec<(String, u64)> = queue.iter().map(|p| (p.job.clone(), p.priority)).collect();
        if got != expected.jobs {
            fail(
                format!("partition_top {}", expected.partition),
                &format!("{got:?}"),
                format!("{:?}", expected.jobs),
            );
        }
    }
    if let Some(order) = &step.top {
        let got: Vec<String> = answers.top.iter().map(|p| p.job.clone()).collect();
        if &got != order {
            fail("top".into(), &format!("{got:?}"), format!("{order:?}"));
        }
    }
}

/// Run one case on every engine; returns the mismatches.
fn run_case(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).expect("case readable");
    let file = path
        .file_name()
        .expect("a file")
        .to_string_lossy()
        .to_string();
    let case: Case = match toml::from_str(&text) {
        Ok(case) => case,
        Err(e) => return vec![format!("{file}: not a case: {e}")],
    };
    assert!(!case.title.is_empty() && !case.steps.is_empty(), "{file}");
    let dir = path.parent().expect("a directory");
    let mut failures = Vec::new();
    let mut runs = engines();
    for (s, step) in case.steps.iter().enumerate() {
        let source = step.source.as_deref().unwrap_or(&case.source);
        let mut batch_answers: Option<Answers> = None;
        for (engine_name, engine) in runs.iter_mut() {
            let mut fail = |what: String, got: &str, want: String| {
                failures.push(format!(
                    "{file}, step {}, {what} ({engine_name}): got {got}, expected {want} [source: {source}]",
                    s + 1
                ));
            };
            let rejected = engine.apply(step_lines(dir, step)).expect("engine applies");
            let lines: Vec<u64> = rejected.iter().map(|r| r.line).collect();
            if lines != step.rejected {
                fail(
                    "rejected lines".into(),
                    &format!("{rejected:?}"),
                    format!("{:?}", step.rejected),
                );
            }
            if let Some(at) = step.at {
                engine.advance_to(at).expect("engine advances");
            }
            let k = step
                .top_k
                .unwrap_or_else(|| step.top.as_ref().map_or(0, Vec::len));
            let answers = Answers {
                table: engine.fairshare().expect("table"),
                factors: engine.user_factors().expect("factors"),
                priorities: engine.priorities().expect("priorities"),
                top: engine.top(k).expect("top").to_vec(),
            };
            check_step(step, &answers, &mut fail);
            match &batch_answers {
                None => batch_answers = Some(answers),
                Some(batch) if *batch != answers => fail(
                    "answers equal to the batch engine's".into(),
                    "different",
                    "bit-identical".into(),
                ),
                Some(_) => {}
            }
        }
    }
    match &case.known_defect {
        None => failures,
        Some(_) if failures.is_empty() => vec![format!(
            "{file}: every check passes now: remove its `known_defect`"
        )],
        Some(defect) => {
            println!(
                "{file}: known defect ({defect}), {} mismatches, e.g. {}",
                failures.len(),
                failures[0]
            );
            Vec::new()
        }
    }
}

fn cases_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases")
}

#[test]
fn every_case_on_both_engines_and_1_2_4_workers() {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(cases_dir())
        .expect("tests/cases")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "no case in {}", cases_dir().display());
    let failures: Vec<String> = paths.iter().flat_map(|p| run_case(p)).collect();
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
    println!("{} cases on 4 engine runs each", paths.len());
}
