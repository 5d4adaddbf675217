//! Moab's priority parameters read from their text: [`MoabParams`] (every
//! `*WEIGHT`, `*CAP`, `*CFG[name]`, `JOBPRIOF` and scalar parameter, typed),
//! [`validate_and_merge`] (the check `config` applies before it stores a
//! value) and the parsers of Moab's values. Names nothing of `report`, so
//! `config` can call it without an import cycle.

use std::collections::BTreeMap;

use super::{AccrualPolicy, Credential, CredentialCfg, COMPONENTS};
use crate::priority_formula::FsTargetKind;
use crate::InvalidValue;

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
            return self.set_credential(base, index, text);
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
            "JOBPRIOF" => self.set_jobpriof(text)?,
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

    /// Set `*CFG[index]` (`base` is the `*CFG` name) from its attributes.
    fn set_credential(&mut self, base: &str, index: &str, text: &str) -> Result<(), InvalidValue> {
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
        Ok(())
    }

    /// Set `JOBPRIOF`'s `STATE[s]`, `ATTR[a]` and `GRES[g]` priorities.
    fn set_jobpriof(&mut self, text: &str) -> Result<(), InvalidValue> {
        for (attribute, value) in attribute_pairs(text)? {
            let (kind, index) = split_index(&attribute)?;
            let index = index
                .ok_or_else(|| {
                    InvalidValue::new(format!("`{attribute}` is not STATE[s], ATTR[a] or GRES[g]"))
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
