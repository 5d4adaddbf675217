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

use std::collections::BTreeMap;

use crate::priority_formula::{
    eligible_at, moab_effective_queue_secs, moab_final_priority, moab_fs_delta,
    moab_target_closeness, moab_target_value, moab_xfactor, FsTargetKind,
};
use crate::report::JobState;
use crate::usage::FrameUsage;
use crate::{InvalidValue, Time};

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

/// Every Moab priority parameter, typed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MoabParams {
    /// `*WEIGHT` given explicitly, by component or subcomponent name.
    pub weights: BTreeMap<String, i64>,
    /// `*CAP` given explicitly, by component or subcomponent name.
    pub caps: BTreeMap<String, i64>,
    /// `XFMINWCLIMIT`, seconds (0: none).
    pub xf_min_wclimit_secs: i64,
    /// `ENABLEPOSUSERPRIORITY`: user priorities may be positive (up to 1023).
    pub enable_positive_user_priority: bool,
    /// `FSPOLICY` ends in `%`: fair-share deltas are ratios, not differences.
    pub fs_policy_ratio: bool,
    /// `*CFG[name]` settings.
    pub credentials: BTreeMap<(Credential, String), CredentialCfg>,
    /// `JOBPRIOF STATE[s]=v`, by lower-case state (`idle`, `running`, `hold`).
    pub state_priority: BTreeMap<String, i64>,
    /// `JOBPRIOF ATTR[a]=v`, by lower-case attribute.
    pub attr_priority: BTreeMap<String, i64>,
    /// `JOBPRIOF GRES[g]=v`, by lower-case generic resource.
    pub gres_priority: BTreeMap<String, i64>,
    /// `PRIORITYTARGETPROCCOUNT`: the ideal processor count; when set, the
    /// PROC subcomponent rewards closeness to it (`moab_target_closeness`).
    pub target_proc_count: Option<i64>,
    /// `PRIORITYTARGETDURATION`, seconds: the ideal walltime; when set, the
    /// WALLTIME subcomponent rewards closeness to it.
    pub target_duration_secs: Option<i64>,
    /// `JOBPRIOACCRUALPOLICY`.
    pub accrual_policy: AccrualPolicy,
}

/// Is `stem` a component or subcomponent name?
fn is_factor_name(stem: &str) -> bool {
    COMPONENTS
        .iter()
        .any(|(c, subs)| *c == stem || subs.contains(&stem))
}

/// The canonical factor name of a `*WEIGHT`/`*CAP` stem (`SERVICE` and
/// `SERV` are the service component).
fn canonical_stem(stem: &str) -> &str {
    if stem == "SERVICE" {
        "SERV"
    } else {
        stem
    }
}

fn parse_integer(text: &str) -> Result<i64, InvalidValue> {
    text.trim().parse::<i64>().map_err(|_| {
        InvalidValue::new(format!(
            "`{text}` is not an integer (Moab weights, caps and priorities are integers)"
        ))
    })
}

fn parse_number(text: &str) -> Result<f64, InvalidValue> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .ok_or_else(|| InvalidValue::new(format!("`{text}` is not a number")))
}

/// Moab's duration syntax `[[[DD:]HH:]MM:]SS`: a bare number is seconds.
pub fn parse_moab_duration_secs(text: &str) -> Result<i64, InvalidValue> {
    let bad = || {
        InvalidValue::new(format!(
            "`{text}` is not a Moab duration ([[[DD:]HH:]MM:]SS)"
        ))
    };
    let parts: Vec<&str> = text.trim().split(':').collect();
    if parts.len() > 4 {
        return Err(bad());
    }
    let multipliers = [1i64, 60, 3600, 86_400];
    let mut total = 0i64;
    for (part, multiplier) in parts.iter().rev().zip(multipliers) {
        if part.is_empty() || part.len() > 12 || !part.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        total += part.parse::<i64>().map_err(|_| bad())? * multiplier;
    }
    Ok(total)
}

fn parse_yes_no(text: &str) -> Result<bool, InvalidValue> {
    match text.trim().to_ascii_uppercase().as_str() {
        "TRUE" | "YES" | "1" | "ON" => Ok(true),
        "FALSE" | "NO" | "0" | "OFF" => Ok(false),
        _ => Err(InvalidValue::new(format!("`{text}` is not TRUE or FALSE"))),
    }
}

/// Split `A=1 B=2` (spaces or commas between) into ordered `(NAME, value)`.
fn attribute_pairs(text: &str) -> Result<Vec<(String, String)>, InvalidValue> {
    text.split(|c: char| c.is_whitespace() || c == ',')
        .filter(|t| !t.is_empty())
        .map(|token| {
            let (name, value) = token
                .split_once('=')
                .ok_or_else(|| InvalidValue::new(format!("`{token}` is not ATTRIBUTE=VALUE")))?;
            if name.is_empty() {
                return Err(InvalidValue::new(format!(
                    "`{token}` has no attribute name"
                )));
            }
            Ok((name.to_ascii_uppercase(), value.to_string()))
        })
        .collect()
}

/// `FSTARGET=30`, `30+` (floor), `30-` (ceiling); percent, 0 to 100.
fn parse_fs_target(text: &str) -> Result<(f64, FsTargetKind), InvalidValue> {
    let (number, kind) = if let Some(n) = text.strip_suffix('+') {
        (n, FsTargetKind::Floor)
    } else if let Some(n) = text.strip_suffix('-') {
        (n, FsTargetKind::Ceiling)
    } else {
        (text, FsTargetKind::Target)
    };
    let value = parse_number(number)?;
    if !(0.0..=100.0).contains(&value) {
        return Err(InvalidValue::new(format!(
            "FSTARGET `{text}` is not a percentage from 0 to 100 (with + for a floor, - for a ceiling)"
        )));
    }
    Ok((value, kind))
}

/// `(BASE, Some(index))` for `USERCFG[john]`, `(BASE, None)` for `FSWEIGHT`.
fn split_index(key: &str) -> Result<(&str, Option<&str>), InvalidValue> {
    match key.split_once('[') {
        None => Ok((key, None)),
        Some((base, rest)) => match rest.strip_suffix(']') {
            Some(index) if !index.is_empty() && !index.contains(['[', ']']) => {
                Ok((base, Some(index)))
            }
            _ => Err(InvalidValue::new(format!(
                "`{key}` is not NAME or NAME[credential]"
            ))),
        },
    }
}

/// Is `key` a Moab parameter fairflow's priority models use? (The `moab.cfg`
/// reader skips the others.)
pub fn is_priority_parameter(key: &str) -> bool {
    let Ok((base, index)) = split_index(key) else {
        return false;
    };
    match index {
        Some(_) => Credential::from_cfg_name(base).is_some(),
        None => {
            matches!(
                base,
                "XFMINWCLIMIT"
                    | "ENABLEPOSUSERPRIORITY"
                    | "FSPOLICY"
                    | "JOBPRIOF"
                    | "PRIORITYTARGETPROCCOUNT"
                    | "PRIORITYTARGETDURATION"
                    | "JOBPRIOACCRUALPOLICY"
            ) || weight_or_cap_stem(base).is_some()
        }
    }
}

/// For `FSWEIGHT` -> `("FS", true)`; for `XFACTORCAP` -> `("XFACTOR", false)`.
fn weight_or_cap_stem(base: &str) -> Option<(&str, bool)> {
    let (stem, is_weight) = if let Some(stem) = base.strip_suffix("WEIGHT") {
        (stem, true)
    } else if let Some(stem) = base.strip_suffix("CAP") {
        (stem, false)
    } else {
        return None;
    };
    let stem = canonical_stem(stem);
    is_factor_name(stem).then_some((stem, is_weight))
}

impl MoabParams {
    /// The weight of a component or subcomponent (Moab's defaults when unset).
    pub fn weight(&self, name: &str) -> i64 {
        if let Some(w) = self.weights.get(name) {
            return *w;
        }
        if COMPONENTS.iter().any(|(c, _)| *c == name) || name == "QUEUETIME" {
            1
        } else {
            0
        }
    }

    /// The cap of a component or subcomponent (0: none).
    pub fn cap(&self, name: &str) -> i64 {
        self.caps.get(name).copied().unwrap_or(0)
    }

    /// A credential's settings, if any line configured it.
    pub fn credential(&self, kind: Credential, name: &str) -> Option<&CredentialCfg> {
        self.credentials.get(&(kind, name.to_string()))
    }

    /// Set one parameter from its text.
    pub fn set(&mut self, key: &str, text: &str) -> Result<(), InvalidValue> {
        let (base, index) = split_index(key)?;
        if let Some(index) = index {
            let kind = Credential::from_cfg_name(base).ok_or_else(|| {
                InvalidValue::new(format!(
                    "`{base}` is not USERCFG, GROUPCFG, ACCOUNTCFG, QOSCFG or CLASSCFG"
                ))
            })?;
            let entry = self
                .credentials
                .entry((kind, index.to_string()))
                .or_default();
            for (attribute, value) in attribute_pairs(text)? {
                let is_qos = kind == Credential::Qos;
                let qos_only = |name: &str| -> Result<(), InvalidValue> {
                    if is_qos {
                        Ok(())
                    } else {
                        Err(InvalidValue::new(format!("{name} is a QOSCFG attribute")))
                    }
                };
                let is_group = kind == Credential::Group;
                match attribute.as_str() {
                    "PRIORITY" => entry.priority = Some(parse_integer(&value)?),
                    "FSTARGET" => entry.fs_target = Some(parse_fs_target(&value)?),
                    "QTWEIGHT" => {
                        qos_only("QTWEIGHT")?;
                        entry.qt_weight = parse_integer(&value)?;
                    }
                    "XFWEIGHT" => {
                        qos_only("XFWEIGHT")?;
                        entry.xf_weight = parse_integer(&value)?;
                    }
                    "QTTARGET" => {
                        qos_only("QTTARGET")?;
                        entry.qt_target_secs = Some(parse_moab_duration_secs(&value)?);
                    }
                    "XFTARGET" => {
                        qos_only("XFTARGET")?;
                        let target = parse_number(&value)?;
                        if target < 1.0 {
                            return Err(InvalidValue::new(format!(
                                "XFTARGET `{value}` is below 1, the smallest expansion factor"
                            )));
                        }
                        entry.xf_target = Some(target);
                    }
                    "FSWEIGHT" => {
                        if !is_group {
                            return Err(InvalidValue::new(
                                "FSWEIGHT is a GROUPCFG attribute (a group's adjustment of the FS weight)",
                            ));
                        }
                        entry.fs_weight = parse_integer(&value)?;
                    }
                    // Limits and other credential attributes (MAXJOB, ...) do
                    // not change priorities.
                    _ => {}
                }
            }
            return Ok(());
        }
        match base {
            "XFMINWCLIMIT" => self.xf_min_wclimit_secs = parse_moab_duration_secs(text)?,
            "ENABLEPOSUSERPRIORITY" => self.enable_positive_user_priority = parse_yes_no(text)?,
            "PRIORITYTARGETPROCCOUNT" => {
                let procs = parse_integer(text)?;
                if procs < 1 {
                    return Err(InvalidValue::new(format!(
                        "PRIORITYTARGETPROCCOUNT `{text}` is not a processor count of 1 or more"
                    )));
                }
                self.target_proc_count = Some(procs);
            }
            "PRIORITYTARGETDURATION" => {
                let secs = parse_moab_duration_secs(text)?;
                if secs < 1 {
                    return Err(InvalidValue::new(format!(
                        "PRIORITYTARGETDURATION `{text}` is not a walltime of 1 second or more"
                    )));
                }
                self.target_duration_secs = Some(secs);
            }
            "JOBPRIOACCRUALPOLICY" => {
                self.accrual_policy = match text.trim().to_ascii_uppercase().as_str() {
                    "ALWAYS" => AccrualPolicy::Always,
                    "QUEUEPOLICY" => AccrualPolicy::QueuePolicy,
                    "FULLPOLICY" => AccrualPolicy::FullPolicy,
                    _ => {
                        return Err(InvalidValue::new(format!(
                            "`{text}` is not a queue-time accrual policy (ALWAYS, QUEUEPOLICY or FULLPOLICY)"
                        )))
                    }
                }
            }
            "FSPOLICY" => {
                let trimmed = text.trim();
                let (metric, ratio) = match trimmed.strip_suffix('%') {
                    Some(m) => (m, true),
                    None => (trimmed, false),
                };
                match metric.to_ascii_uppercase().as_str() {
                    "DEDICATEDPS" | "DEDICATEDPES" | "UTILIZEDPS" | "PDEDICATEDPS" | "SDEDICATEDPES" => {}
                    _ => {
                        return Err(InvalidValue::new(format!(
                            "`{text}` is not a fair-share policy (DEDICATEDPS, DEDICATEDPES, UTILIZEDPS, ... with an optional %)"
                        )))
                    }
                }
                self.fs_policy_ratio = ratio;
            }
            "JOBPRIOF" => {
                for (attribute, value) in attribute_pairs(text)? {
                    let (kind, index) = split_index(&attribute)?;
                    let index = index
                        .ok_or_else(|| {
                            InvalidValue::new(format!(
                                "`{attribute}` is not STATE[s], ATTR[a] or GRES[g]"
                            ))
                        })?
                        .to_ascii_lowercase();
                    let priority = parse_integer(&value)?;
                    match kind {
                        "STATE" => self.state_priority.insert(index, priority),
                        "ATTR" => self.attr_priority.insert(index, priority),
                        "GRES" => self.gres_priority.insert(index, priority),
                        _ => {
                            return Err(InvalidValue::new(format!(
                                "`{attribute}` is not STATE[s], ATTR[a] or GRES[g]"
                            )))
                        }
                    };
                }
            }
            _ => match weight_or_cap_stem(base) {
                Some((stem, true)) => {
                    self.weights.insert(stem.to_string(), parse_integer(text)?);
                }
                Some((stem, false)) => {
                    self.caps.insert(stem.to_string(), parse_integer(text)?);
                }
                None => {
                    return Err(InvalidValue::new(format!(
                        "`{key}` is not a Moab priority parameter (a component or subcomponent \
                         *WEIGHT or *CAP, *CFG[name], JOBPRIOF, XFMINWCLIMIT, \
                         ENABLEPOSUSERPRIORITY, FSPOLICY, PRIORITYTARGETPROCCOUNT, \
                         PRIORITYTARGETDURATION or JOBPRIOACCRUALPOLICY)"
                    )))
                }
            },
        }
        Ok(())
    }

    /// Read every parameter of `Config::moab`. The first invalid one is
    /// returned with its key (values are validated when stored, so this only
    /// fails for a map built by hand).
    pub fn from_map(map: &BTreeMap<String, String>) -> Result<MoabParams, (String, InvalidValue)> {
        let mut params = MoabParams::default();
        for (key, value) in map {
            params.set(key, value).map_err(|e| (key.clone(), e))?;
        }
        Ok(params)
    }
}

/// Check a Moab parameter and give the text to store: for `*CFG[name]` and
/// `JOBPRIOF`, whose attributes accumulate over lines as in `moab.cfg`, the
/// previous attributes with the new ones added (a repeated attribute takes the
/// new value); for any other parameter, the new text.
pub fn validate_and_merge(
    key: &str,
    previous: Option<&str>,
    text: &str,
) -> Result<String, InvalidValue> {
    MoabParams::default().set(key, text)?;
    let (base, index) = split_index(key)?;
    let accumulates = index.is_some() || base == "JOBPRIOF";
    let text = text.trim();
    match previous {
        Some(previous) if accumulates => {
            let mut merged = attribute_pairs(previous)?;
            for (name, value) in attribute_pairs(text)? {
                match merged.iter_mut().find(|(n, _)| *n == name) {
                    Some(slot) => slot.1 = value,
                    None => merged.push((name, value)),
                }
            }
            Ok(merged
                .iter()
                .map(|(n, v)| format!("{n}={v}"))
                .collect::<Vec<_>>()
                .join(" "))
        }
        _ => Ok(text.to_string()),
    }
}

/// Weigh a job's raw subcomponent values into Moab's components, as both
/// engines must: each subcomponent's weight (plus the job QOS's `QTWEIGHT` /
/// `XFWEIGHT` for QUEUETIME / XFACTOR) times its value, bounded by its cap;
/// each component the capped sum of its subcomponents, times the component
/// weight (plus the job group's `FSWEIGHT` for FS). Returns the factors (each
/// component followed by its subcomponents) and the priority before the final
/// clamp (`priority_formula::moab_final_priority`).
pub fn weigh_components(
    params: &MoabParams,
    values: &BTreeMap<&'static str, f64>,
    qos: &str,
    group: &str,
) -> (Vec<crate::report::PriorityFactor>, f64) {
    use crate::priority_formula::moab_cap;
    use crate::report::PriorityFactor;
    let qos_cfg = params.credential(Credential::Qos, qos);
    let group_fs_weight = params
        .credential(Credential::Group, group)
        .map_or(0, |c| c.fs_weight);
    let mut factors = Vec::new();
    let mut sum = 0.0;
    for (component, subcomponents) in COMPONENTS {
        let mut component_sum = 0.0;
        let mut rows = Vec::with_capacity(subcomponents.len());
        for sub in subcomponents {
            let extra_weight = match *sub {
                "QUEUETIME" => qos_cfg.map_or(0, |c| c.qt_weight),
                "XFACTOR" => qos_cfg.map_or(0, |c| c.xf_weight),
                _ => 0,
            };
            let weight = (params.weight(sub) + extra_weight) as f64;
            let cap = params.cap(sub) as f64;
            let value = values.get(sub).copied().unwrap_or(0.0);
            let weighted = moab_cap(weight * value, cap);
            component_sum += weighted;
            rows.push(PriorityFactor {
                name: sub.to_string().into(),
                component: Some(component.to_string()),
                normalized: value,
                weight,
                weighted,
                cap: (cap > 0.0).then_some(cap),
            });
        }
        let cap = params.cap(component) as f64;
        let extra_weight = if component == "FS" {
            group_fs_weight
        } else {
            0
        };
        let weight = (params.weight(component) + extra_weight) as f64;
        let capped = moab_cap(component_sum, cap);
        let contribution = weight * capped;
        sum += contribution;
        factors.push(PriorityFactor {
            name: component.to_string().into(),
            component: None,
            normalized: capped,
            weight,
            weighted: contribution,
            cap: (cap > 0.0).then_some(cap),
        });
        factors.extend(rows);
    }
    (factors, sum)
}

/// Every credential's decayed usage (frame units) and the total: what the FS
/// subcomponents `FSUSER`..`FSCLASS` compare with their targets. Each engine
/// sums it its own way (the oracle's `priority::moab::credential_usage`, the
/// incremental engine from its facts); this type only holds the sums.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CredentialUsage {
    /// All usage.
    pub total: FrameUsage,
    /// Per credential.
    pub by_credential: BTreeMap<(Credential, String), FrameUsage>,
}

impl CredentialUsage {
    /// A credential's share of all usage, in percent (0 when there is none).
    pub fn percent(&self, kind: Credential, name: &str) -> f64 {
        if self.total == 0 {
            return 0.0;
        }
        let usage = self
            .by_credential
            .get(&(kind, name.to_string()))
            .copied()
            .unwrap_or(0);
        100.0 * usage as f64 / self.total as f64
    }
}

/// One user's running jobs as `FSJPU`, `FSPPU` and `FSPSPU` read them. Each
/// engine adds the user's running jobs in job-id order ([`Self::add_job`]),
/// so the float sums agree bit for bit.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct UserRunningTotals {
    /// Running jobs (`FSJPU`).
    pub jobs: f64,
    /// Their CPUs (`FSPPU`).
    pub cpus: f64,
    /// Their CPUs times time limit, seconds (`FSPSPU`).
    pub cpu_secs: f64,
}

impl UserRunningTotals {
    /// Count one running job at `now`: its CPUs, and its CPUs times its time
    /// limit (times its elapsed seconds when it has no limit).
    pub fn add_job(
        &mut self,
        cpus: f64,
        time_limit_secs: Option<u64>,
        started_at: Option<Time>,
        now: Time,
    ) {
        let elapsed_secs = (now - started_at.unwrap_or(now)).max(0) as f64;
        self.jobs += 1.0;
        self.cpus += cpus;
        self.cpu_secs += cpus * time_limit_secs.map_or(elapsed_secs, |l| l as f64);
    }
}

/// A TRES count from `(name, count)` pairs, with a default when the list
/// does not name it.
pub fn tres_count(tres: &[(&str, f64)], name: &str, default: f64) -> f64 {
    tres.iter()
        .find(|(n, _)| *n == name)
        .map_or(default, |(_, count)| *count)
}

/// Everything Moab's subcomponents read about one listed job, as each engine
/// extracts it from its own records; [`subcomponent_values`] turns it into
/// the raw values. The credential usage and the per-user running totals are
/// aggregates the engine computes; everything else is the job's own.
#[derive(Debug, Clone, Copy)]
pub struct MoabJobInputs<'a> {
    /// The job id (`JOBID` reads an all-digit id as a number).
    pub id: &'a str,
    /// The user credential.
    pub user: &'a str,
    /// The group credential: the job's `group`, else its account.
    pub group: &'a str,
    /// The account credential.
    pub account: &'a str,
    /// The QOS credential (`""` for none).
    pub qos: &'a str,
    /// The class credential: the partition (`""` for none).
    pub class: &'a str,
    /// The account event's `priority`, the `ACCOUNT` value without
    /// `ACCOUNTCFG[a] PRIORITY=`.
    pub account_priority: Option<i64>,
    /// The QOS event's `priority`, the `QOS` value without `QOSCFG`.
    pub qos_priority: Option<i64>,
    /// The partition's `priority`, the `CLASS` value without `CLASSCFG`.
    pub class_priority: i64,
    /// How the job is listed.
    pub state: JobState,
    /// Is the job running?
    pub running: bool,
    /// When it last started (a running job without one counts from `now`).
    pub started_at: Option<Time>,
    /// How many times it started (a running job's count includes this stay).
    pub start_count: u32,
    /// When it last entered the queue (submit or requeue).
    pub queued_at: Time,
    /// Its begin time, if any.
    pub begin_at: Option<Time>,
    /// The closed spans it was held since it last entered the queue.
    pub held_spans: &'a [(Time, Time)],
    /// When its current hold began, if it is held.
    pub held_since: Option<Time>,
    /// Its time limit, seconds: its own, else its partition's maximum.
    pub time_limit_secs: Option<u64>,
    /// The TRES it counts (allocated while running, else requested).
    pub tres: &'a [(&'a str, f64)],
    /// The cluster's TRES totals.
    pub cluster_tres: &'a [(&'a str, f64)],
    /// Times backfill bypassed it (`BYPASS`).
    pub bypass_count: Option<u64>,
    /// Its deadline, Unix seconds (`DEADLINE`).
    pub deadline: Option<Time>,
    /// Does it violate a soft policy (`SPVIOLATION`)?
    pub soft_policy_violation: bool,
    /// Its user priority (`USERPRIO`).
    pub user_priority: Option<i64>,
    /// Its attributes (`ATTRATTR`).
    pub attributes: &'a [String],
    /// Every credential's usage at `now` (aggregate).
    pub credential_usage: &'a CredentialUsage,
    /// The user's running jobs (aggregate).
    pub user_running: UserRunningTotals,
    /// The user's ended jobs' `(used, requested)` CPU-seconds, if any ended.
    pub wallclock_accuracy: Option<(f64, f64)>,
    /// The time of evaluation.
    pub now: Time,
}

/// A job's effective queue time in seconds up to `until` (now, or its start)
/// under `JOBPRIOACCRUALPOLICY` (module docs of `subcomponent_values`).
pub fn effective_queue_secs(params: &MoabParams, job: &MoabJobInputs<'_>, until: Time) -> i64 {
    if params.accrual_policy.counts_ineligible_time() {
        moab_effective_queue_secs(job.queued_at, until, &[])
    } else {
        let mut held = job.held_spans.to_vec();
        if let Some(held_at) = job.held_since {
            held.push((held_at, until.max(held_at)));
        }
        moab_effective_queue_secs(eligible_at(job.queued_at, job.begin_at), until, &held)
    }
}

/// The raw value of every subcomponent of one job, by name; both engines
/// call this, so they get the same bits.
///
/// # Effective queue time (`JOBPRIOACCRUALPOLICY`)
/// QUEUETIME, XFACTOR, TARGETQUEUETIME and TARGETXFACTOR read the job's
/// effective queue time (`moab_effective_queue_secs`), measured up to now
/// (up to its start for a running job, whose queue time is frozen):
/// - `QUEUEPOLICY` (the default) and `FULLPOLICY`: only the time the job was
///   eligible counts: from its last queue entry (submit or requeue) or its
///   begin time, whichever is later, minus every span it spent held. A job
///   held for a week and then released has the queue time of the time it
///   was not held, so pre-submitted held jobs bank nothing (the seed's
///   stated purpose). Moab also stops accrual while a job breaks a
///   throttling policy (idle-job limits for `QUEUEPOLICY`, run limits too for
///   `FULLPOLICY`); fairflow models no throttling policy, so the two are
///   the same here.
/// - `ALWAYS`: from the last queue entry, held time and time before the
///   begin time included. Either way a job before its begin time is not
///   evaluated; a requeue restarts the queue time.
///
/// # Each subcomponent's value (where the seed leaves it open)
/// - CRED: `USER`/`GROUP`/`ACCOUNT`/`QOS`/`CLASS` are the `PRIORITY=` of the
///   job's `USERCFG`, `GROUPCFG` (group: the job's `group`, else its account),
///   `ACCOUNTCFG` (else the `account` event's `priority`), `QOSCFG` (else the
///   `qos` event's `priority`), `CLASSCFG` (else the partition's `priority`,
///   as Moab takes a resource manager's queue priority).
/// - FS: `FSUSER`..`FSCLASS` are `FSTARGET - usage%` of that credential
///   (`moab_fs_delta`: floors `+` only raise, ceilings `-` only lower; ratio
///   form with `FSPOLICY ...%`; 0 without a target). usage% is the
///   credential's decayed usage over all decayed usage, times 100: users sum
///   their associations, an account is its own usage plus its users' (Moab
///   accounts are flat), groups, QOS and classes are what their jobs (and,
///   for the group named like an account, that account's usage events)
///   charged. `FSGUSER`/`FSGGROUP`/`FSGACCOUNT` (imported global usage) have
///   no source in the log: 0. `FSJPU`: the user's running jobs; `FSPPU`:
///   their allocated CPUs; `FSPSPU`: their CPUs times time limit (elapsed
///   time when a job has none); `WCACCURACY`: the user's ended jobs' used
///   CPU-seconds over requested CPU-seconds (0 before any).
/// - RES: `NODE` (1 by default), `PROC` (CPUs, 1 by default), `MEM`, `SWAP`,
///   `DISK` (MB, from the job's TRES `mem`, `swap`, `disk`), `PS` (CPUs times
///   time limit), `PE` (the largest fraction of the cluster's CPU, memory,
///   swap or disk the job asks for, times the cluster's CPUs; the CPU count
///   without a cluster), `WALLTIME` (the time limit, seconds). With
///   `PRIORITYTARGETPROCCOUNT` (resp. `PRIORITYTARGETDURATION`) set, PROC
///   (resp. WALLTIME) is instead `moab_target_closeness(request, ideal) =
///   ideal - |request - ideal|`: the ideal scores highest, falling off
///   linearly on both sides (equal to the request up to the ideal); PS and
///   PE are unchanged.
/// - SERV: `QUEUETIME` the effective queue time in minutes (above),
///   `XFACTOR = 1 + queuetime / max(XFMINWCLIMIT, limit)`, `BYPASS` (the
///   job's `bypass_count`), `STARTCOUNT` (times started before this stay:
///   starts, minus the current one for a running job), `DEADLINE` (the
///   fraction of the time from eligibility to `deadline` that has passed,
///   0..1, 1 at or past it), `SPVIOLATION` (1 when `soft_policy_violation`),
///   `USERPRIO` (`user_priority`, -1024..0, or ..1023 with
///   `ENABLEPOSUSERPRIORITY`).
/// - TARGET: `moab_target_value` of the queue time against the QOS's
///   `QTTARGET` and of the expansion factor against its `XFTARGET`.
/// - USAGE (running jobs only, else 0): `USAGECONSUMED` CPU-seconds since
///   the start, `USAGEHUNGER` 0 (no dynamic jobs), `USAGEREMAINING`
///   CPU-seconds left of the limit, `USAGEEXECUTIONTIME` seconds since the
///   start, `USAGEPERCENT` percent of the limit used.
/// - ATTR: `ATTRATTR` sums `JOBPRIOF ATTR[a]` over the job's `attributes`,
///   `ATTRSTATE` is `JOBPRIOF STATE[s]` of its state (`Idle`, `Hold`,
///   `Running`), `ATTRGRES` sums `JOBPRIOF GRES[g]` over the `gres/g` it
///   asks for, `JOBID` is a numeric id's value (0 otherwise), `JOBNAME` 0
///   (jobs have no names in the log).
pub fn subcomponent_values(
    params: &MoabParams,
    job: &MoabJobInputs<'_>,
) -> BTreeMap<&'static str, f64> {
    let now = job.now;
    let tres = job.tres;
    let credentials = [
        (Credential::User, job.user),
        (Credential::Group, job.group),
        (Credential::Account, job.account),
        (Credential::Qos, job.qos),
        (Credential::Class, job.class),
    ];
    let cfg_priority =
        |kind: Credential, name: &str| params.credential(kind, name).and_then(|c| c.priority);
    let qos_cfg = params.credential(Credential::Qos, job.qos);
    let limit_secs = job.time_limit_secs.map(|l| l as f64);
    let cpus = tres_count(tres, "cpu", 1.0);
    let running_since = job.running.then(|| job.started_at.unwrap_or(now));
    let eligible = eligible_at(job.queued_at, job.begin_at);
    let queue_secs = effective_queue_secs(params, job, running_since.unwrap_or(now)) as f64;
    let xfactor = moab_xfactor(
        queue_secs,
        limit_secs.unwrap_or(0.0),
        params.xf_min_wclimit_secs as f64,
    );

    let mut values: BTreeMap<&'static str, f64> = BTreeMap::new();
    // CRED.
    let defaults = [
        None,
        None,
        job.account_priority,
        job.qos_priority,
        Some(job.class_priority),
    ];
    for (((kind, name), default), sub) in credentials
        .iter()
        .zip(defaults)
        .zip(["USER", "GROUP", "ACCOUNT", "QOS", "CLASS"])
    {
        let priority = cfg_priority(*kind, name).or(default).unwrap_or(0);
        values.insert(sub, priority as f64);
    }
    // FS.
    for ((kind, name), sub) in
        credentials
            .iter()
            .zip(["FSUSER", "FSGROUP", "FSACCOUNT", "FSQOS", "FSCLASS"])
    {
        let delta = match params.credential(*kind, name).and_then(|c| c.fs_target) {
            Some((target, target_kind)) => moab_fs_delta(
                target,
                job.credential_usage.percent(*kind, name),
                target_kind,
                params.fs_policy_ratio,
            ),
            None => 0.0,
        };
        values.insert(sub, delta);
    }
    for sub in ["FSGUSER", "FSGGROUP", "FSGACCOUNT"] {
        values.insert(sub, 0.0);
    }
    values.insert("FSJPU", job.user_running.jobs);
    values.insert("FSPPU", job.user_running.cpus);
    values.insert("FSPSPU", job.user_running.cpu_secs);
    let accuracy = match job.wallclock_accuracy {
        Some((used, requested)) if requested > 0.0 => used / requested,
        _ => 0.0,
    };
    values.insert("WCACCURACY", accuracy);
    // RES.
    let cluster = job.cluster_tres;
    let cluster_cpus = tres_count(cluster, "cpu", 0.0);
    let pe = if cluster_cpus > 0.0 {
        let largest_fraction = ["cpu", "mem", "swap", "disk"]
            .iter()
            .filter_map(|name| {
                let total = tres_count(cluster, name, 0.0);
                let asked = tres_count(tres, name, if *name == "cpu" { 1.0 } else { 0.0 });
                (total > 0.0).then(|| asked / total)
            })
            .fold(0.0f64, f64::max);
        largest_fraction * cluster_cpus
    } else {
        cpus
    };
    values.insert("NODE", tres_count(tres, "node", 1.0));
    let ideal_procs = params.target_proc_count.unwrap_or(0) as f64;
    values.insert("PROC", moab_target_closeness(cpus, ideal_procs));
    values.insert("MEM", tres_count(tres, "mem", 0.0));
    values.insert("SWAP", tres_count(tres, "swap", 0.0));
    values.insert("DISK", tres_count(tres, "disk", 0.0));
    values.insert("PS", cpus * limit_secs.unwrap_or(0.0));
    values.insert("PE", pe);
    let ideal_secs = params.target_duration_secs.unwrap_or(0) as f64;
    values.insert(
        "WALLTIME",
        moab_target_closeness(limit_secs.unwrap_or(0.0), ideal_secs),
    );
    // SERV.
    values.insert("QUEUETIME", queue_secs / 60.0);
    values.insert("XFACTOR", xfactor);
    values.insert("BYPASS", job.bypass_count.unwrap_or(0) as f64);
    let starts_before = if running_since.is_some() {
        job.start_count.saturating_sub(1)
    } else {
        job.start_count
    };
    values.insert("STARTCOUNT", f64::from(starts_before));
    let deadline = match job.deadline {
        Some(deadline) if deadline <= eligible => 1.0,
        Some(deadline) => ((now - eligible) as f64 / (deadline - eligible) as f64).clamp(0.0, 1.0),
        None => 0.0,
    };
    values.insert("DEADLINE", deadline);
    let violation = if job.soft_policy_violation { 1.0 } else { 0.0 };
    values.insert("SPVIOLATION", violation);
    let highest_user_priority = if params.enable_positive_user_priority {
        1023
    } else {
        0
    };
    let user_priority = job
        .user_priority
        .unwrap_or(0)
        .clamp(-1024, highest_user_priority);
    values.insert("USERPRIO", user_priority as f64);
    // TARGET.
    let qt_target = qos_cfg.and_then(|c| c.qt_target_secs).unwrap_or(0) as f64;
    let xf_target = qos_cfg.and_then(|c| c.xf_target).unwrap_or(0.0);
    values.insert("TARGETQUEUETIME", moab_target_value(queue_secs, qt_target));
    values.insert("TARGETXFACTOR", moab_target_value(xfactor, xf_target));
    // USAGE.
    let (consumed, remaining, execution, percent) = match running_since {
        Some(since) => {
            let elapsed = (now - since).max(0) as f64;
            let remaining = limit_secs.map_or(0.0, |l| cpus * (l - elapsed).max(0.0));
            let percent = limit_secs
                .filter(|l| *l > 0.0)
                .map_or(0.0, |l| 100.0 * elapsed / l);
            (cpus * elapsed, remaining, elapsed, percent)
        }
        None => (0.0, 0.0, 0.0, 0.0),
    };
    values.insert("USAGECONSUMED", consumed);
    values.insert("USAGEHUNGER", 0.0);
    values.insert("USAGEREMAINING", remaining);
    values.insert("USAGEEXECUTIONTIME", execution);
    values.insert("USAGEPERCENT", percent);
    // ATTR.
    let attr: i64 = job
        .attributes
        .iter()
        .filter_map(|a| params.attr_priority.get(&a.to_ascii_lowercase()))
        .sum();
    let state_name = match job.state {
        JobState::Pending => "idle",
        JobState::Held => "hold",
        JobState::Running => "running",
    };
    let gres: i64 = tres
        .iter()
        .filter(|(_, count)| *count > 0.0)
        .filter_map(|(name, _)| name.strip_prefix("gres/"))
        .filter_map(|g| params.gres_priority.get(&g.to_ascii_lowercase()))
        .sum();
    let job_id = if !job.id.is_empty() && job.id.bytes().all(|b| b.is_ascii_digit()) {
        job.id.parse::<f64>().unwrap_or(0.0)
    } else {
        0.0
    };
    values.insert("ATTRATTR", attr as f64);
    values.insert(
        "ATTRSTATE",
        params.state_priority.get(state_name).copied().unwrap_or(0) as f64,
    );
    values.insert("ATTRGRES", gres as f64);
    values.insert("JOBID", job_id);
    values.insert("JOBNAME", 0.0);
    values
}

/// One job's Moab factors and priority: [`subcomponent_values`] weighed by
/// [`weigh_components`], then `moab_final_priority` (0 for a held job).
pub fn job_factors(
    params: &MoabParams,
    job: &MoabJobInputs<'_>,
) -> (Vec<crate::report::PriorityFactor>, u64) {
    let values = subcomponent_values(params, job);
    let (factors, sum) = weigh_components(params, &values, job.qos, job.group);
    let priority = match job.state {
        JobState::Held => 0,
        _ => moab_final_priority(sum),
    };
    (factors, priority)
}

#[cfg(test)]
mod tests {
    use super::*;

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
