//! The systemd unit shipped in `packaging/fairflow.service`: every key is
//! one systemd knows in its section, the service follows Slurm with flags
//! `fairflow serve` has, and `systemd-analyze verify` accepts it (with the
//! built binary in `ExecStart`) where systemd-analyze is installed; without
//! it that check says it was skipped, and under `CI=true` fails.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

fn unit_text() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../packaging/fairflow.service");
    std::fs::read_to_string(path).unwrap()
}

/// `section -> [(key, value)]`; comments and blank lines skipped. Panics on
/// a line that is neither a section, a `key=value` nor a comment.
fn parse_unit(text: &str) -> BTreeMap<String, Vec<(String, String)>> {
    let mut sections: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    let mut current = None;
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            current = Some(name.to_string());
            sections.entry(name.to_string()).or_default();
            continue;
        }
        let (key, value) = line
            .split_once('=')
            .unwrap_or_else(|| panic!("line {}: not key=value: {line}", number + 1));
        let section = current
            .clone()
            .unwrap_or_else(|| panic!("line {}: a key before any section", number + 1));
        sections
            .get_mut(&section)
            .unwrap()
            .push((key.trim().to_string(), value.trim().to_string()));
    }
    sections
}

/// The keys this unit may use, per section (systemd.unit(5),
/// systemd.service(5), systemd.exec(5), systemd.kill(5)).
const KNOWN: [(&str, &[&str]); 3] = [
    (
        "Unit",
        &["Description", "Documentation", "After", "Wants", "Requires"],
    ),
    (
        "Service",
        &[
            "Type",
            "User",
            "Group",
            "Environment",
            "ExecStart",
            "StateDirectory",
            "Restart",
            "RestartSec",
            "TimeoutStopSec",
            "KillSignal",
            "NoNewPrivileges",
            "ProtectSystem",
            "PrivateTmp",
        ],
    ),
    ("Install", &["WantedBy"]),
];

#[test]
fn the_unit_uses_known_keys_and_follows_slurm_with_real_flags() {
    let unit = parse_unit(&unit_text());
    assert_eq!(
        unit.keys().collect::<Vec<_>>(),
        ["Install", "Service", "Unit"],
        "the unit's sections"
    );
    for (section, known) in KNOWN {
        for (key, _) in &unit[section] {
            assert!(
                known.contains(&key.as_str()),
                "[{section}] {key} is not a key this unit expects"
            );
        }
    }
    let get = |section: &str, key: &str| {
        unit[section]
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("[{section}] has no {key}"))
    };
    assert_eq!(get("Install", "WantedBy"), "multi-user.target");
    assert_eq!(get("Service", "Restart"), "on-failure");
    assert!(get("Service", "Environment").starts_with("SLURM_CONF="));
    let exec = get("Service", "ExecStart");
    let words: Vec<&str> = exec.split_whitespace().collect();
    assert!(words[0].ends_with("/fairflow"), "{exec}");
    assert_eq!(words[1], "serve");
    assert!(words.contains(&"--follow-slurm"), "{exec}");
    let help = Command::new(env!("CARGO_BIN_EXE_fairflow"))
        .args(["serve", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    for flag in words.iter().filter(|w| w.starts_with("--")) {
        assert!(help.contains(flag), "`fairflow serve` has no {flag}");
    }
}

#[test]
fn systemd_analyze_verifies_the_unit() {
    let Ok(version) = Command::new("systemd-analyze").arg("--version").output() else {
        fairflow_testkit::prerequisite_missing("systemd-analyze (Debian's systemd)");
        return;
    };
    assert!(version.status.success());
    // The unit as shipped, with the built binary where it is installed.
    let dir = tempfile::tempdir().unwrap();
    let unit = unit_text().replace("/usr/local/bin/fairflow", env!("CARGO_BIN_EXE_fairflow"));
    let path = dir.path().join("fairflow.service");
    std::fs::write(&path, unit).unwrap();
    let verified = Command::new("systemd-analyze")
        .args(["verify", path.to_str().unwrap()])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&verified.stderr).to_string();
    // Only what concerns this unit counts (a machine without systemd
    // running may complain about its own units).
    let ours: Vec<&str> = said
        .lines()
        .filter(|l| l.contains("fairflow.service"))
        .collect();
    assert!(
        verified.status.success() && ours.is_empty(),
        "systemd-analyze verify: {said}"
    );
}
