//! JSON line to [`Event`]: every field checked for presence and type here,
//! every error naming its field; then the event built is checked against the
//! bounds every way in shares (`check::check_event`: names, ranges of times,
//! counts and amounts). Unknown fields are ignored (the format may be
//! extended); unknown ops are rejected.

use std::collections::BTreeMap;

use fairflow_model::event::{JobSpec, Op};
use fairflow_model::tres::{parse_weight_list, tres_name, TresCounts};
use fairflow_model::Sluid;
use fairflow_model::{Event, Shares};
use serde_json::{Map, Value};

use crate::check::{
    check_event, factor_reason, list_element_reason, period_reason, shares_reason, time_reason,
    urgency_reason,
};
use crate::Rejection;

pub use crate::check::MAX_SHARES;

struct Fields<'a> {
    line: u64,
    map: &'a Map<String, Value>,
}

impl<'a> Fields<'a> {
    fn err(&self, field: &str, reason: impl Into<String>) -> Rejection {
        Rejection::new(self.line, Some(field), reason)
    }

    fn get(&self, field: &str) -> Option<&'a Value> {
        self.map.get(field).filter(|v| !v.is_null())
    }

    fn name(&self, field: &str) -> Result<String, Rejection> {
        self.opt_name(field)?
            .ok_or_else(|| self.err(field, "missing"))
    }

    fn opt_name(&self, field: &str) -> Result<Option<String>, Rejection> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(self.err(field, "must be a string")),
        }
    }

    /// A partition or QOS list: one name, a comma-separated list (Slurm's
    /// `-p a,b`, `--qos a,b`) or a JSON array of names, stored as the
    /// comma-separated list in the order given (its elements are checked by
    /// `check::check_name_list`).
    fn opt_name_list(&self, field: &str) -> Result<Option<String>, Rejection> {
        let items: Vec<String> = match self.get(field) {
            None => return Ok(None),
            Some(Value::String(_)) => return self.opt_name(field),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| v.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| self.err(field, "must be a name or an array of names"))?,
            Some(_) => return Err(self.err(field, "must be a string or an array of names")),
        };
        if items.is_empty() {
            return Err(self.err(field, "must list at least one name"));
        }
        // An element holding `,` would read back as two.
        if let Some(i) = items.iter().position(|item| item.contains(',')) {
            return Err(self.err(field, list_element_reason(i, &items[i])));
        }
        Ok(Some(items.join(",")))
    }

    fn opt_i64(&self, field: &str) -> Result<Option<i64>, Rejection> {
        match self.get(field) {
            None => Ok(None),
            Some(v) => v
                .as_i64()
                .map(Some)
                .ok_or_else(|| self.err(field, "must be an integer")),
        }
    }

    fn opt_u64(&self, field: &str) -> Result<Option<u64>, Rejection> {
        match self.get(field) {
            None => Ok(None),
            Some(v) => v
                .as_u64()
                .map(Some)
                .ok_or_else(|| self.err(field, "must be an integer >= 0")),
        }
    }

    /// An integer >= 0 that fits `T`, else rejected with `reason`.
    fn opt_small<T: TryFrom<u64>>(
        &self,
        field: &str,
        reason: impl Fn() -> String,
    ) -> Result<Option<T>, Rejection> {
        match self.opt_u64(field)? {
            None => Ok(None),
            Some(n) => T::try_from(n)
                .map(Some)
                .map_err(|_| self.err(field, reason())),
        }
    }

    fn opt_bool(&self, field: &str) -> Result<Option<bool>, Rejection> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => Err(self.err(field, "must be true or false")),
        }
    }

    fn opt_number(&self, field: &str) -> Result<Option<f64>, Rejection> {
        match self.get(field) {
            None => Ok(None),
            Some(v) => v
                .as_f64()
                .filter(|x| x.is_finite())
                .map(Some)
                .ok_or_else(|| self.err(field, "must be a number")),
        }
    }

    /// A time in Unix seconds (its range is checked with the event).
    fn opt_time(&self, field: &str) -> Result<Option<i64>, Rejection> {
        match self.get(field) {
            None => Ok(None),
            Some(v) => v
                .as_i64()
                .map(Some)
                .ok_or_else(|| self.err(field, time_reason())),
        }
    }

    fn shares(&self, field: &str) -> Result<Option<Shares>, Rejection> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::String(s)) if s.eq_ignore_ascii_case("parent") => Ok(Some(Shares::Parent)),
            Some(v) => v
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .map(|n| Some(Shares::Value(n)))
                .ok_or_else(|| self.err(field, shares_reason())),
        }
    }

    fn tres(&self, field: &str) -> Result<Option<TresCounts>, Rejection> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::Object(items)) => {
                let mut counts = TresCounts::new();
                for (name, value) in items {
                    let path = format!("{field}.{name}");
                    let count = value
                        .as_f64()
                        .filter(|c| c.is_finite())
                        .ok_or_else(|| self.err(&path, "must be a number >= 0"))?;
                    if counts.insert(tres_name(name), count).is_some() {
                        return Err(self.err(&path, "is given twice"));
                    }
                }
                Ok(Some(counts))
            }
            Some(_) => Err(self.err(field, "must be an object of TRES counts")),
        }
    }

    fn job_spec(&self) -> Result<JobSpec, Rejection> {
        let urgency = self.opt_small::<u8>("urgency", urgency_reason)?;
        let attributes = match self.get("attributes") {
            None => None,
            Some(Value::Array(items)) => Some(
                items
                    .iter()
                    .map(|v| v.as_str().map(str::to_string))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| self.err("attributes", "must be an array of strings"))?,
            ),
            Some(_) => return Err(self.err("attributes", "must be an array of strings")),
        };
        Ok(JobSpec {
            partition: self.opt_name_list("partition")?,
            qos: self.opt_name_list("qos")?,
            tres: self.tres("tres")?,
            time_limit_secs: self.opt_u64("time_limit")?,
            nice: self.opt_i64("nice")?,
            urgency,
            begin: self.opt_time("begin")?,
            site_factor: self.opt_i64("site_factor")?,
            user_priority: self.opt_i64("user_priority")?,
            group: self.opt_name("group")?,
            bypass_count: self.opt_u64("bypass_count")?,
            deadline: self.opt_time("deadline")?,
            soft_policy_violation: self.opt_bool("soft_policy_violation")?,
            attributes,
            sluid: self.opt_sluid("sluid")?,
        })
    }

    /// Slurm 26.05's SLUID (`fairflow_model::sluid`), in any case Slurm
    /// reads; kept in its canonical form.
    fn opt_sluid(&self, field: &str) -> Result<Option<Sluid>, Rejection> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::String(text)) => Sluid::parse(text)
                .map(Some)
                .map_err(|e| self.err(field, e.to_string())),
            Some(_) => Err(self.err(
                field,
                "must be a SLUID string (`s` and 13 base-32 characters)",
            )),
        }
    }
}

// size: one arm per event kind, each reading its own fields
/// Parse one line of the event log. `line` is its 1-based number, used in the
/// rejection if the line is malformed.
pub fn parse_event(line: u64, text: &str) -> Result<Event, Rejection> {
    let value: Value = serde_json::from_str(text)
        .map_err(|e| Rejection::new(line, None, format!("not valid JSON: {e}")))?;
    let map = match &value {
        Value::Object(map) => map,
        _ => return Err(Rejection::new(line, None, "an event must be a JSON object")),
    };
    let f = Fields { line, map };
    let op = match f.get("op") {
        None => return Err(f.err("op", "missing")),
        Some(Value::String(op)) => op.as_str(),
        Some(_) => return Err(f.err("op", "must be a string")),
    };
    let t = f.opt_time("t")?.ok_or_else(|| f.err("t", "missing"))?;
    let job = || f.name("job");
    let op = match op {
        "account" => Op::Account {
            name: f.name("name")?,
            parent: f.opt_name("parent")?,
            shares: f.shares("shares")?,
            priority: f.opt_i64("priority")?,
        },
        "user" => Op::User {
            user: f.name("user")?,
            account: f.name("account")?,
            shares: f.shares("shares")?,
            priority: f.opt_i64("priority")?,
        },
        "remove_account" => Op::RemoveAccount {
            name: f.name("name")?,
        },
        "remove_user" => Op::RemoveUser {
            user: f.name("user")?,
            account: f.name("account")?,
        },
        "usage" => Op::Usage {
            account: f.name("account")?,
            user: f.opt_name("user")?,
            amount: f
                .opt_number("amount")?
                .ok_or_else(|| f.err("amount", "missing"))?,
            period: f.opt_small("period", period_reason)?,
        },
        "reset_usage" => Op::ResetUsage,
        "submit" => Op::Submit {
            job: job()?,
            user: f.name("user")?,
            account: f.name("account")?,
            spec: f.job_spec()?,
            submitted: f.opt_time("submitted")?,
        },
        "update" => {
            if f.get("user").is_some() {
                return Err(f.err("user", "a job's user cannot be changed"));
            }
            Op::Update {
                job: job()?,
                account: f.opt_name("account")?,
                spec: f.job_spec()?,
            }
        }
        "hold" => Op::Hold { job: job()? },
        "release" => Op::Release { job: job()? },
        "cancel" => Op::Cancel { job: job()? },
        "start" => Op::Start {
            job: job()?,
            tres: f.tres("tres")?,
        },
        "end" => Op::End { job: job()? },
        "requeue" => Op::Requeue {
            job: job()?,
            expedite: f.opt_bool("expedite")?.unwrap_or(false),
        },
        "config" => match f.get("set") {
            Some(Value::Object(set)) => Op::Config {
                set: set
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect::<BTreeMap<_, _>>(),
            },
            Some(_) => return Err(f.err("set", "must be an object of parameters")),
            None => return Err(f.err("set", "missing")),
        },
        "qos" => Op::Qos {
            name: f.name("name")?,
            priority: f.opt_i64("priority")?,
            usage_factor: f.opt_number("usage_factor")?,
        },
        "partition" => Op::Partition {
            name: f.name("name")?,
            priority_job_factor: f.opt_small("priority_job_factor", factor_reason)?,
            tres_billing_weights: match f.get("tres_billing_weights") {
                None => None,
                Some(Value::String(s)) => Some(
                    parse_weight_list(s).map_err(|e| f.err("tres_billing_weights", e.reason))?,
                ),
                Some(_) => return Err(f.err("tres_billing_weights", "must be a string")),
            },
            priority: f.opt_i64("priority")?,
            tres: f.tres("tres")?,
            max_time_secs: f.opt_u64("max_time")?,
            priority_tier: f.opt_small("priority_tier", factor_reason)?,
        },
        "cluster" => Op::Cluster {
            nodes: f
                .opt_u64("nodes")?
                .ok_or_else(|| f.err("nodes", "missing"))?,
            tres: f.tres("tres")?.unwrap_or_default(),
        },
        "tick" => Op::Tick,
        other => return Err(f.err("op", format!("unknown op `{other}`"))),
    };
    let event = Event { t, op };
    check_event(line, &event)?;
    Ok(event)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reject(text: &str) -> Rejection {
        parse_event(7, text).unwrap_err()
    }

    #[test]
    fn the_spec_example_parses() {
        let e = parse_event(
            1,
            r#"{"op":"usage","t":1700000100,"account":"b","user":"alice","amount":3600}"#,
        )
        .unwrap();
        assert_eq!(e.t, 1_700_000_100);
        assert_eq!(
            e.op,
            Op::Usage {
                account: "b".into(),
                user: Some("alice".into()),
                amount: 3600.0,
                period: None
            }
        );
        let e = parse_event(2, r#"{"op":"account","t":5,"name":"a","shares":"parent"}"#).unwrap();
        assert_eq!(
            e.op,
            Op::Account {
                name: "a".into(),
                parent: None,
                shares: Some(Shares::Parent),
                priority: None
            }
        );
    }

    #[test]
    fn each_kind_of_malformed_line_names_its_field() {
        let r = reject("{not json");
        assert_eq!((r.line, r.field.as_deref()), (7, None));
        assert!(r.reason.starts_with("not valid JSON"));
        assert_eq!(reject("[1,2]").reason, "an event must be a JSON object");
        assert_eq!(reject(r#"{"t":1}"#).field.as_deref(), Some("op"));
        let r = reject(r#"{"op":"frobnicate","t":1}"#);
        assert_eq!(
            (r.field.as_deref(), r.reason.as_str()),
            (Some("op"), "unknown op `frobnicate`")
        );
        assert_eq!(reject(r#"{"op":"tick"}"#).field.as_deref(), Some("t"));
        assert_eq!(
            reject(r#"{"op":"tick","t":1.5}"#).field.as_deref(),
            Some("t")
        );
        assert_eq!(
            reject(r#"{"op":"tick","t":-3}"#).field.as_deref(),
            Some("t")
        );
        let r = reject(r#"{"op":"usage","t":1,"account":"a","amount":-1}"#);
        assert_eq!(
            (r.field.as_deref(), r.reason.as_str()),
            (Some("amount"), "must be a number >= 0")
        );
        let r = reject(r#"{"op":"usage","t":1,"account":"a"}"#);
        assert_eq!(
            (r.field.as_deref(), r.reason.as_str()),
            (Some("amount"), "missing")
        );
        let r = reject(r#"{"op":"usage","t":1,"account":7,"amount":1}"#);
        assert_eq!(
            (r.field.as_deref(), r.reason.as_str()),
            (Some("account"), "must be a string")
        );
        assert_eq!(
            reject(r#"{"op":"account","t":1,"name":"a","shares":-2}"#)
                .field
                .as_deref(),
            Some("shares")
        );
        assert_eq!(
            reject(r#"{"op":"account","t":1,"name":"a","shares":"half"}"#)
                .field
                .as_deref(),
            Some("shares")
        );
        assert_eq!(
            reject(r#"{"op":"account","t":1,"name":"a b"}"#)
                .field
                .as_deref(),
            Some("name")
        );
        assert_eq!(
            reject(r#"{"op":"submit","t":1,"job":"1","user":"u","account":"a","urgency":32}"#)
                .field
                .as_deref(),
            Some("urgency")
        );
        assert_eq!(
            reject(r#"{"op":"submit","t":1,"job":"1","user":"u","account":"a","tres":{"cpu":-1}}"#)
                .field
                .as_deref(),
            Some("tres.cpu")
        );
        assert_eq!(
            reject(r#"{"op":"update","t":1,"job":"1","user":"v"}"#)
                .field
                .as_deref(),
            Some("user")
        );
        assert_eq!(
            reject(r#"{"op":"partition","t":1,"name":"p","tres_billing_weights":"CPU=x"}"#)
                .field
                .as_deref(),
            Some("tres_billing_weights")
        );
        assert_eq!(
            reject(r#"{"op":"config","t":1,"set":3}"#).field.as_deref(),
            Some("set")
        );
        assert_eq!(
            reject(r#"{"op":"cluster","t":1}"#).field.as_deref(),
            Some("nodes")
        );
    }

    #[test]
    fn several_partitions_and_qos_are_lists_in_the_order_given() {
        // Slurm's `-p p2,p1 --qos hi,lo`, as a comma list or a JSON array.
        for line in [
            r#"{"op":"submit","t":1,"job":"1","user":"u","account":"a","partition":"p2,p1","qos":"hi,lo"}"#,
            r#"{"op":"submit","t":1,"job":"1","user":"u","account":"a","partition":["p2","p1"],"qos":["hi","lo"]}"#,
        ] {
            let Op::Submit { spec, .. } = parse_event(1, line).unwrap().op else {
                panic!("a submit");
            };
            assert_eq!(spec.partition.as_deref(), Some("p2,p1"));
            assert_eq!(spec.qos.as_deref(), Some("hi,lo"));
        }
        // A list of one is the single name.
        let line = r#"{"op":"update","t":1,"job":"1","partition":["p"]}"#;
        let Op::Update { spec, .. } = parse_event(1, line).unwrap().op else {
            panic!("an update");
        };
        assert_eq!(spec.partition.as_deref(), Some("p"));
    }

    #[test]
    fn a_bad_partition_or_qos_list_is_rejected_naming_the_field() {
        for (line, field, reason) in [
            (
                r#"{"op":"submit","t":1,"job":"1","user":"u","account":"a","partition":"p1,,p2"}"#,
                "partition",
                "element 2 of the list is empty",
            ),
            (
                r#"{"op":"submit","t":1,"job":"1","user":"u","account":"a","partition":"p1,"}"#,
                "partition",
                "element 2 of the list is empty",
            ),
            (
                r#"{"op":"update","t":1,"job":"1","partition":"p1,p2,p1"}"#,
                "partition",
                "lists `p1` twice",
            ),
            (
                r#"{"op":"update","t":1,"job":"1","qos":["a","a"]}"#,
                "qos",
                "lists `a` twice",
            ),
            (
                r#"{"op":"update","t":1,"job":"1","qos":["a",2]}"#,
                "qos",
                "must be a name or an array of names",
            ),
            (
                r#"{"op":"update","t":1,"job":"1","qos":[]}"#,
                "qos",
                "must list at least one name",
            ),
            (
                r#"{"op":"update","t":1,"job":"1","qos":["a","b c"]}"#,
                "qos",
                "element 2 of the list",
            ),
            (
                r#"{"op":"update","t":1,"job":"1","partition":7}"#,
                "partition",
                "must be a string or an array of names",
            ),
        ] {
            let rejection = reject(line);
            assert_eq!(rejection.field.as_deref(), Some(field), "{line}");
            assert!(
                rejection.reason.contains(reason),
                "{line}: {}",
                rejection.reason
            );
        }
    }
}
