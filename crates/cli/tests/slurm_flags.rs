//! Slurm's command-line habits: `sshare -a -l -A -u -o -n -P`, `sprio -j -u
//! -A -p -o -h`, `top -A -u -p`, and times as Slurm takes them (`--at
//! 2023-11-14T22:15:00`, `now`), each against the plain command's own output
//! on the example logs (the rows and cells are the same; only the selection
//! and shape change).

#[path = "support/binary.rs"]
mod binary;
use binary::{dataset, run};

fn ok(args: &[&str]) -> String {
    let (success, stdout, stderr) = run(args);
    assert!(success, "{args:?}: {stderr}");
    stdout
}

#[test]
fn sshare_takes_slurms_flags() {
    let log = dataset("events/small.jsonl");
    let all = ok(&["sshare", "-P", "--events", &log]);
    // -a and -l are accepted and change nothing.
    assert_eq!(ok(&["sshare", "-a", "-l", "-P", "--events", &log]), all);
    let lines: Vec<&str> = all.lines().collect();
    // -n drops the header only.
    let no_header = ok(&["sshare", "-n", "-P", "--events", &log]);
    assert_eq!(no_header.lines().collect::<Vec<_>>(), lines[1..]);
    // -A phys: phys's own row and its users (alice, bob), not chem's nor theory's.
    let phys = ok(&["sshare", "-P", "-A", "phys", "--events", &log]);
    let rows: Vec<&str> = phys.lines().skip(1).collect();
    let want: Vec<&str> = lines[1..]
        .iter()
        .copied()
        .filter(|l| l.starts_with("phys|"))
        .collect();
    assert_eq!(rows, want, "{phys}");
    assert_eq!(rows.len(), 3, "{phys}");
    // -u carol: her association only (and root for the tree's top).
    let carol = ok(&["sshare", "-P", "--users", "carol", "--events", &log]);
    let users: Vec<&str> = carol
        .lines()
        .skip(1)
        .map(|l| l.split('|').nth(1).unwrap())
        .collect();
    assert_eq!(users, ["", "carol"], "{carol}");
    // -o by name, any case, in the order given.
    let picked = ok(&[
        "sshare",
        "-P",
        "-o",
        "user,RAWUSAGE,Account",
        "--events",
        &log,
    ]);
    let mut picked = picked.lines();
    assert_eq!(picked.next(), Some("User|RawUsage|Account"));
    let alice = picked.find(|l| l.starts_with("alice|")).unwrap();
    assert_eq!(alice, "alice|3600|phys");
    // The table form with -o is aligned, and a bad field is an error naming it.
    let table = ok(&["sshare", "-o", "Account,User", "--events", &log]);
    assert!(
        table.lines().next().unwrap().starts_with("Account"),
        "{table}"
    );
    let (success, _, stderr) = run(&["sshare", "-o", "Bogus", "--events", &log]);
    assert!(
        !success && stderr.contains("unknown field `Bogus`"),
        "{stderr}"
    );
}

#[test]
fn sprio_and_top_select_jobs_like_slurm() {
    let log = dataset("events/priority.jsonl");
    let all = ok(&["sprio", "-P", "--events", &log]);
    let header = all.lines().next().unwrap();
    assert!(
        header.starts_with("JOBID|PARTITION|USER|ACCOUNT|PRIORITY"),
        "{header}"
    );
    let bob: Vec<String> = all
        .lines()
        .skip(1)
        .filter(|l| l.split('|').nth(2) == Some("bob"))
        .map(str::to_string)
        .collect();
    assert!(!bob.is_empty());
    let got = ok(&["sprio", "-P", "-u", "bob", "--events", &log]);
    assert_eq!(got.lines().skip(1).collect::<Vec<_>>(), bob);
    let got = ok(&[
        "sprio",
        "-P",
        "-h",
        "-j",
        "2,3",
        "-o",
        "jobid,user",
        "--events",
        &log,
    ]);
    // The plain output's rows of jobs 2 and 3 (those still listed), id and user only.
    let want: Vec<String> = all
        .lines()
        .skip(1)
        .map(|l| l.split('|').collect::<Vec<_>>())
        .filter(|c| c[0] == "2" || c[0] == "3")
        .map(|c| format!("{}|{}", c[0], c[2]))
        .collect();
    assert!(!want.is_empty());
    assert_eq!(got.lines().collect::<Vec<_>>(), want, "{got}");
    let got = ok(&["sprio", "-P", "-A", "nowhere", "--events", &log]);
    assert_eq!(got.lines().count(), 1, "only the header: {got}");
    // top -u keeps the queue's order among the user's jobs.
    let top = ok(&["top", "-P", "-k", "100", "--events", &log]);
    let want: Vec<String> = top
        .lines()
        .skip(1)
        .filter(|l| l.split('|').nth(2) == Some("alice"))
        .map(|l| l.split('|').nth(1).unwrap().to_string())
        .collect();
    let got = ok(&["top", "-P", "-k", "100", "-u", "alice", "--events", &log]);
    let got: Vec<String> = got
        .lines()
        .skip(1)
        .map(|l| l.split('|').nth(1).unwrap().to_string())
        .collect();
    assert_eq!(got, want);
    let got = ok(&["top", "-P", "-A", "nowhere", "--events", &log]);
    assert_eq!(got.lines().count(), 1, "{got}");
}

#[test]
fn jobs_in_several_partitions_have_a_row_per_pair_and_rank_per_partition() {
    // Priorities worked out by hand in
    // crates/engine/tests/cases/slurm_multi_partition_qos.toml (step 1).
    let log = dataset("events/multi_partition.jsonl");
    // sprio -p p2: the pairs in p2, one row each, in job-id order and, within
    // a job, Slurm's pair order (QOS by priority: hi 10, lo 5, zero 0).
    let got = ok(&[
        "sprio",
        "-P",
        "-h",
        "-p",
        "p2",
        "-o",
        "jobid,partition,priority",
        "--events",
        &log,
    ]);
    assert_eq!(
        got.lines().collect::<Vec<_>>(),
        [
            "A|p2|3500",
            "A|p2|2500",
            "B|p2|4000",
            "B|p2|4000",
            "D|p2|6000",
            "F|p2|3000"
        ],
        "{got}"
    );
    // Every pair of A without -p: p1 before p2.
    let got = ok(&[
        "sprio",
        "-P",
        "-h",
        "-j",
        "A",
        "-o",
        "partition,priority",
        "--events",
        &log,
    ]);
    assert_eq!(
        got.lines().collect::<Vec<_>>(),
        ["p1|4250", "p1|3250", "p2|3500", "p2|2500"],
        "{got}"
    );
    // top lists the scheduler's queue: one entry per (partition, QOS)
    // pair, by priority, then submit time (the case's hand order: D (p2, lo)
    // 6000, D (p3, lo) 5500, A (p1, hi) 4250, B's two entries at its own
    // 4000, A (p2, hi) 3500 (submitted at 1000) before C 3500 (1002),
    // A (p1, lo) 3250, F (p2, hi) 3000, A (p2, lo) 2500; the eleventh,
    // F (p1, hi) 2250, is past top's default 10). top -p p2: the entries
    // in p2, every pair of a job there.
    let ranked = |args: &[&str]| -> Vec<String> {
        ok(args)
            .lines()
            .skip(1)
            .map(|l| {
                let cells: Vec<&str> = l.split('|').collect();
                format!("{}={}", cells[1], cells[4])
            })
            .collect()
    };
    assert_eq!(
        ranked(&["top", "-P", "--events", &log]),
        [
            "D=6000", "D=5500", "A=4250", "B=4000", "B=4000", "A=3500", "C=3500", "A=3250",
            "F=3000", "A=2500"
        ]
    );
    assert_eq!(
        ranked(&["top", "-P", "-p", "p2", "--events", &log]),
        ["D=6000", "B=4000", "B=4000", "A=3500", "F=3000", "A=2500"]
    );
    assert_eq!(
        ranked(&["top", "-P", "-p", "p3", "--events", &log]),
        ["D=5500", "C=3500"]
    );
    // explain shows every pair.
    let explain = ok(&["explain", "F", "--events", &log]);
    assert!(explain.contains("Priority: 2250"), "{explain}");
    assert!(explain.contains("pairs, in Slurm's order"), "{explain}");
    let pair_lines: Vec<&str> = explain
        .lines()
        .filter(|l| l.starts_with("  p1 ") || l.starts_with("  p2 "))
        .collect();
    assert_eq!(pair_lines.len(), 2, "{explain}");
    assert!(
        pair_lines[1].split_whitespace().nth(2) == Some("3000"),
        "{explain}"
    );
}

#[test]
fn times_are_taken_as_slurm_writes_them() {
    let log = dataset("events/small.jsonl");
    // 1700000300 is 2023-11-14T22:18:20Z; under TZ=UTC the two forms agree.
    let unix = run(&["sshare", "-P", "--events", &log, "--at", "1700000300"]);
    let (success, slurm, stderr) = {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_fairflow"))
            .args([
                "sshare",
                "-P",
                "--events",
                &log,
                "--at",
                "2023-11-14T22:18:20",
            ])
            .env("TZ", "UTC")
            .output()
            .unwrap();
        (
            output.status.success(),
            String::from_utf8(output.stdout).unwrap(),
            String::from_utf8(output.stderr).unwrap(),
        )
    };
    assert!(unix.0 && success, "{} {stderr}", unix.2);
    assert_eq!(slurm, unix.1);
    // `now` is later than the log's last event, so it is accepted.
    ok(&["sshare", "-P", "--events", &log, "--at", "now-1hour"]);
    let (success, _, stderr) = run(&["sshare", "--events", &log, "--at", "yesterday"]);
    assert!(!success && stderr.contains("is not a time"), "{stderr}");
}

#[test]
fn sprio_prints_slurms_long_format_weights_and_percent_formats() {
    // datasets/events/priority.jsonl at its last event (t 1700086400), by hand:
    // weights age 1000 (PriorityMaxAge 1 day), fair-share 10000, QOS 2000
    // (high 10, normal 5: the largest 10), TRES CPU=100 over 64 CPUs.
    // Job 1 (alice, high, 16 CPUs, a day old): age 1000, fair-share 0.5 *
    // 10000 = 5000, QOS 2000, cpu 16/64 * 100 = 25: 8025. Job 2 (bob, normal,
    // 32 CPUs, half a day): 500 + 10000 + 1000 + 50 = 11550. Job 3 is held and
    // job 4 not yet eligible: neither is listed.
    let log = dataset("events/priority.jsonl");
    // sprio -l: "%.15i %9r %.8u %.8o %.10Y %.10S %.10A %.10B %.10F %.10J
    // %.10P %.10n %.10Q %.11N %.20T" (sprio.c), QOSNAME as %.10n.
    assert_eq!(
        ok(&["sprio", "-l", "--events", &log]),
        "          JOBID PARTITION     USER  ACCOUNT   PRIORITY       SITE        AGE      ASSOC  FAIRSHARE    JOBSIZE  PARTITION    QOSNAME        QOS        NICE                 TRES\n\
         \x20             1              alice      lab       8025          0       1000          0       5000          0          0       high       2000           0               cpu=25\n\
         \x20             2                bob      lab      11550          0        500          0      10000          0          0     normal       1000           0               cpu=50\n"
    );
    // sprio -w: Slurm's short default, "%.15i %9r %.10Y %.10S" and a column
    // per factor whose weight is not 0 (age, fair-share, QOS, TRES); the
    // weights row: SITE 1, each weight, the TRES weights.
    assert_eq!(
        ok(&["sprio", "-w", "--events", &log]),
        "          JOBID PARTITION   PRIORITY       SITE        AGE  FAIRSHARE        QOS                 TRES\n\
         \x20       Weights                               1       1000      10000       2000              cpu=100\n"
    );
    // -o with % specifiers: suffixes, widths and cuts as sprio's (a header
    // is cut to the width as a cell is: PRIORITY in 6 is "PRIORI"; the QOS
    // factor 0.5000000 in 3 is "0.5").
    assert_eq!(
        ok(&[
            "sprio",
            "-o",
            "%i:%.6Y|%n|%5u|%.3q",
            "-u",
            "bob",
            "--events",
            &log
        ]),
        "JOBID:PRIORI|QOSNAME|USER |QOS\n2: 11550|normal|bob  |0.5\n"
    );
    assert_eq!(
        ok(&["sprio", "-h", "-o", "%i %F", "--events", &log]),
        "1 5000\n2 10000\n"
    );
    let (success, _, stderr) = run(&["sprio", "-o", "%i %Z", "--events", &log]);
    assert!(
        !success && stderr.contains("unknown specifier `%Z`"),
        "{stderr}"
    );
}
