//! Every fair-share algorithm as a plain batch computation over [`Tree`]:
//! the sshare table and each user association's factor, which job priority
//! uses. One module per algorithm.

use std::collections::BTreeMap;

use fairflow_model::report::FairshareTable;
use fairflow_model::Algorithm;

use crate::tree::Tree;
use crate::State;

/// The fair-share table under the configured algorithm, as of `state.now`.
pub fn table(state: &State) -> FairshareTable {
    let tree = Tree::build(state);
    let rows = match state.config.algorithm() {
        _ => Vec::new(),
    };
    FairshareTable {
        algorithm: state.config.algorithm(),
        as_of: state.now,
        rows,
    }
}

/// Each user association's fair-share factor, `(account, user) -> factor`, as
/// the priority models use it.
pub fn user_factors(state: &State) -> BTreeMap<(String, String), f64> {
    let _ = (state, Algorithm::FairTree, Tree::build);
    BTreeMap::new()
}
