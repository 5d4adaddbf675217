//! The bounds every event meets, whichever way it came in: the event log's
//! reader (`parse_event` calls [`check_event`] on what it built), every
//! converter and tap (jobcomp, the Flux journal, SWF, the importers call it on
//! the events they build), and so the service, which logs only what its own
//! replay accepts. One function, so nothing is accepted live that a restart
//! would refuse.
//!
//! What is checked (each rejection names the event's field): names are 1 to
//! 256 bytes without spaces, control characters or `|` (list elements also
//! without `,`, none twice); times are Unix seconds from 0 to `MAX_TIME`
//! (9999-12-31T23:59:59Z), durations at most `MAX_DURATION_SECS`; usage
//! amounts are finite, from 0 to `MAX_USAGE_AMOUNT_TRES_SECS` (2^50
//! TRES-seconds), usage bins below `MAX_FLUX_BINS`; TRES counts are finite,
//! from 0 to `MAX_TRES_COUNT` (2^40), named as the log writes them (lower
//! case, trimmed); shares at most `MAX_SHARES`; urgencies 0 to 31; partition
//! factors and tiers 0 to 65533; QOS usage factors 0 to `MAX_USAGE_FACTOR`;
//! billing weights finite. The ranges are `fairflow_model::limits`'s: what
//! the exact arithmetic holds.

use fairflow_model::config::MAX_FLUX_BINS;
use fairflow_model::event::{is_list, JobSpec, Op};
use fairflow_model::limits::{
    time_in_range, MAX_DURATION_SECS, MAX_TIME, MAX_TRES_COUNT, MAX_USAGE_AMOUNT_TRES_SECS,
    MAX_USAGE_FACTOR,
};
use fairflow_model::tres::{is_tres_name, TresCounts, WeightList};
use fairflow_model::{Event, Shares, Time};

use crate::Rejection;

/// The largest share count Slurm accepts (`0x7FFFFFFF` means `parent`).
pub const MAX_SHARES: u64 = 0x7FFF_FFFE;

/// The longest name, in bytes.
pub const MAX_NAME_BYTES: usize = 256;

/// The largest urgency (Flux's RFC 30 range, 0 to 31).
pub const MAX_URGENCY: u8 = 31;

/// The largest partition `PriorityJobFactor` and `PriorityTier`.
pub const MAX_PARTITION_FACTOR: u64 = 65_533;

/// Why a time is out of range (the parser says the same of a non-integer).
pub fn time_reason() -> String {
    format!("must be an integer number of Unix seconds from 0 to {MAX_TIME}")
}

/// Why a duration is out of range (the parser says the same of a non-integer).
pub fn duration_reason() -> String {
    format!("must be a number of seconds from 0 to {MAX_DURATION_SECS}")
}

/// Why a share count is out of range (the parser says the same of a
/// non-integer).
pub fn shares_reason() -> String {
    format!("must be an integer from 0 to {MAX_SHARES}, or \"parent\"")
}

/// Why an urgency is out of range.
pub fn urgency_reason() -> String {
    format!("must be from 0 to {MAX_URGENCY}")
}

/// Why a partition factor or tier is out of range.
pub fn factor_reason() -> String {
    format!("must be from 0 to {MAX_PARTITION_FACTOR}")
}

/// Why element `index` (0-based) of a name list is not a name.
pub fn list_element_reason(index: usize, item: &str) -> String {
    format!(
        "element {} of the list (`{}`) must be at most {MAX_NAME_BYTES} bytes, without spaces, \
         control characters, `|` or `,`",
        index + 1,
        item.escape_debug()
    )
}

/// Why a usage bin is out of range.
pub fn period_reason() -> String {
    format!("must be a usage bin from 0 to {}", MAX_FLUX_BINS - 1)
}

/// Check that `event` is within every bound the log's reader enforces; a
/// rejection on `line` names the event's field.
pub fn check_event(line: u64, event: &Event) -> Result<(), Rejection> {
    let err = |field: &str, reason: String| Rejection::new(line, Some(field), reason);
    if !time_in_range(event.t) {
        return Err(err("t", time_reason()));
    }
    check_op(&event.op).map_err(|(field, reason)| err(&field, reason))
}

/// Check every event of a converter's output: the first out of bounds, by
/// its index, with the rejection naming its op and field (the line is the
/// index + 1).
pub fn check_events(events: &[Event]) -> Result<(), (usize, Rejection)> {
    for (index, event) in events.iter().enumerate() {
        check_event(index as u64 + 1, event).map_err(|mut r| {
            r.field = Some(format!(
                "{}.{}",
                event.op.name(),
                r.field.unwrap_or_default()
            ));
            (index, r)
        })?;
    }
    Ok(())
}

/// A fault: the field and the reason.
type Fault = (String, String);

fn fault(field: &str, reason: impl Into<String>) -> Fault {
    (field.to_string(), reason.into())
}

fn check_op(op: &Op) -> Result<(), Fault> {
    match op {
        Op::Account {
            name,
            parent,
            shares,
            ..
        } => {
            check_name("name", name)?;
            opt(parent, |p| check_name("parent", p))?;
            check_shares(*shares)
        }
        Op::User {
            user,
            account,
            shares,
            ..
        } => {
            check_name("user", user)?;
            check_name("account", account)?;
            check_shares(*shares)
        }
        Op::RemoveAccount { name } => check_name("name", name),
        Op::RemoveUser { user, account } => {
            check_name("user", user)?;
            check_name("account", account)
        }
        Op::Usage {
            account,
            user,
            amount,
            period,
        } => {
            check_name("account", account)?;
            opt(user, |u| check_name("user", u))?;
            check_bounded("amount", *amount, MAX_USAGE_AMOUNT_TRES_SECS)?;
            match period {
                Some(p) if i64::from(*p) >= MAX_FLUX_BINS => Err(fault("period", period_reason())),
                _ => Ok(()),
            }
        }
        Op::ResetUsage | Op::Tick | Op::Config { .. } => Ok(()),
        Op::Submit {
            job,
            user,
            account,
            spec,
            submitted,
        } => {
            check_name("job", job)?;
            check_name("user", user)?;
            check_name("account", account)?;
            check_spec(spec)?;
            opt(submitted, |t| check_time("submitted", *t))
        }
        Op::Update { job, account, spec } => {
            check_name("job", job)?;
            opt(account, |a| check_name("account", a))?;
            check_spec(spec)
        }
        Op::Hold { job }
        | Op::Release { job }
        | Op::Cancel { job }
        | Op::End { job }
        | Op::Requeue { job, .. } => check_name("job", job),
        Op::Start { job, tres } => {
            check_name("job", job)?;
            opt(tres, |t| check_tres("tres", t))
        }
        Op::Qos {
            name, usage_factor, ..
        } => {
            check_name("name", name)?;
            opt(usage_factor, |f| {
                check_bounded("usage_factor", *f, MAX_USAGE_FACTOR)
            })
        }
        Op::Partition {
            name,
            priority_job_factor,
            tres_billing_weights,
            tres,
            max_time_secs,
            priority_tier,
            ..
        } => {
            check_name("name", name)?;
            check_factor("priority_job_factor", priority_job_factor.map(u64::from))?;
            check_factor("priority_tier", priority_tier.map(u64::from))?;
            opt(tres_billing_weights, check_weights)?;
            opt(tres, |t| check_tres("tres", t))?;
            opt(max_time_secs, |d| check_duration("max_time", *d))
        }
        Op::Cluster { tres, .. } => check_tres("tres", tres),
    }
}

/// Apply `check` to the value, if there is one.
fn opt<T>(value: &Option<T>, check: impl FnOnce(&T) -> Result<(), Fault>) -> Result<(), Fault> {
    value.as_ref().map_or(Ok(()), check)
}

/// A name: 1 to 256 bytes, without spaces, control characters or `|`.
pub fn check_name(field: &str, name: &str) -> Result<(), Fault> {
    if name.is_empty() {
        Err(fault(field, "must not be empty"))
    } else if name.len() > MAX_NAME_BYTES {
        Err(fault(
            field,
            format!("is longer than {MAX_NAME_BYTES} bytes"),
        ))
    } else if name
        .chars()
        .any(|c| c.is_whitespace() || c.is_control() || c == '|')
    {
        Err(fault(
            field,
            "must not contain spaces, control characters or `|`",
        ))
    } else {
        Ok(())
    }
}

/// A partition or QOS list as stored: one name, or names joined by `,`, none
/// empty or given twice.
pub fn check_name_list(field: &str, list: &str) -> Result<(), Fault> {
    if !is_list(list) {
        return check_name(field, list);
    }
    let items: Vec<&str> = list.split(',').collect();
    for (i, item) in items.iter().enumerate() {
        if item.is_empty() {
            return Err(fault(
                field,
                format!("element {} of the list is empty", i + 1),
            ));
        }
        if check_name(field, item).is_err() {
            return Err(fault(field, list_element_reason(i, item)));
        }
        if items[..i].contains(item) {
            return Err(fault(field, format!("lists `{item}` twice")));
        }
    }
    Ok(())
}

/// A finite number from 0 to `max`.
pub fn check_bounded(field: &str, value: f64, max: f64) -> Result<(), Fault> {
    if !value.is_finite() {
        Err(fault(field, "must be a number"))
    } else if value < 0.0 {
        Err(fault(field, "must be a number >= 0"))
    } else if value > max {
        Err(fault(
            field,
            format!("{value:e} is out of range (at most {max:e})"),
        ))
    } else {
        Ok(())
    }
}

fn check_time(field: &str, t: Time) -> Result<(), Fault> {
    if time_in_range(t) {
        Ok(())
    } else {
        Err(fault(field, time_reason()))
    }
}

fn check_duration(field: &str, secs: u64) -> Result<(), Fault> {
    if secs <= MAX_DURATION_SECS {
        Ok(())
    } else {
        Err(fault(field, duration_reason()))
    }
}

fn check_shares(shares: Option<Shares>) -> Result<(), Fault> {
    match shares {
        Some(Shares::Value(n)) if u64::from(n) > MAX_SHARES => {
            Err(fault("shares", shares_reason()))
        }
        _ => Ok(()),
    }
}

fn check_factor(field: &str, value: Option<u64>) -> Result<(), Fault> {
    match value {
        Some(v) if v > MAX_PARTITION_FACTOR => Err(fault(field, factor_reason())),
        _ => Ok(()),
    }
}

/// TRES counts: each named as the log writes names (lower case, trimmed, not
/// empty) and a finite count from 0 to `MAX_TRES_COUNT`.
pub fn check_tres(field: &str, tres: &TresCounts) -> Result<(), Fault> {
    // The field's path is written only for a fault: every event and every
    // restored job is checked here.
    let path = |name: &str| format!("{field}.{name}");
    for (name, count) in tres.iter() {
        if name.is_empty() || !is_tres_name(name) {
            return Err(fault(
                &path(name),
                "a TRES name must be lower case, without surrounding spaces",
            ));
        }
        if check_bounded(field, *count, MAX_TRES_COUNT).is_err() {
            check_bounded(&path(name), *count, MAX_TRES_COUNT)?;
        }
    }
    Ok(())
}

/// A billing weight list: each TRES named once, by a TRES name, with a
/// finite weight.
pub fn check_weights(weights: &WeightList) -> Result<(), Fault> {
    for (i, (name, weight)) in weights.weights.iter().enumerate() {
        if weights.weights[..i].iter().any(|(n, _)| n == name) {
            return Err(fault(
                "tres_billing_weights",
                format!("{name} is weighted twice"),
            ));
        }
        if name.is_empty() || !is_tres_name(name) || name.contains([',', '=']) {
            return Err(fault(
                "tres_billing_weights",
                format!("`{name}` is not a TRES name"),
            ));
        }
        if !weight.is_finite() {
            return Err(fault(
                "tres_billing_weights",
                format!("the weight of {name} must be a finite number"),
            ));
        }
    }
    Ok(())
}

/// A job's spec, as a `submit` event's check applies it.
pub fn check_spec(spec: &JobSpec) -> Result<(), Fault> {
    opt(&spec.partition, |p| check_name_list("partition", p))?;
    opt(&spec.qos, |q| check_name_list("qos", q))?;
    opt(&spec.tres, |t| check_tres("tres", t))?;
    opt(&spec.time_limit_secs, |d| check_duration("time_limit", *d))?;
    match spec.urgency {
        Some(u) if u > MAX_URGENCY => return Err(fault("urgency", urgency_reason())),
        _ => {}
    }
    opt(&spec.begin, |t| check_time("begin", *t))?;
    opt(&spec.group, |g| check_name("group", g))?;
    opt(&spec.deadline, |t| check_time("deadline", *t))
}

#[cfg(test)]
mod tests;
