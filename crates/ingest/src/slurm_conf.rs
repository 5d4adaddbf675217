//! Reading a real `slurm.conf`, or `scontrol show config`'s output: the
//! `Priority*` and `FairShareDampeningFactor` parameters become configuration
//! parameters; everything else is ignored.
//!
//! The two forms are told apart line by line: `slurm.conf` writes
//! `PriorityWeightAge=1000` (several `KEY=VALUE` pairs may share a line);
//! `scontrol show config` writes one parameter a line, its name padded with
//! spaces before `=` (`PriorityWeightAge       = 1000`), durations as
//! `7-00:00:00`, booleans as `Yes`/`No`, and `(null)` for a parameter that is
//! not set (which is skipped: the default applies).

use fairflow_model::config::Config;

use crate::Rejection;

fn wanted(key: &str) -> bool {
    let lower = key.to_ascii_lowercase();
    lower.starts_with("priority") || lower == "fairsharedampeningfactor"
}

/// `scontrol show config`'s `Name   = value` line, as `(name, value)`: a
/// name (one word) followed by spaces and `=`.
fn scontrol_pair(line: &str) -> Option<(&str, &str)> {
    let (key, value) = line.split_once('=')?;
    let name = key.trim_end();
    if name.len() == key.len() || name.is_empty() || name.contains(char::is_whitespace) {
        return None;
    }
    Some((name, value.trim()))
}

/// The parameters fairflow takes from `slurm.conf` or `scontrol show
/// config`, as `(line, key, value)`.
pub fn priority_lines(text: &str) -> Vec<(u64, String, String)> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let number = i as u64 + 1;
        if let Some((key, value)) = scontrol_pair(raw.trim()) {
            if wanted(key) && value != "(null)" {
                out.push((number, key.to_string(), value.to_string()));
            }
            continue;
        }
        let line = raw.split('#').next().unwrap_or("").trim();
        // A line may hold several KEY=VALUE pairs separated by spaces.
        for pair in line.split_whitespace() {
            let Some((key, value)) = pair.split_once('=') else {
                continue;
            };
            if wanted(key) {
                out.push((number, key.to_string(), value.to_string()));
            }
        }
    }
    out
}

/// Apply a `slurm.conf`'s priority parameters to `config`. An invalid value
/// is reported with its line and key; the valid ones still apply.
pub fn apply_slurm_conf(config: &mut Config, text: &str) -> Vec<Rejection> {
    apply_parameters(config, priority_lines(text))
}

/// Apply `(line, key, value)` parameters to `config` (`Config::set_text`),
/// rejecting an invalid value with its line and key; the valid ones still
/// apply. Shared with `moab_cfg`.
pub(crate) fn apply_parameters(
    config: &mut Config,
    parameters: Vec<(u64, String, String)>,
) -> Vec<Rejection> {
    let mut rejected = Vec::new();
    for (line, key, value) in parameters {
        if let Err(e) = config.set_text(&key, &value) {
            rejected.push(Rejection::new(line, Some(&key), e.reason));
        }
    }
    rejected
}

#[cfg(test)]
mod tests {
    use super::*;
    use fairflow_model::Algorithm;

    #[test]
    fn priority_lines_are_taken_and_others_ignored() {
        let text = "ClusterName=c\nPriorityType=priority/multifactor\nPriorityDecayHalfLife=14-0 # two weeks\n\
                    PriorityWeightFairshare=10000 PriorityWeightAge=1000\nPriorityFlags=NO_FAIR_TREE\n\
                    FairShareDampeningFactor=5\nPriorityMaxAge=bogus\nSchedulerType=sched/backfill\n";
        let mut config = Config::default();
        let rejected = apply_slurm_conf(&mut config, text);
        assert_eq!(config.decay_half_life_secs, 14 * 86400);
        assert_eq!(config.weight_fairshare, 10000);
        assert_eq!(config.weight_age, 1000);
        assert_eq!(config.algorithm(), Algorithm::Classic);
        assert_eq!(config.dampening_factor, 5);
        assert_eq!(rejected.len(), 1);
        assert_eq!(
            (rejected[0].line, rejected[0].field.as_deref()),
            (7, Some("PriorityMaxAge"))
        );
    }

    /// `scontrol show config` as Slurm 24.11 prints it (the priority part of
    /// `src/api/config_info.c`: durations by `secs2time_str`, booleans
    /// `Yes`/`No`, unset strings `(null)`).
    const SCONTROL: &str = "\
Configuration data as of 2026-11-24T10:00:00
AccountingStorageType   = accounting_storage/slurmdbd
ClusterName             = demo
FairShareDampeningFactor = 3
PriorityParameters      = (null)
PrioritySiteFactorParameters = (null)
PrioritySiteFactorPlugin = (null)
PriorityDecayHalfLife   = 7-00:00:00
PriorityCalcPeriod      = 00:05:00
PriorityFavorSmall      = Yes
PriorityFlags           = NO_FAIR_TREE,ACCRUE_ALWAYS
PriorityMaxAge          = 1-12:00:00
PriorityUsageResetPeriod = NONE
PriorityType            = priority/multifactor
PriorityWeightAge       = 1000
PriorityWeightAssoc     = 0
PriorityWeightFairShare = 10000
PriorityWeightJobSize   = 100
PriorityWeightPartition = 0
PriorityWeightQOS       = 2000
PriorityWeightTRES      = (null)
SchedulerType           = sched/backfill
";

    #[test]
    fn scontrol_show_config_is_read_like_slurm_conf() {
        let mut config = Config::default();
        let rejected = apply_slurm_conf(&mut config, SCONTROL);
        assert_eq!(rejected, vec![]);
        assert_eq!(config.decay_half_life_secs, 7 * 86400);
        // 00:05:00 is five minutes.
        assert_eq!(config.calc_period_secs, 300);
        assert!(config.favor_small);
        assert_eq!(config.algorithm(), Algorithm::Classic);
        assert!(config.flags.accrue_always);
        // 1-12:00:00 is a day and a half.
        assert_eq!(config.max_age_secs, 86400 + 12 * 3600);
        assert_eq!(config.weight_age, 1000);
        assert_eq!(config.weight_fairshare, 10000);
        assert_eq!(config.weight_job_size, 100);
        assert_eq!(config.weight_qos, 2000);
        assert_eq!(config.dampening_factor, 3);
        // The `(null)` lines and the non-priority ones are not parameters.
        let keys: Vec<String> = priority_lines(SCONTROL)
            .into_iter()
            .map(|(_, k, _)| k)
            .collect();
        assert!(!keys
            .iter()
            .any(|k| k == "PriorityWeightTRES" || k == "PriorityParameters"));
        assert!(keys.iter().any(|k| k == "PriorityType"));
    }

    #[test]
    fn a_bad_scontrol_value_names_its_line_and_key() {
        let text = "PriorityWeightAge       = 1000\nPriorityMaxAge          = a week\n";
        let rejected = apply_slurm_conf(&mut Config::default(), text);
        assert_eq!(
            rejected
                .iter()
                .map(|r| (r.line, r.field.as_deref()))
                .collect::<Vec<_>>(),
            vec![(2, Some("PriorityMaxAge"))]
        );
    }
}
