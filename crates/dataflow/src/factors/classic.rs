//! Classic and depth-oblivious fair-share in the dataflow: each gated
//! association's classic inputs as one `ClassicNode` priority fact (a
//! user's with its interned name), which the queue evaluates
//! (`priority::classic`). A fact changes only when its association's
//! record does: a usage event changes the `depth + 1` facts on its path,
//! not a value per association and a factor per user.

use differential_dataflow::VecCollection;
use fairflow_model::Algorithm;

use super::{counted, FsParams, NodeRec};
use crate::priority::classic::ClassicNode;
use crate::priority::Fact;
use crate::types::{AssocId, Diff, Epoch, NodeId, TouchCounter};

/// The classic inputs of an association from its record and the
/// parameters (`user`: its interned name, for a user association).
fn inputs(record: &NodeRec, params: &FsParams, user: Option<AssocId>) -> ClassicNode {
    ClassicNode {
        fs_parent: record.fs_parent,
        shares: record.shares,
        usage: record.usage,
        child_level: record.child_level,
        child_usage: record.child_usage,
        user,
        dampening_factor: params.dampening_factor,
        depth_oblivious: params.algorithm == Algorithm::DepthOblivious,
    }
}

fn fact(node: NodeId, inputs: ClassicNode) -> Fact {
    Fact::ClassicNode {
        node,
        inputs: Box::new(inputs),
    }
}

/// Every classic-gated association's `ClassicNode` fact, from the gated
/// `(node, (record, params))` (a user's record carries its interned name).
pub(super) fn facts<'s>(
    classic: VecCollection<'s, Epoch, (NodeId, (NodeRec, FsParams)), Diff>,
    touched: &TouchCounter,
) -> VecCollection<'s, Epoch, Fact, Diff> {
    counted(
        classic.map(|(node, (record, params))| fact(node, inputs(&record, &params, record.assoc))),
        touched,
    )
}
