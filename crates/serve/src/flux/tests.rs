//! Tests of Flux's views against flux-accounting's own expected outputs
//! (`t/expected/update_fshare/pre_fshare_update.expected`, `t/t1023-flux-account-banks.t`,
//! `doc/components/job-priorities.rst`).

use super::*;
use fairflow_model::report::{JobPriority, PriorityFactor};
use fairflow_model::PriorityModel;

fn bank(name: &str, depth: usize, shares: u32, usage: f64) -> BankTreeRow {
    BankTreeRow {
        bank: name.into(),
        user: None,
        depth,
        shares: Some(Shares::Value(shares)),
        usage,
        fairshare: None,
    }
}

fn assoc(bank: &str, user: &str, depth: usize, shares: u32, usage: f64, fs: f64) -> BankTreeRow {
    BankTreeRow {
        bank: bank.into(),
        user: Some(user.into()),
        depth,
        shares: Some(Shares::Value(shares)),
        usage,
        fairshare: Some(fs),
    }
}

/// flux-accounting's test tree (`t/scripts/create_test_db.py`) after
/// `update-usage` and `update-fshare` (t1006), with the fair-shares of the
/// expected file (2/7, 1/7, ...), unrounded: the view rounds them.
fn small_no_tie() -> Vec<BankTreeRow> {
    vec![
        bank("root", 0, 1000, 133.0),
        bank("account1", 1, 1000, 121.0),
        assoc("account1", "leaf.1.1", 2, 10000, 100.0, 2.0 / 7.0),
        assoc("account1", "leaf.1.2", 2, 1000, 11.0, 1.0 / 7.0),
        assoc("account1", "leaf.1.3", 2, 100000, 10.0, 3.0 / 7.0),
        bank("account2", 1, 100, 11.0),
        assoc("account2", "leaf.2.1", 2, 100000, 8.0, 5.0 / 7.0),
        assoc("account2", "leaf.2.2", 2, 10000, 3.0, 4.0 / 7.0),
        bank("account3", 1, 10, 1.0),
        assoc("account3", "leaf.3.1", 2, 100, 0.0, 1.0),
        assoc("account3", "leaf.3.2", 2, 10, 1.0, 6.0 / 7.0),
    ]
}

/// `t/expected/update_fshare/pre_fshare_update.expected`, byte for byte.
const PRE_FSHARE_UPDATE: &str = "Bank                            Username              Active           RawShares            RawUsage           Fairshare\n\
root                                                    true                1000               133.0\n\
\x20account1                                               true                1000               121.0\n\
\x20 account1                      leaf.1.1                true               10000               100.0            0.285714\n\
\x20 account1                      leaf.1.2                true                1000                11.0            0.142857\n\
\x20 account1                      leaf.1.3                true              100000                10.0            0.428571\n\
\x20account2                                               true                 100                11.0\n\
\x20 account2                      leaf.2.1                true              100000                 8.0            0.714286\n\
\x20 account2                      leaf.2.2                true               10000                 3.0            0.571429\n\
\x20account3                                               true                  10                 1.0\n\
\x20 account3                      leaf.3.1                true                 100                 0.0                 1.0\n\
\x20 account3                      leaf.3.2                true                  10                 1.0            0.857143\n\
\n\
";

#[test]
fn view_bank_tree_is_flux_accountings_expected_output() {
    assert_eq!(
        render_view_bank(&small_no_tie(), "root", false).unwrap(),
        PRE_FSHARE_UPDATE
    );
}

#[test]
fn view_bank_parsable_and_a_sub_tree() {
    // t1023: `flux account view-bank --parsable --tree Z` and `--tree Z`.
    let rows = vec![
        BankTreeRow {
            shares: None,
            ..bank("root", 0, 0, 0.0)
        },
        bank("Z", 1, 1, 0.0),
        assoc("Z", "user90001", 2, 1, 0.0, 0.5),
        assoc("Z", "user90002", 2, 1, 0.0, 0.5),
    ];
    assert_eq!(
        render_view_bank(&rows, "Z", true).unwrap(),
        "Bank|Username|Active|RawShares|RawUsage|Fairshare\n\
         Z||true|1|0.0\n\
         \x20Z|user90001|true|1|0.0|0.5\n\
         \x20Z|user90002|true|1|0.0|0.5\n\n"
    );
    assert_eq!(
        render_view_bank(&rows, "Z", false).unwrap(),
        "Bank                            Username              Active           RawShares            RawUsage           Fairshare\n\
         Z                                                       true                   1                 0.0\n\
         \x20Z                             user90001                true                   1                 0.0                 0.5\n\
         \x20Z                             user90002                true                   1                 0.0                 0.5\n\n"
    );
    // fairflow's root has no shares: printed as 1.
    assert!(render_view_bank(&rows, "root", true).unwrap().starts_with(
        "Bank|Username|Active|RawShares|RawUsage|Fairshare\nroot||true|1|0.0\n Z||true|1|0.0\n"
    ));
    assert_eq!(render_view_bank(&rows, "nowhere", true), None);
}

#[test]
fn python_floats() {
    assert_eq!(python_float(100.0), "100.0");
    assert_eq!(python_float(0.285714), "0.285714");
    assert_eq!(python_float(0.0), "0.0");
    assert_eq!(python_float(1.5e-5), "1.5e-05");
    assert_eq!(python_float(1e16), "1e+16");
    assert_eq!(python_float(19115069644.16), "19115069644.16");
}

fn flux_job(job: &str, fs: f64, queue: f64, bank: f64, urgency: u8, priority: u64) -> JobPriority {
    let factor =
        |name: &'static str, value: f64, weight: f64| PriorityFactor::new(name, value, weight);
    JobPriority {
        job: job.into(),
        user: "bonds".into(),
        account: "A".into(),
        partition: "bronze".into(),
        qos: String::new(),
        submit_at: 0,
        priority,
        state: JobState::Pending,
        model: PriorityModel::Flux,
        factors: vec![
            factor("fairshare", fs, 100000.0),
            factor("queue", queue, 10000.0),
            factor("bank", bank, 1000.0),
            factor("urgency", f64::from(urgency) - 16.0, 1000.0),
        ],
        pairs: Vec::new(),
        priority_tier: 0,
        expedited: false,
    }
}

#[test]
fn flux_jobs_is_the_documented_breakdown() {
    // doc/components/job-priorities.rst: fair-share 0.5, queue bronze of
    // priority 1, bank A of priority 100 with bank weight 1000: 160000.
    let jobs = [flux_job("fnYtwBV", 0.5, 1.0, 100.0, 16, 160000)];
    let text = render_flux_jobs(&flux_job_rows(&jobs), false);
    let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    assert_eq!(
        lines,
        [
            "JOBID          USER     BANK    BANKPRIO  BANKFACT  QUEUE   QPRIO  QFACT  FAIRSHARE FSFACTOR  URGENCY URGFACT PRIORITY",
            "fnYtwBV        bonds    A       100.0     1000      bronze  1      10000  0.5       100000    16      1000    160000",
        ]
    );
    assert_eq!(
        render_flux_jobs(&flux_job_rows(&jobs), true),
        "fnYtwBV\n\
         = (FAIRSHARE * FAIRSHARE_WEIGHT) + (QUEUE_PRIORITY * QUEUE_WEIGHT) + (BANK_PRIORITY * BANK_WEIGHT) + (URGENCY_WEIGHT * (URGENCY - 16))\n\
         = (0.5 * 100000) + (1 * 10000) + (100.0 * 1000) + (1000 * (16 - 16))\n\
         = 50000.0 + 10000 + 100000.0 + 0\n\
         = 160000\n\n"
    );
}
