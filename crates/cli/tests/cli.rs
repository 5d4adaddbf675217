//! End to end: the built `fairflow` binary run on the fixtures of `datasets/`.
//! Fair-share values are the oracle's business (its own tests hold them to the
//! seed documents); these tests check what the command itself promises: the
//! columns, one row per association in tree order, the cells that come
//! straight from the state (RawShares, RawUsage), the reporting of bad lines,
//! the JSON form, and the Slurm import's round trip.

use std::path::{Path, PathBuf};
use std::process::Output;

#[path = "support/binary.rs"]
mod binary;
use binary::{dataset, fairflow, fairflow_with_input, text};

const HEADER: &str =
    "Account|User|RawShares|NormShares|RawUsage|NormUsage|EffectvUsage|FairShare|LevelFS";

/// A fresh path in the temporary directory.
fn temp_path(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fairflow-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// The `(Account, User, RawShares, RawUsage)` cells of each `-P` row.
fn identity_cells(stdout: &str) -> Vec<(String, String, String, String)> {
    stdout
        .lines()
        .skip(1)
        .map(|line| {
            let cells: Vec<&str> = line.split('|').collect();
            assert_eq!(cells.len(), 9, "nine cells in {line:?}");
            (
                cells[0].to_string(),
                cells[1].to_string(),
                cells[2].to_string(),
                cells[4].to_string(),
            )
        })
        .collect()
}

fn row(account: &str, user: &str, shares: &str, usage: &str) -> (String, String, String, String) {
    (account.into(), user.into(), shares.into(), usage.into())
}

#[test]
fn sshare_parsable_has_the_header_and_one_row_per_association_in_tree_order() {
    let out = fairflow(&["sshare", "-P", "--events", &dataset("events/small.jsonl")]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stderr), "");
    let stdout = text(&out.stdout);
    assert_eq!(stdout.lines().next(), Some(HEADER));
    // Tree order: root, then each account (siblings by name) followed by its
    // users, then its child accounts. No decay: RawUsage is what was charged,
    // summed up the tree (phys = alice's 3600, chem = carol's 7200, root both).
    assert_eq!(
        identity_cells(&stdout),
        [
            row("root", "", "", "10800"),
            row("chem", "", "60", "7200"),
            row("chem", "carol", "1", "7200"),
            row("phys", "", "40", "3600"),
            row("phys", "alice", "1", "3600"),
            row("phys", "bob", "2", "0"),
            row("theory", "", "parent", "0"),
            row("theory", "dave", "parent", "0"),
        ]
    );
}

#[test]
fn standard_input_is_read_with_a_dash() {
    let log = std::fs::read(dataset("events/small.jsonl")).unwrap();
    let out = fairflow_with_input(&["sshare", "-P", "--events", "-"], &log);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(identity_cells(&text(&out.stdout)).len(), 8);
}

#[test]
fn bad_lines_are_reported_with_their_numbers_and_the_rest_still_applies() {
    let path = dataset("events/bad-lines.jsonl");
    let out = fairflow(&["sshare", "-P", "--events", &path]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    for expected in [
        "line 4: field `amount`: ",
        "line 5: not valid JSON",
        "line 7: field `t`: time goes backwards",
        "line 8: field `account`: unknown account `nowhere`",
        "line 9: field `op`: unknown op `teleport`",
        "5 lines rejected",
    ] {
        assert!(stderr.contains(expected), "{expected:?} not in:\n{stderr}");
    }
    assert!(stderr.lines().all(|l| !l.contains("line 6:")));
    // Line 6's usage and line 10's account applied after the bad lines.
    assert_eq!(
        identity_cells(&text(&out.stdout)),
        [
            row("root", "", "", "3600"),
            row("chem", "", "60", "0"),
            row("phys", "", "40", "3600"),
            row("phys", "alice", "1", "3600"),
        ]
    );
}

/// `sshare --json --slurm` writes Slurm's shares response (data_parser
/// v0.0.46; the field list is checked in `fairflow_serve::slurm_json`), and
/// `--slurm` needs `--json`.
#[test]
fn sshare_json_slurm_is_slurms_shares_response() {
    let out = fairflow(&[
        "sshare",
        "--json",
        "--slurm",
        "--events",
        &dataset("events/test24_4.jsonl"),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let shares = json["shares"]["shares"].as_array().expect("an array");
    // test24.4's tree: root, 13 accounts, 21 users.
    assert_eq!(shares.len(), 35);
    let ud2 = shares.iter().find(|s| s["name"] == "uD2").unwrap();
    assert_eq!(ud2["parent"], "aD");
    // 5 / 21, test24.4's 0.238095.
    assert_eq!(ud2["fairshare"]["factor"]["number"], 5.0 / 21.0);
    let out = fairflow(&[
        "sshare",
        "--slurm",
        "--events",
        &dataset("events/small.jsonl"),
    ]);
    assert!(!out.status.success());
}

#[test]
fn sshare_json_is_an_array_of_snake_case_objects() {
    let out = fairflow(&[
        "sshare",
        "--json",
        "--events",
        &dataset("events/small.jsonl"),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = rows.as_array().expect("an array");
    assert_eq!(rows.len(), 8);
    for key in [
        "account",
        "user",
        "raw_shares",
        "norm_shares",
        "raw_usage",
        "norm_usage",
        "effective_usage",
        "fairshare",
        "level_fs",
    ] {
        assert!(rows.iter().all(|r| r.get(key).is_some()), "{key}");
    }
    assert_eq!(rows[0]["account"], "root");
    assert_eq!(rows[0]["raw_shares"], serde_json::Value::Null);
    assert_eq!(rows[0]["raw_usage"], 10800);
    assert_eq!(rows[4]["user"], "alice");
    assert_eq!(rows[4]["raw_usage"], 3600);
    assert_eq!(rows[6]["raw_shares"], "parent");
}

#[test]
fn the_aligned_table_indents_accounts() {
    let out = fairflow(&["sshare", "--events", &dataset("events/small.jsonl")]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines[0].starts_with("Account "));
    assert!(lines[1].starts_with(&"-".repeat(20)));
    assert!(lines[2].starts_with("root "));
    assert!(lines[3].starts_with(" chem "));
    assert!(lines[4].starts_with("  chem "));
    assert!(lines[8].starts_with("  theory "));
    assert!(lines[9].starts_with("   theory "));
}

#[test]
fn at_may_not_go_before_the_last_event() {
    let path = dataset("events/small.jsonl");
    let out = fairflow(&["sshare", "-P", "--events", &path, "--at", "1700000100"]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("--at 1700000100 is earlier than the last event"));
    let out = fairflow(&["sshare", "-P", "--events", &path, "--at", "1800000000"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // No decay: a later time changes no usage.
    assert_eq!(identity_cells(&text(&out.stdout))[0].3, "10800");
}

#[test]
fn an_unreadable_file_is_an_error_naming_it() {
    let out = fairflow(&["sshare", "--events", "/nonexistent/fairflow.jsonl"]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(stderr.contains("/nonexistent/fairflow.jsonl"), "{stderr}");
    assert_eq!(stderr.matches("No such file").count(), 1, "{stderr}");
}

#[test]
fn slurm_conf_and_moab_cfg_apply_before_the_log() {
    let conf = temp_path("slurm.conf");
    std::fs::write(
        &conf,
        "PriorityFlags=NO_FAIR_TREE\nPriorityWeightAge=bogus\n",
    )
    .unwrap();
    let moab = temp_path("moab.cfg");
    std::fs::write(&moab, "FSWEIGHT 100\nlowercase 1\n").unwrap();
    let conf_arg = conf.to_str().unwrap();
    let moab_arg = moab.to_str().unwrap();
    let out = fairflow(&[
        "sshare",
        "-P",
        "--events",
        &dataset("events/small.jsonl"),
        "--slurm-conf",
        conf_arg,
        "--moab-cfg",
        moab_arg,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(stderr.contains(&format!("{conf_arg}: line 2: field `PriorityWeightAge`")));
    assert!(stderr.contains(&format!("{moab_arg}: line 2: field `lowercase`")));
    assert!(stderr.contains("2 lines rejected"));
}

fn import_fixture(out_path: &Path) -> Output {
    fairflow(&[
        "import",
        "slurm",
        "--assoc",
        &dataset("slurm/assoc.txt"),
        "--sshare",
        &dataset("slurm/sshare.txt"),
        "--slurm-conf",
        &dataset("slurm/slurm.conf"),
        "--squeue",
        &dataset("slurm/squeue.txt"),
        // After the queue's submit times (2026-11-21) in every time zone.
        "--time",
        "1800000000",
        "-o",
        out_path.to_str().unwrap(),
    ])
}

#[test]
fn import_slurm_round_trips_into_a_log_sshare_accepts() {
    let log = temp_path("imported.jsonl");
    let out = import_fixture(&log);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let written = std::fs::read_to_string(&log).unwrap();
    // 6 accounts, 6 user associations, 5 usage charges, 1 config, 2
    // partitions (job 102's list `batch,debug`, each defined for the book),
    // 3 jobs.
    let events = written.lines().filter(|l| !l.starts_with('#')).count();
    assert_eq!(events, 23);

    let out = fairflow(&["sshare", "-P", "--events", log.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stderr), "", "no line is rejected");
    // Every association of the source comes back, in the same tree order, with
    // its shares and its RawUsage (no time passes after the import).
    let source = std::fs::read_to_string(dataset("slurm/sshare.txt")).unwrap();
    let expected: Vec<_> = source
        .lines()
        .skip(1)
        .map(|line| {
            let cells: Vec<&str> = line.split('|').collect();
            row(cells[0].trim(), cells[1], cells[2], cells[4])
        })
        .collect();
    assert_eq!(identity_cells(&text(&out.stdout)), expected);
}

#[test]
fn import_slurm_names_the_file_line_and_field_of_a_malformed_line() {
    let assoc = temp_path("bad-assoc.txt");
    std::fs::write(&assoc, "c|root||1|\nc|a||lots|root\n").unwrap();
    let assoc_arg = assoc.to_str().unwrap();
    let out = fairflow(&["import", "slurm", "--assoc", assoc_arg, "--time", "1"]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!("{assoc_arg}: line 2: field `Share`")),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn import_slurm_writes_to_standard_output_by_default() {
    let out = fairflow(&[
        "import",
        "slurm",
        "--assoc",
        &dataset("slurm/assoc.txt"),
        "--time",
        "1700000000",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.starts_with("# fairflow import slurm"));
    // 6 accounts and 6 user associations.
    assert_eq!(stdout.lines().filter(|l| l.starts_with('{')).count(), 12);
}

#[test]
fn demo_runs_and_titles_every_algorithm() {
    let out = fairflow(&["demo"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    for title in [
        "== Fair Tree",
        "== Classic",
        "== Depth-oblivious",
        "== Ticket-based",
        "== Level-based",
    ] {
        let at = stdout.find(title).unwrap_or_else(|| panic!("{title}"));
        let next_line = stdout[at..].lines().nth(1).unwrap();
        assert!(next_line.starts_with("Account "), "{title}: {next_line}");
    }
    let out = fairflow(&["demo", "-P"]);
    assert!(out.status.success());
    assert_eq!(text(&out.stdout).matches(HEADER).count(), 5);
}

/// The `-P` rows of one titled section of `fairflow demo -P`.
fn demo_section(stdout: &str, title: &str) -> Vec<Vec<String>> {
    let start = stdout.find(title).unwrap_or_else(|| panic!("{title}"));
    stdout[start..]
        .lines()
        .skip(2)
        .take_while(|line| !line.is_empty())
        .map(|line| line.split('|').map(str::to_string).collect())
        .collect()
}

#[test]
fn the_demo_encodes_the_documents_example() {
    let out = fairflow(&["demo", "-P"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    // Slurm's classic fair-share example (seed document): the users' factors
    // 2^(-.3875/.3) = 0.408479, 2^(-.275/.05) = 0.022097, 2^(-.15/.05) = 0.125,
    // 2^(-.25/.25) = 0.5, 2^(-.1458/.35) = 0.749154.
    let classic = demo_section(&stdout, "== Classic");
    let factors: Vec<(&str, &str)> = classic
        .iter()
        .filter(|cells| !cells[1].is_empty())
        .map(|cells| (cells[1].as_str(), cells[7].as_str()))
        .collect();
    assert_eq!(
        factors,
        [
            ("user1", "0.408479"),
            ("user2", "0.022097"),
            ("user3", "0.125000"),
            ("user4", "0.500000"),
            ("user5", "0.749154"),
        ]
    );
    // The ticket-based example: user 2 gets 198 tickets for user 5's 802, a
    // fair-share priority of 198 / 802 = 0.25 (to the document's two decimals).
    let ticket = demo_section(&stdout, "== Ticket-based");
    let tickets = |user: &str| -> f64 {
        let cells = ticket.iter().find(|c| c[1] == user).unwrap();
        cells[9].parse().unwrap()
    };
    let ratio = tickets("user2") / tickets("user5");
    assert_eq!(format!("{ratio:.2}"), "0.25");
    assert_eq!(tickets("user1"), 0.0, "user 1 has no pending job");
}

/// `%f` with six decimals (`0.250000`), or `inf`.
fn is_fixed6(cell: &str) -> bool {
    if cell == "inf" {
        return true;
    }
    let digits = cell.strip_prefix('-').unwrap_or(cell);
    match digits.split_once('.') {
        Some((whole, fraction)) => {
            !whole.is_empty()
                && whole.bytes().all(|b| b.is_ascii_digit())
                && fraction.len() == 6
                && fraction.bytes().all(|b| b.is_ascii_digit())
        }
        None => false,
    }
}

fn is_integer(cell: &str) -> bool {
    !cell.is_empty() && cell.bytes().all(|b| b.is_ascii_digit())
}

/// `0x%016X`.
fn is_hex16(cell: &str) -> bool {
    cell.strip_prefix("0x").is_some_and(|hex| {
        hex.len() == 16
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'A'..=b'F').contains(&b))
    })
}

#[test]
fn every_algorithm_keeps_the_columns_and_number_formats() {
    for (flags, extra) in [
        ("FAIR_TREE", None),
        ("NO_FAIR_TREE", None),
        ("DEPTH_OBLIVIOUS", None),
        ("TICKET_BASED", Some("Tickets")),
        ("LEVEL_BASED", Some("FairShareRaw")),
    ] {
        let conf = temp_path(&format!("{flags}.conf"));
        std::fs::write(&conf, format!("PriorityFlags={flags}\n")).unwrap();
        let out = fairflow(&[
            "sshare",
            "-P",
            "--events",
            &dataset("events/small.jsonl"),
            "--slurm-conf",
            conf.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{flags}: {}", text(&out.stderr));
        let stdout = text(&out.stdout);
        let mut lines = stdout.lines();
        let header = match extra {
            Some(column) => format!("{HEADER}|{column}"),
            None => HEADER.to_string(),
        };
        assert_eq!(lines.next(), Some(header.as_str()), "{flags}");
        let rows: Vec<Vec<&str>> = lines.map(|l| l.split('|').collect()).collect();
        assert_eq!(rows.len(), 8, "{flags}");
        for (i, cells) in rows.iter().enumerate() {
            let context = format!("{flags} row {i}: {cells:?}");
            assert_eq!(cells.len(), 9 + usize::from(extra.is_some()), "{context}");
            assert!(!cells[0].starts_with(' '), "{context}");
            let shares = cells[2];
            assert!(
                (i == 0 && shares.is_empty())
                    || (i > 0 && (is_integer(shares) || shares == "parent")),
                "{context}"
            );
            assert!(is_integer(cells[4]), "{context}");
            for &cell in [cells[3], cells[5], cells[6], cells[7]].iter() {
                assert!(cell.is_empty() || is_fixed6(cell), "{context}");
            }
            match flags {
                "LEVEL_BASED" => {
                    assert!(cells[8].is_empty() || is_hex16(cells[8]), "{context}");
                    assert!(cells[9].is_empty() || is_hex16(cells[9]), "{context}");
                }
                "TICKET_BASED" => {
                    assert!(cells[8].is_empty() || is_fixed6(cells[8]), "{context}");
                    assert!(cells[9].is_empty() || is_integer(cells[9]), "{context}");
                }
                _ => assert!(cells[8].is_empty() || is_fixed6(cells[8]), "{context}"),
            }
        }
        // Users always show a FairShare.
        assert!(rows
            .iter()
            .filter(|c| !c[1].is_empty())
            .all(|c| !c[7].is_empty()));
    }
}
