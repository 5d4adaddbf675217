//! A combination's context: the keys a job's record depends on besides the
//! globals ([`Combo`]: user association, account, QOS, partition), each
//! key's resolved values ([`KeyCtx`]), the normalisation maxima and
//! configuration ([`Globals`]), and what a record shares with every job of
//! its combination ([`JobContext`]). The context dataflow (`super::context`)
//! makes them; the reader meets them with the job rows.

use std::sync::Arc;

use super::inputs::{JobRow, PartitionRec, PriorityParams, TresBits};
use crate::types::{AccountId, AssocId, NameId};

/// A context key's resolved values (the oracle's defaults where no fact says).
#[derive(
    Debug,
    Clone,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
)]
pub struct KeyCtx {
    /// Effective association priority (association).
    pub assoc_priority: i64,
    /// Own priority (account).
    pub account_priority: Option<i64>,
    /// QOS priority (QOS; 0 when undefined).
    pub qos_priority: i64,
    /// Partition (defaults when undefined).
    pub partition: PartitionRec,
}

/// The globals: configuration, cluster and normalisation maxima.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct Globals {
    /// The configuration.
    pub params: PriorityParams,
    /// The largest association priority (at least 0).
    pub max_assoc: i64,
    /// The largest QOS priority (at least 0).
    pub max_qos: i64,
    /// The largest partition factor over defined partitions and those that
    /// listed jobs name.
    pub max_partition: u32,
    /// Cluster nodes.
    pub cluster_nodes: u64,
    /// Cluster TRES totals.
    pub cluster_tres: TresBits,
}

/// The context keys a job's record depends on besides the globals: its user
/// association (and so its account), QOS and partition. Jobs that share a
/// combination share one resolved context, so the context joins run over the
/// distinct combinations, never over jobs.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct Combo {
    /// The user association.
    pub assoc: AssocId,
    /// The account.
    pub account: AccountId,
    /// The QOS.
    pub qos: NameId,
    /// The partition.
    pub partition: NameId,
}

impl Combo {
    /// The combination `row` names.
    pub fn of(row: &JobRow) -> Self {
        Combo {
            assoc: row.assoc,
            account: row.account,
            qos: row.qos,
            partition: row.partition,
        }
    }
}

/// A combination's resolved context and the globals: everything a job's
/// record needs besides its row. Records share it (`Arc`): one per
/// combination, not one per job.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct JobContext {
    /// The combination's keys' contexts.
    pub ctx: KeyCtx,
    /// The globals (one for all combinations).
    pub globals: Arc<Globals>,
}
