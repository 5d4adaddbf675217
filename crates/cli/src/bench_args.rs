//! `fairflow bench`'s flags ([`Args`]) and the names every bench module
//! shares: the fair-share algorithms (`--algorithm`), the update kinds
//! (`--kinds`) and the served reads (`--reads`) with their sample counts
//! and targets, the reads checked against the oracle ([`ReadCheck`]), the
//! clock's step and the progress line. A leaf: it names no other bench
//! module, so the others can all name it.

use fairflow_model::Event;
use fairflow_service::backend::Query;

/// `fairflow bench` flags.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// User associations in the generated tree.
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    pub(crate) associations: usize,
    /// Pending jobs in the generated state.
    #[arg(long, value_name = "M", default_value_t = 100_000)]
    pub(crate) jobs: usize,
    /// User associations per account on average in the generated tree:
    /// the size of the sibling groups most usage events land in (a site
    /// with big flat accounts has thousands).
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub(crate) users_per_account: usize,
    /// Running jobs in the generated state (default: a tenth of `--jobs`, at
    /// most 10,000, about what the generated 64,000 CPUs hold).
    #[arg(long, value_name = "N")]
    pub(crate) running_jobs: Option<usize>,
    /// Give the generated partitions Slurm `PriorityTier`s (debug 2, batch
    /// and gpu 1) and submit one `batch` job in 20 to `batch,debug`: a
    /// scheduler's queue of entries in two tiers (issue 35 item 5).
    #[arg(long)]
    pub(crate) tiered_partitions: bool,
    /// Timely workers.
    #[arg(long, value_name = "W", default_value_t = 1)]
    pub(crate) workers: usize,
    /// Seed of the workload generator.
    #[arg(long, value_name = "S", default_value_t = 1)]
    pub(crate) seed: u64,
    /// How many jobs each top-k read returns.
    #[arg(long, value_name = "K", default_value_t = 100)]
    pub(crate) k: usize,
    /// Multiply every sample count by this (at least one sample each):
    /// 200 per single event, 20 for 1 000-event batches, 3 reorganisations,
    /// 1 000 top-k reads.
    #[arg(long, value_name = "F", default_value_t = 1.0)]
    pub(crate) samples_scale: f64,
    /// Seconds to leave the engine idle after the load before measuring its
    /// memory again (`*_settled_*`): the arrangements merge their batches
    /// while idle, so this is the memory a loaded service settles at.
    #[arg(long, value_name = "SECS", default_value_t = 0)]
    pub(crate) settle_secs: u64,
    /// Batches of each kind whose full recomputation the oracle times.
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub(crate) oracle_samples: usize,
    /// Events per batch while loading the initial state. Each batch is one
    /// consistent state the engine computes in full (its fair-share factors
    /// move as time passes during the history, re-deriving the jobs already
    /// loaded), so fewer, larger batches load faster; the generator's
    /// chunks bound the memory the load holds at once.
    #[arg(long, value_name = "N", default_value_t = 250_000)]
    pub(crate) load_batch: usize,
    /// The fair-share algorithm (`PriorityFlags` in the generated
    /// configuration), so that every algorithm's cost is measured.
    #[arg(long, value_enum, default_value_t = BenchAlgorithm::FairTree)]
    pub(crate) algorithm: BenchAlgorithm,
    /// Only these update kinds (comma-separated; default: all), e.g.
    /// `--kinds usage_event,usage_batch_1000` to profile one of them.
    #[arg(long, value_enum, value_delimiter = ',', value_name = "KIND")]
    pub(crate) kinds: Vec<Kind>,
    /// Let the crossing event settle a `PriorityCalcPeriod` boundary itself
    /// (as `serve --no-calc-period-ticks`), instead of settling it in a
    /// `tick` batch of its own at the boundary, timed apart
    /// (`calc_period_tick`), as `serve` does by default.
    #[arg(long)]
    pub(crate) no_calc_period_ticks: bool,
    /// The generated cluster's `PriorityCalcPeriod`, seconds (300, Slurm's
    /// default of 5 minutes); `0` measures continuous accrual, where every
    /// event that moves time charges every running job.
    #[arg(long = "calc-period", value_name = "SECS", default_value_t = 300,
          value_parser = clap::value_parser!(u32).range(0..=86_400))]
    pub(crate) calc_period_secs: u32,
    /// Only these reads of the `reads` object (comma-separated; default:
    /// all), e.g. `--reads position,top_offset`.
    #[arg(long, value_enum, value_delimiter = ',', value_name = "READ")]
    pub(crate) reads: Vec<ReadKind>,
    /// Print the report as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// Seconds the clock moves before each sample.
pub(crate) const STEP_SECS: i64 = 3;

/// Top-k reads at `--samples-scale 1`.
pub(crate) const TOPK_READS: usize = 1_000;

/// Say what the bench does now (not with `--json`).
pub(crate) fn progress(args: &Args, text: &str) {
    if !args.json {
        eprintln!("fairflow bench: {text}");
    }
}

/// The fair-share algorithms `--algorithm` selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum BenchAlgorithm {
    /// Fair Tree (Slurm's default).
    FairTree,
    /// Classic (`NO_FAIR_TREE`).
    Classic,
    /// Classic, depth-oblivious (`DEPTH_OBLIVIOUS`).
    DepthOblivious,
    /// Ticket-based (`TICKET_BASED`).
    TicketBased,
    /// Level-based (`LEVEL_BASED`).
    LevelBased,
}

impl BenchAlgorithm {
    /// Its `PriorityFlags` value (`None`: no flag, Fair Tree).
    pub(crate) fn priority_flags(self) -> Option<&'static str> {
        match self {
            BenchAlgorithm::FairTree => None,
            BenchAlgorithm::Classic => Some("NO_FAIR_TREE"),
            BenchAlgorithm::DepthOblivious => Some("NO_FAIR_TREE,DEPTH_OBLIVIOUS"),
            BenchAlgorithm::TicketBased => Some("TICKET_BASED"),
            BenchAlgorithm::LevelBased => Some("LEVEL_BASED"),
        }
    }

    /// The report's name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            BenchAlgorithm::FairTree => "fair-tree",
            BenchAlgorithm::Classic => "classic",
            BenchAlgorithm::DepthOblivious => "depth-oblivious",
            BenchAlgorithm::TicketBased => "ticket-based",
            BenchAlgorithm::LevelBased => "level-based",
        }
    }
}

/// What an update sample does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Kind {
    #[value(name = "submit")]
    Submit,
    #[value(name = "start_end")]
    StartEnd,
    #[value(name = "usage_event")]
    UsageEvent,
    #[value(name = "usage_batch_1000")]
    UsageBatch,
    #[value(name = "share_change")]
    ShareChange,
    #[value(name = "reorg_10000")]
    Reorg,
    /// Not sampled: the `tick` batch that settles a calc-period boundary
    /// before the sample that crosses it.
    #[value(skip)]
    CalcPeriodTick,
}

impl Kind {
    pub(crate) const ALL: [Kind; 6] = [
        Kind::Submit,
        Kind::StartEnd,
        Kind::UsageEvent,
        Kind::UsageBatch,
        Kind::ShareChange,
        Kind::Reorg,
    ];

    /// The report's key.
    pub(crate) fn key(self) -> &'static str {
        match self {
            Kind::Submit => "submit",
            Kind::StartEnd => "start_end",
            Kind::UsageEvent => "usage_event",
            Kind::UsageBatch => "usage_batch_1000",
            Kind::ShareChange => "share_change",
            Kind::Reorg => "reorg_10000",
            Kind::CalcPeriodTick => "calc_period_tick",
        }
    }

    /// Its place in `bench_engine::EnginePhase::measured`.
    pub(crate) fn index(self) -> usize {
        match self {
            Kind::CalcPeriodTick => Kind::ALL.len(),
            kind => Kind::ALL
                .iter()
                .position(|&x| x == kind)
                .expect("a sampled kind"),
        }
    }

    /// Samples at `--samples-scale 1`.
    pub(crate) fn default_samples(self) -> usize {
        match self {
            Kind::UsageBatch => 20,
            Kind::Reorg => 3,
            Kind::CalcPeriodTick => 0,
            _ => 200,
        }
    }

    /// The p99 target, microseconds (none for a reorganisation).
    pub(crate) fn p99_target_us(self) -> Option<f64> {
        match self {
            Kind::UsageBatch => Some(20_000.0),
            Kind::Reorg | Kind::CalcPeriodTick => None,
            _ => Some(1_000.0),
        }
    }
}

/// The reads of the `reads` object, in its order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ReadKind {
    #[value(name = "position")]
    Position,
    #[value(name = "top_offset")]
    TopOffset,
    #[value(name = "whatif")]
    WhatIf,
    #[value(name = "explain")]
    Explain,
    #[value(name = "audit")]
    Audit,
    #[value(name = "sshare")]
    Sshare,
    #[value(name = "metrics")]
    Metrics,
    #[value(name = "history")]
    History,
    #[value(name = "restart")]
    Restart,
    #[value(name = "one_off_top")]
    OneOffTop,
}

impl ReadKind {
    pub(crate) const ALL: [ReadKind; 10] = [
        ReadKind::Position,
        ReadKind::TopOffset,
        ReadKind::WhatIf,
        ReadKind::Explain,
        ReadKind::Audit,
        ReadKind::Sshare,
        ReadKind::Metrics,
        ReadKind::History,
        ReadKind::Restart,
        ReadKind::OneOffTop,
    ];

    /// The report's key.
    pub(crate) fn key(self) -> &'static str {
        match self {
            ReadKind::Position => "position",
            ReadKind::TopOffset => "top_offset",
            ReadKind::WhatIf => "whatif",
            ReadKind::Explain => "explain",
            ReadKind::Audit => "audit",
            ReadKind::Sshare => "sshare",
            ReadKind::Metrics => "metrics",
            ReadKind::History => "history",
            ReadKind::Restart => "restart",
            ReadKind::OneOffTop => "one_off_top",
        }
    }

    /// Samples at `--samples-scale 1` (at least one each when scaled).
    pub(crate) fn default_samples(self) -> usize {
        match self {
            ReadKind::Position | ReadKind::TopOffset => 30,
            ReadKind::WhatIf => 5,
            ReadKind::Explain => 200,
            ReadKind::Audit | ReadKind::Sshare | ReadKind::History => 20,
            ReadKind::Metrics => 10,
            ReadKind::Restart => 3,
            ReadKind::OneOffTop => 1,
        }
    }

    /// Issue 36's p99 target at 100,000 associations / 1,000,000 jobs,
    /// microseconds.
    pub(crate) fn p99_target_us(self) -> f64 {
        match self {
            ReadKind::Position | ReadKind::TopOffset | ReadKind::Explain => 1_000.0,
            ReadKind::WhatIf | ReadKind::Audit | ReadKind::History => 50_000.0,
            ReadKind::Sshare => 300_000.0,
            ReadKind::Metrics => 1_000_000.0,
            ReadKind::Restart => 15_000_000.0,
            ReadKind::OneOffTop => 30_000_000.0,
        }
    }
}

/// A read answered by the engine and by the oracle.
#[derive(Debug, Clone)]
pub(crate) enum Read {
    /// A query the service answers from its backend.
    Query(Query),
    /// `/metrics` with every association: its per-association families
    /// are compared.
    Metrics,
    /// A what-if of these events.
    WhatIf(Vec<Event>),
    /// A fair-share history step's read: its record is compared.
    History,
}

/// A read to compare with the oracle's answer at its place in the stream.
#[derive(Debug, Clone)]
pub(crate) struct ReadCheck {
    /// Its index in the engine's digests.
    pub id: usize,
    pub kind: ReadKind,
    pub read: Read,
}

/// The read kinds asked for (`--reads`; default: all).
pub(crate) fn read_kinds(args: &Args) -> Vec<ReadKind> {
    ReadKind::ALL
        .into_iter()
        .filter(|kind| args.reads.is_empty() || args.reads.contains(kind))
        .collect()
}
