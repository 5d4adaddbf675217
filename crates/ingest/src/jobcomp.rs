//! Slurm's `jobcomp/filetxt` records, turned into the `usage` each completed
//! job charged: its billable TRES (the `billing` count of `Tres=` when
//! present, else `ProcCnt`) times its run time, charged to `(Account, user)`
//! at `EndTime`. Times are `YYYY-MM-DDTHH:MM:SS` in slurmctld's local time,
//! read in the site's zone (`TZ`, else the system's; see
//! [`crate::slurm_time`]). Jobs that never ran (no start, or no run time)
//! charge nothing.
//!
//! **The format.** Slurm 22.05 to 25.11 write one record with one `write`, by
//! the plugin's `JOB_FORMAT`, in this order (`[..]` only for array and
//! heterogeneous jobs; 22.05 appends a select plugin's text after
//! `ExitCode`):
//!
//! `JobId UserId=name(uid) GroupId=name(gid) Name JobState Partition
//! TimeLimit StartTime EndTime NodeList NodeCnt ProcCnt WorkDir
//! ReservationName Tres Account QOS WcKey Cluster SubmitTime EligibleTime
//! [ArrayJobId ArrayTaskId] [HetJobId HetJobOffset] DerivedExitCode ExitCode`
//!
//! Values are written raw, unquoted. Four hold text a user chooses, with any
//! character (spaces, `=`, newlines): `Name` (`sbatch -J`), `WorkDir`
//! (`--chdir`), `WcKey` (`--wckey`, or `scontrol update` of a pending job,
//! unchecked without `AccountingStorageEnforce=wckeys`) and, written by the
//! administrators, `ReservationName`. Every other value is one word.
//!
//! **The parsing rule: by Slurm's key order, never by the first (or last)
//! copy of a key.** So that no user text can change the charged TRES,
//! account, user or times:
//! - the fields before the first free text (`JobId UserId GroupId`, then
//!   `Name=`) are read from the left: the first four words;
//! - the fields after the last free text (`Cluster` to `ExitCode`) are read
//!   from the right: the last `DerivedExitCode= ExitCode=` pair and the
//!   words before it;
//! - the fields between free texts are found as whole chains of one-word
//!   fields in Slurm's order: `JobState Partition TimeLimit StartTime EndTime
//!   NodeList NodeCnt ProcCnt` followed by `WorkDir=`, and
//!   `ReservationName Tres Account QOS` followed by `WcKey=`, the first chain
//!   before the second. Text such as `Name=x Tres=cpu=1,billing=0`,
//!   `Name=x Account=b` or `Name=x EndTime=garbage` is then only a name.
//! - **A genuinely ambiguous record** (a name, work dir or wckey holding a
//!   whole well-formed chain, so that several readings are consistent) is
//!   charged by a rule that user text cannot turn to its profit: readings
//!   whose start precedes `SubmitTime` (read from the right, so true) are set
//!   aside if any other remains; every account a reading names is charged
//!   the **largest** amount any reading gives it, at the **earliest** end
//!   time any gives (the tap charges late records at the service's time
//!   anyway). The true reading is among them, so its account is charged at
//!   least its true amount, and a copy can only add. The user, read from the
//!   left, is never in doubt. [`Charge::ambiguous`] says why, and the tap
//!   logs and counts it.
//! - **A record cut by a newline** (Slurm writes a name or work dir with a
//!   newline as it is) continues on the next lines: [`JobcompReader`] joins
//!   a line that starts a record without ending one with the lines after it
//!   (at most [`MAX_RECORD_LINES`] lines, [`MAX_RECORD_BYTES`] bytes), so a
//!   forged record on the line after a newline is read as part of the name.
//!   A record cut by a crash of slurmctld is joined with the next one, as
//!   nothing tells the two apart.
//!
//! A malformed record (no such chain, a field that is not what Slurm writes,
//! an amount beyond the bounds of `check`) is rejected naming the line, the
//! field and the reason, and the charge passes `check::check_event` like any
//! other event.

use std::collections::BTreeMap;

use chrono::{Local, TimeZone};
use fairflow_model::event::Op;
use fairflow_model::limits::{time_in_range, MAX_TRES_COUNT, MAX_USAGE_AMOUNT_TRES_SECS};
use fairflow_model::{Event, Time};

use crate::check::{check_event, check_name, time_reason};
use crate::reader::LogLine;
use crate::slurm_time::{parse_slurm_time_in, TimeError};
use crate::Rejection;

/// Most physical lines one record is joined from.
pub const MAX_RECORD_LINES: usize = 16;

/// Most bytes of one record, joined (Slurm caps a name and a wckey at 1024
/// bytes, a work dir at `PATH_MAX`; a real record is a few hundred bytes).
pub const MAX_RECORD_BYTES: usize = 64 << 10;

/// Most copies of a chain of fields read in one record (a work dir of
/// `PATH_MAX` bytes holds fewer than 100).
const MAX_CHAINS: usize = 256;

/// The one-word fields between `Name` and `WorkDir`, in Slurm's order.
const RUN_CHAIN: [&str; 8] = [
    "JobState",
    "Partition",
    "TimeLimit",
    "StartTime",
    "EndTime",
    "NodeList",
    "NodeCnt",
    "ProcCnt",
];

/// What one record charges.
#[derive(Debug, Clone, PartialEq)]
pub struct Charge {
    /// The usage events: none when the job charged nothing, one per account
    /// (more than one only for an ambiguous record naming several).
    pub events: Vec<Event>,
    /// Why the record was ambiguous, if it was (see the module
    /// documentation for how it is charged then).
    pub ambiguous: Option<String>,
}

/// A word of a record (split at whitespace).
#[derive(Debug, Clone, Copy)]
struct Word<'a> {
    text: &'a str,
}

impl<'a> Word<'a> {
    /// The value if this word is `key=value`.
    fn value(&self, key: &str) -> Option<&'a str> {
        self.text.strip_prefix(key)?.strip_prefix('=')
    }
}

/// One reading of the fields between `Name` and `WorkDir`.
#[derive(Debug, Clone, Copy)]
struct Run {
    /// Index of its `JobState` word.
    at: usize,
    start: Option<Time>,
    end: Option<Time>,
    procs: u32,
}

/// One reading of the fields between `ReservationName` and `WcKey`.
#[derive(Debug, Clone)]
struct Billing<'a> {
    /// Index of its `ReservationName` word.
    at: usize,
    billing: Option<f64>,
    account: &'a str,
}

/// Parse a Slurm timestamp (`2023-11-14T22:13:20`) in the site's zone (`TZ`,
/// else the system's) as Unix seconds; `Unknown`/`None` give `None`.
pub fn parse_slurm_time(text: &str) -> Result<Option<Time>, TimeError> {
    parse_slurm_time_in(text, &Local)
}

/// Read one whole record (times in the site's zone): what it charges, or
/// why it is rejected.
pub fn read_record(line: u64, text: &str) -> Result<Charge, Rejection> {
    read_record_in(line, text, &Local)
}

/// [`read_record`] with times read in `tz`.
pub fn read_record_in<Tz: TimeZone>(line: u64, text: &str, tz: &Tz) -> Result<Charge, Rejection> {
    let err = |field: &str, reason: String| Rejection::new(line, Some(field), reason);
    if text.len() > MAX_RECORD_BYTES {
        return Err(Rejection::new(
            line,
            None,
            format!("a record is at most {MAX_RECORD_BYTES} bytes"),
        ));
    }
    let words: Vec<Word> = text.split_whitespace().map(|text| Word { text }).collect();
    let user = head_user(&words).map_err(|(f, r)| err(f, r))?;
    let tail = tail_start(&words).map_err(|(f, r)| err(f, r))?;
    let submitted = words[tail.submit]
        .value("SubmitTime")
        .and_then(|v| parse_slurm_time_in(v, tz).ok().flatten());
    let mut runs = run_chains(&words[..tail.cluster], tz).map_err(|(f, r)| err(f, r))?;
    let billings = billing_chains(&words[..tail.cluster]).map_err(|(f, r)| err(f, r))?;
    // A start before the (true) submit time is a copy, unless all are.
    if runs.len() > 1 {
        if let Some(submitted) = submitted {
            let consistent: Vec<Run> = runs
                .iter()
                .copied()
                .filter(|r| r.start.is_none_or(|s| s >= submitted))
                .collect();
            if !consistent.is_empty() {
                runs = consistent;
            }
        }
    }
    let (charges, readings) = charges_by_account(&runs, &billings).map_err(|(f, r)| err(f, r))?;
    let ambiguous = (readings > 1).then(|| {
        format!(
            "job {}: the name, work dir or wckey repeats Slurm's fields ({readings} readings of \
             the run, account and TRES); charged the largest amount each account is given, at \
             the earliest end",
            words[0].value("JobId").unwrap_or("")
        )
    });
    let mut events = Vec::new();
    for (account, (amount, end)) in charges {
        if amount == 0.0 {
            continue;
        }
        let event = Event {
            t: end,
            op: Op::Usage {
                account: account.to_string(),
                user: Some(user.to_string()),
                amount,
                period: None,
            },
        };
        check_event(line, &event).map_err(|r| {
            let field = match r.field.as_deref() {
                Some("account") => "Account",
                Some("user") => "UserId",
                Some("t") => "EndTime",
                _ => "Tres",
            };
            err(field, r.reason)
        })?;
        events.push(event);
    }
    Ok(Charge { events, ambiguous })
}

/// A fault: the record's field and the reason.
type Fault = (&'static str, String);

/// The user of the head (`JobId=N UserId=name(uid) GroupId=... Name=`).
fn head_user<'a>(words: &[Word<'a>]) -> Result<&'a str, Fault> {
    let expect = |i: usize, key: &'static str| -> Result<&'a str, Fault> {
        words.get(i).and_then(|w| w.value(key)).ok_or_else(|| {
            (
                key,
                "missing: a record starts `JobId=N UserId=user(uid) GroupId=group(gid) Name=`"
                    .to_string(),
            )
        })
    };
    let job = expect(0, "JobId")?;
    if job.is_empty() || !job.bytes().all(|b| b.is_ascii_digit()) {
        return Err(("JobId", format!("`{job}` is not a job id")));
    }
    let user_field = expect(1, "UserId")?;
    expect(2, "GroupId")?;
    expect(3, "Name")?;
    // `name(uid)`: the name is what associations use.
    let user = user_field.split('(').next().unwrap_or("");
    if user.is_empty() {
        return Err(("UserId", format!("`{user_field}` has no user name")));
    }
    Ok(user)
}

/// Where the fixed tail starts: the indexes of its `Cluster` and
/// `SubmitTime` words.
struct Tail {
    cluster: usize,
    submit: usize,
}

/// The tail (`Cluster SubmitTime EligibleTime [ArrayJobId ArrayTaskId]
/// [HetJobId HetJobOffset] DerivedExitCode ExitCode`), read from the right.
fn tail_start(words: &[Word]) -> Result<Tail, Fault> {
    let missing = || {
        (
            "ExitCode",
            "missing: a record ends `Cluster=.. SubmitTime=.. EligibleTime=.. \
             DerivedExitCode=.. ExitCode=..`"
                .to_string(),
        )
    };
    let is = |i: usize, key: &str| words.get(i).and_then(|w| w.value(key)).is_some();
    // The last `DerivedExitCode= ExitCode=` pair (22.05 may add a word after).
    let exit = (1..words.len())
        .rev()
        .find(|&i| is(i, "ExitCode") && is(i - 1, "DerivedExitCode"))
        .ok_or_else(missing)?;
    let mut k = exit - 1;
    for (first, second) in [("HetJobId", "HetJobOffset"), ("ArrayJobId", "ArrayTaskId")] {
        if k >= 2 && is(k - 1, second) && is(k - 2, first) {
            k -= 2;
        }
    }
    // k is DerivedExitCode; before it EligibleTime, SubmitTime, Cluster.
    if k < 7 || !is(k - 1, "EligibleTime") || !is(k - 2, "SubmitTime") || !is(k - 3, "Cluster") {
        return Err(missing());
    }
    Ok(Tail {
        cluster: k - 3,
        submit: k - 2,
    })
}

/// Every reading of `JobState .. ProcCnt` followed by `WorkDir=` (after the
/// head), each well formed.
fn run_chains<Tz: TimeZone>(words: &[Word], tz: &Tz) -> Result<Vec<Run>, Fault> {
    let mut runs = Vec::new();
    let mut first_fault: Option<Fault> = None;
    for at in 4..words.len().saturating_sub(RUN_CHAIN.len()) {
        let chain = &words[at..at + RUN_CHAIN.len()];
        let values: Option<Vec<&str>> = chain
            .iter()
            .zip(RUN_CHAIN)
            .map(|(w, key)| w.value(key))
            .collect();
        let Some(values) = values else { continue };
        if words[at + RUN_CHAIN.len()].value("WorkDir").is_none() {
            continue;
        }
        match read_run(at, &values, tz) {
            Ok(run) => runs.push(run),
            Err(fault) => {
                first_fault.get_or_insert(fault);
            }
        }
        if runs.len() > MAX_CHAINS {
            return Err((
                "JobState",
                format!("more than {MAX_CHAINS} copies of the run's fields"),
            ));
        }
    }
    if runs.is_empty() {
        return Err(first_fault.unwrap_or_else(|| {
            (
                "JobState",
                "missing: no `JobState= Partition= TimeLimit= StartTime= EndTime= NodeList= \
                 NodeCnt= ProcCnt= WorkDir=` in Slurm's order"
                    .to_string(),
            )
        }));
    }
    Ok(runs)
}

/// One run chain's values, checked.
fn read_run<Tz: TimeZone>(at: usize, values: &[&str], tz: &Tz) -> Result<Run, Fault> {
    let time = |i: usize, key: &'static str| {
        parse_slurm_time_in(values[i], tz).map_err(|reason| (key, reason.to_string()))
    };
    let (start, end) = (time(3, "StartTime")?, time(4, "EndTime")?);
    for (t, key) in [(start, "StartTime"), (end, "EndTime")] {
        if t.is_some_and(|t| !time_in_range(t)) {
            return Err((key, time_reason()));
        }
    }
    if let (Some(start), Some(end)) = (start, end) {
        if end < start {
            return Err((
                "EndTime",
                format!("ends before it starts ({end} < {start})"),
            ));
        }
    }
    let count = |i: usize, key: &'static str| {
        values[i]
            .parse::<u32>()
            .map_err(|_| (key, format!("`{}` is not a count", values[i])))
    };
    count(6, "NodeCnt")?;
    Ok(Run {
        at,
        start,
        end,
        procs: count(7, "ProcCnt")?,
    })
}

/// Every reading of `ReservationName [Tres] Account QOS` followed by
/// `WcKey=`, each well formed. (`Tres` is always written by 22.05 and
/// later; a record without it charges `ProcCnt`.)
fn billing_chains<'a>(words: &[Word<'a>]) -> Result<Vec<Billing<'a>>, Fault> {
    let mut billings = Vec::new();
    let mut first_fault: Option<Fault> = None;
    for at in 4..words.len() {
        if words[at].value("ReservationName").is_none() {
            continue;
        }
        let next = |i: usize, key: &str| words.get(at + i).and_then(|w| w.value(key));
        let (tres, rest) = match next(1, "Tres") {
            Some(tres) => (Some(tres), 2),
            None => (None, 1),
        };
        let (Some(account), Some(_), Some(_)) = (
            next(rest, "Account"),
            next(rest + 1, "QOS"),
            next(rest + 2, "WcKey"),
        ) else {
            continue;
        };
        // An account the log could not hold is no reading (a true one is
        // then rejected; a copy's cannot spoil the record).
        if let Err((_, reason)) = check_name("Account", account) {
            first_fault.get_or_insert(("Account", reason));
            continue;
        }
        match tres.map(billing_count).transpose() {
            Ok(billing) => billings.push(Billing {
                at,
                billing: billing.flatten(),
                account,
            }),
            Err(reason) => {
                first_fault.get_or_insert(("Tres", reason.to_string()));
            }
        }
        if billings.len() > MAX_CHAINS {
            return Err((
                "Account",
                format!("more than {MAX_CHAINS} copies of the account's fields"),
            ));
        }
    }
    if billings.is_empty() {
        return Err(first_fault.unwrap_or_else(|| {
            (
                "Account",
                "missing: no `ReservationName= Tres= Account= QOS= WcKey=` in Slurm's order"
                    .to_string(),
            )
        }));
    }
    Ok(billings)
}

/// The billable TRES of a `Tres=` value (`billing=N`), if given: a count
/// from 0 to `MAX_TRES_COUNT`.
fn billing_count(tres: &str) -> Result<Option<f64>, NotBilling> {
    let Some((_, value)) = tres
        .split(',')
        .filter_map(|item| item.split_once('='))
        .find(|(name, _)| name.eq_ignore_ascii_case("billing"))
    else {
        return Ok(None);
    };
    match value.parse::<f64>() {
        Ok(count) if count.is_finite() && (0.0..=MAX_TRES_COUNT).contains(&count) => {
            Ok(Some(count))
        }
        _ => Err(NotBilling(value.to_string())),
    }
}

/// A `billing=` value that is not a count from 0 to `MAX_TRES_COUNT`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("billing=`{0}` is not a count from 0 to {max:e}", max = MAX_TRES_COUNT)]
struct NotBilling(String);

/// Each account's charge: the largest amount (TRES-seconds) and the earliest
/// end any reading gives it.
type Charges<'a> = BTreeMap<&'a str, (f64, Time)>;

/// For each account some reading names: the largest amount any reading
/// gives it (within bounds) and the earliest end; and how many readings
/// there are. A reading pairs a run chain with a later billing chain.
fn charges_by_account<'a>(
    runs: &[Run],
    billings: &[Billing<'a>],
) -> Result<(Charges<'a>, usize), Fault> {
    let mut charges: Charges = BTreeMap::new();
    let mut readings = 0;
    let mut first_fault: Option<Fault> = None;
    for billing in billings {
        for run in runs.iter().filter(|r| r.at + RUN_CHAIN.len() < billing.at) {
            let billable = billing.billing.unwrap_or(f64::from(run.procs));
            let (amount, end) = match (run.start, run.end) {
                (Some(start), Some(end)) => (billable * (end - start) as f64, end),
                _ => (0.0, Time::MAX),
            };
            if amount > MAX_USAGE_AMOUNT_TRES_SECS {
                first_fault.get_or_insert((
                    "Tres",
                    format!(
                        "the billable TRES times the run time, {amount:e} TRES-seconds, is out \
                         of range (at most {MAX_USAGE_AMOUNT_TRES_SECS:e})"
                    ),
                ));
                continue;
            }
            readings += 1;
            let entry = charges.entry(billing.account).or_insert((0.0, Time::MAX));
            entry.0 = entry.0.max(amount);
            entry.1 = entry.1.min(end);
        }
    }
    if charges.is_empty() {
        return Err(first_fault.unwrap_or_else(|| {
            (
                "ReservationName",
                "missing: no `ReservationName= .. WcKey=` after `JobState= .. WorkDir=`"
                    .to_string(),
            )
        }));
    }
    Ok((charges, readings))
}

/// A `jobcomp/filetxt` file read line by line: a line that starts a record
/// without ending it (a newline in a name or work dir) is joined with the
/// lines after it, as the one record Slurm wrote.
#[derive(Debug, Clone)]
pub struct JobcompReader<Tz: TimeZone> {
    tz: Tz,
    /// A record begun and not ended: its first line's number, its text so
    /// far and how many lines it spans.
    pending: Option<(u64, String, usize)>,
    ambiguous: u64,
}

/// What one line of the file gave.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadLines {
    /// The charges and rejections of the records it ended (numbered by each
    /// record's first line).
    pub lines: Vec<LogLine>,
    /// Why each ambiguous record among them was (module documentation).
    pub ambiguous: Vec<String>,
}

impl JobcompReader<Local> {
    /// A reader with times in the site's zone (`TZ`, else the system's).
    pub fn local() -> Self {
        JobcompReader::new(Local)
    }
}

impl<Tz: TimeZone> JobcompReader<Tz> {
    /// A reader with times in `tz`.
    pub fn new(tz: Tz) -> Self {
        JobcompReader {
            tz,
            pending: None,
            ambiguous: 0,
        }
    }

    /// The ambiguous records read so far.
    pub fn ambiguous_records(&self) -> u64 {
        self.ambiguous
    }

    /// Read physical line `number`.
    pub fn line(&mut self, number: u64, text: &str) -> ReadLines {
        let mut out = ReadLines {
            lines: Vec::new(),
            ambiguous: Vec::new(),
        };
        let (first, record, count) = match self.pending.take() {
            Some((first, mut record, count)) => {
                record.push('\n');
                record.push_str(text);
                (first, record, count + 1)
            }
            None => (number, text.to_string(), 1),
        };
        let words: Vec<Word> = record
            .split_whitespace()
            .map(|text| Word { text })
            .collect();
        let begun = head_user(&words).is_ok();
        let ended = tail_start(&words).is_ok();
        if begun && !ended {
            if count < MAX_RECORD_LINES && record.len() <= MAX_RECORD_BYTES {
                self.pending = Some((first, record, count));
                return out;
            }
            let reason = format!(
                "a record begun here has no end (`.. DerivedExitCode= ExitCode=`) within \
                 {MAX_RECORD_LINES} lines or {MAX_RECORD_BYTES} bytes"
            );
            out.lines.push(LogLine {
                line: first,
                event: Err(Rejection::new(first, Some("ExitCode"), reason)),
            });
            return out;
        }
        match read_record_in(first, &record, &self.tz) {
            Ok(charge) => {
                if let Some(why) = charge.ambiguous {
                    self.ambiguous += 1;
                    out.ambiguous.push(why);
                }
                out.lines
                    .extend(charge.events.into_iter().map(|event| LogLine {
                        line: first,
                        event: Ok(event),
                    }));
            }
            Err(rejection) => out.lines.push(LogLine {
                line: first,
                event: Err(rejection),
            }),
        }
        out
    }
}

#[cfg(test)]
mod tests;
