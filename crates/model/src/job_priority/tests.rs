//! Tests of a job's priority: Slurm's and Flux's factors and partition/QOS
//! pairs worked by hand, and the allocation-free priorities equal to the
//! factor lists' sums.

use super::*;

/// The allocation-free priorities equal the factor lists' sums bit for
/// bit, over inputs that exercise every factor (weights 0 and not, raw
/// and normalised, TRES, caps, Flux's user factor and urgency ends).
#[test]
fn priorities_without_the_list_are_the_lists_sums() {
    let tres = [
        SlurmTresInput {
            name: "cpu",
            weight: 3.7,
            count: 12.0,
            total: Some(1024.0),
        },
        SlurmTresInput {
            name: "mem",
            weight: 0.0,
            count: 5.0,
            total: None,
        },
        SlurmTresInput {
            name: "gres/gpu",
            weight: 1e-3,
            count: 2.0,
            total: None,
        },
    ];
    for (i, now) in [None, Some(0), Some(1_000), Some(86_400), Some(10_000_000)]
        .into_iter()
        .enumerate()
    {
        for raw in [false, true] {
            let mut job = slurm_job(&tres);
            job.raw = SlurmRawFactors {
                assoc: raw,
                partition: raw,
                qos: !raw,
                tres: raw,
            };
            job.weights.assoc = 1234 * i as u32;
            job.weights.job_size = 777;
            job.weights.qos = 4321;
            job.assoc_priority = 17;
            job.max_assoc = 40;
            job.qos_priority = 3;
            job.max_qos = 9;
            job.fairshare = 0.123_456_789;
            job.site = 11 * i as i64;
            job.nice = 5 - 3 * i as i64;
            let factors = slurm_job_factors(&job, now);
            assert_eq!(
                slurm_job_priority_at(&job, now),
                slurm_job_priority(&factors, job.site, job.nice),
                "slurm, now {now:?}, raw {raw}"
            );
        }
    }
    for (urgency, user_priority) in [(0, None), (16, Some(-3)), (20, Some(7)), (31, None)] {
        for now in [None, Some(50), Some(5_000_000)] {
            let job = FluxJobInputs {
                weights: FluxWeights {
                    fairshare: 100_000,
                    queue: 10_000,
                    bank: 100,
                    urgency: 1000,
                    wait_time: 333,
                    qos: 10_000,
                    job_size: 7,
                    user: 10,
                    max_wait_secs: 86_400,
                },
                fairshare: 0.7321,
                queue_priority: 3,
                bank_priority: -2,
                urgency,
                eligible_at: 10,
                qos_priority: 4,
                max_qos: 12,
                nodes: 3.0,
                cluster_nodes: 64,
                user_priority,
            };
            let factors = flux_job_factors(&job, now);
            assert_eq!(
                flux_job_priority_at(&job, now),
                flux_job_priority(&factors, urgency),
                "flux, urgency {urgency}, now {now:?}"
            );
        }
    }
}

fn slurm_job<'a>(tres: &'a [SlurmTresInput<'a>]) -> SlurmJobInputs<'a> {
    SlurmJobInputs {
        weights: SlurmWeights {
            age: 1000,
            assoc: 0,
            fairshare: 10_000,
            job_size: 0,
            partition: 1000,
            qos: 0,
        },
        raw: SlurmRawFactors::default(),
        max_age_secs: 7 * 86_400,
        accrue_at: 0,
        assoc_priority: 5,
        max_assoc: 10,
        fairshare: 0.5,
        size: JobSizeInputs {
            min_nodes: 1.0,
            cpus: 1.0,
            cluster_nodes: 10.0,
            cluster_cpus: 100.0,
            time_limit_mins: None,
            favor_small: false,
            small_relative_to_time: false,
        },
        partition_job_factor: 1,
        max_partition: 2,
        qos_priority: 0,
        max_qos: 0,
        site: 7,
        nice: 3,
        tres,
    }
}

#[test]
fn slurm_factors_by_hand() {
    // Half a week of age at weight 1000 is 500; fair-share 0.5 at 10000 is
    // 5000; partition 1/2 at 1000 is 500; site 7, nice 3; assoc and job
    // size are weighted 0 and so 0 (not computed).
    let tres = [SlurmTresInput {
        name: "cpu",
        weight: 2000.0,
        count: 25.0,
        total: Some(100.0),
    }];
    let job = slurm_job(&tres);
    let factors = slurm_job_factors(&job, Some(7 * 86_400 / 2));
    let names: Vec<&str> = factors.iter().map(|f| f.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "site",
            "age",
            "assoc",
            "fairshare",
            "jobsize",
            "partition",
            "qos",
            "nice",
            "tres/cpu"
        ]
    );
    assert_eq!(factors[SLURM_AGE_FACTOR].weighted, 500.0);
    assert_eq!(factors[2].normalized, 0.0);
    assert_eq!(factors[3].weighted, 5000.0);
    assert_eq!(factors[5].weighted, 500.0);
    assert_eq!(factors[8].weighted, 500.0);
    // 500 + 5000 + 500 + 500 + 7 - 3.
    assert_eq!(slurm_job_priority(&factors, 7, 3), 6504);
    // Without `now` the age is a placeholder 0 and nothing else moves.
    let placeholder = slurm_job_factors(&job, None);
    assert_eq!(placeholder[SLURM_AGE_FACTOR].normalized, 0.0);
    assert_eq!(placeholder[3..], factors[3..]);
}

#[test]
fn slurm_pairs_by_hand() {
    // A job in partitions p1 (PriorityJobFactor 1, 100 CPUs) and p2 (2,
    // 50 CPUs) with QOS q1 (priority 0) and q2 (priority 4); its own QOS
    // (the first, highest-priority one) has priority 8; the largest
    // partition factor is 2 and the largest QOS priority 10. Weights:
    // fair-share 10000 (factor 0.5: 5000), partition 1000, QOS 2000,
    // age 1000 (half of PriorityMaxAge: 500), TRES cpu 2000 (25 CPUs).
    let p1_tres = [SlurmTresInput {
        name: "cpu",
        weight: 2000.0,
        count: 25.0,
        total: Some(100.0),
    }];
    let p2_tres = [SlurmTresInput {
        total: Some(50.0),
        ..p1_tres[0]
    }];
    let mut job = slurm_job(&p1_tres);
    job.weights.qos = 2000;
    job.qos_priority = 8;
    job.max_qos = 10;
    let now = Some(7 * 86_400 / 2);
    let pair = |partition_job_factor, tres, qos_priority| SlurmPairInputs {
        partition_job_factor,
        tres,
        qos_priority,
    };
    let weighted = |factors: &[PriorityFactor], name: &str| {
        factors.iter().find(|f| f.name == name).unwrap().weighted
    };
    // (p1, q2): partition 1/2 · 1000 = 500, QOS 4/10 · 2000 = 800,
    // cpu 25/100 · 2000 = 500: 500 + (500 + 5000 + 800 + 500 + 7) - 3.
    let p1_q2 = slurm_pair_factors(&job, &pair(1, &p1_tres[..], 4), now);
    assert_eq!(weighted(&p1_q2, "partition"), 500.0);
    assert_eq!(weighted(&p1_q2, "qos"), 800.0);
    assert_eq!(weighted(&p1_q2, "tres/cpu"), 500.0);
    assert_eq!(slurm_pair_priority(&p1_q2, 7, 3), 7304);
    // (p2, q2): partition 2/2 · 1000 = 1000, cpu 25/50 · 2000 = 1000:
    // 1000 + (500 + 5000 + 800 + 1000 + 7) - 3.
    let p2_q2 = slurm_pair_factors(&job, &pair(2, &p2_tres[..], 4), now);
    assert_eq!(slurm_pair_priority(&p2_q2, 7, 3), 8304);
    // (p2, q1): q1 has no priority, so the job's own QOS factor stays,
    // 8/10 · 2000 = 1600: 1000 + (500 + 5000 + 1600 + 1000 + 7) - 3.
    let p2_q1 = slurm_pair_factors(&job, &pair(2, &p2_tres[..], 0), now);
    assert_eq!(weighted(&p2_q1, "qos"), 1600.0);
    assert_eq!(slurm_pair_priority(&p2_q1, 7, 3), 9104);
    // The shared factors are the job's, in the job's order.
    let own = slurm_job_factors(&job, now);
    assert_eq!(p2_q1[..5], own[..5]);
    // The same lists from the job's own factors (what the incremental
    // engine holds) and the pair's partition, QOS and TRES.
    let norms = SlurmPairNorms {
        weights: job.weights,
        raw: job.raw,
        max_partition: job.max_partition,
        max_qos: job.max_qos,
    };
    for (pair, expected) in [
        (pair(1, &p1_tres[..], 4), &p1_q2),
        (pair(2, &p2_tres[..], 4), &p2_q2),
        (pair(2, &p2_tres[..], 0), &p2_q1),
    ] {
        assert_eq!(&slurm_pair_factors_from_job(&own, &norms, &pair), expected);
    }
    // Floor and cap as for a job: a nice of 10^6 gives 1.
    assert_eq!(slurm_pair_priority(&p2_q1, 7, 1_000_000), 1);
    assert_eq!(slurm_pair_priority(&p2_q1, 1 << 40, 0), 0xFFFF_FFFF);
}

#[test]
fn flux_factors_by_hand() {
    // flux-accounting's defaults: fair-share 100000, queue 10000; the
    // job's fair-share 0.25, queue priority 2, urgency 16: 25000 + 20000.
    let job = FluxJobInputs {
        weights: FluxWeights {
            fairshare: 100_000,
            queue: 10_000,
            wait_time: 100,
            max_wait_secs: 1000,
            user: 1024,
            ..FluxWeights::default()
        },
        fairshare: 0.25,
        queue_priority: 2,
        bank_priority: 0,
        urgency: 16,
        eligible_at: 0,
        qos_priority: 0,
        max_qos: 0,
        nodes: 1.0,
        cluster_nodes: 0,
        user_priority: Some(-512),
    };
    let factors = flux_job_factors(&job, Some(500));
    assert_eq!(factors[FLUX_WAIT_FACTOR].name, "wait_time");
    assert_eq!(factors[FLUX_WAIT_FACTOR].weighted, 50.0);
    // The user factor -512/1024 at weight 1024 lowers the job by 512.
    assert_eq!(factors[7].weighted, -512.0);
    assert_eq!(flux_job_priority(&factors, 16), 25_000 + 20_000 + 50 - 512);
    assert_eq!(flux_job_priority(&factors, 0), 0);
    assert_eq!(flux_job_priority(&factors, 31), 0xFFFF_FFFF);
}
