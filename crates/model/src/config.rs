//! The configuration in force at a time: Slurm's `Priority*` parameters (with
//! Slurm's value syntax), the priority model's weights (Slurm, Flux, Moab), and
//! the fair-share algorithm they select. A `config` event is a patch applied
//! atomically: either every key is valid and all apply, or nothing changes.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::time::parse_slurm_duration_secs;
use crate::tres::{parse_weight_list, WeightList};
use crate::InvalidValue;

mod values;

/// Which fair-share algorithm computes each association's factor.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum Algorithm {
    /// Fair Tree, Slurm's default since 19.05.
    FairTree,
    /// The classic algorithm (`PriorityFlags=NO_FAIR_TREE`).
    Classic,
    /// The classic algorithm's depth-oblivious variant (`DEPTH_OBLIVIOUS`).
    DepthOblivious,
    /// Ticket-based (`TICKET_BASED`, Slurm 2.5 to 14.11).
    TicketBased,
    /// Level-based (`LEVEL_BASED` with `PriorityLevels`, Slurm 14.11 pre-releases).
    LevelBased,
}

impl Algorithm {
    /// The name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::FairTree => "fair_tree",
            Algorithm::Classic => "classic",
            Algorithm::DepthOblivious => "depth_oblivious",
            Algorithm::TicketBased => "ticket_based",
            Algorithm::LevelBased => "level_based",
        }
    }
}

/// Which formula turns factors into a job's priority.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Default,
    serde::Serialize,
    serde::Deserialize,
)]
pub enum PriorityModel {
    /// Slurm's multifactor plugin.
    #[default]
    Slurm,
    /// The Flux design and flux-accounting's `mf_priority` plugin.
    Flux,
    /// Moab's weighted components and subcomponents.
    Moab,
}

/// How a running job's usage is counted (`UsageModel`, fairflow's key).
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
)]
pub enum UsageModel {
    /// Slurm's: the billable TRES (the partition's `TRESBillingWeights`, CPUs
    /// without) times the QOS's `UsageFactor`, per second of running.
    #[default]
    Slurm,
    /// flux-accounting's (`job_usage_calculation.py`): `nnodes*node_weight +
    /// ncores*core_weight + ngpus*gpu_weight` per second of running
    /// (`FluxNodeWeight`, `FluxCoreWeight`, `FluxGpuWeight`: node-seconds by
    /// default), whatever the partition and QOS.
    Flux,
}

/// flux-accounting's usage weights (`config_table`'s `node_weight`,
/// `core_weight`, `gpu_weight`), read under `UsageModel=flux`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FluxUsageWeights {
    /// Per node-second (default 1).
    pub node: f64,
    /// Per core-second (default 0).
    pub core: f64,
    /// Per GPU-second (default 0).
    pub gpu: f64,
}

impl Default for FluxUsageWeights {
    fn default() -> Self {
        FluxUsageWeights {
            node: 1.0,
            core: 0.0,
            gpu: 0.0,
        }
    }
}

impl FluxUsageWeights {
    /// The usage per second of running on `nodes`, `cores` and `gpus`.
    pub fn rate(&self, nodes: f64, cores: f64, gpus: f64) -> f64 {
        nodes * self.node + cores * self.core + gpus * self.gpu
    }
}

/// flux-accounting's usage bins (`job_usage_per_association_table`), under
/// `UsageModel=flux`: usage is kept per half-life period (`PriorityDecayHalfLife`
/// wide), `bins` of them, shifted and decayed by `decay_factor` at each period
/// boundary (see `fairflow_book::flux_bins`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FluxUsageBins {
    /// `FluxUsageResetPeriod` (flux-accounting's `priority_usage_reset_period`,
    /// seconds, default 4 weeks): the span of the bins.
    pub reset_period_secs: i64,
    /// `FluxDecayFactor` (flux-accounting's `decay_factor`, default 0.5, in (0, 1)).
    pub decay_factor: f64,
    /// `FluxHalfLifePeriodEnd` (flux-accounting's `end_half_life_period`, Unix
    /// seconds), if given: where the book's period clock restarts.
    pub period_end: Option<crate::Time>,
}

impl Default for FluxUsageBins {
    fn default() -> Self {
        FluxUsageBins {
            reset_period_secs: 4 * 604_800,
            decay_factor: 0.5,
            period_end: None,
        }
    }
}

/// The most usage bins an association keeps (`FluxUsageResetPeriod /
/// PriorityDecayHalfLife`): a bound on memory per association.
pub const MAX_FLUX_BINS: i64 = 1024;

impl FluxUsageBins {
    /// The number of bins with half-life periods of `half_life_secs`:
    /// flux-accounting's `int(priority_usage_reset_period /
    /// priority_decay_half_life)`, 4 when that is not positive (or without
    /// decay), at most [`MAX_FLUX_BINS`].
    pub fn count(&self, half_life_secs: i64) -> usize {
        let n = if half_life_secs > 0 {
            self.reset_period_secs / half_life_secs
        } else {
            0
        };
        (if n <= 0 { 4 } else { n.min(MAX_FLUX_BINS) }) as usize
    }
}

/// How Fair Tree orders siblings whose level fair-share ties
/// (`FairTreeTies`, fairflow's key).
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
)]
pub enum FairTreeTies {
    /// As Slurm's code (`fair_tree.c`) does it, the default: `LevelFS` is the
    /// `f64` quotient Slurm computes, compared for exact equality; tied
    /// accounts are never merged but walked one after the other, the newest
    /// association (the latest created) first; a tie reaches only the
    /// ranking of users.
    #[default]
    Slurm,
    /// As Slurm's documentation states the rules: `LevelFS` compared as an
    /// exact rational, tied accounts' children merged before ranking.
    Documented,
}

impl FairTreeTies {
    /// The value's name in the `FairTreeTies` parameter.
    pub fn name(self) -> &'static str {
        match self {
            FairTreeTies::Slurm => "slurm",
            FairTreeTies::Documented => "documented",
        }
    }
}

impl PriorityModel {
    /// The name used in reports and in the `PriorityModel` parameter.
    pub fn name(self) -> &'static str {
        match self {
            PriorityModel::Slurm => "slurm",
            PriorityModel::Flux => "flux",
            PriorityModel::Moab => "moab",
        }
    }
}

/// `PriorityUsageResetPeriod`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum ResetPeriod {
    /// Never reset (the default).
    #[default]
    None,
    /// Reset once, when the parameter is set.
    Now,
    /// At every midnight (UTC).
    Daily,
    /// At every Sunday 00:00 (UTC).
    Weekly,
    /// At 00:00 on the first of every month (UTC).
    Monthly,
    /// At 00:00 on the first of January, April, July and October (UTC).
    Quarterly,
    /// At 00:00 on the first of January (UTC).
    Yearly,
}

/// `PriorityFlags`, one boolean per flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[allow(missing_docs)]
pub struct PriorityFlags {
    pub accrue_always: bool,
    pub max_tres: bool,
    pub max_tres_gres: bool,
    pub small_relative_to_time: bool,
    pub depth_oblivious: bool,
    pub calculate_running: bool,
    pub no_fair_tree: bool,
    pub incr_only: bool,
    pub no_normal_assoc: bool,
    pub no_normal_part: bool,
    pub no_normal_qos: bool,
    pub no_normal_tres: bool,
    pub ticket_based: bool,
    pub level_based: bool,
}

impl PriorityFlags {
    /// Parse Slurm's comma-separated flag list (names are case-insensitive).
    pub fn parse(text: &str) -> Result<PriorityFlags, InvalidValue> {
        let mut flags = PriorityFlags::default();
        for token in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            match token.to_ascii_uppercase().as_str() {
                "ACCRUE_ALWAYS" => flags.accrue_always = true,
                "MAX_TRES" => flags.max_tres = true,
                "MAX_TRES_GRES" => flags.max_tres_gres = true,
                "SMALL_RELATIVE_TO_TIME" => flags.small_relative_to_time = true,
                "DEPTH_OBLIVIOUS" => flags.depth_oblivious = true,
                "CALCULATE_RUNNING" => flags.calculate_running = true,
                "NO_FAIR_TREE" => flags.no_fair_tree = true,
                "FAIR_TREE" => {}
                "INCR_ONLY" => flags.incr_only = true,
                "NO_NORMAL_ASSOC" => flags.no_normal_assoc = true,
                "NO_NORMAL_PART" => flags.no_normal_part = true,
                "NO_NORMAL_QOS" => flags.no_normal_qos = true,
                "NO_NORMAL_TRES" => flags.no_normal_tres = true,
                "NO_NORMAL_ALL" => {
                    flags.no_normal_assoc = true;
                    flags.no_normal_part = true;
                    flags.no_normal_qos = true;
                    flags.no_normal_tres = true;
                }
                "TICKET_BASED" => flags.ticket_based = true,
                "LEVEL_BASED" => flags.level_based = true,
                other => {
                    return Err(InvalidValue::new(format!(
                        "unknown PriorityFlags flag `{other}`"
                    )))
                }
            }
        }
        if flags.ticket_based && flags.level_based {
            return Err(InvalidValue::new(
                "TICKET_BASED and LEVEL_BASED select different algorithms; give one",
            ));
        }
        Ok(flags)
    }

    /// The fair-share algorithm these flags select.
    pub fn algorithm(&self) -> Algorithm {
        if self.ticket_based {
            Algorithm::TicketBased
        } else if self.level_based {
            Algorithm::LevelBased
        } else if self.depth_oblivious {
            Algorithm::DepthOblivious
        } else if self.no_fair_tree {
            Algorithm::Classic
        } else {
            Algorithm::FairTree
        }
    }
}

/// Flux's weights: flux-accounting's four plugin factors, plus the remaining
/// factors of the Flux design (wait time, QOS, job size, user), which default
/// to weight 0 so that the defaults are exactly flux-accounting's.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[allow(missing_docs)]
pub struct FluxWeights {
    pub fairshare: i64,
    pub queue: i64,
    pub bank: i64,
    pub urgency: i64,
    pub wait_time: i64,
    pub max_wait_time_secs: i64,
    pub qos: i64,
    pub job_size: i64,
    pub user: i64,
}

impl Default for FluxWeights {
    fn default() -> Self {
        FluxWeights {
            fairshare: 100_000,
            queue: 10_000,
            bank: 0,
            urgency: 1_000,
            wait_time: 0,
            max_wait_time_secs: 604_800,
            qos: 0,
            job_size: 0,
            user: 0,
        }
    }
}

/// The whole configuration.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Config {
    /// `PriorityFlags`.
    pub flags: PriorityFlags,
    /// `PriorityDecayHalfLife` in seconds; 0 means no decay.
    pub decay_half_life_secs: i64,
    /// `PriorityCalcPeriod` in seconds: how often running jobs' accrual becomes
    /// visible in usage (at multiples of the period, Unix time). 0, the default,
    /// makes it continuous: usage at any time includes accrual up to that time.
    pub calc_period_secs: i64,
    /// `PriorityMaxAge` in seconds.
    pub max_age_secs: i64,
    /// `PriorityFavorSmall`.
    pub favor_small: bool,
    /// `PriorityWeightAge`.
    pub weight_age: u32,
    /// `PriorityWeightAssoc`.
    pub weight_assoc: u32,
    /// `PriorityWeightFairshare`.
    pub weight_fairshare: u32,
    /// `PriorityWeightJobSize`.
    pub weight_job_size: u32,
    /// `PriorityWeightPartition`.
    pub weight_partition: u32,
    /// `PriorityWeightQOS`.
    pub weight_qos: u32,
    /// `PriorityWeightTRES`, per TRES name (lower case), per base unit.
    pub weight_tres: WeightList,
    /// `FairShareDampeningFactor` (1 to 65535).
    pub dampening_factor: u32,
    /// `PriorityUsageResetPeriod`.
    pub usage_reset_period: ResetPeriod,
    /// `PriorityLevels` for the level-based algorithm (1 to 16).
    pub levels: u32,
    /// `PriorityModel`.
    pub model: PriorityModel,
    /// The Flux model's weights.
    pub flux: FluxWeights,
    /// `FairTreeTies` (fairflow's): how Fair Tree decides ties under the
    /// Slurm and Moab models (the Flux model always merges tied banks).
    #[serde(default)]
    pub fair_tree_ties: FairTreeTies,
    /// `RequeueDelay` (fairflow's; Slurm's `SchedulerParameters=requeue_delay=`,
    /// seconds): when set, a requeued job may begin `delay + 1` seconds after
    /// its requeue, as Slurm sets it (`priority_formula::slurm_requeue_begin`;
    /// Slurm's default is 120). Unset, the default: eligible at once.
    #[serde(default)]
    pub requeue_delay_secs: Option<i64>,
    /// `UsageModel` (fairflow's): how a running job's usage is counted. Not
    /// in the serialised configuration: a snapshot carries it after the book
    /// (format 5), so the formats before it read unchanged.
    #[serde(skip)]
    pub usage_model: UsageModel,
    /// flux-accounting's usage weights, under `UsageModel=flux` (not
    /// serialised either; format 5 carries them).
    #[serde(skip)]
    pub flux_usage: FluxUsageWeights,
    /// flux-accounting's usage bins, under `UsageModel=flux` (not serialised;
    /// format 6 carries them).
    #[serde(skip)]
    pub flux_bins: FluxUsageBins,
    /// Moab `moab.cfg` parameters, by name as written (e.g. `FSWEIGHT`,
    /// `USERCFG[john]`), with their values as written.
    pub moab: BTreeMap<String, String>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            flags: PriorityFlags::default(),
            decay_half_life_secs: 604_800,
            calc_period_secs: 0,
            max_age_secs: 604_800,
            favor_small: false,
            weight_age: 0,
            weight_assoc: 0,
            weight_fairshare: 0,
            weight_job_size: 0,
            weight_partition: 0,
            weight_qos: 0,
            weight_tres: WeightList::default(),
            dampening_factor: 1,
            usage_reset_period: ResetPeriod::None,
            levels: 4,
            model: PriorityModel::Slurm,
            flux: FluxWeights::default(),
            fair_tree_ties: FairTreeTies::Slurm,
            requeue_delay_secs: None,
            usage_model: UsageModel::Slurm,
            flux_usage: FluxUsageWeights::default(),
            flux_bins: FluxUsageBins::default(),
            moab: BTreeMap::new(),
        }
    }
}

/// A rejected configuration key: which key and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidKey {
    /// The parameter name as given.
    pub key: String,
    /// What is wrong with its value.
    pub error: InvalidValue,
}

fn value_text(value: &Value) -> Result<String, InvalidValue> {
    match value {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        Value::Bool(b) => Ok(if *b { "YES".into() } else { "NO".into() }),
        _ => Err(InvalidValue::new("must be a string, a number or a boolean")),
    }
}

fn parse_u32(text: &str) -> Result<u32, InvalidValue> {
    text.trim()
        .parse::<u32>()
        .map_err(|_| InvalidValue::new(format!("`{text}` is not an integer from 0 to 4294967295")))
}

fn parse_i64(text: &str) -> Result<i64, InvalidValue> {
    text.trim()
        .parse::<i64>()
        .map_err(|_| InvalidValue::new(format!("`{text}` is not an integer")))
}

/// A usage weight ([`values::usage_weight`]).
fn parse_usage_weight(text: &str) -> Result<f64, InvalidValue> {
    values::usage_weight(text.trim().parse::<f64>().unwrap_or(f64::NAN), text)
}

fn parse_yes_no(text: &str) -> Result<bool, InvalidValue> {
    match text.trim().to_ascii_uppercase().as_str() {
        "YES" | "TRUE" | "1" => Ok(true),
        "NO" | "FALSE" | "0" => Ok(false),
        _ => Err(InvalidValue::new(format!("`{text}` is not YES or NO"))),
    }
}

/// Is this a Moab `moab.cfg` parameter name (upper case, optionally with a
/// `[credential]` index, e.g. `FSWEIGHT` or `USERCFG[john]`)?
pub fn is_moab_key(key: &str) -> bool {
    let head = key.split('[').next().unwrap_or("");
    !head.is_empty()
        && head
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

/// The latest `PriorityCalcPeriod` boundary at or before `t` (boundaries are
/// the multiples of the period in Unix time); `None` without a period
/// (`period_secs <= 0`: accrual is continuous).
pub fn calc_period_boundary(period_secs: i64, t: crate::Time) -> Option<crate::Time> {
    (period_secs > 0).then(|| t.div_euclid(period_secs) * period_secs)
}

impl Config {
    /// The latest calc-period boundary at or before `t` under this
    /// configuration ([`calc_period_boundary`]).
    pub fn calc_period_boundary(&self, t: crate::Time) -> Option<crate::Time> {
        calc_period_boundary(self.calc_period_secs, t)
    }

    // size: one arm per configuration parameter
    /// Set one parameter from its Slurm-syntax text. Keys are Slurm's
    /// (case-insensitive, as in `slurm.conf`), fairflow's `PriorityModel` and
    /// `Flux*` weights, or Moab's upper-case `moab.cfg` names.
    pub fn set_text(&mut self, key: &str, text: &str) -> Result<(), InvalidValue> {
        let duration = |t: &str| values::duration_secs(parse_slurm_duration_secs(t)?, t);
        match key.to_ascii_lowercase().as_str() {
            "priorityflags" => self.flags = PriorityFlags::parse(text)?,
            "prioritydecayhalflife" => self.decay_half_life_secs = duration(text)?,
            "prioritycalcperiod" => {
                // 0 (continuous) is fairflow's; Slurm's own minimum is 1 minute.
                self.calc_period_secs = duration(text)?;
            }
            "prioritymaxage" => self.max_age_secs = duration(text)?,
            "priorityfavorsmall" => self.favor_small = parse_yes_no(text)?,
            "priorityweightage" => self.weight_age = parse_u32(text)?,
            "priorityweightassoc" => self.weight_assoc = parse_u32(text)?,
            "priorityweightfairshare" => self.weight_fairshare = parse_u32(text)?,
            "priorityweightjobsize" => self.weight_job_size = parse_u32(text)?,
            "priorityweightpartition" => self.weight_partition = parse_u32(text)?,
            "priorityweightqos" => self.weight_qos = parse_u32(text)?,
            "priorityweighttres" => self.weight_tres = parse_weight_list(text)?,
            "fairsharedampeningfactor" => {
                self.dampening_factor = values::dampening_factor(parse_u32(text)?)?;
            }
            "priorityusageresetperiod" => {
                self.usage_reset_period = match text.trim().to_ascii_uppercase().as_str() {
                    "NONE" => ResetPeriod::None,
                    "NOW" => ResetPeriod::Now,
                    "DAILY" => ResetPeriod::Daily,
                    "WEEKLY" => ResetPeriod::Weekly,
                    "MONTHLY" => ResetPeriod::Monthly,
                    "QUARTERLY" => ResetPeriod::Quarterly,
                    "YEARLY" => ResetPeriod::Yearly,
                    _ => {
                        return Err(InvalidValue::new(format!(
                            "`{text}` is not NONE, NOW, DAILY, WEEKLY, MONTHLY, QUARTERLY or YEARLY"
                        )))
                    }
                }
            }
            "prioritylevels" => self.levels = values::levels(parse_u32(text)?)?,
            "prioritymodel" => {
                self.model = match text.trim().to_ascii_lowercase().as_str() {
                    "slurm" => PriorityModel::Slurm,
                    "flux" => PriorityModel::Flux,
                    "moab" => PriorityModel::Moab,
                    _ => {
                        return Err(InvalidValue::new(format!(
                            "`{text}` is not slurm, flux or moab"
                        )))
                    }
                }
            }
            "fairtreeties" => {
                self.fair_tree_ties = match text.trim().to_ascii_lowercase().as_str() {
                    "slurm" => FairTreeTies::Slurm,
                    "documented" => FairTreeTies::Documented,
                    _ => {
                        return Err(InvalidValue::new(format!(
                            "`{text}` is not slurm or documented"
                        )))
                    }
                }
            }
            "requeuedelay" => {
                self.requeue_delay_secs = Some(values::requeue_delay_secs(parse_i64(text)?)?);
            }
            "usagemodel" => {
                self.usage_model = match text.trim().to_ascii_lowercase().as_str() {
                    "slurm" => UsageModel::Slurm,
                    "flux" => UsageModel::Flux,
                    _ => return Err(InvalidValue::new(format!("`{text}` is not slurm or flux"))),
                }
            }
            "fluxusageresetperiod" => {
                self.flux_bins.reset_period_secs =
                    values::positive_secs(duration(text)?, "FluxUsageResetPeriod")?;
            }
            "fluxdecayfactor" => {
                let factor = text.trim().parse::<f64>().unwrap_or(f64::NAN);
                self.flux_bins.decay_factor = values::decay_factor(factor, text)?;
            }
            "fluxhalflifeperiodend" => {
                self.flux_bins.period_end = Some(values::period_end(parse_i64(text)?, text)?);
            }
            "fluxnodeweight" => self.flux_usage.node = parse_usage_weight(text)?,
            "fluxcoreweight" => self.flux_usage.core = parse_usage_weight(text)?,
            "fluxgpuweight" => self.flux_usage.gpu = parse_usage_weight(text)?,
            "fluxweightfairshare" => self.flux.fairshare = parse_i64(text)?,
            "fluxweightqueue" => self.flux.queue = parse_i64(text)?,
            "fluxweightbank" => self.flux.bank = parse_i64(text)?,
            "fluxweighturgency" => self.flux.urgency = parse_i64(text)?,
            "fluxweightwaittime" => self.flux.wait_time = parse_i64(text)?,
            "fluxmaxwaittime" => {
                self.flux.max_wait_time_secs =
                    values::positive_secs(duration(text)?, "FluxMaxWaitTime")?;
            }
            "fluxweightqos" => self.flux.qos = parse_i64(text)?,
            "fluxweightjobsize" => self.flux.job_size = parse_i64(text)?,
            "fluxweightuser" => self.flux.user = parse_i64(text)?,
            // Slurm parameters that exist but do not change priorities.
            "prioritytype"
            | "priorityparameters"
            | "prioritysitefactorplugin"
            | "prioritysitefactorparameters" => {}
            _ if is_moab_key(key) => {
                let stored = crate::moab::params::validate_and_merge(
                    key,
                    self.moab.get(key).map(String::as_str),
                    text,
                )?;
                self.moab.insert(key.to_string(), stored);
            }
            _ => return Err(InvalidValue::new(format!("unknown parameter `{key}`"))),
        }
        Ok(())
    }

    /// Apply a `config` event's `set` object atomically: on the first invalid
    /// key nothing is changed and that key is returned.
    pub fn patched(&self, set: &BTreeMap<String, Value>) -> Result<Config, InvalidKey> {
        let mut next = self.clone();
        for (key, value) in set {
            value_text(value)
                .and_then(|text| next.set_text(key, &text))
                .map_err(|error| InvalidKey {
                    key: key.clone(),
                    error,
                })?;
        }
        Ok(next)
    }

    /// The half-life of the continuous decay usage is stored with: the
    /// `PriorityDecayHalfLife` under `UsageModel=slurm`; none (0) under
    /// `UsageModel=flux`, whose usage decays in steps, by its bins.
    pub fn frame_half_life_secs(&self) -> i64 {
        match self.usage_model {
            UsageModel::Slurm => self.decay_half_life_secs,
            UsageModel::Flux => 0,
        }
    }

    /// The fair-share algorithm in force.
    pub fn algorithm(&self) -> Algorithm {
        self.flags.algorithm()
    }

    /// The Fair Tree tie rule in force: `FairTreeTies` under the Slurm and
    /// Moab models; under the Flux model always the documented merge
    /// (flux-accounting's weighted tree merges tied banks).
    pub fn fair_tree_ties(&self) -> FairTreeTies {
        match self.model {
            PriorityModel::Flux => FairTreeTies::Documented,
            PriorityModel::Slurm | PriorityModel::Moab => self.fair_tree_ties,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_calc_period_boundary_is_the_last_multiple_at_or_before() {
        // Period 300 s: 1199 -> 900, 1200 -> 1200; before the epoch too
        // (-1 -> -300); no period, no boundary.
        assert_eq!(calc_period_boundary(300, 1199), Some(900));
        assert_eq!(calc_period_boundary(300, 1200), Some(1200));
        assert_eq!(calc_period_boundary(300, -1), Some(-300));
        assert_eq!(calc_period_boundary(0, 1200), None);
        let config = Config {
            calc_period_secs: 60,
            ..Config::default()
        };
        assert_eq!(config.calc_period_boundary(125), Some(120));
    }

    #[test]
    fn flags_select_the_algorithm() {
        let algo = |s: &str| PriorityFlags::parse(s).unwrap().algorithm();
        assert_eq!(algo(""), Algorithm::FairTree);
        assert_eq!(algo("NO_FAIR_TREE"), Algorithm::Classic);
        assert_eq!(
            algo("no_fair_tree,DEPTH_OBLIVIOUS"),
            Algorithm::DepthOblivious
        );
        assert_eq!(algo("TICKET_BASED"), Algorithm::TicketBased);
        assert_eq!(algo("LEVEL_BASED"), Algorithm::LevelBased);
        assert!(PriorityFlags::parse("TICKET_BASED,LEVEL_BASED").is_err());
        assert!(PriorityFlags::parse("FAIR_TREEE").is_err());
        let all = PriorityFlags::parse("NO_NORMAL_ALL").unwrap();
        assert!(
            all.no_normal_assoc && all.no_normal_part && all.no_normal_qos && all.no_normal_tres
        );
    }

    #[test]
    fn a_patch_is_atomic() {
        let base = Config::default();
        let mut set = BTreeMap::new();
        set.insert("PriorityWeightAge".to_string(), Value::from(1000));
        set.insert("PriorityDecayHalfLife".to_string(), Value::from("bogus"));
        let err = base.patched(&set).unwrap_err();
        assert_eq!(err.key, "PriorityDecayHalfLife");
        set.insert("PriorityDecayHalfLife".to_string(), Value::from("14-0"));
        let next = base.patched(&set).unwrap();
        assert_eq!(next.weight_age, 1000);
        assert_eq!(next.decay_half_life_secs, 14 * 86400);
        // A bare number is minutes, as in slurm.conf.
        set.insert("PriorityDecayHalfLife".to_string(), Value::from(60));
        assert_eq!(base.patched(&set).unwrap().decay_half_life_secs, 3600);
    }

    #[test]
    fn unknown_keys_are_rejected_but_moab_names_are_kept() {
        let mut config = Config::default();
        assert!(config.set_text("PriorityWeightFairshre", "1").is_err());
        config.set_text("FSWEIGHT", "100").unwrap();
        config.set_text("USERCFG[john]", "PRIORITY=2000").unwrap();
        assert_eq!(config.moab.get("FSWEIGHT").map(String::as_str), Some("100"));
    }
}
