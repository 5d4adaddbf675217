//! Slurm's `jobcomp/filetxt` records: one completed job a line, as
//! `JobId=... UserId=name(uid) GroupId=... Name=... JobState=... Partition=...
//! TimeLimit=... StartTime=... EndTime=... NodeList=... NodeCnt=... ProcCnt=...
//! WorkDir=... ReservationName=... Tres=cpu=4,mem=16G,node=1,billing=4
//! Account=... QOS=... WcKey=... Cluster=... SubmitTime=... EligibleTime=...
//! [ArrayJobId=... ArrayTaskId=...] [HetJobId=... HetJobOffset=...]
//! DerivedExitCode=... ExitCode=...` (the plugin's `JOB_FORMAT`), turned into
//! the `usage` that the job charged: its billable TRES (the `billing` count of
//! `Tres=` when present, else `ProcCnt`) times its run time, charged to
//! `(Account, user)` at `EndTime`.
//!
//! The plugin writes values as they are, unquoted, so a value may contain
//! spaces (`Name=my job`, a `WorkDir` with a space): a word that is not
//! `KEY=VALUE` with a key the plugin writes continues the value before it.
//! Times are `YYYY-MM-DDTHH:MM:SS` in slurmctld's local time, and are read in
//! the site's zone (`TZ`, else the system's; see [`crate::slurm_time`]), as
//! `import slurm` reads `squeue`'s. Jobs that never ran (no start, or zero run
//! time) charge nothing.

use std::collections::BTreeMap;

use chrono::{Local, TimeZone};
use fairflow_model::event::Op;
use fairflow_model::{Event, Time};

use crate::slurm_time::parse_slurm_time_in;
use crate::Rejection;

/// The keys `jobcomp/filetxt` writes (Slurm's `JOB_FORMAT`, with the array and
/// heterogeneous-job extras and the older `Gres`/`BlockID` ones).
const KEYS: [&str; 29] = [
    "JobId",
    "UserId",
    "GroupId",
    "Name",
    "JobName",
    "JobState",
    "Partition",
    "TimeLimit",
    "StartTime",
    "EndTime",
    "NodeList",
    "NodeCnt",
    "ProcCnt",
    "WorkDir",
    "ReservationName",
    "Tres",
    "Gres",
    "Account",
    "QOS",
    "WcKey",
    "Cluster",
    "SubmitTime",
    "EligibleTime",
    "ArrayJobId",
    "ArrayTaskId",
    "HetJobId",
    "HetJobOffset",
    "DerivedExitCode",
    "ExitCode",
];

/// Fields whose values are free text: inside one, only a key the plugin
/// writes starts the next field.
const FREE_TEXT: [&str; 4] = ["Name", "JobName", "WorkDir", "ReservationName"];

/// The key of `token` if it starts a new field after a field named `current`.
fn starts_field<'a>(token: &'a str, current: Option<&str>) -> Option<&'a str> {
    let (key, _) = token.split_once('=')?;
    let identifier = !key.is_empty()
        && key.starts_with(|c: char| c.is_ascii_alphabetic())
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !identifier {
        return None;
    }
    let in_free_text = current.is_some_and(|c| FREE_TEXT.contains(&c));
    (KEYS.contains(&key) || !in_free_text).then_some(key)
}

/// The fields of one record, by name. A value runs up to the next word that
/// starts a field, so values may contain spaces (trimmed at both ends).
pub fn split_fields(text: &str) -> Result<BTreeMap<&str, &str>, String> {
    let mut fields = BTreeMap::new();
    // The current field: its key and where its value starts and ends.
    let mut current: Option<(&str, usize, usize)> = None;
    let base = text.as_ptr() as usize;
    for token in text.split_whitespace() {
        let start = token.as_ptr() as usize - base;
        let end = start + token.len();
        match starts_field(token, current.map(|(k, _, _)| k)) {
            Some(key) => {
                if let Some((k, from, to)) = current.take() {
                    // Later duplicates (never expected) do not override the first.
                    fields.entry(k).or_insert(&text[from..to]);
                }
                let from = start + key.len() + 1;
                current = Some((key, from, end.max(from)));
            }
            None => match &mut current {
                Some((_, _, to)) => *to = end,
                None => return Err(format!("`{token}` is not KEY=VALUE")),
            },
        }
    }
    if let Some((k, from, to)) = current {
        fields.entry(k).or_insert(&text[from..to]);
    }
    Ok(fields)
}

/// Parse a Slurm timestamp (`2023-11-14T22:13:20`) in the site's zone (`TZ`,
/// else the system's) as Unix seconds; `Unknown`/`None` give `None`.
pub fn parse_slurm_time(text: &str) -> Result<Option<Time>, String> {
    parse_slurm_time_in(text, &Local)
}

/// The billable TRES of a `Tres=` value (`billing=N`), if given.
fn billing_count(tres: &str) -> Option<f64> {
    tres.split(',')
        .filter_map(|item| item.split_once('='))
        .find(|(name, _)| name.eq_ignore_ascii_case("billing"))
        .and_then(|(_, value)| value.parse::<f64>().ok())
        .filter(|v| v.is_finite() && *v >= 0.0)
}

/// Convert one record into the usage event it charges (`None` when the job
/// charged nothing), or reject it naming the field. Times are read in the
/// site's zone (`TZ`, else the system's).
pub fn record_to_event(line: u64, text: &str) -> Result<Option<Event>, Rejection> {
    record_to_event_in(line, text, &Local)
}

/// [`record_to_event`] with times read in `tz`.
pub fn record_to_event_in<Tz: TimeZone>(
    line: u64,
    text: &str,
    tz: &Tz,
) -> Result<Option<Event>, Rejection> {
    let err = |field: &str, reason: String| Rejection::new(line, Some(field), reason);
    let fields = split_fields(text).map_err(|reason| Rejection::new(line, None, reason))?;
    let get = |name: &str| {
        fields
            .get(name)
            .copied()
            .ok_or_else(|| err(name, "missing".into()))
    };
    let user_field = get("UserId")?;
    // `name(uid)`: the name is what associations use.
    let user = user_field.split('(').next().unwrap_or("").to_string();
    if user.is_empty() {
        return Err(err("UserId", format!("`{user_field}` has no user name")));
    }
    let account = get("Account")?.to_string();
    if account.is_empty() {
        return Err(err("Account", "is empty".into()));
    }
    let time = |name: &str| -> Result<Option<Time>, Rejection> {
        parse_slurm_time_in(get(name)?, tz).map_err(|reason| err(name, reason))
    };
    let (start, end) = (time("StartTime")?, time("EndTime")?);
    let (Some(start), Some(end)) = (start, end) else {
        return Ok(None);
    };
    if end < start {
        return Err(err(
            "EndTime",
            format!("ends before it starts ({end} < {start})"),
        ));
    }
    let billable = match fields.get("Tres").and_then(|t| billing_count(t)) {
        Some(count) => count,
        None => {
            let procs = get("ProcCnt")?;
            procs
                .parse::<u64>()
                .map_err(|_| err("ProcCnt", format!("`{procs}` is not a processor count")))?
                as f64
        }
    };
    let amount = billable * (end - start) as f64;
    if amount == 0.0 {
        return Ok(None);
    }
    Ok(Some(Event {
        t: end,
        op: Op::Usage {
            account,
            user: Some(user),
            amount,
            period: None,
        },
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{FixedOffset, Utc};

    /// The record read with its times in UTC (the fixtures' zone).
    fn utc(line: u64, text: &str) -> Result<Option<Event>, Rejection> {
        record_to_event_in(line, text, &Utc)
    }

    const RECORD: &str = "JobId=4242 UserId=alice(1001) GroupId=users(100) Name=sim JobState=COMPLETED \
        Partition=batch TimeLimit=60 StartTime=2023-11-14T22:13:20 EndTime=2023-11-14T23:13:20 \
        NodeList=n[01-02] NodeCnt=2 ProcCnt=16 WorkDir=/home/alice ReservationName= Account=physics \
        QOS=normal WcKey= Cluster=c SubmitTime=2023-11-14T22:00:00 EligibleTime=2023-11-14T22:00:00 \
        DerivedExitCode=0:0 ExitCode=0:0";

    #[test]
    fn a_completed_job_charges_procs_times_run_time() {
        // 16 processors for one hour: 57600 CPU-seconds at the end time.
        let event = utc(3, RECORD).unwrap().unwrap();
        assert_eq!(event.t, 1_700_003_600);
        assert_eq!(
            event.op,
            Op::Usage {
                account: "physics".into(),
                user: Some("alice".into()),
                amount: 57_600.0,
                period: None,
            }
        );
    }

    #[test]
    fn the_billing_tres_wins_over_procs() {
        let text = format!("{RECORD} Tres=cpu=16,mem=64G,node=2,billing=20");
        let event = utc(1, &text).unwrap().unwrap();
        assert!(matches!(event.op, Op::Usage { amount, .. } if amount == 72_000.0));
    }

    #[test]
    fn jobs_that_never_ran_charge_nothing_and_bad_records_name_their_field() {
        let never = RECORD.replace("StartTime=2023-11-14T22:13:20", "StartTime=Unknown");
        assert_eq!(utc(1, &never).unwrap(), None);
        let r = utc(5, &RECORD.replace("ProcCnt=16", "ProcCnt=lots")).unwrap_err();
        assert_eq!((r.line, r.field.as_deref()), (5, Some("ProcCnt")));
        let r = utc(
            5,
            &RECORD.replace("EndTime=2023-11-14T23:13:20", "EndTime=yesterday"),
        )
        .unwrap_err();
        assert_eq!(r.field.as_deref(), Some("EndTime"));
        let r = utc(5, &RECORD.replace(" Account=physics", "")).unwrap_err();
        assert_eq!(
            (r.field.as_deref(), r.reason.as_str()),
            (Some("Account"), "missing")
        );
        let r = utc(5, "garbage here").unwrap_err();
        assert_eq!(r.field, None);
        let r = utc(
            5,
            &RECORD.replace("EndTime=2023-11-14T23:13:20", "EndTime=2023-11-14T20:00:00"),
        )
        .unwrap_err();
        assert_eq!(r.field.as_deref(), Some("EndTime"));
    }

    #[test]
    fn values_with_spaces_are_kept_whole() {
        // jobcomp/filetxt writes `Name=%s` unquoted: a job named `my job`
        // and a work directory with a space still give one record.
        let text = RECORD
            .replace("Name=sim", "Name=my job  x=1")
            .replace("WorkDir=/home/alice", "WorkDir=/home/alice/My Runs");
        let fields = split_fields(&text).unwrap();
        assert_eq!(fields["Name"], "my job  x=1");
        assert_eq!(fields["WorkDir"], "/home/alice/My Runs");
        assert_eq!(fields["JobState"], "COMPLETED");
        assert_eq!(fields["ReservationName"], "");
        assert_eq!(fields["Account"], "physics");
        let event = utc(1, &text).unwrap().unwrap();
        assert!(matches!(event.op, Op::Usage { amount, .. } if amount == 57_600.0));
    }

    #[test]
    fn times_are_read_in_the_sites_zone() {
        // The same record written by a slurmctld at UTC+02:00 ended two
        // hours earlier than at UTC: 1_700_003_600 - 7_200.
        let east = FixedOffset::east_opt(7_200).unwrap();
        let event = record_to_event_in(1, RECORD, &east).unwrap().unwrap();
        assert_eq!(event.t, 1_700_003_600 - 7_200);
    }
}
