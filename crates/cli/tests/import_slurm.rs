//! End to end: `fairflow import slurm` fed a site's Slurm outputs in the forms
//! Slurm prints by default (`datasets/slurm/site/`: `sacctmgr show assoc tree
//! -P`, `sshare -a -l -P`, `scontrol show config`, `sacctmgr show qos -P`,
//! `scontrol show node`, and squeue's `-O` form with the submit and eligible
//! times), then `sprio` on both engines. The expected rows are computed by
//! hand in the comments from those files and Slurm's multifactor formulas
//! (`priority_multifactor.shtml`).

#[path = "support/binary.rs"]
mod binary;
use binary::{dataset, fairflow, text};

use std::path::PathBuf;

/// A fresh path in the temporary directory.
fn temp_path(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fairflow-import-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn import_site(extra: &[&str]) -> (PathBuf, String) {
    let log = temp_path(&format!("site-{}.jsonl", extra.len()));
    let site = |f: &str| dataset(&format!("slurm/site/{f}"));
    let mut args: Vec<String> = [
        "import",
        "slurm",
        "--assoc",
        &site("assoc.txt"),
        "--sshare",
        &site("sshare.txt"),
        "--slurm-conf",
        &site("config.txt"),
        "--squeue",
        &site("squeue.txt"),
        // squeue's times are local: the import's time is too, so the ages
        // below do not depend on the time zone.
        "--time",
        "2026-11-24T12:00:00",
        "-o",
        log.to_str().unwrap(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend(extra.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = fairflow(&args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    (log, text(&out.stderr))
}

const HEADER: &str =
    "JOBID|PARTITION|USER|ACCOUNT|PRIORITY|SITE|AGE|ASSOC|FAIRSHARE|JOBSIZE|PARTITION|QOS|NICE|TRES";

#[test]
fn an_imported_site_gives_its_own_sprio_on_both_engines() {
    let (log, stderr) = import_site(&[
        "--qos",
        &dataset("slurm/site/qos.txt"),
        "--nodes",
        &dataset("slurm/site/nodes.txt"),
    ]);
    // Every input was given: nothing to warn about.
    assert_eq!(stderr, "");
    // Weights (config.txt): age 1000 (PriorityMaxAge 4 days), fair-share
    // 10000, job size 1000, QOS 2000; no flags (Fair Tree, AGE from the
    // eligible time).
    // FAIRSHARE (Fair Tree, users ranked over the whole tree, factor = rank /
    // 3 counted from the bottom): under root, root's own user association
    // (no usage: level fs inf) comes before phys (shares 1/2, usage 1000 of
    // 1000: 0.5); under phys bob (no usage: inf) before alice (1/2 over 1:
    // 0.5). Order root, bob, alice: root 3/3, bob 2/3 -> 6666.67 (sprio
    // rounds: 6667), alice 1/3 -> 3333.33 (3333).
    // JOBSIZE (nodes.txt: 4 nodes of 32 CPUs, 128 CPUs): (nodes / 4 + cpus /
    // 128) / 2.
    // QOS (qos.txt): high 100 of the highest 100 -> 1.0 -> 2000; normal 0.
    // The priority is the sum, truncated to an integer as Slurm does.
    // Job 1: alice, eligible 2026-11-22T12:00 (submitted a day earlier), so
    // 2 days of 4: age 0.5 -> 500; fair-share 3333.33; 2 nodes, 64 CPUs:
    // (0.5 + 0.5) / 2 = 0.5 -> 500; QOS high 2000: 6333.33 -> 6333.
    // Job 2: bob, eligible at its submit, 2026-11-23T12:00: 1 day of 4, 0.25
    // -> 250; fair-share 6666.67; 1 node, 32 CPUs: (0.25 + 0.25) / 2 = 0.25
    // -> 250; QOS normal 0: 7166.67 -> 7166.
    // Job 3: alice, not yet eligible (`Unknown`): age 0; 3333.33; 250; 0:
    // 3583.33 -> 3583.
    let expected = format!(
        "{HEADER}\n\
         1|batch|alice|phys|6333|0|500|0|3333|500|0|2000|0|\n\
         2|batch|bob|phys|7166|0|250|0|6667|250|0|0|0|\n\
         3|batch|alice|phys|3583|0|0|0|3333|250|0|0|0|\n"
    );
    for engine in ["batch", "incremental"] {
        let out = fairflow(&[
            "sprio",
            "-P",
            "--engine",
            engine,
            "--events",
            log.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert_eq!(text(&out.stderr), "", "{engine}: no line is rejected");
        assert_eq!(text(&out.stdout), expected, "{engine}");
    }
}

#[test]
fn a_missing_input_is_named_with_the_factor_it_leaves_at_its_default() {
    let (log, stderr) = import_site(&[]);
    assert!(stderr.contains("no --qos"), "{stderr}");
    assert!(stderr.contains("(QOS)"), "{stderr}");
    assert!(stderr.contains("no cluster size"), "{stderr}");
    assert!(stderr.contains("JOBSIZE"), "{stderr}");
    assert!(!stderr.contains("--sshare"), "{stderr}");
    // Without the cluster's size and the QOS' priorities, JOBSIZE and QOS are
    // 0; AGE and FAIRSHARE are as above: job 2 is 250 + 6666.67 -> 6916.
    let out = fairflow(&["sprio", "-P", "-j", "2", "--events", log.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        format!("{HEADER}\n2|batch|bob|phys|6916|0|250|0|6667|0|0|0|0|\n")
    );
}

/// `sshare -P` of an import of `tree` (`--assoc FILE` or `--dump FILE`) with
/// `datasets/slurm/sshare.txt`'s usage.
fn sshare_of(flag: &str, tree: &str) -> String {
    let log = temp_path(&format!("tree{flag}.jsonl"));
    let out = fairflow(&[
        "import",
        "slurm",
        flag,
        &dataset(tree),
        "--sshare",
        &dataset("slurm/sshare.txt"),
        "--time",
        "1800000000",
        "-o",
        log.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = fairflow(&["sshare", "-P", "--events", log.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout)
}

#[test]
fn import_slurm_dump_gives_the_tree_assoc_gives() {
    // datasets/slurm/dump.cfg is datasets/slurm/assoc.txt's tree as `sacctmgr
    // dump` writes it: the same rows, shares and usage in sshare's tree order.
    let from_dump = sshare_of("--dump", "slurm/dump.cfg");
    assert_eq!(from_dump, sshare_of("--assoc", "slurm/assoc.txt"));
    assert!(from_dump.contains("\nf|user5|parent|"), "{from_dump}");
    // One of the two, not both.
    let out = fairflow(&[
        "import",
        "slurm",
        "--assoc",
        &dataset("slurm/assoc.txt"),
        "--dump",
        &dataset("slurm/dump.cfg"),
    ]);
    assert!(!out.status.success());
    let out = fairflow(&["import", "slurm", "--time", "1"]);
    assert!(!out.status.success());
}

#[test]
fn usage_rebuilt_from_sacct_is_billed_and_decayed_to_the_import_time() {
    let log = temp_path("sacct.jsonl");
    let out = fairflow(&[
        "import",
        "slurm",
        "--assoc",
        &dataset("slurm/assoc.txt"),
        "--sacct",
        &dataset("slurm/sacct.txt"),
        "--slurm-conf",
        &dataset("slurm/slurm.conf"),
        "--time",
        "2026-11-24T12:00:00",
        "-o",
        log.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = fairflow(&["sshare", "-P", "--events", log.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stderr), "", "no line is rejected");
    let raw_usage = |account: &str, user: &str| -> String {
        text(&out.stdout)
            .lines()
            .map(|l| l.split('|').collect::<Vec<_>>())
            .find(|c| c[0] == account && c[1] == user)
            .map(|c| c[4].to_string())
            .unwrap()
    };
    // A job charges its CPUs (no TRESBillingWeights: billing = CPUs, QOS
    // normal's usage factor 1) per second while it runs, each second decayed
    // by 2^(-age / half-life) (slurm.conf: 7 days = 604800 s) to the import's
    // time T: sum = cpus * hl / ln 2 * (2^(-(T - end)/hl) - 2^(-(T - start)/hl)).
    // Job 1001 (user1): 4 CPUs from 14 to 7 days before T:
    // 4 * 604800 / 0.693147 * (0.5 - 0.25) = 872541.96 -> RawUsage 872541.
    assert_eq!(raw_usage("b", "user1"), "872541");
    // Job 1002 (user2) still runs: 2 CPUs from a day before T to T:
    // 2 * 604800 / 0.693147 * (1 - 2^(-1/7)) = 164520.12 -> 164520.
    assert_eq!(raw_usage("c", "user2"), "164520");
    // Job 1003 never started and 1004 ran no time: user4 used nothing.
    assert_eq!(raw_usage("e", "user4"), "0");
    // root: 872541.96 + 164520.12 = 1037062.08.
    assert_eq!(raw_usage("root", ""), "1037062");

    // sshare's RawUsage and sacct's jobs are two sources of the same usage.
    let out = fairflow(&[
        "import",
        "slurm",
        "--assoc",
        &dataset("slurm/assoc.txt"),
        "--sacct",
        &dataset("slurm/sacct.txt"),
        "--sshare",
        &dataset("slurm/sshare.txt"),
    ]);
    assert!(!out.status.success());
}
