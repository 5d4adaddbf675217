//! [`RestoreError`]: why a state read back (a snapshot's book and the parts
//! it carries after it) is not one the book can hold. Its texts are the
//! reasons of a damaged snapshot (`snapshot::SnapshotError`), which users see.

use fairflow_model::Sluid;

/// Why a state cannot be restored into a book.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RestoreError {
    /// No root account (or root has a parent).
    #[error("the state has no root account")]
    NoRoot,
    /// An account other than root without a parent.
    #[error("account `{0}` has no parent")]
    NoParent(String),
    /// An account whose parent is not an account.
    #[error("account `{account}` has an unknown parent `{parent}`")]
    UnknownParent {
        /// The account.
        account: String,
        /// Its parent.
        parent: String,
    },
    /// The parent links loop.
    #[error("the account tree has a cycle through `{0}`")]
    Cycle(String),
    /// A user association in an account that does not exist.
    #[error("a user association names unknown account `{0}`")]
    AssocOfUnknownAccount(String),
    /// A job whose user association does not exist.
    #[error("job `{0}` names an unknown association")]
    JobOfUnknownAssoc(String),
    /// A job filed under an id that is not its own.
    #[error("job `{0}` is filed under another id")]
    JobMisfiled(String),
    /// Two jobs holding one SLUID.
    #[error("jobs `{first}` and `{second}` hold one SLUID, {sluid}")]
    SharedSluid {
        /// The job that held it first (in id order).
        first: String,
        /// The other job.
        second: String,
        /// The SLUID.
        sluid: Sluid,
    },
    /// A SLUID for a job that is not active.
    #[error("SLUID {sluid} names job `{job}`, which is not active")]
    SluidOfInactiveJob {
        /// The SLUID.
        sluid: Sluid,
        /// The job it names.
        job: String,
    },
    /// A `PriorityTier` for a partition no event defined.
    #[error("a tier for partition `{0}`, which is not defined")]
    TierOfUndefinedPartition(String),
    /// `INCR_ONLY` pair floors for a job that is not active.
    #[error("pair floors for job `{0}`, which is not active")]
    PairFloorsOfInactiveJob(String),
    /// A job marked for expedited requeue that is not active.
    #[error("job `{0}` marked expedited is not active")]
    ExpeditedInactiveJob(String),
    /// flux-accounting's bins under Slurm's usage model.
    #[error("usage bins under UsageModel=slurm")]
    BinsUnderSlurmUsage,
    /// A value of the state no event could have set
    /// (`State::check_restored_values`): where it is held, its field, why.
    #[error("{holder}'s {field}: {reason}")]
    InvalidValue {
        /// What holds it (a partition, a QOS, a job, ...), named.
        holder: String,
        /// The field, as the event names it.
        field: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A configuration value a `config` event could not have set
    /// (`Config::check_values`): the parameter and why.
    #[error("the configuration's {key}: {reason}")]
    InvalidConfig {
        /// The parameter.
        key: String,
        /// What is wrong with its value.
        reason: String,
    },
    /// flux-accounting's bins of an association that does not exist.
    #[error("usage bins for `{account}`/`{user}`, which does not exist")]
    BinsOfUnknownAssoc {
        /// The account.
        account: String,
        /// The user (`""`: the account itself).
        user: String,
    },
}
