//! Reading a real `moab.cfg`: `NAME VALUE` lines (the value is the rest of
//! the line), `#` comments, and credential lines `XCFG[name] ATTR=V ...`.
//! The Moab priority parameters (`fairflow_model::moab`) become configuration
//! parameters; every other line (resource managers, limits, intervals, ...)
//! is ignored, as `slurm_conf` ignores non-priority lines.

use fairflow_model::config::Config;
use fairflow_model::moab::is_priority_parameter;

use crate::Rejection;

/// The priority parameters of a `moab.cfg`, as `(line, NAME, value)`, in order.
pub fn priority_lines(text: &str) -> Vec<(u64, String, String)> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let (name, value) = match line.split_once(char::is_whitespace) {
            Some((name, value)) => (name, value.trim()),
            None => (line, ""),
        };
        let name = upper_case_name(name);
        if is_priority_parameter(&name) {
            out.push((i as u64 + 1, name, value.to_string()));
        }
    }
    out
}

/// A parameter name in upper case, without touching a credential's name in
/// brackets (`usercfg[John]` is `USERCFG[John]`).
fn upper_case_name(name: &str) -> String {
    match name.split_once('[') {
        Some((base, rest)) => format!("{}[{rest}", base.to_ascii_uppercase()),
        None => name.to_ascii_uppercase(),
    }
}

/// Apply a `moab.cfg`'s priority parameters to `config`. An invalid value is
/// reported with its line and parameter name; the valid ones still apply.
pub fn apply_moab_cfg(config: &mut Config, text: &str) -> Vec<Rejection> {
    crate::slurm_conf::apply_parameters(config, priority_lines(text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use fairflow_model::moab::{Credential, MoabParams};

    #[test]
    fn priority_lines_apply_and_others_are_ignored() {
        let text = "# priorities\n\
                    SCHEDCFG[Moab]     SERVER=head:42559\n\
                    RMCFG[base]        TYPE=PBS\n\
                    RMPOLLINTERVAL     00:00:30\n\
                    CREDWEIGHT      1\n\
                    USERWEIGHT      1   # per user\n\
                    usercfg[john]   PRIORITY=2000\n\
                    USERCFG[paul]   PRIORITY=-1000\n\
                    USERCFG[john]   FSTARGET=20- MAXJOB=4\n\
                    GROUPCFG[staff] PRIORITY=10000\n\
                    XFACTORWEIGHT   ten\n\
                    JOBPRIOF STATE[Running]=100  STATE[Suspended]=1000  ATTR[PREEMPTEE]=-200\n";
        let mut config = Config::default();
        let rejected = apply_moab_cfg(&mut config, text);
        assert_eq!(rejected.len(), 1);
        assert_eq!(
            (rejected[0].line, rejected[0].field.as_deref()),
            (11, Some("XFACTORWEIGHT"))
        );
        let params = MoabParams::from_map(&config.moab).unwrap();
        assert_eq!(params.weight("CRED"), 1);
        assert_eq!(params.weight("USER"), 1);
        let john = params.credential(Credential::User, "john").unwrap();
        assert_eq!(john.priority, Some(2000));
        assert!(john.fs_target.is_some());
        assert_eq!(
            params
                .credential(Credential::User, "paul")
                .unwrap()
                .priority,
            Some(-1000)
        );
        assert_eq!(
            params
                .credential(Credential::Group, "staff")
                .unwrap()
                .priority,
            Some(10000)
        );
        assert_eq!(params.state_priority.get("suspended"), Some(&1000));
        assert!(!config.moab.contains_key("RMPOLLINTERVAL"));
    }

    #[test]
    fn targets_accrual_policy_and_group_fs_weight_lines_apply() {
        let text = "PRIORITYTARGETPROCCOUNT  32
                    PRIORITYTARGETDURATION   1:30:00
                    JOBPRIOACCRUALPOLICY     ALWAYS
                    GROUPCFG[staff]          FSWEIGHT=40
                    GROUPCFG[staff]          PRIORITY=5
                    USERCFG[john]            FSWEIGHT=40
";
        let mut config = Config::default();
        let rejected = apply_moab_cfg(&mut config, text);
        // FSWEIGHT is a group attribute: john's line 6 is rejected.
        assert_eq!(rejected.len(), 1);
        assert_eq!(
            (rejected[0].line, rejected[0].field.as_deref()),
            (6, Some("USERCFG[john]"))
        );
        let params = MoabParams::from_map(&config.moab).unwrap();
        assert_eq!(params.target_proc_count, Some(32));
        // 1:30:00 = 3600 + 30 * 60 = 5400 s.
        assert_eq!(params.target_duration_secs, Some(5400));
        assert_eq!(
            params.accrual_policy,
            fairflow_model::moab::AccrualPolicy::Always
        );
        let staff = params.credential(Credential::Group, "staff").unwrap();
        assert_eq!((staff.fs_weight, staff.priority), (40, Some(5)));
    }
}
