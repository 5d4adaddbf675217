//! Reading a real `slurm.conf`: the `Priority*` and `FairShareDampeningFactor`
//! lines become configuration parameters; every other line is ignored.

use fairflow_model::config::Config;

use crate::Rejection;

/// The parameters fairflow takes from `slurm.conf`, as `(line, key, value)`.
pub fn priority_lines(text: &str) -> Vec<(u64, String, String)> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        // A line may hold several KEY=VALUE pairs separated by spaces.
        for pair in line.split_whitespace() {
            let Some((key, value)) = pair.split_once('=') else {
                continue;
            };
            let lower = key.to_ascii_lowercase();
            if lower.starts_with("priority") || lower == "fairsharedampeningfactor" {
                out.push((i as u64 + 1, key.to_string(), value.to_string()));
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
}
