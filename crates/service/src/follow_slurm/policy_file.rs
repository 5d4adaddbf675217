//! The Slurm follower's applied policy beside the log: the policy a poll
//! applied (every association, QOS, partition and configuration key) is too
//! big to log with each poll, so the log's cursor record carries its digest
//! ([`SlurmPosition::policy_digest`]) and the policy itself is written here,
//! as `follow-slurm-policy-<digest>.json` in the data directory, before the
//! write that logs the digest. At start the file the log's digest names is
//! trusted only if its content has that digest; otherwise the follower
//! starts from no policy, and its first poll sends every policy event again
//! (each sets what it says, so nothing is counted twice).

use std::io::Write;
use std::path::{Path, PathBuf};

use fairflow_ingest::slurm_live::policy::Policy;

const PREFIX: &str = "follow-slurm-policy-";

/// Why a policy side file cannot be written or trusted (each but the
/// encoding names the file).
#[derive(Debug, thiserror::Error)]
pub enum PolicyFileError {
    /// The policy cannot be written as JSON.
    #[error("{0}")]
    Encode(serde_json::Error),
    /// The file cannot be written or read.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The side file.
        path: PathBuf,
        /// The system's error.
        source: std::io::Error,
    },
    /// The file is not a policy.
    #[error("{}: {source}", .path.display())]
    Decode {
        /// The side file.
        path: PathBuf,
        /// The decoder's error.
        source: serde_json::Error,
    },
    /// The file's policy is not the one the log names.
    #[error("{}: its content does not have the digest the log names", .path.display())]
    OtherDigest {
        /// The side file.
        path: PathBuf,
    },
}

/// The side file of the policy of `digest`.
fn path_of(data_dir: &Path, digest: u64) -> PathBuf {
    data_dir.join(format!("{PREFIX}{digest:016x}.json"))
}

/// Write `policy` (of `digest`) beside the log, atomically (written aside,
/// synced, renamed).
pub fn save(data_dir: &Path, policy: &Policy, digest: u64) -> Result<(), PolicyFileError> {
    let path = path_of(data_dir, digest);
    let aside = path.with_extension("json.new");
    let bytes = serde_json::to_vec(policy).map_err(PolicyFileError::Encode)?;
    let write = || -> std::io::Result<()> {
        let mut file = std::fs::File::create(&aside)?;
        file.write_all(&bytes)?;
        file.sync_all()?;
        std::fs::rename(&aside, &path)?;
        std::fs::File::open(data_dir)?.sync_all()
    };
    write().map_err(|source| PolicyFileError::Io { path, source })
}

/// The policy of `digest`, if its side file is there and has that digest;
/// why not, else.
pub fn load(data_dir: &Path, digest: u64) -> Result<Policy, PolicyFileError> {
    let path = path_of(data_dir, digest);
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(source) => return Err(PolicyFileError::Io { path, source }),
    };
    let policy: Policy = match serde_json::from_slice(&bytes) {
        Ok(policy) => policy,
        Err(source) => return Err(PolicyFileError::Decode { path, source }),
    };
    if policy.digest() != digest {
        return Err(PolicyFileError::OtherDigest { path });
    }
    Ok(policy)
}

/// Remove every policy side file but the one of `keep`.
pub fn prune(data_dir: &Path, keep: u64) {
    let Ok(entries) = std::fs::read_dir(data_dir) else {
        return;
    };
    let kept = path_of(data_dir, keep);
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let ours = name.to_str().is_some_and(|n| n.starts_with(PREFIX));
        if ours && path != kept {
            if let Err(e) = std::fs::remove_file(&path) {
                tracing::warn!(tap = "follow-slurm", "removing {}: {e}", path.display());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_side_file_is_trusted_only_with_the_digest_the_log_names() {
        let dir = tempfile::tempdir().unwrap();
        let policy = Policy {
            entries: vec![("qos:normal".into(), "{}".into())],
        };
        let digest = policy.digest();
        save(dir.path(), &policy, digest).unwrap();
        assert_eq!(load(dir.path(), digest).unwrap(), policy);
        // Another digest names another (absent) file.
        assert!(load(dir.path(), digest ^ 1).is_err());
        // A file whose content was changed is not trusted.
        let other = Policy {
            entries: vec![("qos:high".into(), "{}".into())],
        };
        std::fs::write(
            path_of(dir.path(), digest),
            serde_json::to_vec(&other).unwrap(),
        )
        .unwrap();
        let refused = load(dir.path(), digest).unwrap_err().to_string();
        assert!(refused.contains("does not have the digest"), "{refused}");
        // Pruning keeps only the named one.
        save(dir.path(), &other, other.digest()).unwrap();
        prune(dir.path(), other.digest());
        assert!(load(dir.path(), other.digest()).is_ok());
        assert!(!path_of(dir.path(), digest).exists());
    }
}
