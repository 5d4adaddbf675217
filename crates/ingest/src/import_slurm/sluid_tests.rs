//! The queue's eleventh cell, Slurm 26.05's SLUID (`squeue -O
//! ...,EligibleTime:|,Sluid`), on hand-written rows.

use super::*;

const T: Time = 1_700_000_000;
const ASSOC: &str = "c|a||1|root\nc|a|u|1|\n";

fn import_queue(squeue: &str) -> Result<Vec<Event>, ImportError> {
    import_slurm(&SlurmImport {
        assoc: Source {
            name: "assoc.txt",
            text: ASSOC,
        },
        sshare: None,
        slurm_conf: None,
        squeue: Some(Source {
            name: "squeue.txt",
            text: squeue,
        }),
        qos: None,
        nodes: None,
        sacct: None,
        cluster: None,
        t: T,
    })
}

#[test]
fn a_sluid_cell_keys_the_job_and_none_is_none() {
    // Job 1 with a SLUID (lower case, read as Slurm reads it), job 2 from
    // before the upgrade (`s0000000000000`), job 3 without the cell.
    let squeue = "\
1|u|a|p|q|2023-11-10T08:00:00|1|1|30:00|2023-11-10T08:00:00|s00dkdvdna0005
2|u|a|p|q|2023-11-10T09:00:00|1|1|30:00|2023-11-10T09:00:00|s0000000000000
3|u|a|p|q|2023-11-10T10:00:00|1|1|30:00|2023-11-10T10:00:00
";
    let got = import_queue(squeue).unwrap();
    let sluids: Vec<(String, Option<String>)> = (got.iter())
        .filter_map(|e| match &e.op {
            Op::Submit { job, spec, .. } => Some((job.clone(), spec.sluid.map(|s| s.to_string()))),
            _ => None,
        })
        .collect();
    assert_eq!(
        sluids,
        [
            ("1".into(), Some("s00DKDVDNA0005".into())),
            ("2".into(), None),
            ("3".into(), None)
        ]
    );
}

#[test]
fn a_malformed_or_repeated_sluid_names_the_line_and_the_field() {
    let row = |id: &str, sluid: &str| {
        format!("{id}|u|a|p|q|2023-11-10T08:00:00|1|1|30:00|2023-11-10T08:00:00|{sluid}\n")
    };
    let bad =
        import_queue(&(row("1", "s00DKDVDNA0005") + &row("2", "sZ0DKDVDNA0005"))).unwrap_err();
    assert_eq!(
        (bad.file.as_str(), bad.line, bad.field.as_deref()),
        ("squeue.txt", 2, Some("Sluid"))
    );
    assert!(
        bad.reason.contains("at most `F`, not `Z`"),
        "{}",
        bad.reason
    );
    let twice =
        import_queue(&(row("1", "s00DKDVDNA0005") + &row("2", "S00dkdvdna0005"))).unwrap_err();
    assert_eq!((twice.line, twice.field.as_deref()), (2, Some("Sluid")));
    assert_eq!(twice.reason, "SLUID s00DKDVDNA0005 is line 1's job's too");
    let long = import_queue(&format!("{}|x\n", row("1", "s00DKDVDNA0005").trim_end())).unwrap_err();
    assert!(
        long.reason
            .starts_with("expected 9 to 11 `|`-separated fields"),
        "{}",
        long.reason
    );
}
