//! The context dataflow: from the facts and the combinations active jobs
//! name, one [`JobContext`] per combination (the `resolve` and `globals`
//! reduces and the five context joins of the module overview, `super`),
//! captured on every worker; and the driver's reference counts
//! ([`ComboRefs`]) that send a combination only when it starts or stops
//! being named.

use std::sync::Arc;

use differential_dataflow::operators::arrange::{Arranged, TraceAgent};
use differential_dataflow::trace::implementations::ValSpine;
use differential_dataflow::VecCollection;
use timely::dataflow::StreamVec;

#[cfg(test)]
use super::capture::capture_on_worker_0;
use super::capture::{capture_on_every_worker, ContextUpdate, Sharding};
use super::combo::{Combo, Globals, JobContext, KeyCtx};
use super::inputs::{AssocRef, Fact, JobRow, PartitionRec, Phase, PriorityParams, TresBits};
use super::queue::Capture;
use super::record;
use crate::types::{AccountId, AssocId, Epoch, NameId, TouchCounter};

/// The keys contexts are grouped by.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum Key {
    /// The globals.
    Unit,
    /// A user association.
    Assoc(AssocId),
    /// An account.
    Account(AccountId),
    /// A QOS.
    Qos(NameId),
    /// A partition.
    Partition(NameId),
}

/// The values the `resolve` and `globals` reduces group.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum Val {
    /// A combination active jobs name refers to the key.
    Named,
    /// A job category refers to the partition.
    Ref(u8),
    /// Association priority.
    AssocPriority(i64),
    /// Account priority.
    AccountPriority(i64),
    /// QOS priority.
    QosPriority(i64),
    /// A partition.
    Partition(Box<PartitionRec>),
    /// A partition factor (for the maximum).
    PartFactor(u32),
    /// A job category referring to an undefined partition.
    UndefinedPartRef(u8),
    /// The configuration.
    Config(Box<PriorityParams>),
    /// The cluster.
    Cluster(u64, TresBits),
}

/// What the side arrangement holds.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum Side {
    /// A context key's values.
    Key(KeyCtx),
    /// The globals (key `Unit`), shared by every combination's context.
    Globals(Arc<Globals>),
    /// A job category naming an undefined partition (to the globals).
    UndefinedPartRef(u8),
}

/// A combination on its way through the context joins.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct ComboCtx {
    /// The combination.
    pub combo: Combo,
    /// Its context so far.
    pub ctx: KeyCtx,
}

/// The input collections of the context dataflow.
pub struct PriorityInputs<'s> {
    /// Everything that is not a job.
    pub facts: VecCollection<'s, Epoch, Fact, isize>,
    /// The combinations active jobs name, each once ([`ComboRefs`]).
    pub combos: VecCollection<'s, Epoch, Combo, isize>,
    /// The (partition, job category) pairs active jobs name, each once.
    pub partition_refs: VecCollection<'s, Epoch, (NameId, u8), isize>,
}

/// The output: the streams to probe (they pass a time once every worker's
/// capture holds everything up to it).
pub struct PriorityOutputs<'s> {
    /// Probe these.
    pub captured: Vec<StreamVec<'s, Epoch, ()>>,
}

/// The combinations and the (partition, category) pairs that start (`+1`)
/// or stop (`-1`) being named.
pub type ComboDeltas = (Vec<(Combo, isize)>, Vec<((NameId, u8), isize)>);

/// The reference counts behind [`PriorityInputs::combos`] and
/// [`PriorityInputs::partition_refs`]: how many sent job rows name each
/// combination and each (partition, category) pair. The driver runs every
/// batch's row deltas through [`ComboRefs::deltas`] and sends only the
/// pairs that appear or disappear, so a job event that names what other
/// jobs already name sends nothing to the context dataflow (which then
/// does not step).
#[derive(Debug, Default, Clone)]
pub struct ComboRefs {
    combos: std::collections::HashMap<Combo, usize>,
    partition_refs: std::collections::HashMap<(NameId, u8), usize>,
}

impl ComboRefs {
    /// The partitions some sent row names.
    pub fn partitions(&self) -> impl Iterator<Item = NameId> + '_ {
        self.partition_refs.keys().map(|(partition, _)| *partition)
    }

    /// Count `rows` (retractions `-1`, insertions `+1`, exactly as sent)
    /// and return the combinations and partition pairs whose count moved
    /// between zero and non-zero.
    pub fn deltas(&mut self, rows: &[(JobRow, isize)]) -> ComboDeltas {
        let mut combos: Vec<(Combo, isize)> = Vec::new();
        let mut refs: Vec<((NameId, u8), isize)> = Vec::new();
        for (row, diff) in rows {
            combos.push((Combo::of(row), *diff));
            refs.push(((row.partition, category(row.phase, row.begun)), *diff));
        }
        (
            Self::moved(&mut self.combos, combos),
            Self::moved(&mut self.partition_refs, refs),
        )
    }

    /// Apply the net `changes` to `counts`; the keys that moved between zero
    /// and non-zero, with `+1` or `-1`.
    fn moved<K: Ord + std::hash::Hash + Copy>(
        counts: &mut std::collections::HashMap<K, usize>,
        mut changes: Vec<(K, isize)>,
    ) -> Vec<(K, isize)> {
        differential_dataflow::consolidation::consolidate(&mut changes);
        let mut moved = Vec::new();
        for (key, diff) in changes {
            let before = counts.get(&key).copied().unwrap_or(0);
            let after = before.checked_add_signed(diff).unwrap_or_else(|| {
                debug_assert!(false, "a row retracted that was not sent");
                0
            });
            if after == 0 {
                counts.remove(&key);
            } else {
                counts.insert(key, after);
            }
            match (before, after) {
                (0, 0) => {}
                (0, _) => moved.push((key, 1)),
                (_, 0) => moved.push((key, -1)),
                _ => {}
            }
        }
        moved
    }
}

/// A job's category for partition references: pending/held x begun, running.
fn category(phase: Phase, begun: bool) -> u8 {
    match (phase, begun) {
        (Phase::Pending, true) => 0,
        (Phase::Pending, false) => 1,
        (Phase::Held, true) => 2,
        (Phase::Held, false) => 3,
        (Phase::Running, _) => 4,
    }
}

fn category_listed(params: &PriorityParams, cat: u8) -> bool {
    let (phase, begun) = match cat {
        0 => (Phase::Pending, true),
        1 => (Phase::Pending, false),
        2 => (Phase::Held, true),
        3 => (Phase::Held, false),
        _ => (Phase::Running, true),
    };
    record::listed(params, phase, begun).is_some()
}

fn counted<'s, D: differential_dataflow::Data>(
    collection: VecCollection<'s, Epoch, D, isize>,
    touched: &TouchCounter,
) -> VecCollection<'s, Epoch, D, isize> {
    let touched = touched.clone();
    collection.inspect(move |_| touched.add(1))
}

/// One enrichment stage: join the combinations (keyed by what they need
/// next) with the keys' resolved context, let `fill` copy what it needs and
/// name the next key.
fn enrich<'s>(
    stage: VecCollection<'s, Epoch, (Key, ComboCtx), isize>,
    sides: &Arranged<'s, TraceAgent<ValSpine<Key, Side, Epoch, isize>>>,
    touched: &TouchCounter,
    fill: impl Fn(&mut ComboCtx, &KeyCtx) -> Key + 'static,
) -> VecCollection<'s, Epoch, (Key, ComboCtx), isize> {
    counted(
        stage.arrange_by_key().join_core(
            sides.clone(),
            move |_key, combo: &ComboCtx, side: &Side| {
                let Side::Key(kc) = side else { return None };
                let mut combo = combo.clone();
                let next = fill(&mut combo, kc);
                Some((next, combo))
            },
        ),
        touched,
    )
}

/// One key's context from its facts and references.
fn resolve(key: &Key, values: &[(&Val, isize)], out: &mut Vec<(Side, isize)>) {
    let mut ctx = KeyCtx::default();
    let mut defined = false;
    let mut categories = Vec::new();
    for (value, count) in values {
        if *count <= 0 {
            continue;
        }
        match value {
            Val::Ref(cat) => categories.push(*cat),
            Val::AssocPriority(p) => ctx.assoc_priority = *p,
            Val::AccountPriority(p) => ctx.account_priority = Some(*p),
            Val::QosPriority(p) => ctx.qos_priority = *p,
            Val::Partition(rec) => {
                ctx.partition = (**rec).clone();
                defined = true;
            }
            _ => {}
        }
    }
    out.push((Side::Key(ctx), 1));
    if matches!(key, Key::Partition(_)) && !defined {
        categories.dedup();
        out.extend(
            categories
                .into_iter()
                .map(|c| (Side::UndefinedPartRef(c), 1)),
        );
    }
}

/// The globals from the distinct values of the unit group.
fn globals(values: &[(&Val, isize)], out: &mut Vec<(Side, isize)>) {
    let mut params = None;
    let (mut nodes, mut tres) = (0, Vec::new());
    let (mut max_assoc, mut max_qos) = (0i64, 0i64);
    let mut max_partition: Option<u32> = None;
    let mut undefined = Vec::new();
    for (value, count) in values {
        if *count <= 0 {
            continue;
        }
        match value {
            Val::Config(p) => params = Some((**p).clone()),
            Val::Cluster(n, t) => {
                nodes = *n;
                tres = t.clone();
            }
            Val::AssocPriority(p) => max_assoc = max_assoc.max(*p),
            Val::QosPriority(p) => max_qos = max_qos.max(*p),
            Val::PartFactor(f) => max_partition = Some(max_partition.map_or(*f, |m| m.max(*f))),
            Val::UndefinedPartRef(cat) => undefined.push(*cat),
            _ => {}
        }
    }
    let params = params.unwrap_or_default();
    // Partitions no event defined count with the default factor 1 when a
    // listed job names them (the oracle's `maxima`).
    if undefined.iter().any(|cat| category_listed(&params, *cat)) {
        max_partition = Some(max_partition.map_or(1, |m| m.max(1)));
    }
    out.push((
        Side::Globals(Arc::new(Globals {
            params,
            max_assoc,
            max_qos,
            max_partition: max_partition.unwrap_or(0),
            cluster_nodes: nodes,
            cluster_tres: tres,
        })),
        1,
    ));
}

/// Build the context dataflow over `inputs` (on every worker, identically),
/// capturing into `capture`.
pub fn build<'s>(
    inputs: PriorityInputs<'s>,
    capture: &Capture,
    touched: &TouchCounter,
) -> PriorityOutputs<'s> {
    build_routed(inputs, capture, touched, Sharding::ByShardKey)
}

/// [`build`], with the outputs captured as `sharding` says.
pub(crate) fn build_routed<'s>(
    inputs: PriorityInputs<'s>,
    capture: &Capture,
    touched: &TouchCounter,
    sharding: Sharding,
) -> PriorityOutputs<'s> {
    let PriorityInputs {
        facts,
        combos,
        partition_refs,
    } = inputs;
    let key_values = key_values(&facts, &combos, partition_refs);
    let resolved = counted(key_values.reduce(resolve), touched);
    let globals = counted(
        global_values(&facts, &resolved).reduce(|_unit, values, out| globals(values, out)),
        touched,
    );
    let sides = resolved
        .filter(|(_, side)| matches!(side, Side::Key(_)))
        .concat(globals)
        .arrange_by_key();
    let contexts = combination_contexts(combos, sides, touched);
    PriorityOutputs {
        captured: capture_outputs(contexts, facts, capture, sharding),
    }
}

/// What the `resolve` reduce groups per context key: each combination's
/// reference to its four keys, each job category's to its partition, and
/// the facts that define a key.
fn key_values<'s>(
    facts: &VecCollection<'s, Epoch, Fact, isize>,
    combos: &VecCollection<'s, Epoch, Combo, isize>,
    partition_refs: VecCollection<'s, Epoch, (NameId, u8), isize>,
) -> VecCollection<'s, Epoch, (Key, Val), isize> {
    let refs = combos
        .clone()
        .flat_map(|combo: Combo| {
            [
                (Key::Assoc(combo.assoc), Val::Named),
                (Key::Account(combo.account), Val::Named),
                (Key::Qos(combo.qos), Val::Named),
                (Key::Partition(combo.partition), Val::Named),
            ]
        })
        .concat(partition_refs.map(|(partition, cat)| (Key::Partition(partition), Val::Ref(cat))));
    let defs = facts.clone().flat_map(|fact: Fact| match fact {
        Fact::AssocPriority {
            of: AssocRef::User(assoc),
            priority,
        } => Some((Key::Assoc(assoc), Val::AssocPriority(priority))),
        Fact::AccountPriority { account, priority } => {
            Some((Key::Account(account), Val::AccountPriority(priority)))
        }
        Fact::Qos { name, priority } => Some((Key::Qos(name), Val::QosPriority(priority))),
        Fact::Partition { name, rec } => {
            Some((Key::Partition(name), Val::Partition(Box::new(rec))))
        }
        _ => None,
    });
    defs.concat(refs)
}

/// What the `globals` reduce groups on the unit key: the configuration,
/// the cluster, every association and QOS priority and partition factor,
/// and the job categories naming an undefined partition (from `resolved`).
fn global_values<'s>(
    facts: &VecCollection<'s, Epoch, Fact, isize>,
    resolved: &VecCollection<'s, Epoch, (Key, Side), isize>,
) -> VecCollection<'s, Epoch, (Key, Val), isize> {
    facts
        .clone()
        .flat_map(|fact: Fact| match fact {
            Fact::Config(p) => Some((Key::Unit, Val::Config(p))),
            Fact::Cluster { nodes, tres } => Some((Key::Unit, Val::Cluster(nodes, tres))),
            Fact::AssocPriority { priority, .. } => Some((Key::Unit, Val::AssocPriority(priority))),
            Fact::Qos { priority, .. } => Some((Key::Unit, Val::QosPriority(priority))),
            Fact::Partition { rec, .. } => Some((Key::Unit, Val::PartFactor(rec.job_factor))),
            _ => None,
        })
        .concat(
            resolved
                .clone()
                .flat_map(|(_, side): (Key, Side)| match side {
                    Side::UndefinedPartRef(cat) => Some((Key::Unit, Val::UndefinedPartRef(cat))),
                    _ => None,
                }),
        )
}

/// The context joins over the distinct combinations of keys that active
/// jobs name: association, account, QOS, partition, globals; one context
/// per combination, met by its jobs' rows in each shard's reader
/// (`PriorityReader::join_rows`), not in an arrangement of rows.
fn combination_contexts<'s>(
    combos: VecCollection<'s, Epoch, Combo, isize>,
    sides: Arranged<'s, TraceAgent<ValSpine<Key, Side, Epoch, isize>>>,
    touched: &TouchCounter,
) -> VecCollection<'s, Epoch, (Combo, Arc<JobContext>), isize> {
    let stage = combos.map(|combo: Combo| {
        (
            Key::Assoc(combo.assoc),
            ComboCtx {
                combo,
                ctx: KeyCtx::default(),
            },
        )
    });
    // Each stage copies one key's context into the combination, then re-keys it for the next.
    let stage = enrich(stage, &sides, touched, |cc, kc| {
        cc.ctx.assoc_priority = kc.assoc_priority;
        Key::Account(cc.combo.account)
    });
    let stage = enrich(stage, &sides, touched, |cc, kc| {
        cc.ctx.account_priority = kc.account_priority;
        Key::Qos(cc.combo.qos)
    });
    let stage = enrich(stage, &sides, touched, |cc, kc| {
        cc.ctx.qos_priority = kc.qos_priority;
        Key::Partition(cc.combo.partition)
    });
    let stage = enrich(stage, &sides, touched, |cc, kc| {
        cc.ctx.partition = kc.partition.clone();
        Key::Unit
    });
    counted(
        stage
            .arrange_by_key()
            .join_core(sides, |_key, cc: &ComboCtx, side: &Side| {
                let Side::Globals(g) = side else { return None };
                Some((
                    cc.combo,
                    Arc::new(JobContext {
                        ctx: cc.ctx.clone(),
                        globals: g.clone(),
                    }),
                ))
            }),
        touched,
    )
}

/// Capture the contexts and the facts into `capture` as `sharding` says;
/// the streams to probe.
fn capture_outputs<'s>(
    contexts: VecCollection<'s, Epoch, (Combo, Arc<JobContext>), isize>,
    facts: VecCollection<'s, Epoch, Fact, isize>,
    capture: &Capture,
    sharding: Sharding,
) -> Vec<StreamVec<'s, Epoch, ()>> {
    let contexts_sink = capture.clone();
    let contexts_sink = move |data: &mut Vec<ContextUpdate>| {
        let mut captured = contexts_sink.borrow_mut();
        captured.note_pending(data.iter().map(|(_, time, _)| *time));
        captured.contexts.append(data);
    };
    let facts_sink = capture.clone();
    let facts_sink =
        move |data: &mut Vec<(Fact, Epoch, isize)>| facts_sink.borrow_mut().facts.append(data);
    match sharding {
        Sharding::ByShardKey => vec![
            capture_on_every_worker(contexts.inner, "CaptureContexts", contexts_sink),
            capture_on_every_worker(facts.inner, "CaptureFacts", facts_sink),
        ],
        #[cfg(test)]
        Sharding::OnWorkerZero => vec![
            capture_on_worker_0(contexts.inner, "CaptureContexts", contexts_sink),
            capture_on_worker_0(facts.inner, "CaptureFacts", facts_sink),
        ],
    }
}
