//! What the engines answer, independent of how they computed it: the rows of
//! the fair-share table. The serving layer renders these; the oracle and the
//! incremental engine must produce equal values.

pub mod compact;
pub mod entries;
pub mod first_entries;
pub mod position;
pub mod shared;
pub mod whatif;

pub use compact::CompactJobs;
pub use shared::SharedJobs;

/// A name in a result that many rows carry (an account, a user): kept in
/// place up to 24 bytes (`compact_str`), so a whole tree's rows allocate
/// and free no name of the usual length.
pub type Name = compact_str::CompactString;

use crate::config::Algorithm;
use crate::event::Shares;
use crate::Time;
use std::borrow::Cow;

/// One association's row, as `sshare -a -l` shows it. `None` is an empty cell.
#[derive(Debug, Clone, PartialEq)]
pub struct FairshareRow {
    /// The account (for a user association, the account it is in).
    pub account: String,
    /// The user, for a user association.
    pub user: Option<String>,
    /// Depth in the association tree: root is 0.
    pub depth: usize,
    /// `RawShares`; `None` for root.
    pub raw_shares: Option<Shares>,
    /// `NormShares`.
    pub norm_shares: Option<f64>,
    /// `RawUsage`: decayed billable TRES-seconds, truncated.
    pub raw_usage: u64,
    /// The same usage, not truncated (flux-accounting's `job_usage`, which
    /// `view-bank` prints).
    pub usage_tres_secs: f64,
    /// `NormUsage`.
    pub norm_usage: Option<f64>,
    /// `EffectvUsage`.
    pub effective_usage: Option<f64>,
    /// `FairShare`.
    pub fairshare: Option<f64>,
    /// `LevelFS` (Fair Tree).
    pub level_fs: Option<f64>,
    /// Tickets (ticket-based).
    pub tickets: Option<u64>,
    /// This level's value (level-based), shown in hex.
    pub level_value: Option<u64>,
    /// The association's `priority_fs_raw` (level-based), shown in hex.
    pub fairshare_raw: Option<u64>,
}

impl FairshareRow {
    /// An empty row for an association; the algorithm fills in the cells.
    pub fn new(account: &str, user: Option<&str>, depth: usize) -> Self {
        FairshareRow {
            account: account.to_string(),
            user: user.map(str::to_string),
            depth,
            raw_shares: None,
            norm_shares: None,
            raw_usage: 0,
            usage_tres_secs: 0.0,
            norm_usage: None,
            effective_usage: None,
            fairshare: None,
            level_fs: None,
            tickets: None,
            level_value: None,
            fairshare_raw: None,
        }
    }
}

/// The whole fair-share table, in tree order (`root` first; each account
/// followed by its user associations, then its child accounts, depth first;
/// siblings by name).
#[derive(Debug, Clone, PartialEq)]
pub struct FairshareTable {
    /// The algorithm that computed it.
    pub algorithm: Algorithm,
    /// The time it is as of.
    pub as_of: Time,
    /// The rows.
    pub rows: Vec<FairshareRow>,
}

/// One association's place, shares and usage: the columns of a
/// [`FairshareRow`] that do not depend on the algorithm (what `audit`
/// reads), in the table's tree order.
#[derive(Debug, Clone, PartialEq)]
pub struct UsageRow {
    /// The account (for a user association, the account it is in).
    pub account: Name,
    /// The user, for a user association.
    pub user: Option<Name>,
    /// Depth in the association tree: root is 0.
    pub depth: usize,
    /// `RawShares`; `None` for root.
    pub raw_shares: Option<Shares>,
    /// `RawUsage`: decayed billable TRES-seconds, truncated.
    pub raw_usage: u64,
}

impl FairshareTable {
    /// Every row's [`UsageRow`], in the table's order.
    pub fn usage_rows(&self) -> Vec<UsageRow> {
        self.rows.iter().cloned().map(UsageRow::from).collect()
    }
}

impl From<FairshareRow> for UsageRow {
    fn from(row: FairshareRow) -> Self {
        UsageRow {
            account: row.account.into(),
            user: row.user.map(Into::into),
            depth: row.depth,
            raw_shares: row.raw_shares,
            raw_usage: row.raw_usage,
        }
    }
}

/// Each user association with pending (ranked) jobs, `(account, user)`,
/// with how many (the fair-share history's counts).
pub type PendingJobsByUser = Vec<((String, String), u64)>;

/// A user association with pending (ranked) jobs, as `audit` lists the
/// users whose jobs wait longest.
#[derive(Debug, Clone, PartialEq)]
pub struct WaitingUser {
    /// The account.
    pub account: String,
    /// The user.
    pub user: String,
    /// Its fair-share factor.
    pub factor: f64,
    /// Its pending (ranked) jobs.
    pub pending_jobs: u64,
    /// How long its earliest-submitted pending job has waited, in seconds.
    pub longest_wait_secs: i64,
    /// That job (of those submitted in that second, the first by job id).
    pub oldest_job: String,
}

impl WaitingUser {
    /// `audit`'s order of waiting users: longest wait first, then the
    /// higher factor, then account and user.
    pub fn rank(users: &mut [WaitingUser]) {
        users.sort_by(|a, b| {
            b.longest_wait_secs
                .cmp(&a.longest_wait_secs)
                .then(b.factor.total_cmp(&a.factor))
                .then_with(|| (&a.account, &a.user).cmp(&(&b.account, &b.user)))
        });
    }
}

impl FairshareTable {
    /// The rows from `root` down to the user association `(account, user)`,
    /// in that order (what `explain` shows); empty when it is not there.
    pub fn path_to(&self, account: &str, user: &str) -> Vec<FairshareRow> {
        let rows = &self.rows;
        let Some(index) = rows
            .iter()
            .position(|r| r.account == account && r.user.as_deref() == Some(user))
        else {
            return Vec::new();
        };
        // In tree order, each ancestor is the nearest earlier account row one level up.
        let mut path = vec![rows[index].clone()];
        let mut depth = rows[index].depth;
        for row in rows[..index].iter().rev() {
            if depth == 0 {
                break;
            }
            if row.user.is_none() && row.depth + 1 == depth {
                path.push(row.clone());
                depth = row.depth;
            }
        }
        path.reverse();
        path
    }
}

/// One factor (Slurm, Flux) or one component or subcomponent (Moab) of a
/// job's priority, as `sprio` and `explain` show it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PriorityFactor {
    /// The factor's name: Slurm `site`, `age`, `assoc`, `fairshare`,
    /// `jobsize`, `partition`, `qos`, `nice`, and `tres/<name>` per TRES; Flux
    /// `fairshare`, `queue`, `bank`, `urgency`, `wait_time`, `qos`, `jobsize`,
    /// `user`; Moab the component (`CRED`, `FS`, `RES`, `SERV`, `TARGET`,
    /// `USAGE`, `ATTR`) or subcomponent (`QUEUETIME`, `XFACTOR`, ...) name.
    /// Borrowed when it is one of the model's fixed names (no allocation
    /// per job), owned otherwise (`tres/<name>`, read from JSON).
    pub name: Cow<'static, str>,
    /// For a Moab subcomponent, its component's name; `None` otherwise.
    pub component: Option<String>,
    /// The factor's value before weighting: Slurm and Flux normalise to 0..1
    /// (unless a `NO_NORMAL_*` flag, or for `site`, `nice`, `urgency` and the
    /// queue and bank priorities, which are raw); Moab's metrics are raw (queue
    /// time in minutes, node counts, ...) and a component's value is the capped
    /// sum of its weighted subcomponents.
    pub normalized: f64,
    /// The weight.
    pub weight: f64,
    /// The contribution to the priority: `weight * normalized`, capped for Moab.
    pub weighted: f64,
    /// Moab's `*CAP` (bounds both directions) when one is set.
    pub cap: Option<f64>,
}

impl PriorityFactor {
    /// A factor whose contribution is `weight * normalized`.
    pub fn new(name: impl Into<Cow<'static, str>>, normalized: f64, weight: f64) -> Self {
        PriorityFactor {
            name: name.into(),
            component: None,
            normalized,
            weight,
            weighted: weight * normalized,
            cap: None,
        }
    }
}

/// Where a job is, as far as its priority is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum JobState {
    /// Pending and eligible for the ranked queue.
    Pending,
    /// Held (Slurm `hold`, Flux urgency 0): priority 0, not ranked.
    Held,
    /// Running (listed only with `CALCULATE_RUNNING`, or under Moab).
    Running,
}

impl JobState {
    /// The name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            JobState::Pending => "pending",
            JobState::Held => "held",
            JobState::Running => "running",
        }
    }
}

/// One job's priority under the configured model, with every factor.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct JobPriority {
    /// The job id.
    pub job: String,
    /// The user.
    pub user: String,
    /// The account.
    pub account: String,
    /// The partition (queue, class); `""` when none.
    pub partition: String,
    /// The QOS; `""` when none.
    pub qos: String,
    /// When it was submitted.
    pub submit_at: Time,
    /// The integer priority: Slurm 0..=2^32-1 (1 at least unless held), Flux
    /// 0..=2^32-1, Moab 0..=10^9.
    pub priority: u64,
    /// Pending, held or running.
    pub state: JobState,
    /// The model that computed it.
    pub model: crate::config::PriorityModel,
    /// The factors, in the model's order (Moab: each component followed by
    /// its subcomponents).
    pub factors: Vec<PriorityFactor>,
    /// Slurm, a job submitted to several partitions or several QOS: one
    /// priority per (partition, QOS) pair, in Slurm's `priority_array`
    /// order (partitions as listed, each with its QOS by priority,
    /// highest first); empty for a job with one pair (its own priority is
    /// that pair's). `partition`, `qos`, `priority` and `factors` above are
    /// the job's own: its primary pair's, summed as Slurm sums a job's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pairs: Vec<PairPriority>,
    /// Slurm: the `PriorityTier` of `partition` (0 when undefined, and
    /// under the Flux and Moab models), which the scheduler's queue sorts
    /// by before the priority ([`entries`]).
    #[serde(default, skip_serializing_if = "is_zero_tier")]
    pub priority_tier: u16,
    /// Slurm 25.11: the job is marked for expedited requeue
    /// (`JOB_EXPEDITING`): its entries come before every other entry of the
    /// scheduler's queue ([`entries`]). Always `false` under Flux and Moab.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub expedited: bool,
}

fn is_zero_tier(tier: &u16) -> bool {
    *tier == 0
}

/// One (partition, QOS) pair's priority of a job submitted to several
/// partitions or several QOS (an entry of Slurm's `priority_array`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PairPriority {
    /// The pair's partition.
    pub partition: String,
    /// The pair's QOS (`""` when the job names none).
    pub qos: String,
    /// The pair's priority (0 while the job is held).
    pub priority: u64,
    /// The pair's factors, in the job's factor order: the partition, QOS and
    /// TRES factors are the pair's, the others the job's.
    pub factors: Vec<PriorityFactor>,
    /// The `PriorityTier` of the pair's partition (0 when undefined).
    #[serde(default, skip_serializing_if = "is_zero_tier")]
    pub priority_tier: u16,
}

impl JobPriority {
    /// Free what the job owns (its names, factors and pairs), leaving them
    /// empty: [`SharedJobs::free_in_pieces`].
    fn free_owned(&mut self) {
        for name in [
            &mut self.job,
            &mut self.user,
            &mut self.account,
            &mut self.partition,
            &mut self.qos,
        ] {
            drop(std::mem::take(name));
        }
        drop(std::mem::take(&mut self.factors));
        drop(std::mem::take(&mut self.pairs));
    }

    /// Is the job held (priority 0, never ranked)?
    pub fn held(&self) -> bool {
        self.state == JobState::Held
    }

    /// A factor by name (the first with that name).
    pub fn factor(&self, name: &str) -> Option<&PriorityFactor> {
        self.factors.iter().find(|f| f.name == name)
    }

    /// The job as one row per (partition, QOS) pair, in Slurm's order (as
    /// `sprio` lists them): each row is the job with the pair's partition,
    /// QOS, priority and factors and no pairs of its own. A job with one pair
    /// is its own single row.
    pub fn pair_rows(&self) -> Vec<JobPriority> {
        if self.pairs.is_empty() {
            return vec![self.clone()];
        }
        self.pairs
            .iter()
            .map(|pair| JobPriority {
                partition: pair.partition.clone(),
                qos: pair.qos.clone(),
                priority: pair.priority,
                factors: pair.factors.clone(),
                pairs: Vec::new(),
                priority_tier: pair.priority_tier,
                ..self.clone()
            })
            .collect()
    }

    /// The key of this job in the ranked queue: ascending key order is the
    /// order a scheduler visits jobs.
    pub fn queue_key(&self) -> QueueKey {
        QueueKey {
            priority: std::cmp::Reverse(self.priority),
            submit_at: self.submit_at,
            job: JobIdKey::new(&self.job),
        }
    }
}

/// The scheduler's queue of the partitions `partitions` (`top
/// --partition`): the entries ([`entries::entry_queue`]) of every pending
/// job in them, each at its pair there, in queue order.
pub fn partition_queue(priorities: &[JobPriority], partitions: &[String]) -> Vec<JobPriority> {
    let mut queue = entries::entry_queue(priorities);
    queue.retain(|entry| partitions.contains(&entry.partition));
    queue
}

/// Slurm's row selections (`-A ACCOUNTS`, `-u USERS`, `-j JOBS`,
/// `-p PARTITIONS`), the same for a command on a log and for the service's
/// query parameters: an empty list selects everything; every given list
/// must match.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// Job ids.
    pub jobs: Vec<String>,
    /// Users.
    pub users: Vec<String>,
    /// Accounts.
    pub accounts: Vec<String>,
    /// Partitions.
    pub partitions: Vec<String>,
}

fn wanted(selection: &[String], value: &str) -> bool {
    selection.is_empty() || selection.iter().any(|s| s == value)
}

impl Selection {
    /// Does it select everything?
    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
            && self.users.is_empty()
            && self.accounts.is_empty()
            && self.partitions.is_empty()
    }

    /// Keep the rows of the accounts (each account's own row and its user
    /// associations) and of the users (their user associations), as
    /// `sshare -A`/`-u` select them; root stays first when no account is
    /// given. Jobs and partitions do not apply.
    pub fn fairshare(&self, table: &mut FairshareTable) {
        let (accounts, users) = (&self.accounts, &self.users);
        if accounts.is_empty() && users.is_empty() {
            return;
        }
        table.rows.retain(|row| {
            let account_ok = wanted(accounts, &row.account);
            match &row.user {
                None => (account_ok && users.is_empty()) || (accounts.is_empty() && row.depth == 0),
                Some(user) => account_ok && wanted(users, user),
            }
        });
    }

    /// Keep the jobs every given list matches. `partitions` keeps, of a job
    /// submitted to several partitions or QOS, the (partition, QOS) pairs in
    /// those partitions (sprio's rows there).
    pub fn jobs(&self, jobs: &mut Vec<JobPriority>) {
        jobs.retain_mut(|j| {
            j.pairs
                .retain(|pair| wanted(&self.partitions, &pair.partition));
            let in_partitions = wanted(&self.partitions, &j.partition) || !j.pairs.is_empty();
            wanted(&self.jobs, &j.job)
                && wanted(&self.users, &j.user)
                && wanted(&self.accounts, &j.account)
                && in_partitions
        });
    }

    /// The selected queue (`top -A -u -p`) from `source`, the scheduler's
    /// queue (its entries, in order), whose order is kept: with
    /// partitions, the entries in those partitions.
    pub fn queue(&self, source: Vec<JobPriority>) -> Vec<JobPriority> {
        let mut queue = source;
        if !self.partitions.is_empty() {
            queue.retain(|entry| self.partitions.contains(&entry.partition));
        }
        let users_and_accounts = Selection {
            jobs: self.jobs.clone(),
            users: self.users.clone(),
            accounts: self.accounts.clone(),
            partitions: Vec::new(),
        };
        users_and_accounts.jobs(&mut queue);
        queue
    }
}

/// A job id as the queue orders ids: ids made only of ASCII digits compare as
/// numbers (of any length; `"9"` before `"10"`; leading zeros ignored, then
/// the text breaks the tie) and come before every other id, which compare as
/// strings.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum JobIdKey {
    /// A numeric id: `(digits without leading zeros, as written)`; comparing
    /// the length first, then the digits, is comparing the numbers.
    Numeric {
        /// The number of significant digits.
        digits: usize,
        /// The significant digits.
        significant: String,
        /// The id as written.
        text: String,
    },
    /// Any other id.
    Text(String),
}

impl JobIdKey {
    /// The key of an id.
    pub fn new(id: &str) -> Self {
        match significant_digits(id) {
            Some(significant) => JobIdKey::Numeric {
                digits: significant.len(),
                significant: significant.to_string(),
                text: id.to_string(),
            },
            None => JobIdKey::Text(id.to_string()),
        }
    }

    /// `JobIdKey::new(a).cmp(&JobIdKey::new(b))`, without building either
    /// key (no allocation).
    pub fn compare(a: &str, b: &str) -> std::cmp::Ordering {
        use std::cmp::Ordering;
        match (significant_digits(a), significant_digits(b)) {
            (Some(x), Some(y)) => x
                .len()
                .cmp(&y.len())
                .then_with(|| x.cmp(y))
                .then_with(|| a.cmp(b)),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => a.cmp(b),
        }
    }
}

/// A job id held for ordering without its text where it can be: the number
/// of a plain id (ASCII digits, no leading zero, at most 19 of them), which
/// orders such ids as [`JobIdKey`] does; any other id's text. Ties of
/// priority and submit time are decided by it without comparing strings.
/// Its order ([`Ord`]) is [`JobIdOrder::compare`]'s.
#[derive(Debug, Clone)]
pub enum JobIdOrder {
    /// A plain id's number.
    Number(u64),
    /// Any other id.
    Text(std::sync::Arc<str>),
}

impl JobIdOrder {
    /// The order of the id `id`.
    pub fn of(id: &std::sync::Arc<str>) -> Self {
        match Self::plain_number(id) {
            Some(number) => JobIdOrder::Number(number),
            None => JobIdOrder::Text(id.clone()),
        }
    }

    /// `JobIdKey::compare` of the two ids: two plain ids by their numbers
    /// (the same order: as many digits and no leading zero, or fewer digits
    /// and smaller), any other pair by their texts.
    pub fn compare(&self, other: &JobIdOrder) -> std::cmp::Ordering {
        match (self, other) {
            (JobIdOrder::Number(a), JobIdOrder::Number(b)) => a.cmp(b),
            (JobIdOrder::Text(a), JobIdOrder::Text(b)) => JobIdKey::compare(a, b),
            (JobIdOrder::Number(a), JobIdOrder::Text(b)) => JobIdKey::compare(&a.to_string(), b),
            (JobIdOrder::Text(a), JobIdOrder::Number(b)) => JobIdKey::compare(a, &b.to_string()),
        }
    }

    /// A plain id's number (never 0: a plain id has no leading zero);
    /// `None` for any other id.
    pub fn plain_number(id: &str) -> Option<u64> {
        let plain = (1..=19).contains(&id.len())
            && !id.starts_with('0')
            && id.bytes().all(|b| b.is_ascii_digit());
        plain.then(|| id.parse().ok()).flatten()
    }
}

impl PartialEq for JobIdOrder {
    fn eq(&self, other: &Self) -> bool {
        self.compare(other).is_eq()
    }
}

impl Eq for JobIdOrder {}

impl PartialOrd for JobIdOrder {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for JobIdOrder {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.compare(other)
    }
}

/// A numeric job id's digits without leading zeros (`None`: not made only
/// of ASCII digits, or empty).
fn significant_digits(id: &str) -> Option<&str> {
    (!id.is_empty() && id.bytes().all(|b| b.is_ascii_digit())).then(|| id.trim_start_matches('0'))
}

/// The ranked queue's order: priority descending, then submit time
/// ascending, then job id ([`JobIdKey`]) ascending.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct QueueKey {
    /// The priority, reversed so that higher comes first.
    pub priority: std::cmp::Reverse<u64>,
    /// Submit time.
    pub submit_at: Time,
    /// The job id.
    pub job: JobIdKey,
}

#[cfg(test)]
mod tests {
    use super::{partition_queue, JobPriority, JobState, PairPriority};
    use crate::config::PriorityModel;

    /// A pending Slurm row submitted at 100, in its first pair's partition
    /// and QOS (`p1` and none without pairs).
    pub(super) fn job(id: &str, own: u64, pairs: &[(&str, &str, u64)]) -> JobPriority {
        JobPriority {
            job: id.to_string(),
            user: "u".into(),
            account: "a".into(),
            partition: pairs.first().map_or("p1", |p| p.0).to_string(),
            qos: pairs.first().map_or("", |p| p.1).to_string(),
            submit_at: 100,
            priority: own,
            state: JobState::Pending,
            model: PriorityModel::Slurm,
            factors: Vec::new(),
            pairs: pairs
                .iter()
                .map(|&(partition, qos, priority)| PairPriority {
                    partition: partition.into(),
                    qos: qos.into(),
                    priority,
                    factors: Vec::new(),
                    priority_tier: 0,
                })
                .collect(),
            priority_tier: 0,
            expedited: false,
        }
    }

    /// Ids of every kind the queue's id order tells apart: plain numbers,
    /// leading zeros, 19 and 20 and 30 digits, text that starts or ends
    /// with digits, signs, spaces, the empty id.
    const MIXED_IDS: [&str; 25] = [
        "",
        "0",
        "00",
        "000",
        "1",
        "01",
        "001",
        "9",
        "10",
        "010",
        "99",
        "100",
        "0100",
        "9999999999999999999",
        "10000000000000000000",
        "09999999999999999999",
        "123456789012345678901234567890",
        "a",
        "A",
        "job1",
        "1a",
        "a1",
        "-1",
        "1.5",
        " 1",
    ];

    #[test]
    fn job_ids_compare_as_their_keys_without_building_them() {
        use super::JobIdKey;
        use std::cmp::Ordering::{Greater, Less};
        // The queue's id order, by hand: numbers as numbers ("9" < "10"),
        // leading zeros ignored then the text breaks the tie ("007" < "7"),
        // every number before any other id, which compare as text.
        assert_eq!(JobIdKey::compare("9", "10"), Less);
        assert_eq!(JobIdKey::compare("007", "7"), Less);
        assert_eq!(JobIdKey::compare("100", "99"), Greater);
        assert_eq!(JobIdKey::compare("99999", "a"), Less);
        assert_eq!(JobIdKey::compare("1.5", "1"), Greater);
        assert_eq!(JobIdKey::compare("", "0"), Greater);
        assert_eq!(JobIdKey::compare("job10", "job9"), Less);
        let ids = MIXED_IDS;
        for a in ids {
            for b in ids {
                assert_eq!(
                    JobIdKey::compare(a, b),
                    JobIdKey::new(a).cmp(&JobIdKey::new(b)),
                    "{a:?} vs {b:?}"
                );
            }
        }
    }

    /// Plain ids order by their numbers exactly as by their texts; every
    /// other pair (leading zeros, 20 digits, text) as by the texts
    /// (`JobIdKey::compare`, itself checked against the keys above).
    #[test]
    fn job_id_orders_compare_as_the_ids_do() {
        use super::{JobIdKey, JobIdOrder};
        use std::sync::Arc;
        let ids = MIXED_IDS;
        for a in ids {
            for b in ids {
                let (x, y) = (JobIdOrder::of(&Arc::from(a)), JobIdOrder::of(&Arc::from(b)));
                assert_eq!(x.compare(&y), JobIdKey::compare(a, b), "{a:?} vs {b:?}");
            }
        }
        // By hand: the numbers where the ids are plain, the text elsewhere;
        // "07" before "7" (leading zeros ignored, then the text decides).
        use std::cmp::Ordering::{Greater, Less};
        let order = |id: &str| JobIdOrder::of(&Arc::from(id));
        let largest_plain = 9_999_999_999_999_999_999;
        assert!(
            matches!(order("9999999999999999999"), JobIdOrder::Number(n) if n == largest_plain)
        );
        assert!(matches!(order("10000000000000000000"), JobIdOrder::Text(_)));
        assert!(matches!(order("0"), JobIdOrder::Text(_)));
        assert_eq!(order("9").compare(&order("10")), Less);
        assert_eq!(order("7").compare(&order("07")), Greater);
        assert!(matches!(order("07"), JobIdOrder::Text(_)));
    }

    #[test]
    fn a_partition_queue_ranks_a_job_in_one_partition_by_its_own_priority() {
        // Under INCR_ONLY the pairs and the job's own priority are floored
        // separately: A (one partition, two QOS) has its own 2250 while its
        // pairs (floored by index) are 2250 and 2600. Slurm's sort_job_queue2
        // ranks an entry of a job without a partition list by
        // job_ptr->priority: both of A's entries at 2250, in pair order. B
        // (two partitions) has its entry in p1 at its pair there, 2400, and
        // C (no pairs) its own 2300.
        let a = job("A", 2250, &[("p1", "lo", 2250), ("p1", "hi", 2600)]);
        let b = job("B", 1000, &[("p2", "lo", 1000), ("p1", "lo", 2400)]);
        let c = job("C", 2300, &[]);
        let queue = partition_queue(&[a, b, c], &["p1".to_string()]);
        let ranked: Vec<(&str, u64, &str)> = queue
            .iter()
            .map(|p| (p.job.as_str(), p.priority, p.qos.as_str()))
            .collect();
        assert_eq!(
            ranked,
            vec![
                ("B", 2400, "lo"),
                ("C", 2300, ""),
                ("A", 2250, "lo"),
                ("A", 2250, "hi")
            ]
        );
        // A has no entry in p2's queue.
        let a = job("A", 2250, &[("p1", "lo", 2250), ("p1", "hi", 2600)]);
        assert!(partition_queue(&[a], &["p2".to_string()]).is_empty());
    }
}
