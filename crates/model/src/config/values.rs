//! The rules a configuration value obeys, each stated once: [`Config::set_text`]
//! applies them to text it parses, and [`Config::check_values`] to a
//! configuration that arrived whole (a snapshot's, decoded without
//! `set_text`), so a restored book holds only values a `config` event could
//! have set (a NaN weight, a dampening factor of 0 or a decay factor of 2
//! is refused, naming the parameter).

use super::{Config, InvalidKey};
use crate::tres::WeightList;
use crate::InvalidValue;

/// A duration in seconds: from 0 to `MAX_DURATION_SECS` (the range of event
/// times); `text` is the value as written.
pub(super) fn duration_secs(secs: i64, text: &str) -> Result<i64, InvalidValue> {
    if secs < 0 || secs as u64 > crate::limits::MAX_DURATION_SECS {
        return Err(InvalidValue::new(format!(
            "`{text}` is longer than {} seconds (the range of event times)",
            crate::limits::MAX_DURATION_SECS
        )));
    }
    Ok(secs)
}

/// `FairShareDampeningFactor`: 1 to 65535.
pub(super) fn dampening_factor(factor: u32) -> Result<u32, InvalidValue> {
    if !(1..=65535).contains(&factor) {
        return Err(InvalidValue::new(
            "FairShareDampeningFactor must be from 1 to 65535",
        ));
    }
    Ok(factor)
}

/// `PriorityLevels`: 1 to 16.
pub(super) fn levels(levels: u32) -> Result<u32, InvalidValue> {
    if !(1..=16).contains(&levels) {
        return Err(InvalidValue::new("PriorityLevels must be from 1 to 16"));
    }
    Ok(levels)
}

/// `RequeueDelay`: 0 or more seconds.
pub(super) fn requeue_delay_secs(secs: i64) -> Result<i64, InvalidValue> {
    if secs < 0 {
        return Err(InvalidValue::new("RequeueDelay must be 0 or more seconds"));
    }
    Ok(secs)
}

/// A positive span (`name` says which, in the message).
pub(super) fn positive_secs(secs: i64, name: &str) -> Result<i64, InvalidValue> {
    if secs <= 0 {
        return Err(InvalidValue::new(format!("{name} must be positive")));
    }
    Ok(secs)
}

/// `FluxDecayFactor`: a number strictly between 0 and 1 (NaN is not).
pub(super) fn decay_factor(factor: f64, text: &str) -> Result<f64, InvalidValue> {
    if !(factor > 0.0 && factor < 1.0) {
        return Err(InvalidValue::new(format!(
            "`{text}` is not a number between 0 and 1"
        )));
    }
    Ok(factor)
}

/// A usage weight (`FluxNodeWeight` and its kin): a finite number from 0 to
/// `MAX_USAGE_FACTOR`.
pub(super) fn usage_weight(weight: f64, text: &str) -> Result<f64, InvalidValue> {
    if !(weight.is_finite() && (0.0..=crate::limits::MAX_USAGE_FACTOR).contains(&weight)) {
        return Err(InvalidValue::new(format!(
            "`{text}` is not a number from 0 to {}",
            crate::limits::MAX_USAGE_FACTOR
        )));
    }
    Ok(weight)
}

/// `FluxHalfLifePeriodEnd`: a Unix time in the range of event times.
pub(super) fn period_end(t: i64, text: &str) -> Result<i64, InvalidValue> {
    if !crate::limits::time_in_range(t) {
        return Err(InvalidValue::new(format!("`{text}` is not a Unix time")));
    }
    Ok(t)
}

impl Config {
    /// Check every value a `config` event sets by rule against that rule
    /// (see the module doc): the first value out of its range, with its
    /// parameter's name. `set_text` keeps every configuration it builds
    /// within them; this is for one that arrived otherwise.
    pub fn check_values(&self) -> Result<(), InvalidKey> {
        let key = |name: &str| {
            let name = name.to_string();
            move |error| InvalidKey { key: name, error }
        };
        let text_of = |secs: i64| secs.to_string();
        for (name, secs) in [
            ("PriorityDecayHalfLife", self.decay_half_life_secs),
            ("PriorityCalcPeriod", self.calc_period_secs),
            ("PriorityMaxAge", self.max_age_secs),
        ] {
            duration_secs(secs, &text_of(secs)).map_err(key(name))?;
        }
        weight_list(&self.weight_tres).map_err(key("PriorityWeightTRES"))?;
        dampening_factor(self.dampening_factor).map_err(key("FairShareDampeningFactor"))?;
        levels(self.levels).map_err(key("PriorityLevels"))?;
        if let Some(secs) = self.requeue_delay_secs {
            requeue_delay_secs(secs).map_err(key("RequeueDelay"))?;
        }
        let bins = &self.flux_bins;
        duration_secs(bins.reset_period_secs, &text_of(bins.reset_period_secs))
            .and_then(|secs| positive_secs(secs, "FluxUsageResetPeriod"))
            .map_err(key("FluxUsageResetPeriod"))?;
        decay_factor(bins.decay_factor, &bins.decay_factor.to_string())
            .map_err(key("FluxDecayFactor"))?;
        if let Some(t) = bins.period_end {
            period_end(t, &t.to_string()).map_err(key("FluxHalfLifePeriodEnd"))?;
        }
        for (name, weight) in [
            ("FluxNodeWeight", self.flux_usage.node),
            ("FluxCoreWeight", self.flux_usage.core),
            ("FluxGpuWeight", self.flux_usage.gpu),
        ] {
            usage_weight(weight, &weight.to_string()).map_err(key(name))?;
        }
        let wait = self.flux.max_wait_time_secs;
        duration_secs(wait, &text_of(wait))
            .and_then(|secs| positive_secs(secs, "FluxMaxWaitTime"))
            .map_err(key("FluxMaxWaitTime"))?;
        Ok(())
    }
}

/// `PriorityWeightTRES`: every weight by [`crate::tres::checked_weight`].
fn weight_list(list: &WeightList) -> Result<(), InvalidValue> {
    for (name, weight) in &list.weights {
        crate::tres::checked_weight(*weight, &weight.to_string(), name)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::Config;

    /// A configuration that arrived whole (a snapshot's) is held to the
    /// rules `set_text` applies: each value a `config` event would refuse is
    /// refused, naming its parameter, with the reason `set_text` gives.
    #[test]
    fn values_out_of_their_rules_are_found_in_a_whole_configuration() {
        assert_eq!(Config::default().check_values(), Ok(()));
        let mut set = Config::default();
        set.set_text("PriorityWeightTRES", "CPU=1000,Mem=0.25G")
            .unwrap();
        set.set_text("FluxDecayFactor", "0.25").unwrap();
        set.set_text("FluxNodeWeight", "2").unwrap();
        set.set_text("RequeueDelay", "120").unwrap();
        assert_eq!(set.check_values(), Ok(()));
        let refused = |change: fn(&mut Config)| {
            let mut config = Config::default();
            change(&mut config);
            let invalid = config.check_values().unwrap_err();
            (invalid.key, invalid.error.reason)
        };
        let (key, reason) = refused(|c| c.flux_usage.node = f64::NAN);
        assert_eq!(key, "FluxNodeWeight");
        assert!(
            reason.starts_with("`NaN` is not a number from 0 to"),
            "{reason}"
        );
        assert_eq!(
            refused(|c| c.dampening_factor = 0),
            (
                "FairShareDampeningFactor".to_string(),
                "FairShareDampeningFactor must be from 1 to 65535".to_string()
            )
        );
        assert_eq!(refused(|c| c.levels = 17).0, "PriorityLevels");
        assert_eq!(
            refused(|c| c.flux_bins.decay_factor = 1.0),
            (
                "FluxDecayFactor".to_string(),
                "`1` is not a number between 0 and 1".to_string()
            )
        );
        assert_eq!(
            refused(|c| c.flux_bins.reset_period_secs = 0).0,
            "FluxUsageResetPeriod"
        );
        assert_eq!(
            refused(|c| c.flux.max_wait_time_secs = -1).0,
            "FluxMaxWaitTime"
        );
        assert_eq!(
            refused(|c| c.decay_half_life_secs = -1).0,
            "PriorityDecayHalfLife"
        );
        assert_eq!(
            refused(|c| c.requeue_delay_secs = Some(-5)).0,
            "RequeueDelay"
        );
        assert_eq!(
            refused(|c| c.weight_tres.weights.push(("cpu".into(), f64::INFINITY))),
            (
                "PriorityWeightTRES".to_string(),
                "`inf` is not a weight for cpu".to_string()
            )
        );
    }

    /// A TRES weight whose value per base unit overflows is refused as it
    /// is read (it would be infinite per MiB), not kept.
    #[test]
    fn a_tres_weight_infinite_per_base_unit_is_refused() {
        let mut config = Config::default();
        let error = config
            .set_text("PriorityWeightTRES", "Mem=1e308K")
            .unwrap_err();
        assert_eq!(error.reason, "`1e308K` is not a weight for mem");
        assert!(config.set_text("PriorityWeightTRES", "Mem=0.5K").is_ok());
    }
}
