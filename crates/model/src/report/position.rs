//! A job's place in line (`fairflow position`, `GET /v1/jobs/{id}/position`):
//! its rank in the whole ranked queue and in each of its partitions, how many
//! jobs of each account are ahead of it, and what it would take to pass the
//! job just ahead. Built from the queue up to and including the job, which
//! each engine reads its own way; everything here is arithmetic on that.

use std::collections::BTreeMap;

use super::JobPriority;

/// The job's rank in one of its partitions (among the jobs that can run
/// there, each by its priority there, as `top -p` ranks them).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PartitionPlace {
    /// The partition (Flux: queue).
    pub partition: String,
    /// Its rank there, from 1.
    pub rank: u64,
    /// Its priority there.
    pub priority: u64,
}

/// Another entry of a job in the scheduler's queue (a job in several
/// partitions or with several QOS has one per pair).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct EntryPlace {
    /// The entry's partition.
    pub partition: String,
    /// The entry's QOS (`""` when none).
    pub qos: String,
    /// Its rank in the whole queue, from 1.
    pub rank: u64,
    /// Its priority (the pair's, as the queue ranks it).
    pub priority: u64,
}

/// One factor of the gap to the job ahead.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FactorGap {
    /// The factor's name (as `sprio` and `explain` name it).
    pub name: String,
    /// The job's normalised value.
    pub own: f64,
    /// The job ahead's normalised value.
    pub ahead: f64,
    /// The job ahead's weighted contribution minus the job's.
    pub weighted_gap: f64,
    /// The normalised value this factor alone would need for the job to
    /// reach the job ahead's priority plus one, the others unchanged
    /// (`own + points / weight`); `None` for a factor without weight.
    pub needed: Option<f64>,
}

/// What it would take to pass the job just ahead.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Gap {
    /// The job just ahead.
    pub job: String,
    /// Its account.
    pub account: String,
    /// Its user.
    pub user: String,
    /// Its priority.
    pub priority: u64,
    /// The priority points the job lacks to be ranked before it:
    /// `ahead − own + 1` (an equal priority loses on submit time, then id).
    pub points: u64,
    /// Per factor, in the job's factor order.
    pub factors: Vec<FactorGap>,
}

/// A job's place in line.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Position {
    /// The job's priority and factors.
    pub job: JobPriority,
    /// Its rank in the whole ranked queue, from 1 (its first entry's index
    /// in `top -k ALL` plus one); `job` is that entry (its pair's
    /// partition, QOS and priority).
    pub rank: u64,
    /// Its rank in each partition it was submitted to, in the order given.
    pub partitions: Vec<PartitionPlace>,
    /// How many entries of each account's jobs are ahead of it in the whole
    /// queue (one per job unless a job has several entries): every account
    /// with entries ahead, or the ones with the most when fewer are asked
    /// for ([`Position::keep_accounts`]).
    pub ahead_by_account: BTreeMap<String, u64>,
    /// How many accounts have entries ahead of it (listed or not).
    #[serde(default)]
    pub ahead_accounts: u64,
    /// What it would take to pass the job just ahead (`None` at rank 1).
    pub gap: Option<Gap>,
    /// The job's other entries in the queue, in queue order (a job in
    /// several partitions or with several QOS; empty otherwise).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub entries: Vec<EntryPlace>,
    /// The job's SLUID (Slurm 26.05), if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sluid: Option<crate::Sluid>,
}

impl Position {
    /// The place of the last job of `through` (the ranked queue, in queue
    /// order, cut after the job); its partition ranks are given. `None`
    /// when `through` is empty.
    pub fn from_queue(
        mut through: Vec<JobPriority>,
        partitions: Vec<PartitionPlace>,
    ) -> Option<Self> {
        let job = through.pop()?;
        let rank = through.len() as u64 + 1;
        let mut ahead_by_account: BTreeMap<String, u64> = BTreeMap::new();
        for ahead in &through {
            *ahead_by_account.entry(ahead.account.clone()).or_default() += 1;
        }
        let accounts = ahead_by_account.len() as u64;
        Some(Position::from_counts(
            job,
            rank,
            partitions,
            (ahead_by_account, accounts),
            through.last(),
        ))
    }

    /// Keep in `ahead_by_account` only the `shown` accounts with the most
    /// entries ahead ([`most_ahead`]; `ahead_accounts` still counts all).
    pub fn keep_accounts(&mut self, shown: usize) {
        if self.ahead_by_account.len() <= shown {
            return;
        }
        let all = std::mem::take(&mut self.ahead_by_account);
        let kept = most_ahead(all.into_iter().collect(), shown, |name: &String| name);
        self.ahead_by_account = kept.into_iter().collect();
    }

    /// The place of `job` from what was counted ahead of it, without the
    /// queue: its rank, its partition ranks, the entries of each account
    /// ahead, and the entry just ahead (`None` at rank 1).
    /// `ahead_accounts` counts every account with entries ahead, those
    /// `ahead_by_account` lists and any it leaves out.
    pub fn from_counts(
        job: JobPriority,
        rank: u64,
        partitions: Vec<PartitionPlace>,
        (ahead_by_account, ahead_accounts): (BTreeMap<String, u64>, u64),
        just_ahead: Option<&JobPriority>,
    ) -> Self {
        let gap = just_ahead.map(|ahead| gap_to(&job, ahead));
        Position {
            job,
            rank,
            partitions,
            ahead_by_account,
            ahead_accounts,
            gap,
            entries: Vec::new(),
            sluid: None,
        }
    }
}

/// How many accounts a place lists by default: those with the most entries
/// ahead of the job (`position --accounts`, `?accounts=`).
pub const ACCOUNTS_SHOWN: usize = 100;

/// How many accounts to list, as `--top-accounts` and `?top_accounts=` take
/// it: a number, or `all`.
pub fn parse_accounts_shown(text: &str) -> Result<usize, String> {
    if text.eq_ignore_ascii_case("all") {
        return Ok(usize::MAX);
    }
    text.parse::<usize>()
        .map_err(|_| format!("`{text}` is not a number of accounts (or `all`)"))
}

/// Of `counts` (each account with its entries ahead), the `shown` with the
/// most entries, an equal count going to the account whose name (`name`)
/// sorts first; in no order. Linear in the accounts (a selection, not a
/// sort), names compared only where counts tie.
pub fn most_ahead<T>(
    mut counts: Vec<(T, u64)>,
    shown: usize,
    name: impl Fn(&T) -> &str,
) -> Vec<(T, u64)> {
    if counts.len() <= shown {
        return counts;
    }
    if shown == 0 {
        counts.clear();
        return counts;
    }
    counts.select_nth_unstable_by(shown - 1, |a, b| {
        b.1.cmp(&a.1).then_with(|| name(&a.0).cmp(name(&b.0)))
    });
    counts.truncate(shown);
    counts
}

/// The gap from `job` to `ahead`, the job ranked just before it.
fn gap_to(job: &JobPriority, ahead: &JobPriority) -> Gap {
    let points = (ahead.priority + 1).saturating_sub(job.priority).max(1);
    let factors = job
        .factors
        .iter()
        .map(|own| {
            let theirs = ahead.factor(&own.name);
            let ahead_value = theirs.map_or(0.0, |f| f.normalized);
            let ahead_weighted = theirs.map_or(0.0, |f| f.weighted);
            FactorGap {
                name: own.name.to_string(),
                own: own.normalized,
                ahead: ahead_value,
                weighted_gap: ahead_weighted - own.weighted,
                needed: (own.weight > 0.0).then(|| own.normalized + points as f64 / own.weight),
            }
        })
        .collect();
    Gap {
        job: ahead.job.clone(),
        account: ahead.account.clone(),
        user: ahead.user.clone(),
        priority: ahead.priority,
        points,
        factors,
    }
}

/// The partitions a job was submitted to, in the order given (one for a job
/// with one (partition, QOS) pair; none when it names no partition).
pub fn partitions_of(job: &JobPriority) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for row in job.pair_rows() {
        if !row.partition.is_empty() && !out.contains(&row.partition) {
            out.push(row.partition);
        }
    }
    out
}

/// The job's rank in its partition when it has one entry: a partition's
/// queue is the whole queue's entries there, in the same order, so it is
/// counted in `through` (the queue cut after the job).
pub fn partition_places_single(through: &[JobPriority]) -> Vec<PartitionPlace> {
    let Some(job) = through.last() else {
        return Vec::new();
    };
    partitions_of(job)
        .into_iter()
        .map(|partition| PartitionPlace {
            rank: through.iter().filter(|p| p.partition == partition).count() as u64,
            priority: job.priority,
            partition,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::most_ahead;

    /// Five accounts ahead, two shown: the two with the most entries; of
    /// two with as many, the one whose name sorts first.
    #[test]
    fn most_ahead_keeps_the_accounts_with_the_most_entries_ties_by_name() {
        let counts = vec![("c", 4), ("a", 2), ("e", 9), ("b", 4), ("d", 1)];
        let mut kept = most_ahead(counts.clone(), 2, |name| name);
        kept.sort();
        assert_eq!(kept, vec![("b", 4), ("e", 9)]);
        let mut kept = most_ahead(counts.clone(), 3, |name| name);
        kept.sort();
        assert_eq!(kept, vec![("b", 4), ("c", 4), ("e", 9)]);
        assert!(most_ahead(counts.clone(), 0, |name| name).is_empty());
        assert_eq!(most_ahead(counts.clone(), 5, |name| name).len(), 5);
        assert_eq!(most_ahead(counts, usize::MAX, |name| name).len(), 5);
    }
}
