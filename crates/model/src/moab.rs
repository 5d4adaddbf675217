//! Moab's job-priority parameters, typed: the `*WEIGHT` and `*CAP` of every
//! component and subcomponent of `moab-job-priority-factors.txt`, the
//! credential settings of `USERCFG[x]`, `GROUPCFG[x]`, `ACCOUNTCFG[x]`,
//! `QOSCFG[x]` and `CLASSCFG[x]` (`PRIORITY`, `FSTARGET`, `QTWEIGHT`,
//! `XFWEIGHT`, `QTTARGET`, `XFTARGET`, and `GROUPCFG[g] FSWEIGHT`),
//! `JOBPRIOF`, `XFMINWCLIMIT`, `ENABLEPOSUSERPRIORITY`, `FSPOLICY`,
//! `PRIORITYTARGETPROCCOUNT`, `PRIORITYTARGETDURATION` and
//! `JOBPRIOACCRUALPOLICY`.
//!
//! The configuration keeps Moab parameters as text (`Config::moab`, by name as
//! written); [`validate_and_merge`] checks a value before it is stored (so a bad
//! value is rejected with its key) and [`MoabParams::from_map`] reads them all.
//! Names are upper case, as in `moab.cfg`. Parameters that do not change
//! priorities (limits, intervals, ...) are not Moab priority parameters and
//! are rejected here; the `moab.cfg` reader skips them.
//!
//! Defaults, as in Moab: every component weight 1, every subcomponent weight
//! 0 except `QUEUETIMEWEIGHT` 1 (plain FIFO), no caps.
//!
//! It also holds the per-job assembly both engines call, so they get the same
//! bits: each engine extracts a [`MoabJobInputs`] from its own records (with
//! the aggregates it computes itself: [`CredentialUsage`] and the user's
//! [`UserRunningTotals`]), [`subcomponent_values`] gives every subcomponent's
//! raw value (its docs define each one), and [`job_factors`] weighs them
//! ([`weigh_components`]) into the factors and the final priority.
//!
//! This file holds the shared kinds (components, credentials, the accrual
//! policy); `params` reads the parameters (`config` calls it, so it names
//! nothing of `report`), `assembly` is the per-job assembly.

use crate::priority_formula::FsTargetKind;

mod assembly;
pub mod params;

pub use assembly::{
    effective_queue_secs, job_factors, subcomponent_values, tres_count, weigh_components,
    CredentialUsage, MoabJobInputs, UserRunningTotals,
};
pub use params::{is_priority_parameter, parse_moab_duration_secs, validate_and_merge, MoabParams};

/// The components, each with its subcomponents, in Moab's order. A
/// component's parameters are `<NAME>WEIGHT` and `<NAME>CAP` (the service
/// component's are `SERVICEWEIGHT`/`SERVICECAP`, also spelled `SERVWEIGHT`/
/// `SERVCAP`); a subcomponent's likewise.
pub const COMPONENTS: [(&str, &[&str]); 7] = [
    ("CRED", &["USER", "GROUP", "ACCOUNT", "QOS", "CLASS"]),
    (
        "FS",
        &[
            "FSUSER",
            "FSGROUP",
            "FSACCOUNT",
            "FSQOS",
            "FSCLASS",
            "FSGUSER",
            "FSGGROUP",
            "FSGACCOUNT",
            "FSJPU",
            "FSPPU",
            "FSPSPU",
            "WCACCURACY",
        ],
    ),
    (
        "RES",
        &[
            "NODE", "PROC", "MEM", "SWAP", "DISK", "PS", "PE", "WALLTIME",
        ],
    ),
    (
        "SERV",
        &[
            "QUEUETIME",
            "XFACTOR",
            "BYPASS",
            "STARTCOUNT",
            "DEADLINE",
            "SPVIOLATION",
            "USERPRIO",
        ],
    ),
    ("TARGET", &["TARGETQUEUETIME", "TARGETXFACTOR"]),
    (
        "USAGE",
        &[
            "USAGECONSUMED",
            "USAGEHUNGER",
            "USAGEREMAINING",
            "USAGEEXECUTIONTIME",
            "USAGEPERCENT",
        ],
    ),
    (
        "ATTR",
        &["ATTRATTR", "ATTRSTATE", "ATTRGRES", "JOBID", "JOBNAME"],
    ),
];

/// A Moab credential type: what a `*CFG[name]` parameter configures and what
/// fair-share usage is tracked per.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum Credential {
    /// `USERCFG`: a user (across all its accounts).
    User,
    /// `GROUPCFG`: a group (a job's `group`, by default its account).
    Group,
    /// `ACCOUNTCFG`: an account.
    Account,
    /// `QOSCFG`: a QOS.
    Qos,
    /// `CLASSCFG`: a class (partition, queue).
    Class,
}

impl Credential {
    /// Every credential type, in Moab's order.
    pub const ALL: [Credential; 5] = [
        Credential::User,
        Credential::Group,
        Credential::Account,
        Credential::Qos,
        Credential::Class,
    ];

    /// The `*CFG` parameter name (`USERCFG`, ...).
    pub fn cfg_name(self) -> &'static str {
        match self {
            Credential::User => "USERCFG",
            Credential::Group => "GROUPCFG",
            Credential::Account => "ACCOUNTCFG",
            Credential::Qos => "QOSCFG",
            Credential::Class => "CLASSCFG",
        }
    }

    /// The credential's own name in subcomponent names (`USER`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Credential::User => "USER",
            Credential::Group => "GROUP",
            Credential::Account => "ACCOUNT",
            Credential::Qos => "QOS",
            Credential::Class => "CLASS",
        }
    }

    fn from_cfg_name(name: &str) -> Option<Credential> {
        Credential::ALL.into_iter().find(|c| c.cfg_name() == name)
    }
}

/// What a `*CFG[name]` line sets for one credential.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CredentialCfg {
    /// `PRIORITY=` (the CRED component's value).
    pub priority: Option<i64>,
    /// `FSTARGET=` in percent, with `+` (floor) or `-` (ceiling).
    pub fs_target: Option<(f64, FsTargetKind)>,
    /// `QTWEIGHT=` (QOS): added to `QUEUETIMEWEIGHT`.
    pub qt_weight: i64,
    /// `XFWEIGHT=` (QOS): added to `XFACTORWEIGHT`.
    pub xf_weight: i64,
    /// `QTTARGET=` (QOS): the queue-time target, seconds.
    pub qt_target_secs: Option<i64>,
    /// `XFTARGET=` (QOS): the expansion-factor target.
    pub xf_target: Option<f64>,
    /// `FSWEIGHT=` (GROUP): added to the FS component's weight (`FSWEIGHT`)
    /// for the jobs of this group.
    pub fs_weight: i64,
}

/// `JOBPRIOACCRUALPOLICY`: how a job accrues the effective queue time that
/// QUEUETIME, XFACTOR, TARGETQUEUETIME and TARGETXFACTOR read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum AccrualPolicy {
    /// `ALWAYS`: from the job's (last) queue entry, whatever happens after:
    /// time held and time before its begin time count.
    Always,
    /// `QUEUEPOLICY` (the default, as in Maui): only while the job is
    /// eligible, i.e. pending, not held, and past its begin time. Moab
    /// also stops accrual while a job breaks an idle-queue throttling policy
    /// (`MAXIJOB`, ...); fairflow models no throttling policy, so that part
    /// never applies.
    #[default]
    QueuePolicy,
    /// `FULLPOLICY`: as `QUEUEPOLICY`, and Moab also stops accrual while the
    /// job breaks an active (run) throttling policy. fairflow models no
    /// throttling policy, so this is exactly `QUEUEPOLICY`.
    FullPolicy,
}

impl AccrualPolicy {
    /// Does time spent held (and before the begin time) count as queue time?
    pub fn counts_ineligible_time(self) -> bool {
        self == AccrualPolicy::Always
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::report::JobState;
    use crate::Time;

    #[test]
    fn weights_and_caps_have_moab_defaults() {
        let params = MoabParams::default();
        assert_eq!(params.weight("SERV"), 1);
        assert_eq!(params.weight("FS"), 1);
        assert_eq!(params.weight("QUEUETIME"), 1);
        assert_eq!(params.weight("XFACTOR"), 0);
        assert_eq!(params.cap("FS"), 0);
    }

    #[test]
    fn parameters_are_typed() {
        let mut p = MoabParams::default();
        p.set("SERVICEWEIGHT", "2").unwrap();
        p.set("SERVCAP", "500").unwrap();
        p.set("XFACTORWEIGHT", "-10").unwrap();
        p.set("XFMINWCLIMIT", "00:10:00").unwrap();
        p.set("USERCFG[john]", "PRIORITY=2000 FSTARGET=25+ MAXJOB=4")
            .unwrap();
        p.set(
            "QOSCFG[special]",
            "QTWEIGHT=5000 XFWEIGHT=7 QTTARGET=2:00:00 XFTARGET=4",
        )
        .unwrap();
        p.set(
            "JOBPRIOF",
            "STATE[Running]=100 ATTR[PREEMPTEE]=-200 GRES[matlab]=400",
        )
        .unwrap();
        assert_eq!(p.weight("SERV"), 2);
        assert_eq!(p.cap("SERV"), 500);
        assert_eq!(p.weight("XFACTOR"), -10);
        assert_eq!(p.xf_min_wclimit_secs, 600);
        let john = p.credential(Credential::User, "john").unwrap();
        assert_eq!(john.priority, Some(2000));
        assert_eq!(john.fs_target, Some((25.0, FsTargetKind::Floor)));
        let special = p.credential(Credential::Qos, "special").unwrap();
        assert_eq!(
            (
                special.qt_weight,
                special.xf_weight,
                special.qt_target_secs,
                special.xf_target
            ),
            (5000, 7, Some(7200), Some(4.0))
        );
        assert_eq!(p.state_priority.get("running"), Some(&100));
        assert_eq!(p.attr_priority.get("preemptee"), Some(&-200));
        assert_eq!(p.gres_priority.get("matlab"), Some(&400));
    }

    #[test]
    fn bad_values_are_rejected() {
        let bad = [
            ("FSWEIGHT", "1.5"),
            ("FSWIEGHT", "1"),
            ("RMPOLLINTERVAL", "30"),
            ("USERCFG[john]", "PRIORITY=high"),
            ("USERCFG[john]", "PRIORITY"),
            ("USERCFG[john]", "FSTARGET=120"),
            ("USERCFG[john]", "QTWEIGHT=5"),
            ("USERCFG[]", "PRIORITY=1"),
            ("NODECFG[n1]", "PRIORITY=1"),
            ("XFMINWCLIMIT", "ten"),
            ("JOBPRIOF", "COLOR[red]=1"),
            ("ENABLEPOSUSERPRIORITY", "maybe"),
            ("FSPOLICY", "WHATEVER"),
            ("QOSCFG[q]", "XFTARGET=0.5"),
        ];
        for (key, value) in bad {
            assert!(
                validate_and_merge(key, None, value).is_err(),
                "{key} {value}"
            );
        }
    }

    #[test]
    fn targets_accrual_policy_and_group_fs_weight_are_typed() {
        let mut p = MoabParams::default();
        assert_eq!(
            (
                p.target_proc_count,
                p.target_duration_secs,
                p.accrual_policy
            ),
            (None, None, AccrualPolicy::QueuePolicy)
        );
        p.set("PRIORITYTARGETPROCCOUNT", "64").unwrap();
        // 2:30:00 = 2 * 3600 + 30 * 60 = 9000 s.
        p.set("PRIORITYTARGETDURATION", "2:30:00").unwrap();
        p.set("JOBPRIOACCRUALPOLICY", "always").unwrap();
        p.set("GROUPCFG[staff]", "FSWEIGHT=-3 PRIORITY=10").unwrap();
        assert_eq!(p.target_proc_count, Some(64));
        assert_eq!(p.target_duration_secs, Some(9000));
        assert_eq!(p.accrual_policy, AccrualPolicy::Always);
        assert!(p.accrual_policy.counts_ineligible_time());
        let staff = p.credential(Credential::Group, "staff").unwrap();
        assert_eq!((staff.fs_weight, staff.priority), (-3, Some(10)));
        for (text, policy) in [
            ("QUEUEPOLICY", AccrualPolicy::QueuePolicy),
            ("FULLPOLICY", AccrualPolicy::FullPolicy),
        ] {
            p.set("JOBPRIOACCRUALPOLICY", text).unwrap();
            assert_eq!(p.accrual_policy, policy);
            assert!(!policy.counts_ineligible_time());
        }
        for key in [
            "PRIORITYTARGETPROCCOUNT",
            "PRIORITYTARGETDURATION",
            "JOBPRIOACCRUALPOLICY",
        ] {
            assert!(is_priority_parameter(key), "{key}");
        }
    }

    #[test]
    fn bad_targets_policies_and_fs_weights_are_rejected_with_a_reason() {
        let bad = [
            ("PRIORITYTARGETPROCCOUNT", "0", "1 or more"),
            ("PRIORITYTARGETPROCCOUNT", "-4", "1 or more"),
            ("PRIORITYTARGETPROCCOUNT", "2.5", "not an integer"),
            ("PRIORITYTARGETDURATION", "0", "1 second or more"),
            ("PRIORITYTARGETDURATION", "an hour", "Moab duration"),
            (
                "JOBPRIOACCRUALPOLICY",
                "NEVER",
                "ALWAYS, QUEUEPOLICY or FULLPOLICY",
            ),
            ("USERCFG[john]", "FSWEIGHT=5", "GROUPCFG attribute"),
            ("QOSCFG[q]", "FSWEIGHT=5", "GROUPCFG attribute"),
            ("GROUPCFG[g]", "FSWEIGHT=lots", "not an integer"),
        ];
        for (key, value, reason) in bad {
            let err = validate_and_merge(key, None, value).unwrap_err();
            assert!(err.to_string().contains(reason), "{key} {value}: {err}");
        }
    }

    #[test]
    fn credential_attributes_accumulate() {
        let first = validate_and_merge("USERCFG[john]", None, "PRIORITY=2000").unwrap();
        let merged =
            validate_and_merge("USERCFG[john]", Some(&first), "FSTARGET=10 PRIORITY=5").unwrap();
        assert_eq!(merged, "PRIORITY=5 FSTARGET=10");
        assert_eq!(
            validate_and_merge("FSWEIGHT", Some("3"), " 4 ").unwrap(),
            "4"
        );
    }

    #[test]
    fn a_config_event_rejects_a_bad_moab_value_with_its_key() {
        let mut set = BTreeMap::new();
        set.insert("FSWEIGHT".to_string(), serde_json::Value::from(10));
        set.insert("XFACTORCAP".to_string(), serde_json::Value::from("a lot"));
        let err = crate::Config::default().patched(&set).unwrap_err();
        assert_eq!(err.key, "XFACTORCAP");
        set.insert("XFACTORCAP".to_string(), serde_json::Value::from(100));
        let config = crate::Config::default().patched(&set).unwrap();
        let params = MoabParams::from_map(&config.moab).unwrap();
        assert_eq!((params.weight("FS"), params.cap("XFACTOR")), (10, 100));
    }

    /// A pending job of user alice (account physics, 4 CPUs, 32000 MB,
    /// limit 6000 s) queued at 0, held from 600 to 1200, read at 3600.
    fn alice_job<'a>(
        usage: &'a CredentialUsage,
        tres: &'a [(&'a str, f64)],
        cluster_tres: &'a [(&'a str, f64)],
        held_spans: &'a [(Time, Time)],
    ) -> MoabJobInputs<'a> {
        MoabJobInputs {
            id: "42",
            user: "alice",
            group: "physics",
            account: "physics",
            qos: "",
            class: "batch",
            account_priority: Some(7),
            qos_priority: None,
            class_priority: 0,
            state: JobState::Pending,
            running: false,
            started_at: None,
            start_count: 0,
            queued_at: 0,
            begin_at: None,
            held_spans,
            held_since: None,
            time_limit_secs: Some(6000),
            tres,
            cluster_tres,
            bypass_count: None,
            deadline: Some(7200),
            soft_policy_violation: false,
            user_priority: None,
            attributes: &[],
            credential_usage: usage,
            user_running: UserRunningTotals::default(),
            wallclock_accuracy: None,
            now: 3600,
        }
    }

    #[test]
    fn the_shared_per_job_assembly_matches_hand_arithmetic() {
        let mut params = MoabParams::default();
        for (key, value) in [
            ("USERCFG[alice]", "PRIORITY=100 FSTARGET=25"),
            ("USERWEIGHT", "1"),
            ("ACCOUNTWEIGHT", "2"),
            ("FSUSERWEIGHT", "3"),
            ("PROCWEIGHT", "2"),
            ("XFACTORWEIGHT", "10"),
        ] {
            params.set(key, value).unwrap();
        }
        let mut usage = CredentialUsage {
            total: 1000,
            ..CredentialUsage::default()
        };
        usage
            .by_credential
            .insert((Credential::User, "alice".to_string()), 100);
        let tres = [("cpu", 4.0), ("mem", 32000.0)];
        let cluster_tres = [("cpu", 16.0), ("mem", 64000.0)];
        let held_spans = [(600, 1200)];
        let job = alice_job(&usage, &tres, &cluster_tres, &held_spans);
        let values = subcomponent_values(&params, &job);
        // Queue time (QUEUEPOLICY): 3600 - 0 - 600 held = 3000 s = 50 min.
        assert_eq!(values["QUEUETIME"], 50.0);
        // XFACTOR = 1 + 3000 / max(0, 6000) = 1.5.
        assert_eq!(values["XFACTOR"], 1.5);
        // FSUSER: target 25 - usage 100/1000 * 100 = 10 percent: 15.
        assert_eq!(values["FSUSER"], 15.0);
        // PE: the largest fraction, max(4/16, 32000/64000) = 0.5, times 16 CPUs.
        assert_eq!(values["PE"], 8.0);
        // DEADLINE: (3600 - 0) / (7200 - 0) = 0.5; JOBID: "42" reads as 42.
        assert_eq!((values["DEADLINE"], values["JOBID"]), (0.5, 42.0));
        // ACCOUNT falls back to the account event's priority, 7.
        assert_eq!((values["USER"], values["ACCOUNT"]), (100.0, 7.0));
        let (factors, priority) = job_factors(&params, &job);
        // CRED 100 * 1 + 7 * 2 = 114; FS 15 * 3 = 45; RES PROC 4 * 2 = 8;
        // SERV QUEUETIME 50 * 1 + XFACTOR 1.5 * 10 = 65; every component
        // weight 1: 114 + 45 + 8 + 65 = 232.
        assert_eq!(priority, 232);
        let serv = factors.iter().find(|f| f.name == "SERV").unwrap();
        assert_eq!((serv.normalized, serv.weighted), (65.0, 65.0));

        let held = MoabJobInputs {
            state: JobState::Held,
            held_since: Some(3000),
            ..job
        };
        // Held since 3000: 3600 - 600 - 600 = 2400 s = 40 min; priority 0.
        assert_eq!(subcomponent_values(&params, &held)["QUEUETIME"], 40.0);
        assert_eq!(job_factors(&params, &held).1, 0);
    }

    #[test]
    fn a_running_job_freezes_its_queue_time_and_reads_usage() {
        let params = MoabParams::default();
        let usage = CredentialUsage::default();
        let tres = [("cpu", 4.0)];
        let held_spans = [(600, 1200)];
        let mut running = UserRunningTotals::default();
        // This job (4 CPUs, limit 6000 s) and one of 2 CPUs with no limit,
        // started at 3000: 2 jobs, 6 CPUs, 4 * 6000 + 2 * 600 = 25200.
        running.add_job(4.0, Some(6000), Some(3000), 3600);
        running.add_job(2.0, None, Some(3000), 3600);
        assert_eq!(
            running,
            UserRunningTotals {
                jobs: 2.0,
                cpus: 6.0,
                cpu_secs: 25_200.0
            }
        );
        let job = MoabJobInputs {
            state: JobState::Running,
            running: true,
            started_at: Some(3000),
            start_count: 2,
            user_running: running,
            ..alice_job(&usage, &tres, &[], &held_spans)
        };
        let values = subcomponent_values(&params, &job);
        // Queue time up to the start: 3000 - 0 - 600 held = 2400 s = 40 min.
        assert_eq!(values["QUEUETIME"], 40.0);
        // 600 s elapsed: 4 * 600 = 2400 consumed, 4 * (6000 - 600) = 21600
        // remaining, 100 * 600 / 6000 = 10 percent.
        assert_eq!(values["USAGECONSUMED"], 2400.0);
        assert_eq!(values["USAGEREMAINING"], 21_600.0);
        assert_eq!(values["USAGEPERCENT"], 10.0);
        // Started twice, the current stay excluded: 1. No cluster: PE = CPUs.
        assert_eq!((values["STARTCOUNT"], values["PE"]), (1.0, 4.0));
        assert_eq!((values["FSJPU"], values["FSPSPU"]), (2.0, 25_200.0));
    }

    #[test]
    fn moab_durations() {
        assert_eq!(parse_moab_duration_secs("45").unwrap(), 45);
        assert_eq!(parse_moab_duration_secs("1:30").unwrap(), 90);
        assert_eq!(parse_moab_duration_secs("2:00:00").unwrap(), 7200);
        assert_eq!(parse_moab_duration_secs("1:00:00:00").unwrap(), 86_400);
        assert!(parse_moab_duration_secs("1:2:3:4:5").is_err());
        assert!(parse_moab_duration_secs("").is_err());
    }
}
