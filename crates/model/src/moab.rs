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

use std::collections::BTreeMap;

use crate::priority_formula::FsTargetKind;
use crate::InvalidValue;

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
                name: sub.to_string(),
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
            name: component.to_string(),
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
