//! The fair-share table in the shape Slurm's own JSON has: what
//! `sshare --json` and slurmrestd's `GET /slurm/v0.0.46/shares` write, from
//! data_parser v0.0.46 (the newest in Slurm's source, 26.11 development
//! head), `src/plugins/data_parser/v0.0.46/parsers.c`: the response
//! `OPENAPI_SHARES_RESP` (`shares`, `meta`, `errors`, `warnings`),
//! `SHARES_RESP_MSG` (`shares`, `total_shares`) and one
//! `ASSOC_SHARES_OBJ_WRAP` per row, with the `*_NO_VAL` numbers as
//! `{"set", "infinite", "number"}` objects and `type` as a flag list.
//!
//! # How a row maps
//! - `id`: the row's place in sshare's tree order, root 1 (fairflow keeps no
//!   association ids); `cluster`: [`CLUSTER_NAME`]; `partition`: `""`.
//! - `name`/`parent`: a user row's user and account; an account row's
//!   account and parent account (root's parent `""`), as
//!   `assoc_mgr_get_shares` fills them.
//! - `shares`: RawShares; `FairShare=parent` is Slurm's
//!   `SLURMDB_FS_USE_PARENT`, the number 2147483647; root unset (`NO_VAL`).
//! - `shares_normalized`, `usage_normalized`, `effective_usage`,
//!   `fairshare.factor`: the table's cells, unset where a cell is empty.
//! - `fairshare.level`: LevelFS; a `FairShare=parent` user's is infinite
//!   (`INFINITY` in Slurm), a `parent` account's and root's unset (`NO_VAL`).
//! - `usage`: RawUsage; `tres`: the TRES lists, `cpu` only: `run_seconds`
//!   0, `group_minutes` unset (no limit), `usage` the row's raw usage.
//! - `total_shares`: 0, as every Slurm writes it (`tot_shares` is packed
//!   but never set by slurmctld).
//! - `meta`: data_parser `v0.0.46`, fairflow's name and version as the
//!   plugin, `sshare` as the command; `errors` and `warnings` empty.
//!
//! # Jobs
//! The listed jobs in the shape of slurmrestd's `GET /slurm/v0.0.46/jobs`
//! (`OPENAPI_JOB_INFO_RESP`, one `JOB_INFO` per job): the fields fairflow
//! knows, named as `PARSER_ARRAY(JOB_INFO)` names them (`account`,
//! `cluster`, `cpus`, `eligible_time`, `job_id`, `job_state`, `name`,
//! `node_count`, `partition`, `priority`, `priority_by_partition`, `qos`,
//! `submit_time`, `time_limit`, `user_name`), the others left out.
//! `job_id` is a numeric id's number (0 for another id) and `name` the id
//! as fairflow has it (fairflow keeps no job names); a held job is
//! `PENDING` with priority 0, as Slurm holds a job.

use std::sync::Arc;

use fairflow_model::report::{FairshareRow, FairshareTable, JobPriority, JobState};

use crate::pieces::{array_in_document, Pieces};
use fairflow_model::{Shares, Time};
use serde_json::{json, Value};

/// The newest data_parser version in Slurm's source, in the route and `meta`.
pub const DATA_PARSER_VERSION: &str = "v0.0.46";

/// slurmrestd's path of the shares, with [`DATA_PARSER_VERSION`].
pub const SHARES_PATH: &str = "/slurm/v0.0.46/shares";

/// The `cluster` of every row (fairflow models one cluster).
pub const CLUSTER_NAME: &str = "fairflow";

/// Slurm's `SLURMDB_FS_USE_PARENT`, the raw shares of `FairShare=parent`.
pub const SLURMDB_FS_USE_PARENT: u32 = 0x7FFF_FFFF;

/// A `FLOAT64_NO_VAL`/`UINT32_NO_VAL`/`UINT64_NO_VAL` value: set, unset or
/// infinite.
fn no_val(value: Option<Value>, infinite: bool) -> Value {
    match (value, infinite) {
        (_, true) => json!({"set": false, "infinite": true, "number": 0}),
        (Some(number), false) => json!({"set": true, "infinite": false, "number": number}),
        (None, false) => json!({"set": false, "infinite": false, "number": 0}),
    }
}

/// A `FLOAT64_NO_VAL` from an `f64` cell (`inf` is infinite, NaN unset).
fn float_no_val(value: Option<f64>) -> Value {
    match value {
        Some(v) if v.is_infinite() => no_val(None, true),
        Some(v) if v.is_nan() => no_val(None, false),
        Some(v) => no_val(Some(json!(v)), false),
        None => no_val(None, false),
    }
}

/// The parent account name of each row (`""` for root).
fn parents(table: &FairshareTable) -> Vec<String> {
    // Tree order: the last account row seen at each depth is the parent of
    // the next row one level deeper.
    let mut open: Vec<String> = Vec::new();
    table
        .rows
        .iter()
        .map(|row| {
            if row.user.is_some() {
                return row.account.clone();
            }
            open.truncate(row.depth);
            let parent = open.last().cloned().unwrap_or_default();
            open.push(row.account.clone());
            parent
        })
        .collect()
}

/// One `ASSOC_SHARES_OBJ_WRAP`.
fn share(index: usize, row: &FairshareRow, parent: String) -> Value {
    let is_parent = row.raw_shares == Some(Shares::Parent);
    let shares = match row.raw_shares {
        None => no_val(None, false),
        Some(Shares::Parent) => no_val(Some(json!(SLURMDB_FS_USE_PARENT)), false),
        Some(Shares::Value(v)) => no_val(Some(json!(v)), false),
    };
    let level = if is_parent && row.user.is_some() {
        no_val(None, true)
    } else {
        float_no_val(row.level_fs)
    };
    let (name, kind) = match &row.user {
        Some(user) => (user.clone(), "USER"),
        None => (row.account.clone(), "ASSOCIATION"),
    };
    json!({
        "id": index + 1,
        "cluster": CLUSTER_NAME,
        "name": name,
        "parent": parent,
        "partition": "",
        "shares_normalized": float_no_val(row.norm_shares),
        "shares": shares,
        "tres": {
            "run_seconds": [{"name": "cpu", "value": no_val(Some(json!(0)), false)}],
            "group_minutes": [{"name": "cpu", "value": no_val(None, false)}],
            "usage": [{"name": "cpu", "value": row.raw_usage}],
        },
        "effective_usage": float_no_val(row.effective_usage),
        "usage_normalized": float_no_val(row.norm_usage),
        "usage": row.raw_usage,
        "fairshare": {
            "factor": float_no_val(row.fairshare),
            "level": level,
        },
        "type": [kind],
    })
}

/// The `meta` of every response, naming `command`.
fn meta(command: &str) -> Value {
    json!({
        "plugin": {
            "type": "",
            "name": "fairflow",
            "data_parser": format!("data_parser/{DATA_PARSER_VERSION}"),
            "accounting_storage": "",
        },
        "client": {"source": "", "user": "", "group": ""},
        "command": [command],
        "slurm": {
            "version": {"major": "", "micro": "", "minor": ""},
            "release": concat!("fairflow ", env!("CARGO_PKG_VERSION")),
            "cluster": CLUSTER_NAME,
        },
    })
}

/// The whole `OPENAPI_SHARES_RESP`, pretty-printed, with a final newline.
pub fn render_shares(table: &FairshareTable) -> String {
    render_shares_pieces(Arc::new(table.clone())).collect()
}

/// [`render_shares`] in pieces (`crate::pieces`), each row rendered as its
/// piece is taken.
pub fn render_shares_pieces(table: Arc<FairshareTable>) -> Pieces {
    let parents = parents(&table);
    let response = json!({
        "shares": {
            "shares": [],
            "total_shares": 0,
        },
        "meta": meta("sshare"),
        "errors": [],
        "warnings": [],
    });
    let count = table.rows.len();
    array_in_document(&response, "\"shares\": [", 3, count, move |index| {
        share(index, &table.rows[index], parents[index].clone())
    })
}

/// slurmrestd's path of the jobs, with [`DATA_PARSER_VERSION`].
pub const JOBS_PATH: &str = "/slurm/v0.0.46/jobs";

/// What a job's `JOB_INFO` needs besides its priority: the job's own
/// lists as Slurm keeps them (the partitions in `PriorityTier` order, the
/// QOS as requested), its limits and times.
#[derive(Debug, Clone, PartialEq)]
pub struct JobFacts {
    /// The priority, factors and pairs (one of the engine's results).
    pub priority: JobPriority,
    /// `partition`: the job's partitions, comma-separated.
    pub partitions: String,
    /// `qos`: "if pending the QOS requested", comma-separated.
    pub qos: String,
    /// `eligible_time`: when it may start (its begin time, else its
    /// submission).
    pub eligible_at: Time,
    /// `time_limit`, minutes, if given.
    pub time_limit_mins: Option<u64>,
    /// `cpus`, if given.
    pub cpus: Option<u64>,
    /// `node_count`, if given.
    pub nodes: Option<u64>,
}

/// `priority_by_partition` as data_parser v0.0.46 writes it
/// (`DUMP_FUNC(PRIORITY_BY_PARTITION)`): empty unless the job has a
/// `priority_array` and it lists several partitions; then one
/// `{partition, priority}` per partition of `priority_array_names` (the
/// partitions, in `PriorityTier` order), with the array's entry of the same
/// index. The array has one entry per (partition, QOS) pair, so for a job
/// with several QOS too the entries are the first pairs', as Slurm writes
/// them (partition `i` gets entry `i`); a job with several QOS in one
/// partition has no names, so an empty list.
fn priority_by_partition(job: &JobPriority) -> Value {
    let mut names: Vec<&str> = Vec::new();
    for pair in &job.pairs {
        if !names.contains(&pair.partition.as_str()) {
            names.push(&pair.partition);
        }
    }
    if names.len() < 2 {
        return json!([]);
    }
    names
        .iter()
        .zip(&job.pairs)
        .map(|(name, pair)| json!({"partition": name, "priority": pair.priority}))
        .collect()
}

/// One `JOB_INFO` with the fields fairflow knows (the others are left out).
fn job_info(facts: &JobFacts) -> Value {
    let job = &facts.priority;
    let number = |n: Option<u64>| no_val(n.map(|n| json!(n)), false);
    let state = match job.state {
        JobState::Running => "RUNNING",
        JobState::Pending | JobState::Held => "PENDING",
    };
    json!({
        "account": job.account,
        "cluster": CLUSTER_NAME,
        "cpus": number(facts.cpus),
        "eligible_time": number(u64::try_from(facts.eligible_at).ok()),
        "job_id": job.job.parse::<u32>().unwrap_or(0),
        "job_state": [state],
        "name": job.job,
        "node_count": number(facts.nodes),
        "partition": facts.partitions,
        "priority": number(Some(job.priority)),
        "priority_by_partition": priority_by_partition(job),
        "qos": facts.qos,
        "submit_time": number(u64::try_from(job.submit_at).ok()),
        "time_limit": number(facts.time_limit_mins),
        "user_name": job.user,
    })
}

/// The whole `OPENAPI_JOB_INFO_RESP` (`jobs`, `last_backfill`,
/// `last_update`, `meta`, `errors`, `warnings`) of `jobs`, as of `now`
/// (`last_update`; `last_backfill` unset: fairflow runs no scheduler).
pub fn render_jobs(jobs: &[JobFacts], now: Time) -> String {
    let jobs = jobs.to_vec();
    render_jobs_rows(jobs.len(), move |index| jobs[index].clone(), now).collect()
}

/// [`render_jobs`] of `count` jobs, the `index`th's facts from `facts`, in
/// pieces (`crate::pieces`), each job rendered as its piece is taken.
pub fn render_jobs_rows(
    count: usize,
    mut facts: impl FnMut(usize) -> JobFacts + Send + 'static,
    now: Time,
) -> Pieces {
    let response = json!({
        "jobs": [],
        "last_backfill": no_val(None, false),
        "last_update": no_val(u64::try_from(now).ok().map(|t| json!(t)), false),
        "meta": meta("squeue"),
        "errors": [],
        "warnings": [],
    });
    array_in_document(&response, "\"jobs\": [", 2, count, move |index| {
        job_info(&facts(index))
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use fairflow_model::report::{FairshareRow, FairshareTable};
    use fairflow_model::{Algorithm, Shares};
    use serde_json::Value;

    use super::render_shares;

    /// The fields of one share, read from Slurm's
    /// `src/plugins/data_parser/v0.0.46/parsers.c`,
    /// `PARSER_ARRAY(ASSOC_SHARES_OBJ_WRAP)` (`add_parse`/`add_cparse` paths;
    /// a `/` nests), `add_skip`ped fields left out.
    const SHARE_FIELDS: [&str; 16] = [
        "id",
        "cluster",
        "name",
        "parent",
        "partition",
        "shares_normalized",
        "shares",
        "tres/run_seconds",
        "tres/group_minutes",
        "effective_usage",
        "usage_normalized",
        "usage",
        "tres/usage",
        "fairshare/factor",
        "fairshare/level",
        "type",
    ];
    /// `PARSER_ARRAY(SHARES_RESP_MSG)`.
    const RESP_MSG_FIELDS: [&str; 2] = ["shares", "total_shares"];
    /// `add_openapi_response_single(OPENAPI_SHARES_RESP, ..., "shares", ...)`
    /// with the meta, errors and warnings every response has.
    const RESPONSE_FIELDS: [&str; 4] = ["shares", "meta", "errors", "warnings"];
    /// `PARSER_ARRAY(OPENAPI_META)`.
    const META_FIELDS: [&str; 13] = [
        "plugin/type",
        "plugin/name",
        "plugin/data_parser",
        "plugin/accounting_storage",
        "client/source",
        "client/user",
        "client/group",
        "command",
        "slurm/version/major",
        "slurm/version/micro",
        "slurm/version/minor",
        "slurm/release",
        "slurm/cluster",
    ];
    /// `PARSER_ARRAY(FLOAT64_NO_VAL_STRUCT)` (and the `UINT32`/`UINT64` ones).
    const NO_VAL_FIELDS: [&str; 3] = ["set", "infinite", "number"];
    /// `PARSER_ARRAY(SHARES_UINT64_TRES)` / `SHARES_FLOAT128_TRES`.
    const TRES_FIELDS: [&str; 2] = ["name", "value"];

    /// Every leaf path of a JSON object (`a/b`), arrays and scalars as leaves.
    fn paths(value: &Value, prefix: &str, out: &mut BTreeSet<String>) {
        match value {
            Value::Object(map) => {
                for (key, inner) in map {
                    let path = if prefix.is_empty() {
                        key.clone()
                    } else {
                        format!("{prefix}/{key}")
                    };
                    if inner.is_object() && !is_no_val(inner) {
                        paths(inner, &path, out);
                    } else {
                        out.insert(path);
                    }
                }
            }
            _ => {
                out.insert(prefix.to_string());
            }
        }
    }

    fn is_no_val(value: &Value) -> bool {
        keys(value) == set(&NO_VAL_FIELDS)
    }

    fn keys(value: &Value) -> BTreeSet<String> {
        value
            .as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    }

    fn set(fields: &[&str]) -> BTreeSet<String> {
        fields.iter().map(|f| f.to_string()).collect()
    }

    /// Root, an account, a `FairShare=parent` user and a plain user.
    fn table() -> FairshareTable {
        let mut root = FairshareRow::new("root", None, 0);
        root.norm_shares = Some(0.0);
        root.raw_usage = 240;
        root.effective_usage = Some(1.0);
        let mut a = FairshareRow::new("a", None, 1);
        a.raw_shares = Some(Shares::Value(40));
        a.norm_shares = Some(0.4);
        a.raw_usage = 108;
        a.norm_usage = Some(0.45);
        a.effective_usage = Some(0.45);
        a.level_fs = Some(0.4 / 0.45);
        let mut p = FairshareRow::new("a", Some("p"), 2);
        p.raw_shares = Some(Shares::Parent);
        p.norm_shares = Some(0.4);
        p.norm_usage = Some(0.0);
        p.effective_usage = Some(0.0);
        p.fairshare = Some(1.0);
        let mut u = FairshareRow::new("a", Some("u"), 2);
        u.raw_shares = Some(Shares::Value(1));
        u.norm_shares = Some(0.5);
        u.raw_usage = 108;
        u.norm_usage = Some(0.45);
        u.effective_usage = Some(1.0);
        u.fairshare = Some(0.5);
        u.level_fs = Some(0.5);
        FairshareTable {
            algorithm: Algorithm::FairTree,
            as_of: 0,
            rows: vec![root, a, p, u],
        }
    }

    #[test]
    fn the_shape_is_data_parser_v0_0_46s() {
        let json: Value = serde_json::from_str(&render_shares(&table())).unwrap();
        assert_eq!(keys(&json), set(&RESPONSE_FIELDS));
        assert_eq!(keys(&json["shares"]), set(&RESP_MSG_FIELDS));
        assert_eq!(json["shares"]["total_shares"], 0);
        let mut meta = BTreeSet::new();
        paths(&json["meta"], "", &mut meta);
        assert_eq!(meta, set(&META_FIELDS));
        assert_eq!(json["errors"], Value::Array(vec![]));
        assert_eq!(json["warnings"], Value::Array(vec![]));
        let shares = json["shares"]["shares"].as_array().unwrap();
        assert_eq!(shares.len(), 4);
        for share in shares {
            let mut fields = BTreeSet::new();
            paths(share, "", &mut fields);
            assert_eq!(fields, set(&SHARE_FIELDS), "{share}");
            for list in ["run_seconds", "group_minutes", "usage"] {
                for entry in share["tres"][list].as_array().unwrap() {
                    assert_eq!(keys(entry), set(&TRES_FIELDS));
                }
            }
            for no_val in [
                &share["shares_normalized"],
                &share["shares"],
                &share["effective_usage"],
                &share["usage_normalized"],
                &share["fairshare"]["factor"],
                &share["fairshare"]["level"],
            ] {
                assert!(is_no_val(no_val), "{no_val}");
            }
        }
    }

    #[test]
    fn rows_map_as_assoc_mgr_get_shares_fills_them() {
        let json: Value = serde_json::from_str(&render_shares(&table())).unwrap();
        let shares = json["shares"]["shares"].as_array().unwrap();
        let unset = serde_json::json!({"set": false, "infinite": false, "number": 0});
        let infinite = serde_json::json!({"set": false, "infinite": true, "number": 0});
        // Root: no parent, shares NO_VAL, usage_normalized and the
        // fair-share values unset, effective usage 1.
        assert_eq!(shares[0]["name"], "root");
        assert_eq!(shares[0]["parent"], "");
        assert_eq!(shares[0]["shares"], unset);
        assert_eq!(shares[0]["usage_normalized"], unset);
        assert_eq!(shares[0]["effective_usage"]["number"], 1.0);
        assert_eq!(shares[0]["usage"], 240);
        assert_eq!(shares[0]["type"], serde_json::json!(["ASSOCIATION"]));
        // The account: its parent is root; shares 40 set.
        assert_eq!(shares[1]["name"], "a");
        assert_eq!(shares[1]["parent"], "root");
        assert_eq!(
            shares[1]["shares"],
            serde_json::json!({"set": true, "infinite": false, "number": 40})
        );
        // A `parent` user: name the user, parent its account, shares
        // SLURMDB_FS_USE_PARENT (0x7FFFFFFF), level infinite.
        assert_eq!(shares[2]["name"], "p");
        assert_eq!(shares[2]["parent"], "a");
        assert_eq!(shares[2]["shares"]["number"], 2_147_483_647u64);
        assert_eq!(shares[2]["fairshare"]["level"], infinite);
        assert_eq!(shares[2]["type"], serde_json::json!(["USER"]));
        // A plain user: factor and level set.
        assert_eq!(shares[3]["fairshare"]["factor"]["number"], 0.5);
        assert_eq!(shares[3]["fairshare"]["level"]["set"], true);
        assert_eq!(shares[3]["id"], 4);
    }

    /// Every field path of `PARSER_ARRAY(JOB_INFO)` in Slurm's
    /// `src/plugins/data_parser/v0.0.46/parsers.c` (`add_parse`,
    /// `add_parse_overload`, `add_cparse` paths; `add_skip`ped and
    /// `add_removed` fields left out), in its order.
    const JOB_INFO_FIELDS: &[&str] = &[
        "account",
        "accrue_time",
        "admin_comment",
        "allocating_node",
        "array_job_id",
        "array_task_id",
        "array_max_tasks",
        "array_task_string",
        "association_id",
        "batch_features",
        "batch_flag",
        "batch_host",
        "flags",
        "burst_buffer",
        "burst_buffer_state",
        "cluster",
        "cluster_features",
        "command",
        "comment",
        "container",
        "container_id",
        "contiguous",
        "core_spec",
        "thread_spec",
        "cores_per_socket",
        "billable_tres",
        "cpus_per_task",
        "cpu_frequency_minimum",
        "cpu_frequency_maximum",
        "cpu_frequency_governor",
        "cpus_per_tres",
        "cron",
        "deadline",
        "delay_boot",
        "dependency",
        "derived_exit_code",
        "eligible_time",
        "end_time",
        "excluded_nodes",
        "exit_code",
        "extra",
        "failed_node",
        "features",
        "federation_origin",
        "federation_siblings_active",
        "federation_siblings_viable",
        "gres_detail",
        "group_id",
        "group_name",
        "het_job_id",
        "het_job_id_set",
        "het_job_offset",
        "job_id",
        "job_resources",
        "job_size_str",
        "job_state",
        "last_sched_evaluation",
        "licenses",
        "licenses_allocated",
        "mail_type",
        "mail_user",
        "max_cpus",
        "max_nodes",
        "mcs_label",
        "memory_per_tres",
        "memory_update_delay",
        "memory_update_margin",
        "name",
        "network",
        "nodes",
        "nice",
        "tasks_per_core",
        "tasks_per_tres",
        "tasks_per_node",
        "tasks_per_socket",
        "tasks_per_board",
        "cpus",
        "node_count",
        "tasks",
        "partition",
        "prefer",
        "memory_per_cpu",
        "memory_per_node",
        "minimum_cpus_per_node",
        "minimum_tmp_disk_per_node",
        "preempt_time",
        "preemptable_time",
        "pre_sus_time",
        "hold",
        "priority",
        "priority_by_partition",
        "profile",
        "qos",
        "reboot",
        "required_nodes",
        "required_switches",
        "requeue",
        "resize_time",
        "restart_cnt",
        "resv_name",
        "runtime",
        "scheduled_nodes",
        "segment_size",
        "selinux_context",
        "step_id",
        "sockets_per_board",
        "sockets_per_node",
        "start_time",
        "state_description",
        "state_reason",
        "standard_input",
        "standard_output",
        "standard_error",
        "stdin_expanded",
        "stdout_expanded",
        "stderr_expanded",
        "submit_time",
        "submit_line",
        "suspend_time",
        "system_comment",
        "time_limit",
        "time_minimum",
        "threads_per_core",
        "tres_bind",
        "tres_freq",
        "tres_per_job",
        "tres_per_node",
        "tres_per_socket",
        "tres_per_task",
        "tres_req_str",
        "tres_alloc_str",
        "user_id",
        "user_name",
        "maximum_switch_wait_time",
        "wckey",
        "current_working_directory",
    ];
    /// `PARSER_ARRAY(PART_PRIO)`: one entry of `priority_by_partition`.
    const PART_PRIO_FIELDS: [&str; 2] = ["partition", "priority"];
    /// `PARSER_ARRAY(OPENAPI_JOB_INFO_RESP)`.
    const JOB_RESPONSE_FIELDS: [&str; 6] = [
        "jobs",
        "last_backfill",
        "last_update",
        "meta",
        "errors",
        "warnings",
    ];

    fn listed_job(id: &str, pairs: &[(&str, &str, u64)]) -> super::JobFacts {
        use fairflow_model::report::{JobPriority, JobState, PairPriority};
        super::JobFacts {
            priority: JobPriority {
                job: id.into(),
                user: "alice".into(),
                account: "lab".into(),
                partition: pairs.first().map_or("p1", |p| p.0).into(),
                qos: "hi".into(),
                submit_at: 1000,
                priority: pairs.first().map_or(7, |p| p.2),
                state: JobState::Pending,
                model: fairflow_model::PriorityModel::Slurm,
                factors: Vec::new(),
                pairs: pairs
                    .iter()
                    .map(|(partition, qos, priority)| PairPriority {
                        partition: partition.to_string(),
                        qos: qos.to_string(),
                        priority: *priority,
                        factors: Vec::new(),
                        priority_tier: 0,
                    })
                    .collect(),
                priority_tier: 0,
                expedited: false,
            },
            partitions: "p1,p2".into(),
            qos: "lo,hi".into(),
            eligible_at: 1000,
            time_limit_mins: Some(60),
            cpus: Some(8),
            nodes: None,
        }
    }

    #[test]
    fn the_jobs_answer_has_data_parsers_fields_and_priority_by_partition() {
        // Job A of crates/engine/tests/cases/slurm_multi_partition_qos.toml:
        // -p p1,p2 --qos lo,hi, pairs (p1,hi) 4250, (p1,lo) 3250, (p2,hi)
        // 3500, (p2,lo) 2500. data_parser names the two partitions and takes
        // the array's first two entries: p1 4250, p2 3250. Job M of
        // slurm_partition_priority_tier.toml: pthigh 1500, ptlow 2250. A job
        // with one pair, and one with two QOS in one partition, have none.
        let jobs = [
            listed_job(
                "12",
                &[
                    ("p1", "hi", 4250),
                    ("p1", "lo", 3250),
                    ("p2", "hi", 3500),
                    ("p2", "lo", 2500),
                ],
            ),
            listed_job("13", &[("pthigh", "", 1500), ("ptlow", "", 2250)]),
            listed_job("x14", &[]),
            listed_job("15", &[("p1", "hi", 10), ("p1", "lo", 5)]),
        ];
        let text = super::render_jobs(&jobs, 2000);
        let response: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            keys(&response),
            JOB_RESPONSE_FIELDS.iter().map(|s| s.to_string()).collect()
        );
        let all: BTreeSet<&str> = JOB_INFO_FIELDS.iter().copied().collect();
        let listed = response["jobs"].as_array().unwrap();
        assert_eq!(listed.len(), 4);
        for job in listed {
            for key in keys(job) {
                assert!(
                    all.contains(key.as_str()),
                    "`{key}` is not a JOB_INFO field"
                );
            }
            for entry in job["priority_by_partition"].as_array().unwrap() {
                assert_eq!(
                    keys(entry),
                    PART_PRIO_FIELDS.iter().map(|s| s.to_string()).collect()
                );
            }
        }
        let by_partition = |i: usize| listed[i]["priority_by_partition"].clone();
        assert_eq!(
            by_partition(0),
            serde_json::json!([{"partition": "p1", "priority": 4250}, {"partition": "p2", "priority": 3250}])
        );
        assert_eq!(
            by_partition(1),
            serde_json::json!([{"partition": "pthigh", "priority": 1500}, {"partition": "ptlow", "priority": 2250}])
        );
        assert_eq!(by_partition(2), serde_json::json!([]));
        assert_eq!(by_partition(3), serde_json::json!([]));
        let set = |n: u64| serde_json::json!({"set": true, "infinite": false, "number": n});
        assert_eq!(listed[0]["job_id"], 12);
        assert_eq!(listed[2]["job_id"], 0);
        assert_eq!(listed[2]["name"], "x14");
        assert_eq!(listed[0]["priority"], set(4250));
        assert_eq!(listed[0]["submit_time"], set(1000));
        assert_eq!(listed[0]["time_limit"], set(60));
        assert_eq!(listed[0]["job_state"], serde_json::json!(["PENDING"]));
        assert_eq!(listed[0]["node_count"]["set"], false);
        assert_eq!(response["last_update"], set(2000));
        assert_eq!(
            response["meta"]["plugin"]["data_parser"],
            "data_parser/v0.0.46"
        );
    }
}
