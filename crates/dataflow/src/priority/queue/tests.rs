//! Tests of the ranked pending queue: its order after fair-share changes,
//! Fair Tree placements and slot moves, the search, the pending-time bound,
//! slot updates consolidated, retractions, and switching factor kinds.

use std::sync::Arc;

use super::*;
use crate::priority::combo::{Globals, KeyCtx};
use crate::priority::inputs::{Phase, PriorityParams};
use crate::priority::record::build_record;
use crate::types::ROOT;

/// Fair-share weight 1,000 and no other weight: a job's sum is
/// `1000 · f(u) − nice` (site 0), every job in the capped class.
fn context() -> Arc<JobContext> {
    let params = PriorityParams {
        weight_fairshare: 1_000,
        weight_age: 0,
        weight_assoc: 0,
        weight_job_size: 0,
        weight_partition: 0,
        weight_qos: 0,
        ..PriorityParams::default()
    };
    Arc::new(JobContext {
        ctx: KeyCtx::default(),
        globals: Arc::new(Globals {
            params,
            max_assoc: 0,
            max_qos: 0,
            max_partition: 1,
            cluster_nodes: 1,
            cluster_tres: Vec::new(),
        }),
    })
}

pub(super) fn record(job: JobId, assoc: AssocId, nice: i64) -> PriorityRecord {
    let row = JobRow {
        job,
        assoc,
        phase: Phase::Pending,
        begun: true,
        nice,
        nodes_bits: 1f64.to_bits(),
        cpus_bits: 1f64.to_bits(),
        ..JobRow::default()
    };
    build_record(&row, &context())
}

pub(super) fn fairshare(assoc: AssocId, factor: f64) -> Fact {
    Fact::Fairshare {
        assoc,
        factor_bits: factor.to_bits(),
    }
}

/// The jobs in candidate order at time 0.
fn order(queue: &Queue) -> Vec<JobId> {
    let mut candidates = queue.candidates(0);
    std::iter::from_fn(|| candidates.next_candidate().map(|(r, _)| r.job())).collect()
}

#[test]
fn a_fairshare_change_reorders_users_without_touching_a_record() {
    let touched = TouchCounter::new();
    let mut queue = Queue::new();
    let mut captured = Captured {
        records: vec![
            ((1, record(1, 1, 0)), 1, 1),
            ((2, record(2, 2, 0)), 1, 1),
            ((3, record(3, 2, 10)), 1, 1),
        ],
        facts: vec![(fairshare(1, 0.25), 1, 1), (fairshare(2, 0.75), 1, 1)],
        ..Captured::default()
    };
    queue.absorb(&mut captured, &touched);
    // 750 (job 2), 740 (job 3: nice 10), 250 (job 1).
    assert_eq!(order(&queue), vec![2, 3, 1]);
    assert_eq!(touched.take(), 3 + 2, "three job entries, two user entries");

    // User 1's factor 0.25 -> 1.0: 1000 beats 750; only its entry moves.
    let mut captured = Captured {
        records: Vec::new(),
        facts: vec![(fairshare(1, 0.25), 2, -1), (fairshare(1, 1.0), 2, 1)],
        ..Captured::default()
    };
    queue.absorb(&mut captured, &touched);
    assert_eq!(order(&queue), vec![1, 2, 3]);
    assert_eq!(touched.take(), 1, "user 1's one entry");
    assert_eq!(queue.fairshare_of(1), 1.0);
}

/// A slot of the sorted tree: labelled `label` in `group`; `tie`: its
/// `LevelFS` equals the previous member's (a user's run then starts at
/// the user labelled `run`).
fn slot(
    group: NodeId,
    label: u64,
    weight: u64,
    assoc: Option<AssocId>,
    tie: bool,
    run: u64,
) -> TreeSlot {
    use super::super::fair_tree::SlotPlacement;
    TreeSlot {
        group,
        weight,
        placement: SlotPlacement {
            label,
            local_tie: tie,
            run_label: run,
            user: assoc.is_some(),
            parent_account: false,
        },
        assoc,
    }
}

fn tree_fact(node: NodeId, slot: TreeSlot) -> Fact {
    Fact::TreeSlot { node, slot }
}

/// A random tree's next updates, as the facts of time `at`.
fn tree_round(
    random: &mut crate::tests::random_tree::RandomTree,
    at: Epoch,
) -> Vec<(Fact, Epoch, isize)> {
    (random.updates().into_iter())
        .map(|(node, slot, diff)| (tree_fact(node, slot), at, diff))
        .collect()
}

/// Fair Tree kept as placements: root -> A (node 1: users u1, u2) and B
/// (node 2: user u3); N = 3. Ranks by hand from Slurm's walk: in order
/// A, B the positions are u1 0, u2 1, u3 2, ranks 3, 2, 1, factors 1,
/// 2/3, 1/3; priorities (weight 1,000, minus nice) 1000 (job 1, u1),
/// 666 (job 2, u2), 333 + 500 = 833 (job 3, u3, nice -500).
#[test]
fn fair_tree_ranks_come_from_placements_and_a_reorder_touches_no_user() {
    let touched = TouchCounter::new();
    let mut queue = Queue::new();
    let (a, b, u1, u2, u3) = (1, 2, 3, 4, 5);
    let mut captured = Captured {
        records: vec![
            ((1, record(1, 1, 0)), 1, 1),
            ((2, record(2, 2, 0)), 1, 1),
            ((3, record(3, 3, -500)), 1, 1),
        ],
        facts: vec![
            (tree_fact(a, slot(ROOT, 10, 2, None, false, 10)), 1, 1),
            (tree_fact(b, slot(ROOT, 20, 1, None, false, 20)), 1, 1),
            (tree_fact(u1, slot(a, 10, 1, Some(1), false, 10)), 1, 1),
            (tree_fact(u2, slot(a, 20, 1, Some(2), false, 20)), 1, 1),
            (tree_fact(u3, slot(b, 10, 1, Some(3), false, 10)), 1, 1),
        ],
        ..Captured::default()
    };
    queue.absorb(&mut captured, &touched);
    assert_eq!(queue.fairshare_of(1), 1.0);
    assert_eq!(queue.fairshare_of(2), 2.0 / 3.0);
    assert_eq!(queue.fairshare_of(3), 1.0 / 3.0);
    assert_eq!(order(&queue), vec![1, 3, 2]);
    let all = queue.fairshare_factors();
    assert_eq!(all.get(&2), Some(&(2.0 / 3.0)));
    touched.take();

    // B moves before A (a label below A's): u3 at 0 (1.0), u1 at 1
    // (2/3), u2 at 2 (1/3): 1500 (job 3), 666 (job 1), 333 (job 2).
    // Only B's slot changes: A keeps its label.
    let mut captured = Captured {
        records: Vec::new(),
        facts: vec![
            (tree_fact(b, slot(ROOT, 20, 1, None, false, 20)), 2, -1),
            (tree_fact(b, slot(ROOT, 5, 1, None, false, 5)), 2, 1),
        ],
        ..Captured::default()
    };
    queue.absorb(&mut captured, &touched);
    assert_eq!(touched.take(), 1, "one slot, no user entry");
    assert_eq!(order(&queue), vec![3, 1, 2]);
    assert_eq!(queue.fairshare_of(3), 1.0);
    assert_eq!(queue.fairshare_of(1), 2.0 / 3.0);
    assert_eq!(queue.fairshare_of(2), 1.0 / 3.0);

    // u2 ties with u1 (its run starts at u1): it takes u1's rank 2.
    let mut captured = Captured {
        records: Vec::new(),
        facts: vec![
            (tree_fact(u2, slot(a, 20, 1, Some(2), false, 20)), 3, -1),
            (tree_fact(u2, slot(a, 20, 1, Some(2), true, 10)), 3, 1),
        ],
        ..Captured::default()
    };
    queue.absorb(&mut captured, &touched);
    assert_eq!(queue.fairshare_of(2), 2.0 / 3.0);
    assert_eq!(queue.fairshare_factors().get(&2), Some(&(2.0 / 3.0)));
    // Job 3 (1500) first, then jobs 1 and 2 (666 each, equal bounds).
    let got = order(&queue);
    assert_eq!(got[0], 3);
    assert_eq!(
        got[1..].iter().copied().collect::<BTreeSet<_>>(),
        BTreeSet::from([1, 2])
    );
}

/// One account under root (node 1) with 1,000 users (nodes 2 to 1,001,
/// associations 1 to 1,000, labelled in that order, no ties), one job
/// each with the same key: by Slurm's walk user `i` (0-based) has rank
/// `1000 − i`, so with weight 1,000 job `i + 1` has priority `1000 −
/// i`. Every member's best key is the same, so the group's order by key
/// says nothing; entering members by place too, the first ten jobs come
/// out after a few dozen entries, not after every member.
#[test]
fn a_wide_group_with_equal_keys_is_read_by_place() {
    let touched = TouchCounter::new();
    let mut queue = Queue::new();
    let users: u32 = 1_000;
    let account = 1;
    let mut facts = vec![(
        tree_fact(account, slot(ROOT, 10, u64::from(users), None, false, 10)),
        1,
        1,
    )];
    let mut records = Vec::new();
    for i in 0..users {
        let (node, assoc, label) = (2 + i, 1 + i, 10 * u64::from(1 + i));
        facts.push((
            tree_fact(node, slot(account, label, 1, Some(assoc), false, label)),
            1,
            1,
        ));
        records.push(((assoc, record(assoc, assoc, 0)), 1, 1));
    }
    let mut captured = Captured {
        records,
        facts,
        ..Captured::default()
    };
    queue.absorb(&mut captured, &touched);
    let mut candidates = queue.candidates(0);
    let first_ten: Vec<(JobId, f64)> = (0..10)
        .map(|_| {
            let (record, factor) = candidates.next_candidate().expect("a candidate");
            (record.job(), factor)
        })
        .collect();
    let expected: Vec<(JobId, f64)> = (0..10)
        .map(|i| (1 + i, f64::from(users - i) / f64::from(users)))
        .collect();
    assert_eq!(first_ten, expected);
    assert!(
        candidates.pushed < 100,
        "{} heap entries for ten jobs of a group of 1,000",
        candidates.pushed
    );
}

/// The search's contract on random sorted trees as they change (moves,
/// ties that come and go, wide and deep groups, accounts with no user):
/// every ranked job comes out once, with its user's exact factor (the
/// walk up from the user, [`FairTree::factor_of_node`], not the
/// search's own tightening), in non-increasing order of its bound.
#[test]
fn the_search_yields_every_job_once_in_bound_order_with_exact_factors() {
    use crate::tests::random_tree::{xorshift, RandomTree};
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    for _tree in 0..60 {
        let touched = TouchCounter::new();
        let mut random = RandomTree::new(&mut seed, 60);
        let mut queue = Queue::new();
        // Each user node `n` is association `n`, with 0 to 3 jobs whose
        // nice spreads their keys over less than the factors do.
        let mut records = Vec::new();
        let mut job: JobId = 0;
        for node in 0..random.users.len() {
            if !random.users[node] {
                continue;
            }
            for _ in 0..xorshift(&mut seed, 4) {
                job += 1;
                let nice = xorshift(&mut seed, 200) as i64 - 100;
                records.push(((job, record(job, node as AssocId, nice)), 1, 1));
            }
        }
        let jobs = records.len();
        for round in 0..20 {
            let mut captured = Captured {
                records: std::mem::take(&mut records),
                facts: tree_round(&mut random, 1 + round),
                ..Captured::default()
            };
            queue.absorb(&mut captured, &touched);
            let mut candidates = queue.candidates(0);
            let mut seen = BTreeSet::new();
            let mut last = f64::INFINITY;
            while let Some((record, factor)) = candidates.next_candidate() {
                assert!(seen.insert(record.job()), "job {} twice", record.job());
                let node = queue.tree.node_of(record.row.assoc).expect("a placed user");
                assert_eq!(Some(factor), queue.tree.factor_of_node(node));
                let bound = record.upper_bound(0, factor);
                assert!(bound <= last, "bound {bound} after {last}");
                last = bound;
            }
            assert_eq!(seen.len(), jobs);
            random.move_some(&mut seed);
        }
    }
}

/// Every user's factor at once (`FairTree::all_factors`: the root's
/// members in two halves walked side by side, the second half's references
/// to the first resolved after) equals each user's own walk up the tree
/// ([`FairTree::factor_of_node`]), on random sorted trees as they change
/// (ties that come and go across the halves, accounts with no user).
#[test]
fn every_factor_at_once_equals_each_users_own_walk() {
    use crate::tests::random_tree::RandomTree;
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut split_references = 0;
    for _tree in 0..60 {
        let touched = TouchCounter::new();
        let mut random = RandomTree::new(&mut seed, 60);
        let mut queue = Queue::new();
        for round in 0..20 {
            let mut captured = Captured {
                facts: tree_round(&mut random, 1 + round),
                ..Captured::default()
            };
            queue.absorb(&mut captured, &touched);
            let all = queue.tree.all_factors();
            let placed = (0..random.users.len() as AssocId)
                .filter(|&assoc| queue.tree.node_of(assoc).is_some())
                .count();
            assert_eq!(all.len(), placed, "one factor per placed user");
            for (assoc, factor) in all {
                let node = queue.tree.node_of(assoc).expect("a placed user");
                assert_eq!(
                    Some(factor),
                    queue.tree.factor_of_node(node),
                    "user {assoc}"
                );
            }
            split_references += queue.tree.references_across_halves();
            random.move_some(&mut seed);
        }
    }
    assert!(split_references > 0, "no reference crossed the halves");
}

/// The users a reorder can move (`FairTree::users_a_reorder_moves`, what
/// the live what-if reads on each side of a share change) hold every user
/// whose factor the reorder changes: on random sorted trees whose members
/// change level (ties come and go, accounts with no user), every factor
/// compared before and after each round. Tied users after a span must be
/// among them (a round whose changed users are all inside the spans does
/// not exercise that: some rounds must need them), and some spans must
/// leave users of their group's block out (else the narrowing to the
/// members between the moved ones' labels is not exercised).
#[test]
fn a_reorder_moves_no_user_outside_its_spans_and_their_tied_followers() {
    use crate::priority::fair_tree::reordered_groups;
    use crate::tests::random_tree::RandomTree;
    use std::collections::BTreeSet;
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let (mut rounds, mut followed, mut narrowed) = (0, 0, 0);
    for _tree in 0..80 {
        let touched = TouchCounter::new();
        let mut random = RandomTree::new(&mut seed, 60);
        let mut queue = Queue::new();
        let mut captured = Captured {
            facts: tree_round(&mut random, 1),
            ..Captured::default()
        };
        queue.absorb(&mut captured, &touched);
        for round in 0..20 {
            random.move_some(&mut seed);
            let updates = random.updates();
            let Some(spans) = reordered_groups(updates.clone()) else {
                panic!("a level change moved a member out of its group");
            };
            let moves = |queue: &Queue| {
                (queue.tree.users_a_reorder_moves(&spans, usize::MAX))
                    .expect("placed groups")
                    .into_iter()
                    .collect::<BTreeSet<NodeId>>()
            };
            let listed = moves(&queue);
            let before: BTreeMap<AssocId, f64> = queue.tree.all_factors().into_iter().collect();
            let mut inside: Vec<NodeId> = Vec::new();
            for span in &spans {
                queue.tree.users_below(span.group, &mut inside, usize::MAX);
            }
            let mut captured = Captured {
                facts: (updates.into_iter())
                    .map(|(node, slot, diff)| (tree_fact(node, slot), 2 + round, diff))
                    .collect(),
                ..Captured::default()
            };
            queue.absorb(&mut captured, &touched);
            assert_eq!(moves(&queue), listed, "the same users on both sides");
            for (assoc, factor) in queue.tree.all_factors() {
                if before.get(&assoc).map(|f| f.to_bits()) == Some(factor.to_bits()) {
                    continue;
                }
                let node = queue.tree.node_of(assoc).expect("a placed user");
                assert!(listed.contains(&node), "user {assoc} moved, not listed");
                followed += usize::from(!inside.contains(&node));
            }
            narrowed += usize::from(inside.iter().any(|user| !listed.contains(user)));
            rounds += 1;
        }
    }
    assert!(rounds > 0);
    assert!(followed > 0, "no tied follower after a span changed");
    assert!(narrowed > 0, "no span narrower than its group's block");
}

/// Three users of root's group, u1, u2, u3 labelled 10, 20, 30
/// (positions 0, 1, 2; ranks 3, 2, 1 by Slurm's walk: factors 1, 2/3,
/// 1/3). u1 moves to the end (label 40) across the two others, which
/// keep their labels and move up one place each: u2 at 0 (1), u3 at 1
/// (2/3), u1 at 2 (1/3); with weight 1,000 the jobs rank 2 (1000), 3
/// (666), 1 (333). Then a user labelled 25 joins between u2 and u3
/// (N = 4: u2 1, the new one 3/4, u3 1/2, u1 1/4) and u2 leaves (N = 3:
/// the new one 1, u3 2/3, u1 1/3), neither touching another slot.
#[test]
fn a_slot_moved_across_others_is_moved_in_place() {
    let touched = TouchCounter::new();
    let mut queue = Queue::new();
    let (u1, u2, u3, u4) = (1, 2, 3, 4);
    let mut captured = Captured {
        records: vec![
            ((1, record(1, 1, 0)), 1, 1),
            ((2, record(2, 2, 0)), 1, 1),
            ((3, record(3, 3, 0)), 1, 1),
        ],
        facts: vec![
            (tree_fact(u3, slot(ROOT, 30, 1, Some(3), false, 30)), 1, 1),
            (tree_fact(u1, slot(ROOT, 10, 1, Some(1), false, 10)), 1, 1),
            (tree_fact(u2, slot(ROOT, 20, 1, Some(2), false, 20)), 1, 1),
        ],
        ..Captured::default()
    };
    queue.absorb(&mut captured, &touched);
    assert_eq!(order(&queue), vec![1, 2, 3]);
    assert_eq!(queue.fairshare_of(2), 2.0 / 3.0);
    touched.take();

    let mut captured = Captured {
        records: Vec::new(),
        facts: vec![
            (tree_fact(u1, slot(ROOT, 40, 1, Some(1), false, 40)), 2, 1),
            (tree_fact(u1, slot(ROOT, 10, 1, Some(1), false, 10)), 2, -1),
        ],
        ..Captured::default()
    };
    queue.absorb(&mut captured, &touched);
    assert_eq!(touched.take(), 1, "one slot, no user entry");
    assert_eq!(queue.fairshare_of(2), 1.0);
    assert_eq!(queue.fairshare_of(3), 2.0 / 3.0);
    assert_eq!(queue.fairshare_of(1), 1.0 / 3.0);
    assert_eq!(order(&queue), vec![2, 3, 1]);
    let all = queue.fairshare_factors();
    assert_eq!(all.get(&1), Some(&(1.0 / 3.0)));

    let mut captured = Captured {
        records: vec![((4, record(4, 4, 0)), 3, 1)],
        facts: vec![(tree_fact(u4, slot(ROOT, 25, 1, Some(4), false, 25)), 3, 1)],
        ..Captured::default()
    };
    queue.absorb(&mut captured, &touched);
    assert_eq!(queue.fairshare_of(2), 1.0);
    assert_eq!(queue.fairshare_of(4), 0.75);
    assert_eq!(queue.fairshare_of(3), 0.5);
    assert_eq!(queue.fairshare_of(1), 0.25);
    assert_eq!(order(&queue), vec![2, 4, 3, 1]);
    let mut captured = Captured {
        records: Vec::new(),
        facts: vec![(tree_fact(u2, slot(ROOT, 20, 1, Some(2), false, 20)), 4, -1)],
        ..Captured::default()
    };
    queue.absorb(&mut captured, &touched);
    assert_eq!(queue.fairshare_of(4), 1.0);
    assert_eq!(queue.fairshare_of(3), 2.0 / 3.0);
    assert_eq!(queue.fairshare_of(1), 1.0 / 3.0);
}

#[test]
fn the_pending_time_bound_is_never_above_a_captured_update() {
    let row = |job| JobRow {
        job,
        ..JobRow::default()
    };
    let mut captured = Captured::default();
    // Appended to an empty capture: the earliest time appended.
    captured.note_pending([7, 5].into_iter());
    captured.rows.extend([(row(1), 7, 1), (row(2), 5, 1)]);
    assert_eq!(captured.pending_from, Some(5));
    // A later append lowers it, never raises it.
    captured.note_pending([9].into_iter());
    captured.rows.push((row(3), 9, 1));
    assert_eq!(captured.pending_from, Some(5));
    captured.note_pending([4].into_iter());
    captured.rows.push((row(4), 4, 1));
    assert_eq!(captured.pending_from, Some(4));
    // An empty append changes nothing.
    captured.note_pending(std::iter::empty());
    assert_eq!(captured.pending_from, Some(4));
    // Not known stays not known while anything is pending...
    captured.pending_from = None;
    captured.note_pending([8].into_iter());
    captured.rows.push((row(5), 8, 1));
    assert_eq!(captured.pending_from, None);
    // ...and a stale bound left after the capture was emptied is replaced.
    captured.rows.clear();
    captured.pending_from = Some(1);
    captured.note_pending([6].into_iter());
    assert_eq!(captured.pending_from, Some(6));
}

#[test]
fn slot_updates_are_consolidated_by_node_then_slot() {
    // `early` sorts before `late` (label 0 before 1). Node 2: `early`
    // retracted and inserted again (net nothing), `late` inserted;
    // node 5: `early` retracted, `late` inserted twice; node 9: `early`.
    let early = slot(ROOT, 0, 1, Some(1), false, 0);
    let late = slot(ROOT, 1, 1, Some(1), false, 1);
    let updates = vec![
        (5, late, 1),
        (2, early, -1),
        (5, early, -1),
        (9, early, 1),
        (2, late, 1),
        (2, early, 1),
        (5, late, 1),
    ];
    assert_eq!(
        consolidate_slots(updates),
        vec![(2, late, 1), (5, early, -1), (5, late, 2), (9, early, 1)]
    );
    assert_eq!(consolidate_slots(Vec::new()), Vec::new());
}

#[test]
fn a_successor_before_its_predecessors_retraction_leaves_one_record() {
    let touched = TouchCounter::new();
    let mut queue = Queue::new();
    let mut captured = Captured {
        records: vec![((7, record(7, 1, 0)), 1, 1)],
        facts: vec![(fairshare(1, 0.5), 1, 1)],
        ..Captured::default()
    };
    queue.absorb(&mut captured, &touched);
    // The new record first, then the old one's retraction, in one batch.
    let mut captured = Captured {
        records: vec![((7, record(7, 1, 5)), 2, 1), ((7, record(7, 1, 0)), 2, -1)],
        facts: Vec::new(),
        ..Captured::default()
    };
    queue.absorb(&mut captured, &touched);
    assert_eq!(queue.records().count(), 1);
    assert_eq!(queue.record(7).map(|r| r.row.nice), Some(5));
    assert_eq!(order(&queue), vec![7]);
    // Equal updates that cancel change nothing.
    let mut captured = Captured {
        records: vec![((7, record(7, 1, 9)), 3, 1), ((7, record(7, 1, 9)), 3, -1)],
        facts: Vec::new(),
        ..Captured::default()
    };
    queue.absorb(&mut captured, &touched);
    assert_eq!(queue.record(7).map(|r| r.row.nice), Some(5));
}

/// A classic association's inputs fact (dampening 1).
fn classic_node(
    node: NodeId,
    fs_parent: Option<NodeId>,
    child_level: u64,
    user: Option<AssocId>,
) -> Fact {
    Fact::ClassicNode {
        node,
        inputs: Box::new(crate::priority::classic::ClassicNode {
            fs_parent,
            shares: fairflow_model::Shares::Value(1),
            usage: 0,
            child_level,
            child_usage: 0,
            user,
            dampening_factor: 1,
            depth_oblivious: false,
        }),
    }
}

#[test]
fn switching_between_classic_and_sent_factors_in_one_batch_keeps_the_new_ones() {
    // Classic: root with users 1 and 2 (one share each, level shares 2),
    // no usage: S = 1/2, UE = UN = 0, F = 2^0 = 1 for both.
    let classic = [
        classic_node(0, None, 2, None),
        classic_node(1, Some(0), 0, Some(1)),
        classic_node(2, Some(0), 0, Some(2)),
    ];
    let touched = TouchCounter::new();
    let mut queue = Queue::new();
    let mut captured = Captured {
        records: vec![((1, record(1, 1, 0)), 1, 1), ((2, record(2, 2, 0)), 1, 1)],
        facts: classic.iter().map(|fact| (fact.clone(), 1, 1)).collect(),
        ..Captured::default()
    };
    queue.absorb(&mut captured, &touched);
    assert_eq!(queue.fairshare_of(1), 1.0);
    assert_eq!(queue.fairshare_of(2), 1.0);
    // Another algorithm in one batch: user 1's sent factor equals its
    // classic one (1.0) and must stay; user 2's is 0.5.
    let mut captured = Captured {
        records: Vec::new(),
        facts: classic
            .iter()
            .map(|fact| (fact.clone(), 2, -1))
            .chain([(fairshare(1, 1.0), 2, 1), (fairshare(2, 0.5), 2, 1)])
            .collect(),
        ..Captured::default()
    };
    queue.absorb(&mut captured, &touched);
    assert_eq!(queue.fairshare_of(1), 1.0);
    assert_eq!(queue.fairshare_of(2), 0.5);
    assert_eq!(order(&queue), vec![1, 2]);
    // And back to classic: both 1.0 again.
    let mut captured = Captured {
        records: Vec::new(),
        facts: classic
            .iter()
            .map(|fact| (fact.clone(), 3, 1))
            .chain([(fairshare(1, 1.0), 3, -1), (fairshare(2, 0.5), 3, -1)])
            .collect(),
        ..Captured::default()
    };
    queue.absorb(&mut captured, &touched);
    assert_eq!(queue.fairshare_of(1), 1.0);
    assert_eq!(queue.fairshare_of(2), 1.0);
    assert!(
        queue.facts().is_empty(),
        "classic inputs are not read-time facts"
    );
}
