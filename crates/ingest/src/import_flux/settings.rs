//! The configuration a flux-accounting database gives: the priority factor
//! weights (`priority_factor_weight_table`), `config_table`'s decay, bins,
//! usage weights and `deny_unknown_queues`, and the period clock
//! (`t_half_life_period_table`), as one `config` event's settings; and the
//! settings of an input without them (flux-accounting's defaults).

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::rows::{key_text, Db, RowErrors};
use super::FluxImportError;

/// What the configuration tables give.
pub(super) struct Settings {
    /// The `config` event's settings.
    pub(super) set: BTreeMap<String, Value>,
    /// How many usage bins an association has.
    pub(super) bin_count: usize,
    /// `deny_unknown_queues`.
    pub(super) deny_unknown_queues: bool,
}

/// flux-accounting's `priority_decay_half_life` when `config_table` has
/// none: a week.
const DEFAULT_HALF_LIFE_SECS: i64 = 604_800;
/// Its `priority_usage_reset_period` default: four weeks.
const DEFAULT_RESET_PERIOD_SECS: i64 = 4 * 604_800;
/// Its `decay_factor` default.
const DEFAULT_DECAY_FACTOR: f64 = 0.5;

/// `PriorityModel=flux` and `UsageModel=flux`: what every Flux import sets.
fn model_settings() -> BTreeMap<String, Value> {
    let mut set: BTreeMap<String, Value> = BTreeMap::new();
    set.insert("PriorityModel".into(), json!("flux"));
    set.insert("UsageModel".into(), json!("flux"));
    set
}

/// The decay's settings (half-life, decay factor, reset period) into `set`,
/// and how many usage bins an association has with them.
fn decay_settings(
    set: &mut BTreeMap<String, Value>,
    half_life_secs: i64,
    decay_factor: f64,
    reset_secs: i64,
) -> usize {
    set.insert(
        "PriorityDecayHalfLife".into(),
        json!(duration_text(half_life_secs)),
    );
    set.insert("FluxDecayFactor".into(), json!(decay_factor));
    set.insert(
        "FluxUsageResetPeriod".into(),
        json!(duration_text(reset_secs)),
    );
    fairflow_model::config::FluxUsageBins {
        reset_period_secs: reset_secs,
        ..Default::default()
    }
    .count(half_life_secs)
}

/// The settings of an input that has no configuration (the emulator's
/// JSON): the Flux models, flux-accounting's default decay and bins, its
/// default weights (fairflow's), every queue allowed.
pub(super) fn default_settings() -> Settings {
    let mut set = model_settings();
    let bin_count = decay_settings(
        &mut set,
        DEFAULT_HALF_LIFE_SECS,
        DEFAULT_DECAY_FACTOR,
        DEFAULT_RESET_PERIOD_SECS,
    );
    Settings {
        set,
        bin_count,
        deny_unknown_queues: false,
    }
}

/// Read the configuration tables, in the order the importer always has:
/// the weights, `config_table`, the period clock.
pub(super) fn read_settings(db: &Db<'_>) -> Result<Settings, FluxImportError> {
    let mut set = model_settings();
    for (name, weight) in read_weights(db)? {
        set.insert(name.into(), json!(weight));
    }
    let config = db.rows(
        "config_table",
        "SELECT key, value FROM config_table ORDER BY rowid",
        |c| {
            let key = key_text(c, 0);
            let value = (|| Ok((c.text(0, "key")?, c.text(1, "value")?)))();
            (key, value)
        },
    )?;
    let config = ConfigTable {
        db,
        values: config.into_iter().collect(),
    };
    let half_life_secs = config
        .positive_secs("priority_decay_half_life")?
        .unwrap_or(DEFAULT_HALF_LIFE_SECS);
    let decay_factor = config
        .number("decay_factor")?
        .unwrap_or(DEFAULT_DECAY_FACTOR);
    if !(decay_factor > 0.0 && decay_factor < 1.0) {
        return Err(db.row_error(
            "config_table",
            "decay_factor".into(),
            "value",
            format!("{decay_factor} is not between 0 and 1"),
        ));
    }
    let reset_secs = config
        .positive_secs("priority_usage_reset_period")?
        .unwrap_or(DEFAULT_RESET_PERIOD_SECS);
    let bin_count = decay_settings(&mut set, half_life_secs, decay_factor, reset_secs);
    if let Some(end) = read_period_end(db)? {
        set.insert("FluxHalfLifePeriodEnd".into(), json!(end));
    }
    for (key, name) in [
        ("node_weight", "FluxNodeWeight"),
        ("core_weight", "FluxCoreWeight"),
        ("gpu_weight", "FluxGpuWeight"),
    ] {
        if let Some(weight) = config.number(key)? {
            set.insert(name.into(), json!(weight));
        }
    }
    Ok(Settings {
        set,
        bin_count,
        deny_unknown_queues: config.deny_unknown_queues()?,
    })
}

/// `priority_factor_weight_table`: each factor's `FluxWeight*` parameter
/// and weight.
fn read_weights(db: &Db<'_>) -> Result<Vec<(&'static str, i64)>, FluxImportError> {
    db.rows(
        "priority_factor_weight_table",
        "SELECT factor, weight FROM priority_factor_weight_table ORDER BY rowid",
        |c| {
            let key = key_text(c, 0);
            let value = (|| {
                let factor = c.text(0, "factor")?;
                let weight = c.integer(1, "weight")?;
                let name = match factor.as_str() {
                    "fairshare" => "FluxWeightFairshare",
                    "queue" => "FluxWeightQueue",
                    "bank" => "FluxWeightBank",
                    "urgency" => "FluxWeightUrgency",
                    other => {
                        return Err((
                            "factor",
                            format!("`{other}` is not fairshare, queue, bank or urgency"),
                        ))
                    }
                };
                Ok((name, weight))
            })();
            (key, value)
        },
    )
}

/// `t_half_life_period_table`'s `end_half_life_period` of the row
/// `cluster='cluster'`, rounded to the second.
fn read_period_end(db: &Db<'_>) -> Result<Option<i64>, FluxImportError> {
    let period_ends = db.rows(
        "t_half_life_period_table",
        "SELECT cluster, end_half_life_period FROM t_half_life_period_table \
         WHERE cluster = 'cluster' ORDER BY rowid",
        |c| {
            let key = key_text(c, 0);
            let value = (|| {
                let end = c.real(1, "end_half_life_period")?;
                if !(0.0..=fairflow_model::limits::MAX_TIME as f64).contains(&end) {
                    return Err(("end_half_life_period", format!("{end} is not a Unix time")));
                }
                Ok(end.round() as i64)
            })();
            (key, value)
        },
    )?;
    Ok(period_ends.first().copied())
}

/// `config_table`'s values by key, read with the errors naming the key.
struct ConfigTable<'d, 'a> {
    db: &'d Db<'a>,
    values: BTreeMap<String, String>,
}

impl ConfigTable<'_, '_> {
    /// A number of at least 0, if the key is there.
    fn number(&self, key: &str) -> Result<Option<f64>, FluxImportError> {
        let Some(text) = self.values.get(key) else {
            return Ok(None);
        };
        text.trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .map(Some)
            .ok_or_else(|| {
                self.db.row_error(
                    "config_table",
                    key.to_string(),
                    "value",
                    format!("`{text}` is not a number of at least 0"),
                )
            })
    }

    /// A positive number of seconds (rounded), if the key is there.
    fn positive_secs(&self, key: &str) -> Result<Option<i64>, FluxImportError> {
        match self.number(key)? {
            None => Ok(None),
            Some(v) if v >= 1.0 && v <= fairflow_model::limits::MAX_DURATION_SECS as f64 => {
                Ok(Some(v.round() as i64))
            }
            Some(v) => Err(self.db.row_error(
                "config_table",
                key.to_string(),
                "value",
                format!("{v} is not a positive number of seconds"),
            )),
        }
    }

    /// `deny_unknown_queues` (false when absent).
    fn deny_unknown_queues(&self) -> Result<bool, FluxImportError> {
        match self.values.get("deny_unknown_queues").map(|v| v.trim()) {
            None | Some("false") | Some("False") | Some("0") => Ok(false),
            Some("true") | Some("True") | Some("1") => Ok(true),
            Some(other) => Err(self.db.row_error(
                "config_table",
                "deny_unknown_queues".into(),
                "value",
                format!("`{other}` is not true or false"),
            )),
        }
    }
}

/// Seconds as a Slurm duration (`D-HH:MM:SS`), which the configuration reads.
fn duration_text(secs: i64) -> String {
    format!(
        "{}-{:02}:{:02}:{:02}",
        secs / 86_400,
        secs % 86_400 / 3_600,
        secs % 3_600 / 60,
        secs % 60
    )
}
