//! Tests of sprio's `%` formats, `-l` and `-w`, on a hand-built job; every
//! expected line is written out by hand from Slurm's `print.c` widths and
//! number formats (the module documentation).

use fairflow_model::config::Config;
use fairflow_model::report::{JobPriority, JobState};
use fairflow_model::tres::parse_weight_list;

use super::{answer, render, render_weights, Format, SlurmView, LONG, LONG_NORMALIZED};

/// Job 9 of the sprio tests (`sprio::tests::slurm_job`): weighted site 7,
/// age 0.5 * 1000 = 500, assoc 2000, fair-share 0.25 * 10000 = 2500, job
/// size 0.15 * 4000 = 600, partition 0.5 * 5000 = 2500, QOS 0.25 * 3000 =
/// 750, nice 100, TRES cpu 0.1 * 800 = 80, mem 0.1 * 2048 = 204.8 (prints
/// 205), gpu 0 (left out); partition batch, QOS normal, user alice, account b.
fn job() -> JobPriority {
    crate::sprio::tests::slurm_job("9", 9041, JobState::Pending)
}

fn config() -> Config {
    Config {
        weight_age: 1000,
        weight_assoc: 2000,
        weight_fairshare: 10000,
        weight_job_size: 4000,
        weight_partition: 5000,
        weight_qos: 3000,
        weight_tres: parse_weight_list("CPU=8000").unwrap(),
        ..Config::default()
    }
}

#[test]
fn the_long_format_has_slurms_columns_with_qosname() {
    // sprio.c's -l: "%.15i %9r %.8u %.8o %.10Y %.10S %.10A %.10B %.10F
    // %.10J %.10P %.10n %.10Q %.11N %.20T"; `.` right-justifies, PARTITION
    // (%9r) is left-justified; QOSNAME (%.10n, Slurm 23.02) between the
    // partition and QOS factors.
    let text = render(&[job()], &Format::parse(LONG).unwrap(), true);
    assert_eq!(
        text,
        "          JOBID PARTITION     USER  ACCOUNT   PRIORITY       SITE        AGE      ASSOC  FAIRSHARE    JOBSIZE  PARTITION    QOSNAME        QOS        NICE                 TRES\n\
         \x20             9 batch        alice        b       9041          7        500       2000       2500        600       2500     normal        750         100       cpu=80,mem=205\n"
    );
}

#[test]
fn the_normalized_long_format_is_left_justified_without_site_and_nice() {
    // "%.15i %9r %.8u %.8o %10y %10a %10b %10f %10j %10p %10n %10q %20t":
    // PRIORITY is 9041 / (2^32 - 1) = 0.0000021050218... as %16.14f
    // ("0.00000210502185"), cut to its first 10 characters; normalized
    // factors %.7f, TRES %.2f.
    let text = render(&[job()], &Format::parse(LONG_NORMALIZED).unwrap(), true);
    assert_eq!(
        text,
        "          JOBID PARTITION     USER  ACCOUNT PRIORITY   AGE        ASSOC      FAIRSHARE  JOBSIZE    PARTITION  QOSNAME    QOS        TRES                \n\
         \x20             9 batch        alice        b 0.00000210 0.5000000  1.0000000  0.2500000  0.1500000  0.5000000  normal     0.2500000  cpu=0.10,mem=0.10   \n"
    );
}

#[test]
fn the_weights_row_prints_each_weight_under_its_column() {
    // print.c with job == -1: JOBID "Weights", SITE 1, each factor column its
    // PriorityWeight*, TRES the PriorityWeightTRES list; every other cell empty.
    let text = render_weights(&config(), &Format::parse(LONG).unwrap(), true);
    assert_eq!(
        text.lines().nth(1).unwrap(),
        "        Weights                                                 1       1000       2000      10000       4000       5000                  3000                         cpu=8000"
    );
    // The short default (sprio -w): "%.15i %9r %.10Y %.10S" and a column per
    // factor whose weight is not 0.
    let short = Format::default_for(&config(), false, false, false);
    assert_eq!(
        render_weights(&config(), &short, false),
        "        Weights                               1       1000       2000      10000       4000       5000       3000             cpu=8000\n"
    );
    // Age and QOS weighted 0: their columns go.
    let sparse = Config {
        weight_age: 0,
        weight_qos: 0,
        weight_tres: Default::default(),
        ..config()
    };
    assert_eq!(
        render_weights(&sparse, &Format::default_for(&sparse, false, false, true), true),
        "          JOBID PARTITION     USER   PRIORITY       SITE      ASSOC  FAIRSHARE    JOBSIZE  PARTITION\n\
         \x20       Weights                                        1       2000      10000       4000       5000\n"
    );
}

#[test]
fn a_custom_format_keeps_its_prefix_suffixes_and_cuts_to_width() {
    // Prefix "ID:", %5i left-justified to 5, %.3r right-justified and cut to
    // 3 ("bat"), %n without width as is, %s (SLUID) empty for a job without
    // one, else its SLUID (%.15s: padded on the left to 15).
    let format = Format::parse("ID:%5i|%.3r|%n|%s").unwrap();
    assert_eq!(
        render(&[job()], &format, true),
        "ID:JOBID|PAR|QOSNAME|SLUID\nID:9    |bat|normal|\n"
    );
    assert_eq!(render(&[job()], &format, false), "ID:9    |bat|normal|\n");
    let view = SlurmView {
        format: Some("%i %.15s".into()),
        ..SlurmView::default()
    };
    assert!(view.prints_sluids());
    let sluid = fairflow_model::Sluid::parse("s00dkdvdna0005").unwrap();
    let sluids = std::sync::Arc::new([("9".to_string(), sluid)].into_iter().collect());
    let keyed = answer(&[job()], &config(), false, &view, false, sluids).unwrap();
    assert_eq!(keyed, "JOBID           SLUID\n9  s00DKDVDNA0005\n");
    assert!(!SlurmView::default().prints_sluids());
    let error = Format::parse("%.15i %9z").unwrap_err().to_string();
    assert!(error.contains("unknown specifier `%z`"), "{error}");
    assert!(Format::parse("%.15")
        .unwrap_err()
        .to_string()
        .contains("without a letter"));
}

#[test]
fn a_held_job_is_not_listed_and_pairs_are_rows() {
    let mut held = job();
    held.job = "10".into();
    held.state = JobState::Held;
    let format = Format::parse("%i %r %Y").unwrap();
    assert_eq!(render(&[job(), held], &format, false), "9 batch 9041\n");
}

#[test]
fn widths_and_specifier_counts_are_bounded_at_parse() {
    // Rust's formatter panics on a width above 65,535: `%.65536i` must be
    // refused before anything is padded, naming the width and the limit.
    for wide in [
        "%.65536i",
        "%.70000i",
        "%4097i",
        "%99999999999999999999999i",
    ] {
        let error = Format::parse(wide).unwrap_err().to_string();
        assert!(error.contains("is larger than 4096"), "{wide}: {error}");
    }
    let widest = Format::parse("%.4096i").unwrap();
    let line = render(&[job()], &widest, false);
    assert_eq!(line, format!("{:>4096}\n", "9"));
    let many = "%i".repeat(257);
    let error = Format::parse(&many).unwrap_err().to_string();
    assert!(error.contains("more than 256 `%` specifiers"), "{error}");
    assert!(Format::parse(&"%i".repeat(256)).is_ok());
}
