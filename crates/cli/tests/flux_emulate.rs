//! flux-accounting's fair-share emulator, end to end: each of its own test
//! inputs (`datasets/flux/emulate/`, from flux-framework/flux-accounting
//! v0.60.0's `t/t1098-fairshare-emulate.t`; `export_db.json` is what
//! `export-db -F` writes for `t/t1099-export-db-fairshare.t`'s banks) through
//! `fairflow import flux --emulate`, then `fairflow view-bank
//! --emulate-format` on both engines, against the outputs its tests expect
//! of `flux account fairshare-emulate` (`-o "{username},{fairshare}"`, `-P`,
//! `--json`) and, for the table, written by hand from its `format_results`
//! (`datasets/flux/emulate/README.md` says which is which).

#[path = "support/binary.rs"]
mod binary;
use binary::{fairflow, text};

use std::path::PathBuf;

fn emulate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../datasets/flux/emulate")
}

fn expected(name: &str) -> String {
    std::fs::read_to_string(emulate_dir().join(name)).unwrap()
}

/// The examples with an expected `-o "{username},{fairshare}"` output.
const EXAMPLES: [&str; 7] = [
    "small_no_tie",
    "small_tie",
    "small_tie_all",
    "single_user",
    "deeply_nested",
    "identical_weights",
    "export_db",
];

const ENGINES: [&[&str]; 2] = [
    &["--engine", "batch"],
    &["--engine", "incremental", "--workers", "2"],
];

/// `import flux --emulate NAME.json` into a log in `dir`.
fn import(dir: &std::path::Path, name: &str) -> PathBuf {
    let log = dir.join(format!("{name}.jsonl"));
    let input = emulate_dir().join(format!("{name}.json"));
    let out = fairflow(&[
        "import",
        "flux",
        "--emulate",
        input.to_str().unwrap(),
        "--time",
        "1700000000",
        "-o",
        log.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{name}: {}", text(&out.stderr));
    // Their inputs' bank usages are their users' sums: no notes.
    assert_eq!(text(&out.stderr), "", "{name}");
    log
}

fn view(log: &std::path::Path, form: &[&str], engine: &[&str]) -> String {
    let mut args = vec!["view-bank", "--emulate-format"];
    args.extend(form);
    args.extend(["--events", log.to_str().unwrap()]);
    args.extend(engine);
    let out = fairflow(&args);
    assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
    text(&out.stdout)
}

#[test]
fn every_example_gives_the_emulators_fairshares_in_its_order() {
    let dir = tempfile::tempdir().unwrap();
    for name in EXAMPLES {
        let log = import(dir.path(), name);
        for engine in ENGINES {
            let parsable = view(&log, &["-P"], engine);
            // `-o "{username},{fairshare}"`: -P's first and last cells.
            let pairs: String = parsable
                .lines()
                .map(|line| {
                    let cells: Vec<&str> = line.split('|').collect();
                    format!("{},{}\n", cells[0], cells[4])
                })
                .collect();
            assert_eq!(
                pairs,
                expected(&format!("{name}.csv.expected")),
                "{name} {engine:?}"
            );
        }
    }
}

#[test]
fn the_parsable_json_and_table_forms_are_the_emulators_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let tie_all = import(dir.path(), "small_tie_all");
    let no_tie = import(dir.path(), "small_no_tie");
    for engine in ENGINES {
        assert_eq!(
            view(&tie_all, &["-P"], engine),
            expected("small_tie_all.parsable.expected")
        );
        assert_eq!(
            view(&tie_all, &["--json"], engine),
            expected("small_tie_all.json.expected")
        );
        assert_eq!(
            view(&no_tie, &[], engine),
            expected("small_no_tie.table.expected")
        );
    }
}

#[test]
fn a_bank_without_users_is_the_emulators_error_and_bad_input_names_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let empty = import(dir.path(), "empty_hierarchy");
    let out = fairflow(&[
        "view-bank",
        "--emulate-format",
        "--events",
        empty.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("no users found under bank root"),
        "{}",
        text(&out.stderr)
    );
    let bad = dir.path().join("bad.json");
    std::fs::write(
        &bad,
        r#"{"root": {"bank": "root", "children": [{"bank": "a", "shares": -3}]}}"#,
    )
    .unwrap();
    let log = dir.path().join("bad.jsonl");
    let out = fairflow(&[
        "import",
        "flux",
        "--emulate",
        bad.to_str().unwrap(),
        "-o",
        log.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("bad.json: root.children[0].shares: -3 is not from 0 to"),
        "{}",
        text(&out.stderr)
    );
    assert!(!log.exists(), "nothing is written on an error");
}
