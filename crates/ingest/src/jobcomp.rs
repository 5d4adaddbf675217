//! Slurm's `jobcomp/filetxt` records: one completed job a line, as
//! `JobId=... UserId=name(uid) GroupId=... JobState=... Partition=...
//! StartTime=... EndTime=... NodeCnt=... ProcCnt=... Account=... QOS=...
//! SubmitTime=... [Tres=cpu=4,mem=16G,node=1,billing=4]`, turned into the
//! `usage` that the job charged: its billable TRES (the `billing` count of
//! `Tres=` when present, else `ProcCnt`) times its run time, charged to
//! `(Account, user)` at `EndTime`. Times are Slurm's `YYYY-MM-DDTHH:MM:SS`,
//! read as UTC. Jobs that never ran (no start, or zero run time) charge nothing.

use std::collections::BTreeMap;

use chrono::NaiveDateTime;
use fairflow_model::event::Op;
use fairflow_model::{Event, Time};

use crate::Rejection;

/// The fields of one record, by name.
pub fn split_fields(text: &str) -> Result<BTreeMap<&str, &str>, String> {
    let mut fields = BTreeMap::new();
    for token in text.split_whitespace() {
        let (key, value) = token
            .split_once('=')
            .ok_or_else(|| format!("`{token}` is not KEY=VALUE"))?;
        // Later duplicates (never expected) do not override the first.
        fields.entry(key).or_insert(value);
    }
    Ok(fields)
}

/// Parse a Slurm timestamp (`2023-11-14T22:13:20`) as UTC Unix seconds;
/// `Unknown`/`None` give `None`.
pub fn parse_slurm_time(text: &str) -> Result<Option<Time>, String> {
    if matches!(text, "Unknown" | "None" | "N/A" | "0") {
        return Ok(None);
    }
    NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S")
        .map(|t| Some(t.and_utc().timestamp()))
        .map_err(|_| format!("`{text}` is not a time YYYY-MM-DDTHH:MM:SS"))
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
/// charged nothing), or reject it naming the field.
pub fn record_to_event(line: u64, text: &str) -> Result<Option<Event>, Rejection> {
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
        parse_slurm_time(get(name)?).map_err(|reason| err(name, reason))
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
        },
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    const RECORD: &str = "JobId=4242 UserId=alice(1001) GroupId=users(100) Name=sim JobState=COMPLETED \
        Partition=batch TimeLimit=60 StartTime=2023-11-14T22:13:20 EndTime=2023-11-14T23:13:20 \
        NodeList=n[01-02] NodeCnt=2 ProcCnt=16 WorkDir=/home/alice ReservationName= Account=physics \
        QOS=normal WcKey= Cluster=c SubmitTime=2023-11-14T22:00:00 EligibleTime=2023-11-14T22:00:00 \
        DerivedExitCode=0:0 ExitCode=0:0";

    #[test]
    fn a_completed_job_charges_procs_times_run_time() {
        // 16 processors for one hour: 57600 CPU-seconds at the end time.
        let event = record_to_event(3, RECORD).unwrap().unwrap();
        assert_eq!(event.t, 1_700_003_600);
        assert_eq!(
            event.op,
            Op::Usage {
                account: "physics".into(),
                user: Some("alice".into()),
                amount: 57_600.0
            }
        );
    }

    #[test]
    fn the_billing_tres_wins_over_procs() {
        let text = format!("{RECORD} Tres=cpu=16,mem=64G,node=2,billing=20");
        let event = record_to_event(1, &text).unwrap().unwrap();
        assert!(matches!(event.op, Op::Usage { amount, .. } if amount == 72_000.0));
    }

    #[test]
    fn jobs_that_never_ran_charge_nothing_and_bad_records_name_their_field() {
        let never = RECORD.replace("StartTime=2023-11-14T22:13:20", "StartTime=Unknown");
        assert_eq!(record_to_event(1, &never).unwrap(), None);
        let r = record_to_event(5, &RECORD.replace("ProcCnt=16", "ProcCnt=lots")).unwrap_err();
        assert_eq!((r.line, r.field.as_deref()), (5, Some("ProcCnt")));
        let r = record_to_event(
            5,
            &RECORD.replace("EndTime=2023-11-14T23:13:20", "EndTime=yesterday"),
        )
        .unwrap_err();
        assert_eq!(r.field.as_deref(), Some("EndTime"));
        let r = record_to_event(5, &RECORD.replace(" Account=physics", "")).unwrap_err();
        assert_eq!(
            (r.field.as_deref(), r.reason.as_str()),
            (Some("Account"), "missing")
        );
        let r = record_to_event(5, "garbage here").unwrap_err();
        assert_eq!(r.field, None);
        let r = record_to_event(
            5,
            &RECORD.replace("EndTime=2023-11-14T23:13:20", "EndTime=2023-11-14T20:00:00"),
        )
        .unwrap_err();
        assert_eq!(r.field.as_deref(), Some("EndTime"));
    }
}
