//! Which Slurm the cluster runs, from `scontrol show config`'s
//! `SLURM_VERSION = 26.05.0` line, and what that changes in the commands a
//! poll runs: from Slurm 26.05 jobs have a SLUID (`fairflow_model::sluid`),
//! so squeue's `-O` list gains `Sluid` and sacct's `-o` list `OriginalSLUID`
//! (the SLUID the job had while squeue listed it). Older versions are never
//! asked for them: an unknown field makes those commands fail.

use super::command::SlurmCommand;

/// A Slurm release: `major.minor` (`26.05` is 26, 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct SlurmVersion {
    /// The year (`26`).
    pub major: u32,
    /// The month (`05`).
    pub minor: u32,
}

/// The first release whose jobs have a SLUID.
pub const FIRST_WITH_SLUIDS: SlurmVersion = SlurmVersion {
    major: 26,
    minor: 5,
};

/// squeue's `-O` field and sacct's `-o` field of the SLUID.
pub const SQUEUE_SLUID_FIELD: &str = "Sluid";
/// sacct's field of the SLUID a job had while it was listed (`SLUID`
/// changes at every resize; `OriginalSLUID` is squeue's until a requeue).
pub const SACCT_SLUID_FIELD: &str = "OriginalSLUID";

impl SlurmVersion {
    /// The version `scontrol show config` prints (`SLURM_VERSION = 26.05.0`),
    /// if its text has one that reads.
    pub fn of_config(text: &str) -> Option<SlurmVersion> {
        let value = text.lines().find_map(|line| {
            let (key, value) = line.split_once('=')?;
            (key.trim() == "SLURM_VERSION").then(|| value.trim())
        })?;
        let mut parts = value.split('.');
        let major = parts.next()?.trim().parse().ok()?;
        let minor = parts.next()?.trim().parse().ok()?;
        Some(SlurmVersion { major, minor })
    }

    /// Does this Slurm print SLUIDs?
    pub fn has_sluids(self) -> bool {
        self >= FIRST_WITH_SLUIDS
    }
}

/// `base` (squeue `-O LIST` or sacct `-o LIST`) with `field` appended to the
/// argument after its last `-O`/`-o` (`|`-separated as the list's other
/// fields are); `base` itself when it has no such list.
pub fn with_field(base: &SlurmCommand, field: &str) -> SlurmCommand {
    let mut command = base.clone();
    let list = (command.args.iter())
        .rposition(|a| a == "-O" || a == "-o")
        .map(|i| i + 1);
    if let Some(list) = list.and_then(|i| command.args.get_mut(i)) {
        let separated = if list.contains(":|") { ":|," } else { "," };
        list.push_str(separated);
        list.push_str(field);
    }
    command
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_is_read_from_scontrol_show_config() {
        let config = "Configuration data as of 2026-06-01T10:00:00\n\
            AccountingStorageBackupHost = (null)\n\
            SLURM_CONF              = /etc/slurm/slurm.conf\n\
            SLURM_VERSION           = 26.05.0\n";
        let version = SlurmVersion::of_config(config).unwrap();
        assert_eq!(
            version,
            SlurmVersion {
                major: 26,
                minor: 5
            }
        );
        assert!(version.has_sluids());
        let old = SlurmVersion::of_config("SLURM_VERSION = 25.11.3\n").unwrap();
        assert!(!old.has_sluids());
        assert!(!SlurmVersion::of_config("SLURM_VERSION = 22.05.8\n")
            .unwrap()
            .has_sluids());
        assert!(SlurmVersion::of_config("SLURM_VERSION = 27.05.0-pre1\n")
            .unwrap()
            .has_sluids());
        assert_eq!(SlurmVersion::of_config("SLURM_VERSION = unknown\n"), None);
        assert_eq!(
            SlurmVersion::of_config("PriorityType = priority/multifactor\n"),
            None
        );
    }

    #[test]
    fn the_field_goes_after_the_list() {
        let squeue = SlurmCommand::new("squeue", &["-h", "-O", "JobID:|,StartTime"]);
        assert_eq!(
            with_field(&squeue, SQUEUE_SLUID_FIELD).args,
            ["-h", "-O", "JobID:|,StartTime:|,Sluid"]
        );
        let sacct = SlurmCommand::new("sacct", &["-P", "-o", "JobID,Timelimit"]);
        assert_eq!(
            with_field(&sacct, SACCT_SLUID_FIELD).args,
            ["-P", "-o", "JobID,Timelimit,OriginalSLUID"]
        );
    }
}
