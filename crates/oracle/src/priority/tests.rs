//! Tests of the priority models and the ranked queue. Every expected value is
//! computed by hand in the comment above it, from the formulas of
//! `../shared/notes/slurm-priority.md` §5, `flux-accounting.md` §2 and the
//! Moab seed document.

use fairflow_ingest::reader::read_events;
use fairflow_model::report::{JobPriority, JobState};
use fairflow_model::{Config, PriorityModel};

use super::{evaluate, queue, remembered_incr_only, FairshareFactors};
use crate::Replay;

fn replay(log: &str) -> Replay {
    let mut replay = Replay::new(Config::default());
    replay.feed_all(read_events(log.as_bytes()).map(Result::unwrap));
    assert!(
        replay.report.rejected.is_empty(),
        "{:?}",
        replay.report.rejected
    );
    replay
}

fn factors(items: &[(&str, &str, f64)]) -> FairshareFactors {
    items
        .iter()
        .map(|(a, u, f)| ((a.to_string(), u.to_string()), *f))
        .collect()
}

fn job<'a>(priorities: &'a [JobPriority], id: &str) -> &'a JobPriority {
    priorities
        .iter()
        .find(|p| p.job == id)
        .unwrap_or_else(|| panic!("job {id} is not listed"))
}

fn weighted(p: &JobPriority, name: &str) -> f64 {
    p.factor(name)
        .unwrap_or_else(|| panic!("no factor {name}"))
        .weighted
}

fn normalized(p: &JobPriority, name: &str) -> f64 {
    p.factor(name)
        .unwrap_or_else(|| panic!("no factor {name}"))
        .normalized
}

fn close(actual: f64, expected: f64) {
    assert!(
        (actual - expected).abs() < 1e-9 * expected.abs().max(1.0),
        "{actual} != {expected}"
    );
}

// ---------------------------------------------------------------- Slurm

/// A cluster of 10 nodes, 320 CPUs, 640000 MiB; partitions batch (factor 20)
/// and debug (10); QOS high (100) and normal (25); accounts a (priority 40)
/// and b (10); alice in a (priority 80), bob in b (inherits 10).
const SLURM_BASE: &str = r#"{"op":"config","t":0,"set":{"PriorityWeightAge":1000,"PriorityWeightAssoc":2000,"PriorityWeightFairshare":10000,"PriorityWeightJobSize":4000,"PriorityWeightPartition":5000,"PriorityWeightQOS":3000,"PriorityWeightTRES":"CPU=800,Mem=2048","PriorityMaxAge":"4-0"}}
{"op":"cluster","t":0,"nodes":10,"tres":{"cpu":320,"mem":640000}}
{"op":"partition","t":0,"name":"batch","priority_job_factor":20}
{"op":"partition","t":0,"name":"debug","priority_job_factor":10}
{"op":"qos","t":0,"name":"high","priority":100}
{"op":"qos","t":0,"name":"normal","priority":25}
{"op":"account","t":0,"name":"a","priority":40}
{"op":"account","t":0,"name":"b","priority":10}
{"op":"user","t":0,"user":"alice","account":"a","priority":80}
{"op":"user","t":0,"user":"bob","account":"b"}
{"op":"submit","t":1000,"job":"1","user":"alice","account":"a","partition":"debug","qos":"normal","tres":{"cpu":32,"node":2,"mem":64000},"time_limit":3600,"nice":100,"site_factor":7}
"#;

#[test]
fn slurm_every_factor_weighted_and_summed() {
    // Two days after the submit.
    let log = format!("{SLURM_BASE}{{\"op\":\"tick\",\"t\":173800}}\n");
    let r = replay(&log);
    let all = evaluate(r.state(), &factors(&[("a", "alice", 0.25)]));
    let p = job(&all, "1");
    // age: 172800 s of a 4-day (345600 s) max age = 0.5 -> 500.
    close(normalized(p, "age"), 0.5);
    close(weighted(p, "age"), 500.0);
    // assoc: alice 80, the largest association priority 80 -> 1 -> 2000.
    close(normalized(p, "assoc"), 1.0);
    close(weighted(p, "assoc"), 2000.0);
    // fairshare: 0.25 * 10000 = 2500.
    close(weighted(p, "fairshare"), 2500.0);
    // job size: (2/10 + 32/320)/2 = 0.15 -> 600.
    close(normalized(p, "jobsize"), 0.15);
    close(weighted(p, "jobsize"), 600.0);
    // partition: debug 10 / max 20 = 0.5 -> 2500.
    close(normalized(p, "partition"), 0.5);
    close(weighted(p, "partition"), 2500.0);
    // qos: normal 25 / max 100 = 0.25 -> 750.
    close(normalized(p, "qos"), 0.25);
    close(weighted(p, "qos"), 750.0);
    // TRES: cpu 32/320 = 0.1 * 800 = 80; mem 64000/640000 = 0.1 * 2048 = 204.8.
    close(normalized(p, "tres/cpu"), 0.1);
    close(weighted(p, "tres/cpu"), 80.0);
    close(normalized(p, "tres/mem"), 0.1);
    close(weighted(p, "tres/mem"), 204.8);
    close(weighted(p, "site"), 7.0);
    close(weighted(p, "nice"), -100.0);
    // 500 + 2000 + 2500 + 600 + 2500 + 750 + 80 + 204.8 + 7 - 100 = 9041.8 -> 9041.
    assert_eq!(p.priority, 9041);
    assert_eq!(p.state, JobState::Pending);
    assert_eq!(p.model, PriorityModel::Slurm);
    assert_eq!((p.partition.as_str(), p.qos.as_str()), ("debug", "normal"));
}

#[test]
fn slurm_no_normal_all_uses_raw_values() {
    let log = format!(
        "{SLURM_BASE}{{\"op\":\"config\",\"t\":173800,\"set\":{{\"PriorityFlags\":\"NO_NORMAL_ALL\"}}}}\n"
    );
    let r = replay(&log);
    let all = evaluate(r.state(), &factors(&[("a", "alice", 0.25)]));
    let p = job(&all, "1");
    // assoc 80 * 2000 = 160000; partition 10 * 5000 = 50000; qos 25 * 3000 =
    // 75000; cpu 32 * 800 = 25600; mem 64000 * 2048 = 131072000.
    close(weighted(p, "assoc"), 160_000.0);
    close(weighted(p, "partition"), 50_000.0);
    close(weighted(p, "qos"), 75_000.0);
    close(weighted(p, "tres/cpu"), 25_600.0);
    close(weighted(p, "tres/mem"), 131_072_000.0);
    // 500 + 160000 + 2500 + 600 + 50000 + 75000 + 25600 + 131072000 + 7 - 100 = 131386107.
    assert_eq!(p.priority, 131_386_107);
}

#[test]
fn slurm_zero_weights_zero_factors_and_inherited_assoc() {
    let log = r#"{"op":"config","t":0,"set":{"PriorityWeightAssoc":1000}}
{"op":"account","t":0,"name":"a","priority":40}
{"op":"account","t":0,"name":"b","priority":10}
{"op":"user","t":0,"user":"alice","account":"a","priority":80}
{"op":"user","t":0,"user":"bob","account":"b"}
{"op":"submit","t":10,"job":"2","user":"bob","account":"b"}
{"op":"tick","t":100000}
"#;
    let r = replay(log);
    let p = evaluate(r.state(), &factors(&[("b", "bob", 0.9)]))
        .into_iter()
        .next()
        .unwrap();
    // bob inherits b's 10; the largest is alice's 80: 10/80 = 0.125 -> 125.
    close(normalized(&p, "assoc"), 0.125);
    // Fair-share, age, ... have weight 0: not computed, 0.
    assert_eq!(normalized(&p, "fairshare"), 0.0);
    assert_eq!(normalized(&p, "age"), 0.0);
    assert_eq!(p.priority, 125);
}

#[test]
fn slurm_integer_bounds() {
    // nice 100000 with nothing else: 0 - 100000 < 1 -> 1.
    let low = r#"{"op":"account","t":0,"name":"a"}
{"op":"user","t":0,"user":"u","account":"a"}
{"op":"submit","t":0,"job":"1","user":"u","account":"a","nice":100000}
"#;
    let r = replay(low);
    assert_eq!(evaluate(r.state(), &FairshareFactors::new())[0].priority, 1);
    // Raw CPU count 64 * 100000000 = 6.4e9 > 2^32 - 1 -> 4294967295.
    let high = r#"{"op":"config","t":0,"set":{"PriorityWeightTRES":"CPU=100000000","PriorityFlags":"NO_NORMAL_TRES"}}
{"op":"account","t":0,"name":"a"}
{"op":"user","t":0,"user":"u","account":"a"}
{"op":"submit","t":0,"job":"1","user":"u","account":"a","tres":{"cpu":64}}
"#;
    let r = replay(high);
    assert_eq!(
        evaluate(r.state(), &FairshareFactors::new())[0].priority,
        4_294_967_295
    );
}

#[test]
fn slurm_held_jobs_are_zero_and_not_ranked() {
    let log = r#"{"op":"config","t":0,"set":{"PriorityWeightFairshare":1000}}
{"op":"account","t":0,"name":"a"}
{"op":"user","t":0,"user":"u","account":"a"}
{"op":"submit","t":0,"job":"1","user":"u","account":"a"}
{"op":"submit","t":0,"job":"2","user":"u","account":"a"}
{"op":"hold","t":5,"job":"2"}
"#;
    let r = replay(log);
    let all = evaluate(r.state(), &factors(&[("a", "u", 0.5)]));
    // 0.5 * 1000 = 500 for the pending job; the held job is 0.
    assert_eq!(job(&all, "1").priority, 500);
    let held = job(&all, "2");
    assert_eq!((held.priority, held.state), (0, JobState::Held));
    assert!(held.held());
    let ranked: Vec<String> = queue(&all).into_iter().map(|p| p.job).collect();
    assert_eq!(ranked, vec!["1"]);
}

#[test]
fn slurm_age_begin_time_accrue_always_and_requeue() {
    // Max age 1 day; job 1 submitted at 0 may begin at 43200.
    let base = r#"{"op":"config","t":0,"set":{"PriorityWeightAge":1000,"PriorityMaxAge":"1-0"}}
{"op":"account","t":0,"name":"a"}
{"op":"user","t":0,"user":"u","account":"a"}
{"op":"submit","t":0,"job":"1","user":"u","account":"a","begin":43200}
"#;
    // At 40000 the job may not begin yet: not listed.
    let r = replay(&format!("{base}{{\"op\":\"tick\",\"t\":40000}}\n"));
    assert!(evaluate(r.state(), &FairshareFactors::new()).is_empty());
    // ACCRUE_ALWAYS lists it, aged from its submit: 40000/86400 * 1000 = 462.96 -> 462.
    let r = replay(&format!(
        "{base}{{\"op\":\"config\",\"t\":40000,\"set\":{{\"PriorityFlags\":\"ACCRUE_ALWAYS\"}}}}\n"
    ));
    assert_eq!(
        evaluate(r.state(), &FairshareFactors::new())[0].priority,
        462
    );
    // At 86400: eligible since 43200, age (86400-43200)/86400 = 0.5 -> 500.
    let r = replay(&format!("{base}{{\"op\":\"tick\",\"t\":86400}}\n"));
    assert_eq!(
        evaluate(r.state(), &FairshareFactors::new())[0].priority,
        500
    );
    // With ACCRUE_ALWAYS: from the submit, 86400/86400 = 1 -> 1000.
    let r = replay(&format!(
        "{base}{{\"op\":\"config\",\"t\":86400,\"set\":{{\"PriorityFlags\":\"ACCRUE_ALWAYS\"}}}}\n"
    ));
    assert_eq!(
        evaluate(r.state(), &FairshareFactors::new())[0].priority,
        1000
    );
    // Started at 50000, requeued at 60000: at 81600 its age is 21600/86400 = 0.25 -> 250.
    let r = replay(&format!(
        "{base}{{\"op\":\"start\",\"t\":50000,\"job\":\"1\"}}\n{{\"op\":\"requeue\",\"t\":60000,\"job\":\"1\"}}\n{{\"op\":\"tick\",\"t\":81600}}\n"
    ));
    assert_eq!(
        evaluate(r.state(), &FairshareFactors::new())[0].priority,
        250
    );
}

#[test]
fn slurm_job_size_favor_small_and_relative_to_time() {
    // 2 nodes, 32 CPUs of 8 nodes, 256 CPUs; no time limit, partition max
    // 7680 s = 128 min. (Sizes chosen so every quotient is exact in binary:
    // the final truncation must not meet a rounding error.)
    let base = r#"{"op":"config","t":0,"set":{"PriorityWeightJobSize":512000}}
{"op":"cluster","t":0,"nodes":8,"tres":{"cpu":256}}
{"op":"partition","t":0,"name":"p","max_time":7680}
{"op":"account","t":0,"name":"a"}
{"op":"user","t":0,"user":"u","account":"a"}
{"op":"submit","t":0,"job":"1","user":"u","account":"a","partition":"p","tres":{"cpu":32,"node":2}}
"#;
    let at = |set: &str| {
        let r = replay(&format!(
            "{base}{{\"op\":\"config\",\"t\":1,\"set\":{set}}}\n"
        ));
        evaluate(r.state(), &FairshareFactors::new()).remove(0)
    };
    // Default: (2/8 + 32/256)/2 = (0.25 + 0.125)/2 = 0.1875 -> 96000.
    assert_eq!(at("{}").priority, 96000);
    // FavorSmall: (6/8 + 224/256)/2 = (0.75 + 0.875)/2 = 0.8125 -> 416000.
    assert_eq!(at(r#"{"PriorityFavorSmall":"YES"}"#).priority, 416000);
    // SMALL_RELATIVE_TO_TIME: max(2*256/8, 32) = 64; 64 / 128 min / 256 = 1/512 -> 1000.
    let relative = at(r#"{"PriorityFlags":"SMALL_RELATIVE_TO_TIME"}"#);
    assert_eq!(normalized(&relative, "jobsize"), 1.0 / 512.0);
    assert_eq!(relative.priority, 1000);
    // With FavorSmall: 1 - 1/512 = 511/512 -> 511000.
    let both = at(r#"{"PriorityFlags":"SMALL_RELATIVE_TO_TIME","PriorityFavorSmall":"YES"}"#);
    assert_eq!(both.priority, 511000);
    // The job's own limit wins over the partition's: 3840 s = 64 min -> 1/256 -> 2000.
    let own = replay(&format!(
        "{base}{{\"op\":\"update\",\"t\":1,\"job\":\"1\",\"time_limit\":3840}}\n\
         {{\"op\":\"config\",\"t\":1,\"set\":{{\"PriorityFlags\":\"SMALL_RELATIVE_TO_TIME\"}}}}\n"
    ));
    assert_eq!(
        evaluate(own.state(), &FairshareFactors::new())[0].priority,
        2000
    );
}

#[test]
fn slurm_partition_tres_totals_and_calculate_running() {
    // TRES normalised by the partition's totals (gpu 8) when it has them.
    let log = r#"{"op":"config","t":0,"set":{"PriorityWeightTRES":"GRES/gpu=1000"}}
{"op":"cluster","t":0,"nodes":4,"tres":{"cpu":128,"gres/gpu":32}}
{"op":"partition","t":0,"name":"gpu","tres":{"gres/gpu":8}}
{"op":"account","t":0,"name":"a"}
{"op":"user","t":0,"user":"u","account":"a"}
{"op":"submit","t":0,"job":"1","user":"u","account":"a","partition":"gpu","tres":{"gres/gpu":2}}
{"op":"submit","t":0,"job":"2","user":"u","account":"a","tres":{"gres/gpu":2}}
{"op":"submit","t":0,"job":"3","user":"u","account":"a","tres":{"gres/gpu":4}}
{"op":"start","t":10,"job":"3"}
"#;
    let r = replay(log);
    let all = evaluate(r.state(), &FairshareFactors::new());
    // Job 1: 2/8 = 0.25 -> 250; job 2 (no partition totals): 2/32 -> 62.5 -> 62.
    assert_eq!(job(&all, "1").priority, 250);
    assert_eq!(job(&all, "2").priority, 62);
    // Running jobs are listed only with CALCULATE_RUNNING.
    assert_eq!(all.len(), 2);
    let r = replay(&format!(
        "{log}{{\"op\":\"config\",\"t\":20,\"set\":{{\"PriorityFlags\":\"CALCULATE_RUNNING\"}}}}\n"
    ));
    let all = evaluate(r.state(), &FairshareFactors::new());
    let running = job(&all, "3");
    // 4/32 = 0.125 -> 125.
    assert_eq!((running.priority, running.state), (125, JobState::Running));
    // Running jobs are never in the ranked queue.
    assert_eq!(queue(&all).len(), 2);
}

#[test]
fn slurm_incr_only_never_decreases_while_queued() {
    // Only the assoc factor counts: alice 50 of a maximum 100 -> 500; when
    // bob's priority becomes 200 at t=20 alice's factor drops to 0.25 -> 250.
    let log = r#"{"op":"config","t":0,"set":{"PriorityWeightAssoc":1000,"PriorityFlags":"INCR_ONLY"}}
{"op":"account","t":0,"name":"a"}
{"op":"user","t":0,"user":"alice","account":"a","priority":50}
{"op":"user","t":0,"user":"bob","account":"a","priority":100}
{"op":"submit","t":10,"job":"1","user":"alice","account":"a"}
{"op":"user","t":20,"user":"bob","account":"a","priority":200}
{"op":"tick","t":30}
"#;
    let mut r = replay(log);
    let fs = FairshareFactors::new();
    // The priority at t=10 (500) is remembered.
    assert_eq!(evaluate(r.state(), &fs)[0].priority, 500);
    // Without the flag: 250.
    let plain = replay(&log.replace(",\"PriorityFlags\":\"INCR_ONLY\"", ""));
    assert_eq!(evaluate(plain.state(), &fs)[0].priority, 250);
    // A requeue starts a new stay in the queue: the memory is gone.
    r.feed_all(
        read_events(
            &b"{\"op\":\"start\",\"t\":40,\"job\":\"1\"}\n{\"op\":\"requeue\",\"t\":50,\"job\":\"1\"}\n"[..],
        )
        .map(Result::unwrap),
    );
    assert_eq!(evaluate(r.state(), &fs)[0].priority, 250);
    // Remembering directly with hand-chosen fair-share factors.
    let mut state = plain.state().clone();
    state.config.flags.incr_only = true;
    state.config.weight_fairshare = 10000;
    state.priority_floor = remembered_incr_only(&state, &factors(&[("a", "alice", 0.8)])).floors;
    // Later the factor falls to 0.2: 2000 + 250 < the remembered 8000 + 250.
    assert_eq!(
        evaluate(&state, &factors(&[("a", "alice", 0.2)]))[0].priority,
        8250
    );
}

// ---------------------------------------------------------------- Flux

const FLUX_BASE: &str = r#"{"op":"config","t":0,"set":{"PriorityModel":"flux","FluxWeightBank":1000}}
{"op":"partition","t":0,"name":"bronze","priority":1}
{"op":"account","t":0,"name":"A","priority":100}
{"op":"user","t":0,"user":"u","account":"A"}
"#;

#[test]
fn flux_accounting_documented_example() {
    // F 0.5, bronze queue priority 1, bank A priority 100, bank weight 1000:
    // 100000*0.5 + 10000*1 + 1000*100 + 1000*(16-16) = 160000.
    let log = format!(
        "{FLUX_BASE}{{\"op\":\"submit\",\"t\":0,\"job\":\"1\",\"user\":\"u\",\"account\":\"A\",\"partition\":\"bronze\"}}\n"
    );
    let r = replay(&log);
    let all = evaluate(r.state(), &factors(&[("A", "u", 0.5)]));
    let p = &all[0];
    assert_eq!(p.priority, 160_000);
    assert_eq!(p.model, PriorityModel::Flux);
    close(weighted(p, "fairshare"), 50_000.0);
    close(weighted(p, "queue"), 10_000.0);
    close(weighted(p, "bank"), 100_000.0);
    close(weighted(p, "urgency"), 0.0);
}

#[test]
fn flux_urgency_hold_expedite_and_bounds() {
    let log = format!(
        "{FLUX_BASE}{{\"op\":\"submit\",\"t\":0,\"job\":\"held\",\"user\":\"u\",\"account\":\"A\",\"urgency\":0}}\n\
         {{\"op\":\"submit\",\"t\":0,\"job\":\"fast\",\"user\":\"u\",\"account\":\"A\",\"urgency\":31}}\n\
         {{\"op\":\"submit\",\"t\":0,\"job\":\"u20\",\"user\":\"u\",\"account\":\"A\",\"urgency\":20}}\n"
    );
    let r = replay(&log);
    let all = evaluate(r.state(), &factors(&[("A", "u", 0.5)]));
    // Urgency 0: held, 0, not ranked.
    let held = job(&all, "held");
    assert_eq!((held.priority, held.state), (0, JobState::Held));
    // Urgency 31: 4294967295.
    assert_eq!(job(&all, "fast").priority, 4_294_967_295);
    // Urgency 20: 50000 + 0 (no queue) + 100000 + 1000*4 = 154000.
    assert_eq!(job(&all, "u20").priority, 154_000);
    let ranked: Vec<String> = queue(&all).into_iter().map(|p| p.job).collect();
    assert_eq!(ranked, vec!["fast", "u20"]);
    // A negative bank pushes the sum below 0: 0 (and still ranked).
    let negative = r#"{"op":"config","t":0,"set":{"PriorityModel":"flux","FluxWeightBank":1000}}
{"op":"account","t":0,"name":"B","priority":-1000}
{"op":"user","t":0,"user":"u","account":"B"}
{"op":"submit","t":0,"job":"1","user":"u","account":"B"}
"#;
    let r = replay(negative);
    // 100000*0.5 - 1000000 < 0 -> 0.
    let all = evaluate(r.state(), &factors(&[("B", "u", 0.5)]));
    assert_eq!(all[0].priority, 0);
    assert_eq!(queue(&all).len(), 1);
}

#[test]
fn flux_rounds_half_away_from_zero() {
    let log = r#"{"op":"config","t":0,"set":{"PriorityModel":"flux","FluxWeightFairshare":2,"FluxWeightQueue":0,"FluxWeightUrgency":0}}
{"op":"account","t":0,"name":"A"}
{"op":"user","t":0,"user":"u","account":"A"}
{"op":"submit","t":0,"job":"1","user":"u","account":"A"}
"#;
    let r = replay(log);
    // 2 * 0.25 = 0.5 -> 1; 2 * 0.2 = 0.4 -> 0.
    assert_eq!(
        evaluate(r.state(), &factors(&[("A", "u", 0.25)]))[0].priority,
        1
    );
    assert_eq!(
        evaluate(r.state(), &factors(&[("A", "u", 0.2)]))[0].priority,
        0
    );
}

#[test]
fn flux_design_factors_wait_qos_size_user() {
    let log = r#"{"op":"config","t":0,"set":{"PriorityModel":"flux","FluxWeightFairshare":0,"FluxWeightQueue":0,"FluxWeightUrgency":0,"FluxWeightWaitTime":1000,"FluxMaxWaitTime":"1-0","FluxWeightQOS":2000,"FluxWeightJobSize":10000,"FluxWeightUser":4000}}
{"op":"cluster","t":0,"nodes":10,"tres":{"cpu":320}}
{"op":"qos","t":0,"name":"hi","priority":100}
{"op":"qos","t":0,"name":"mid","priority":50}
{"op":"account","t":0,"name":"A"}
{"op":"user","t":0,"user":"u","account":"A"}
{"op":"submit","t":0,"job":"1","user":"u","account":"A","qos":"mid","tres":{"node":2},"user_priority":-256}
{"op":"submit","t":0,"job":"2","user":"u","account":"A","user_priority":500}
{"op":"tick","t":43200}
"#;
    let r = replay(log);
    let all = evaluate(r.state(), &FairshareFactors::new());
    let p = job(&all, "1");
    // wait 43200/86400 = 0.5 -> 500; qos 50/100 = 0.5 -> 1000; size 2/10 -> 2000;
    // user -256/1024 = -0.25 -> -1000. Sum 2500.
    close(weighted(p, "wait_time"), 500.0);
    close(weighted(p, "qos"), 1000.0);
    close(weighted(p, "jobsize"), 2000.0);
    close(weighted(p, "user"), -1000.0);
    assert_eq!(p.priority, 2500);
    // A positive user priority cannot raise a job: user factor 0; wait 500 +
    // size 1/10 (1 node by default) * 10000 = 1000 -> 1500.
    let q = job(&all, "2");
    close(weighted(q, "user"), 0.0);
    assert_eq!(q.priority, 1500);
}

// ---------------------------------------------------------------- Moab

fn moab(config: &str, rest: &str) -> Replay {
    replay(&format!(
        "{{\"op\":\"config\",\"t\":0,\"set\":{{\"PriorityModel\":\"moab\",\"PriorityDecayHalfLife\":0{config}}}}}\n\
         {{\"op\":\"account\",\"t\":0,\"name\":\"a\"}}\n\
         {{\"op\":\"account\",\"t\":0,\"name\":\"b\"}}\n\
         {{\"op\":\"user\",\"t\":0,\"user\":\"alice\",\"account\":\"a\"}}\n\
         {{\"op\":\"user\",\"t\":0,\"user\":\"bob\",\"account\":\"b\"}}\n{rest}"
    ))
}

#[test]
fn moab_defaults_are_fifo_by_queue_minutes() {
    // Only QUEUETIMEWEIGHT 1 (and component weights 1): 90 minutes queued -> 90.
    let r = moab(
        "",
        "{\"op\":\"submit\",\"t\":0,\"job\":\"1\",\"user\":\"alice\",\"account\":\"a\"}\n\
         {\"op\":\"tick\",\"t\":5400}\n",
    );
    let p = &evaluate(r.state(), &FairshareFactors::new())[0];
    assert_eq!(p.priority, 90);
    assert_eq!(p.model, PriorityModel::Moab);
    close(normalized(p, "QUEUETIME"), 90.0);
    close(weighted(p, "SERV"), 90.0);
    let serv = p.factor("QUEUETIME").unwrap();
    assert_eq!(serv.component.as_deref(), Some("SERV"));
}

#[test]
fn moab_xfactor_table_through_the_model() {
    // XFACTORWEIGHT 100, no queue-time weight: 1-hour and 4-hour jobs queued
    // 1, 2, 4, 8, 16 hours have XFACTOR 2, 3, 5, 9, 17 and 1.25, 1.5, 2, 3, 5.
    let expected = [
        (1, [200, 300, 500, 900, 1700]),
        (4, [125, 150, 200, 300, 500]),
    ];
    for (limit_hours, priorities) in expected {
        for (queue_hours, priority) in [1, 2, 4, 8, 16].into_iter().zip(priorities) {
            let r = moab(
                ",\"QUEUETIMEWEIGHT\":0,\"XFACTORWEIGHT\":100",
                &format!(
                    "{{\"op\":\"submit\",\"t\":0,\"job\":\"1\",\"user\":\"alice\",\"account\":\"a\",\"time_limit\":{}}}\n\
                     {{\"op\":\"tick\",\"t\":{}}}\n",
                    limit_hours * 3600,
                    queue_hours * 3600
                ),
            );
            let p = &evaluate(r.state(), &FairshareFactors::new())[0];
            assert_eq!(
                p.priority, priority,
                "{limit_hours} h job queued {queue_hours} h"
            );
        }
    }
    // XFMINWCLIMIT 4:00:00 makes the 1-hour job count as 4 hours: queued 2 h -> 1.5 -> 150.
    let r = moab(
        ",\"QUEUETIMEWEIGHT\":0,\"XFACTORWEIGHT\":100,\"XFMINWCLIMIT\":\"4:00:00\"",
        "{\"op\":\"submit\",\"t\":0,\"job\":\"1\",\"user\":\"alice\",\"account\":\"a\",\"time_limit\":3600}\n\
         {\"op\":\"tick\",\"t\":7200}\n",
    );
    assert_eq!(
        evaluate(r.state(), &FairshareFactors::new())[0].priority,
        150
    );
}

#[test]
fn moab_cred_component_of_the_seed_and_caps() {
    // The seed's example: CREDWEIGHT 1, USERWEIGHT 1, GROUPWEIGHT 1,
    // USERCFG[john] 2000, USERCFG[paul] -1000, GROUPCFG[staff] 10000.
    let config = ",\"QUEUETIMEWEIGHT\":0,\"CREDWEIGHT\":1,\"USERWEIGHT\":1,\"GROUPWEIGHT\":1,\
                  \"USERCFG[john]\":\"PRIORITY=2000\",\"USERCFG[paul]\":\"PRIORITY=-1000\",\
                  \"GROUPCFG[staff]\":\"PRIORITY=10000\"";
    let jobs = "{\"op\":\"user\",\"t\":0,\"user\":\"john\",\"account\":\"a\"}\n\
                {\"op\":\"user\",\"t\":0,\"user\":\"paul\",\"account\":\"a\"}\n\
                {\"op\":\"submit\",\"t\":0,\"job\":\"1\",\"user\":\"john\",\"account\":\"a\",\"group\":\"staff\"}\n\
                {\"op\":\"submit\",\"t\":0,\"job\":\"2\",\"user\":\"paul\",\"account\":\"a\",\"group\":\"staff\"}\n\
                {\"op\":\"submit\",\"t\":0,\"job\":\"3\",\"user\":\"paul\",\"account\":\"a\"}\n";
    let r = moab(config, jobs);
    let all = evaluate(r.state(), &FairshareFactors::new());
    // john in staff: 2000 + 10000 = 12000; paul in staff: -1000 + 10000 = 9000;
    // paul in his default group a (no GROUPCFG): -1000 -> clamped to 0.
    assert_eq!(job(&all, "1").priority, 12000);
    assert_eq!(job(&all, "2").priority, 9000);
    let p3 = job(&all, "3");
    close(weighted(p3, "CRED"), -1000.0);
    assert_eq!(p3.priority, 0);
    // USERCAP 300 bounds both ways: john 300 + 10000; paul -300 + 10000.
    // CREDCAP 5000 then bounds the sums: 5000 and 5000.
    let r = moab(&format!("{config},\"USERCAP\":300"), jobs);
    let all = evaluate(r.state(), &FairshareFactors::new());
    assert_eq!(job(&all, "1").priority, 10300);
    assert_eq!(job(&all, "2").priority, 9700);
    close(weighted(job(&all, "3"), "USER"), -300.0);
    let r = moab(&format!("{config},\"USERCAP\":300,\"CREDCAP\":5000"), jobs);
    let all = evaluate(r.state(), &FairshareFactors::new());
    assert_eq!(job(&all, "1").priority, 5000);
    assert_eq!(job(&all, "1").factor("CRED").unwrap().cap, Some(5000.0));
    // Credential defaults: the QOS event's priority, the account event's,
    // the partition's (class) priority.
    let r = moab(
        ",\"QUEUETIMEWEIGHT\":0,\"QOSWEIGHT\":2,\"ACCOUNTWEIGHT\":3,\"CLASSWEIGHT\":5",
        "{\"op\":\"qos\",\"t\":0,\"name\":\"hi\",\"priority\":100}\n\
         {\"op\":\"account\",\"t\":0,\"name\":\"a\",\"priority\":10}\n\
         {\"op\":\"partition\",\"t\":0,\"name\":\"q\",\"priority\":7}\n\
         {\"op\":\"submit\",\"t\":0,\"job\":\"1\",\"user\":\"alice\",\"account\":\"a\",\"qos\":\"hi\",\"partition\":\"q\"}\n",
    );
    // 2*100 + 3*10 + 5*7 = 265.
    assert_eq!(
        evaluate(r.state(), &FairshareFactors::new())[0].priority,
        265
    );
}

#[test]
fn moab_fairshare_targets_floors_and_ceilings() {
    // No decay. alice charged 3000 by a usage event; bob's job (1 CPU, QOS
    // hi, class batch) runs 1000 s: total 4000, alice 75 %, bob 25 %, QOS hi
    // 25 %, class batch 25 %, group a 75 % (alice's usage event charges a).
    let config = ",\"QUEUETIMEWEIGHT\":0,\"FSUSERWEIGHT\":10,\"FSQOSWEIGHT\":1,\"FSCLASSWEIGHT\":2,\"FSGROUPWEIGHT\":1,\
                  \"USERCFG[alice]\":\"FSTARGET=50\",\"USERCFG[bob]\":\"FSTARGET=50+\",\
                  \"QOSCFG[hi]\":\"FSTARGET=40\",\"CLASSCFG[batch]\":\"FSTARGET=10-\",\"GROUPCFG[a]\":\"FSTARGET=80-\"";
    let events = "{\"op\":\"usage\",\"t\":0,\"account\":\"a\",\"user\":\"alice\",\"amount\":3000}\n\
                  {\"op\":\"submit\",\"t\":0,\"job\":\"r\",\"user\":\"bob\",\"account\":\"b\",\"qos\":\"hi\",\"partition\":\"batch\",\"tres\":{\"cpu\":1}}\n\
                  {\"op\":\"start\",\"t\":0,\"job\":\"r\"}\n\
                  {\"op\":\"submit\",\"t\":500,\"job\":\"2\",\"user\":\"bob\",\"account\":\"b\",\"qos\":\"hi\",\"partition\":\"batch\"}\n\
                  {\"op\":\"submit\",\"t\":500,\"job\":\"1\",\"user\":\"alice\",\"account\":\"a\"}\n";
    let check = |r: &Replay| {
        let all = evaluate(r.state(), &FairshareFactors::new());
        let bob = job(&all, "2");
        // bob: floor 50+ under by 25 -> +25 * 10 = 250; QOS hi 40 - 25 = 15 * 1;
        // class ceiling 10- over by 15 -> -15 * 2 = -30; group b has no target.
        close(normalized(bob, "FSUSER"), 25.0);
        close(weighted(bob, "FSUSER"), 250.0);
        close(weighted(bob, "FSQOS"), 15.0);
        close(weighted(bob, "FSCLASS"), -30.0);
        close(weighted(bob, "FS"), 235.0);
        let alice = job(&all, "1");
        // alice: target 50, usage 75 -> -25 * 10 = -250; group a ceiling 80-
        // under it -> 0.
        close(weighted(alice, "FSUSER"), -250.0);
        close(weighted(alice, "FSGROUP"), 0.0);
        assert_eq!(alice.priority, 0);
        // FSJPU / FSPPU count bob's running job.
        assert_eq!(normalized(bob, "FSJPU"), 1.0);
        assert_eq!(normalized(bob, "FSPPU"), 1.0);
        bob.priority
    };
    // While the job runs (at 1000) and after it ended at 1000.
    let running = moab(config, &format!("{events}{{\"op\":\"tick\",\"t\":1000}}\n"));
    assert_eq!(check(&running), 235);
    let ended = moab(
        config,
        &format!(
            "{events}{{\"op\":\"end\",\"t\":1000,\"job\":\"r\"}}\n\
             {{\"op\":\"submit\",\"t\":1000,\"job\":\"x\",\"user\":\"bob\",\"account\":\"b\"}}\n\
             {{\"op\":\"start\",\"t\":1000,\"job\":\"x\"}}\n"
        ),
    );
    assert_eq!(check(&ended), 235);
}

#[test]
fn moab_service_resource_target_usage_and_attribute_subcomponents() {
    let config = ",\"QUEUETIMEWEIGHT\":0,\"BYPASSWEIGHT\":10,\"STARTCOUNTWEIGHT\":100,\
                  \"DEADLINEWEIGHT\":1000,\"SPVIOLATIONWEIGHT\":-500,\"USERPRIOWEIGHT\":1,\
                  \"NODEWEIGHT\":1,\"PROCWEIGHT\":2,\"MEMWEIGHT\":3,\"PSWEIGHT\":4,\"PEWEIGHT\":5,\"WALLTIMEWEIGHT\":6,\
                  \"TARGETQUEUETIMEWEIGHT\":1,\"QOSCFG[hi]\":\"QTTARGET=1:00:00 QTWEIGHT=2\",\
                  \"ATTRATTRWEIGHT\":1,\"ATTRSTATEWEIGHT\":1,\"ATTRGRESWEIGHT\":1,\
                  \"JOBPRIOF\":\"STATE[Idle]=7 ATTR[gpfs]=30 GRES[matlab]=400\"";
    let r = moab(
        config,
        "{\"op\":\"cluster\",\"t\":0,\"nodes\":4,\"tres\":{\"cpu\":128,\"mem\":1000}}\n\
         {\"op\":\"submit\",\"t\":0,\"job\":\"5\",\"user\":\"alice\",\"account\":\"a\",\"qos\":\"hi\",\
           \"tres\":{\"node\":1,\"cpu\":16,\"mem\":500,\"gres/matlab\":1},\"time_limit\":600,\
           \"bypass_count\":3,\"deadline\":3600,\"soft_policy_violation\":true,\"user_priority\":-100,\
           \"attributes\":[\"GPFS\",\"other\"]}\n\
         {\"op\":\"start\",\"t\":100,\"job\":\"5\"}\n\
         {\"op\":\"requeue\",\"t\":200,\"job\":\"5\"}\n\
         {\"op\":\"tick\",\"t\":2000}\n",
    );
    let p = &evaluate(r.state(), &FairshareFactors::new())[0];
    // Queued since the requeue at 200: 1800 s = 30 min; QUEUETIME weight
    // 0 + QTWEIGHT 2 -> 60.
    close(normalized(p, "QUEUETIME"), 30.0);
    close(weighted(p, "QUEUETIME"), 60.0);
    close(weighted(p, "BYPASS"), 30.0); // 3 * 10
    close(weighted(p, "STARTCOUNT"), 100.0); // started once before: 1 * 100
                                             // Deadline: eligible at 200, deadline 3600: (2000-200)/(3400) of the way.
    close(normalized(p, "DEADLINE"), 1800.0 / 3400.0);
    close(weighted(p, "SPVIOLATION"), -500.0);
    close(weighted(p, "USERPRIO"), -100.0);
    // SERV: 60 + 30 + 100 + 1000*1800/3400 - 500 - 100.
    let serv = 60.0 + 30.0 + 100.0 + 1000.0 * 1800.0 / 3400.0 - 500.0 - 100.0;
    close(weighted(p, "SERV"), serv);
    // RES: node 1, procs 16*2, mem 500*3, PS 16*600*4, PE max(16/128, 500/1000)
    // * 128 = 64 -> *5, walltime 600*6.
    close(normalized(p, "PE"), 64.0);
    let res = 1.0 + 32.0 + 1500.0 + 38400.0 + 320.0 + 3600.0;
    close(weighted(p, "RES"), res);
    // TARGET: 30 min of a 60 min target: 2^5 - 1 = 31.
    close(weighted(p, "TARGET"), 31.0);
    // ATTR: gpfs 30 + state Idle 7 + matlab 400 = 437.
    close(weighted(p, "ATTR"), 437.0);
    // USAGE applies to active jobs only: 0 for this pending job.
    close(weighted(p, "USAGE"), 0.0);
    let total = serv + res + 31.0 + 437.0;
    assert_eq!(p.priority, total.trunc() as u64);
}

#[test]
fn moab_usage_component_of_running_jobs_and_held_jobs() {
    let config = ",\"QUEUETIMEWEIGHT\":0,\"USAGECONSUMEDWEIGHT\":1,\"USAGEREMAININGWEIGHT\":2,\
                  \"USAGEEXECUTIONTIMEWEIGHT\":3,\"USAGEPERCENTWEIGHT\":4,\"JOBIDWEIGHT\":1";
    let r = moab(
        config,
        "{\"op\":\"submit\",\"t\":0,\"job\":\"12\",\"user\":\"alice\",\"account\":\"a\",\"tres\":{\"cpu\":4},\"time_limit\":1000}\n\
         {\"op\":\"submit\",\"t\":0,\"job\":\"13\",\"user\":\"alice\",\"account\":\"a\"}\n\
         {\"op\":\"hold\",\"t\":0,\"job\":\"13\"}\n\
         {\"op\":\"start\",\"t\":100,\"job\":\"12\"}\n\
         {\"op\":\"tick\",\"t\":350}\n",
    );
    let all = evaluate(r.state(), &FairshareFactors::new());
    let p = job(&all, "12");
    assert_eq!(p.state, JobState::Running);
    // 250 s run on 4 CPUs of a 1000 s limit: consumed 1000, remaining
    // 4*750 = 3000 (*2), execution 250 (*3), percent 25 (*4); JOBID 12.
    close(weighted(p, "USAGE"), 1000.0 + 6000.0 + 750.0 + 100.0);
    close(weighted(p, "ATTR"), 12.0);
    assert_eq!(p.priority, 7862);
    let held = job(&all, "13");
    assert_eq!((held.priority, held.state), (0, JobState::Held));
    assert!(queue(&all).is_empty());
}

// ---------------------------------------------------------------- queue

fn entry(id: &str, priority: u64, submit_at: i64) -> JobPriority {
    JobPriority {
        job: id.to_string(),
        user: "u".into(),
        account: "a".into(),
        partition: String::new(),
        qos: String::new(),
        submit_at,
        priority,
        state: JobState::Pending,
        model: PriorityModel::Slurm,
        factors: Vec::new(),
        pairs: Vec::new(),
        priority_tier: 0,
        expedited: false,
    }
}

#[test]
fn queue_ties_break_by_submit_time_then_job_id() {
    let jobs = vec![
        entry("b", 10, 5),
        entry("10", 10, 5),
        entry("a", 10, 5),
        entry("9", 10, 5),
        entry("007", 10, 5),
        entry("1", 10, 6),
        entry("100", 20, 9),
        entry("x", 5, 0),
    ];
    let order: Vec<String> = queue(&jobs).into_iter().map(|p| p.job).collect();
    // Highest priority first (100); among priority 10 submitted at 5: numeric
    // ids as numbers (7, 9, 10) before the others as strings (a, b); then the
    // later submit (1); then the lowest priority.
    assert_eq!(order, vec!["100", "007", "9", "10", "a", "b", "1", "x"]);
}

#[test]
fn slurm_partition_defaults_and_zero_factor() {
    let log = r#"{"op":"config","t":0,"set":{"PriorityWeightPartition":1000}}
{"op":"partition","t":0,"name":"big","priority_job_factor":4}
{"op":"partition","t":0,"name":"off","priority_job_factor":0}
{"op":"account","t":0,"name":"a"}
{"op":"user","t":0,"user":"u","account":"a"}
{"op":"submit","t":0,"job":"1","user":"u","account":"a","partition":"other"}
{"op":"submit","t":0,"job":"2","user":"u","account":"a","partition":"off"}
{"op":"submit","t":0,"job":"3","user":"u","account":"a","partition":"big"}
"#;
    let r = replay(log);
    let all = evaluate(r.state(), &FairshareFactors::new());
    // An undefined partition has the default factor 1: 1/4 -> 250; factor 0
    // -> 0 -> the minimum 1; big 4/4 -> 1000.
    assert_eq!(job(&all, "1").priority, 250);
    assert_eq!(job(&all, "2").priority, 1);
    assert_eq!(job(&all, "3").priority, 1000);
    // NO_NORMAL_PART: raw factors 1 and 4 -> 1000 and 4000.
    let r = replay(&format!(
        "{log}{{\"op\":\"config\",\"t\":1,\"set\":{{\"PriorityFlags\":\"NO_NORMAL_PART\"}}}}\n"
    ));
    let all = evaluate(r.state(), &FairshareFactors::new());
    assert_eq!(job(&all, "1").priority, 1000);
    assert_eq!(job(&all, "3").priority, 4000);
}

#[test]
fn moab_wallclock_accuracy_active_usage_targets_and_user_priority() {
    let config = ",\"QUEUETIMEWEIGHT\":0,\"WCACCURACYWEIGHT\":100,\"FSPSPUWEIGHT\":1,\
                  \"TARGETXFACTORWEIGHT\":1,\"USERPRIOWEIGHT\":1,\"ENABLEPOSUSERPRIORITY\":\"TRUE\",\
                  \"QOSCFG[q]\":\"XFTARGET=2 XFWEIGHT=10\"";
    let events = "{\"op\":\"submit\",\"t\":0,\"job\":\"a1\",\"user\":\"alice\",\"account\":\"a\",\"tres\":{\"cpu\":2},\"time_limit\":1000}\n\
                  {\"op\":\"start\",\"t\":0,\"job\":\"a1\"}\n\
                  {\"op\":\"end\",\"t\":250,\"job\":\"a1\"}\n\
                  {\"op\":\"submit\",\"t\":250,\"job\":\"a2\",\"user\":\"alice\",\"account\":\"a\",\"tres\":{\"cpu\":4},\"time_limit\":600}\n\
                  {\"op\":\"start\",\"t\":250,\"job\":\"a2\"}\n\
                  {\"op\":\"submit\",\"t\":250,\"job\":\"p\",\"user\":\"alice\",\"account\":\"a\",\"qos\":\"q\",\"time_limit\":3600,\"user_priority\":2000}\n\
                  {\"op\":\"tick\",\"t\":2050}\n";
    let r = moab(config, events);
    let all = evaluate(r.state(), &FairshareFactors::new());
    let p = job(&all, "p");
    // WCACCURACY: a1 used 2*250 of 2*1000 CPU-seconds: 0.25 -> 25.
    close(weighted(p, "WCACCURACY"), 25.0);
    // FSPSPU: a2 runs 4 CPUs for a 600 s limit: 2400.
    close(weighted(p, "FSPSPU"), 2400.0);
    // XFACTOR: 1 + 1800/3600 = 1.5, weight 0 + XFWEIGHT 10 -> 15.
    close(weighted(p, "XFACTOR"), 15.0);
    // TARGETXFACTOR: 1.5 of a target 2, r = 0.75: 2^7.5 - 1.
    let target = 7.5f64.exp2() - 1.0;
    close(weighted(p, "TARGETXFACTOR"), target);
    // USERPRIO: 2000 clamped to 1023 with ENABLEPOSUSERPRIORITY.
    close(weighted(p, "USERPRIO"), 1023.0);
    // 25 + 2400 + 15 + 1023 + 180.02 = 3643.02 -> 3643.
    assert_eq!(p.priority, (2425.0 + 1038.0 + target).trunc() as u64);
    assert_eq!(p.priority, 3643);
    // The running job is listed too (USAGE applies to it), never ranked.
    assert_eq!(job(&all, "a2").state, JobState::Running);
    assert_eq!(queue(&all).len(), 1);
    // Without ENABLEPOSUSERPRIORITY user priorities stop at 0: 3643 - 1023.
    let r = moab(&config.replace("\"TRUE\"", "\"FALSE\""), events);
    assert_eq!(
        job(&evaluate(r.state(), &FairshareFactors::new()), "p").priority,
        2620
    );
}

#[test]
fn moab_credential_usage_is_reset_with_all_usage() {
    let events = "{\"op\":\"usage\",\"t\":0,\"account\":\"a\",\"user\":\"alice\",\"amount\":100}\n\
                  {\"op\":\"submit\",\"t\":0,\"job\":\"1\",\"user\":\"bob\",\"account\":\"b\",\"qos\":\"hi\",\"tres\":{\"cpu\":1}}\n\
                  {\"op\":\"start\",\"t\":0,\"job\":\"1\"}\n\
                  {\"op\":\"requeue\",\"t\":300,\"job\":\"1\"}\n";
    let r = moab("", events);
    let usage = r.state().moab_credential_usage();
    // No decay: 100 + 300 = 400 in all; QOS hi has bob's 300: 75 %.
    close(
        usage.percent(fairflow_model::moab::Credential::Qos, "hi"),
        75.0,
    );
    close(
        usage.percent(fairflow_model::moab::Credential::Group, "a"),
        25.0,
    );
    let r = moab(
        "",
        &format!("{events}{{\"op\":\"reset_usage\",\"t\":400}}\n"),
    );
    let usage = r.state().moab_credential_usage();
    assert_eq!(usage.total, 0);
    assert!(usage.by_credential.values().all(|u| *u == 0));
}

#[test]
fn moab_priority_targets_reward_closeness_to_the_ideal() {
    // PROCWEIGHT 10, WALLTIMEWEIGHT 1, ideal 64 processors and 1 hour.
    // PROC = 64 - |procs - 64|, WALLTIME = 3600 - |limit - 3600|.
    let config = ",\"QUEUETIMEWEIGHT\":0,\"PROCWEIGHT\":10,\"WALLTIMEWEIGHT\":1,\
                  \"PRIORITYTARGETPROCCOUNT\":64,\"PRIORITYTARGETDURATION\":\"1:00:00\"";
    let jobs = "{\"op\":\"submit\",\"t\":0,\"job\":\"1\",\"user\":\"alice\",\"account\":\"a\",\"tres\":{\"cpu\":64},\"time_limit\":3600}\n\
                {\"op\":\"submit\",\"t\":0,\"job\":\"2\",\"user\":\"alice\",\"account\":\"a\",\"tres\":{\"cpu\":16},\"time_limit\":1800}\n\
                {\"op\":\"submit\",\"t\":0,\"job\":\"3\",\"user\":\"alice\",\"account\":\"a\",\"tres\":{\"cpu\":96},\"time_limit\":7200}\n\
                {\"op\":\"submit\",\"t\":0,\"job\":\"4\",\"user\":\"alice\",\"account\":\"a\",\"tres\":{\"cpu\":200},\"time_limit\":10800}\n";
    let r = moab(config, jobs);
    let all = evaluate(r.state(), &FairshareFactors::new());
    // Job 1 is ideal: PROC 64 -> 640, WALLTIME 3600 -> 3600: 4240.
    let p1 = job(&all, "1");
    close(normalized(p1, "PROC"), 64.0);
    close(normalized(p1, "WALLTIME"), 3600.0);
    assert_eq!(p1.priority, 4240);
    // Job 2, below both ideals: its own request, 16 -> 160 and 1800: 1960.
    let p2 = job(&all, "2");
    close(normalized(p2, "PROC"), 16.0);
    assert_eq!(p2.priority, 1960);
    // Job 3: 64 - 32 = 32 -> 320; 3600 - 3600 = 0: 320.
    let p3 = job(&all, "3");
    close(normalized(p3, "PROC"), 32.0);
    close(normalized(p3, "WALLTIME"), 0.0);
    assert_eq!(p3.priority, 320);
    // Job 4: 64 - 136 = -72 -> -720; 3600 - 7200 = -3600: -4320 -> 0.
    let p4 = job(&all, "4");
    close(normalized(p4, "PROC"), -72.0);
    close(weighted(p4, "RES"), -4320.0);
    assert_eq!(p4.priority, 0);
    let order: Vec<String> = queue(&all).into_iter().map(|p| p.job).collect();
    assert_eq!(order, vec!["1", "2", "3", "4"]);
    // Without the targets size wins: job 3 is 960 + 7200 = 8160, job 4
    // 2000 + 10800 = 12800, job 1 640 + 3600 = 4240.
    let r = moab(
        ",\"QUEUETIMEWEIGHT\":0,\"PROCWEIGHT\":10,\"WALLTIMEWEIGHT\":1",
        jobs,
    );
    let all = evaluate(r.state(), &FairshareFactors::new());
    assert_eq!(job(&all, "3").priority, 8160);
    assert_eq!(job(&all, "4").priority, 12800);
    let order: Vec<String> = queue(&all).into_iter().map(|p| p.job).collect();
    assert_eq!(order, vec!["4", "3", "1", "2"]);
    // A positive PROCCAP bounds the targeted value both ways: job 4's
    // -720 becomes -500, job 1's 640 becomes 500.
    let r = moab(&format!("{config},\"PROCCAP\":500"), jobs);
    let all = evaluate(r.state(), &FairshareFactors::new());
    close(weighted(job(&all, "4"), "PROC"), -500.0);
    assert_eq!(job(&all, "1").priority, 500 + 3600);
}

/// Holds, begin times and a requeue for the accrual-policy test; the query
/// is at 6000.
const ACCRUAL_EVENTS: &str = "{\"op\":\"submit\",\"t\":0,\"job\":\"1\",\"user\":\"alice\",\"account\":\"a\",\"qos\":\"q\",\"time_limit\":3600}\n\
    {\"op\":\"submit\",\"t\":0,\"job\":\"2\",\"user\":\"alice\",\"account\":\"a\"}\n\
    {\"op\":\"hold\",\"t\":0,\"job\":\"2\"}\n\
    {\"op\":\"submit\",\"t\":0,\"job\":\"3\",\"user\":\"alice\",\"account\":\"a\",\"begin\":1200}\n\
    {\"op\":\"submit\",\"t\":0,\"job\":\"5\",\"user\":\"alice\",\"account\":\"a\"}\n\
    {\"op\":\"submit\",\"t\":0,\"job\":\"6\",\"user\":\"alice\",\"account\":\"a\"}\n\
    {\"op\":\"hold\",\"t\":100,\"job\":\"5\"}\n\
    {\"op\":\"hold\",\"t\":100,\"job\":\"6\"}\n\
    {\"op\":\"release\",\"t\":200,\"job\":\"5\"}\n\
    {\"op\":\"start\",\"t\":300,\"job\":\"5\"}\n\
    {\"op\":\"release\",\"t\":400,\"job\":\"6\"}\n\
    {\"op\":\"hold\",\"t\":600,\"job\":\"1\"}\n\
    {\"op\":\"hold\",\"t\":600,\"job\":\"3\"}\n\
    {\"op\":\"requeue\",\"t\":1000,\"job\":\"5\"}\n\
    {\"op\":\"start\",\"t\":1000,\"job\":\"6\"}\n\
    {\"op\":\"hold\",\"t\":1500,\"job\":\"5\"}\n\
    {\"op\":\"release\",\"t\":1800,\"job\":\"3\"}\n\
    {\"op\":\"release\",\"t\":2100,\"job\":\"5\"}\n\
    {\"op\":\"release\",\"t\":4200,\"job\":\"1\"}\n\
    {\"op\":\"tick\",\"t\":6000}\n";

#[test]
fn moab_accrual_policy_default_does_not_count_held_time() {
    // QUEUETIMEWEIGHT 1 (the default), QOS q with a 1-hour queue-time target.
    let config = ",\"QOSCFG[q]\":\"QTTARGET=1:00:00\"";
    for policy in [
        "",
        ",\"JOBPRIOACCRUALPOLICY\":\"QUEUEPOLICY\"",
        ",\"JOBPRIOACCRUALPOLICY\":\"FULLPOLICY\"",
    ] {
        let r = moab(&format!("{config}{policy}"), ACCRUAL_EVENTS);
        let all = evaluate(r.state(), &FairshareFactors::new());
        // Job 1: queued 0..6000, held 600..4200: 6000 - 3600 = 2400 s = 40 min.
        let p1 = job(&all, "1");
        close(normalized(p1, "QUEUETIME"), 40.0);
        assert_eq!(p1.priority, 40);
        // XFACTOR = 1 + 2400/3600; TARGETQUEUETIME: r = 2400/3600 = 2/3 -> 2^(20/3) - 1.
        close(normalized(p1, "XFACTOR"), 1.0 + 2400.0 / 3600.0);
        close(
            normalized(p1, "TARGETQUEUETIME"),
            (20.0f64 / 3.0).exp2() - 1.0,
        );
        // Job 2: held since its submit: no queue time, priority 0, not ranked.
        let p2 = job(&all, "2");
        close(normalized(p2, "QUEUETIME"), 0.0);
        assert_eq!((p2.priority, p2.state), (0, JobState::Held));
        // Job 3: eligible from its begin at 1200; held 600..1800 overlaps
        // 1200..1800 (600 s): 6000 - 1200 - 600 = 4200 s = 70 min.
        assert_eq!(job(&all, "3").priority, 70);
        // Job 5: requeued at 1000 (the hold before it is forgotten), held
        // 1500..2100: 5000 - 600 = 4400 s = 73.33 min -> 73.
        close(normalized(job(&all, "5"), "QUEUETIME"), 4400.0 / 60.0);
        assert_eq!(job(&all, "5").priority, 73);
        // Job 6 runs since 1000: its queue time froze then, held 100..400:
        // 1000 - 300 = 700 s.
        let p6 = job(&all, "6");
        assert_eq!(p6.state, JobState::Running);
        close(normalized(p6, "QUEUETIME"), 700.0 / 60.0);
        // The queue: 5 (73), 3 (70), 1 (40).
        let order: Vec<String> = queue(&all).into_iter().map(|p| p.job).collect();
        assert_eq!(order, vec!["5", "3", "1"]);
    }
}

#[test]
fn moab_accrual_policy_always_counts_from_the_queue_entry() {
    let config = ",\"QOSCFG[q]\":\"QTTARGET=1:00:00\",\"JOBPRIOACCRUALPOLICY\":\"ALWAYS\"";
    let r = moab(config, ACCRUAL_EVENTS);
    let all = evaluate(r.state(), &FairshareFactors::new());
    // Job 1: 6000 s = 100 min, the hold included.
    let p1 = job(&all, "1");
    assert_eq!(p1.priority, 100);
    close(normalized(p1, "XFACTOR"), 1.0 + 6000.0 / 3600.0);
    // TARGETQUEUETIME past the target, r = 5/3: 1023 + 10240 ln 2 * 2/3.
    close(
        normalized(p1, "TARGETQUEUETIME"),
        1023.0 + 10240.0 * std::f64::consts::LN_2 * (2.0 / 3.0),
    );
    // Job 2, still held: 100 min of queue time, but priority 0.
    let p2 = job(&all, "2");
    close(normalized(p2, "QUEUETIME"), 100.0);
    assert_eq!(p2.priority, 0);
    // Job 3 counts from its submit, before its begin time: 100 min.
    assert_eq!(job(&all, "3").priority, 100);
    // Job 5 restarts at its requeue: 5000 s = 83.33 min -> 83.
    assert_eq!(job(&all, "5").priority, 83);
    // Job 6: 1000 s before its start.
    close(normalized(job(&all, "6"), "QUEUETIME"), 1000.0 / 60.0);
    // Ties at 100 break by submit time (all 0), then job id.
    let order: Vec<String> = queue(&all).into_iter().map(|p| p.job).collect();
    assert_eq!(order, vec!["1", "3", "5"]);
}

#[test]
fn moab_held_spans_are_recorded_per_stay_in_the_queue() {
    let r = moab("", ACCRUAL_EVENTS);
    let jobs = &r.state().jobs;
    assert_eq!(jobs["1"].held_spans, vec![(600, 4200)]);
    assert_eq!(jobs["1"].held_since, None);
    assert!(jobs["2"].held_spans.is_empty());
    assert_eq!(jobs["2"].held_since, Some(0));
    assert_eq!(jobs["2"].held_spans_until(6000), vec![(0, 6000)]);
    // Job 5's hold 100..200 was before its requeue at 1000: only 1500..2100.
    assert_eq!(jobs["5"].held_spans, vec![(1500, 2100)]);
}

#[test]
fn moab_group_fs_weight_adjusts_the_fs_component_weight() {
    // alice's FSTARGET 50 with no usage at all: usage 0 %, delta 50, FSUSERWEIGHT
    // 1 -> FS sum 50. FSWEIGHT 2; GROUPCFG[staff] FSWEIGHT=3, GROUPCFG[a] FSWEIGHT=-2.
    let config = ",\"QUEUETIMEWEIGHT\":0,\"FSWEIGHT\":2,\"FSUSERWEIGHT\":1,\
                  \"USERCFG[alice]\":\"FSTARGET=50\",\
                  \"GROUPCFG[staff]\":\"FSWEIGHT=3\",\"GROUPCFG[a]\":\"FSWEIGHT=-2\"";
    let jobs = "{\"op\":\"submit\",\"t\":0,\"job\":\"1\",\"user\":\"alice\",\"account\":\"a\",\"group\":\"staff\"}\n\
                {\"op\":\"submit\",\"t\":0,\"job\":\"2\",\"user\":\"alice\",\"account\":\"a\",\"group\":\"other\"}\n\
                {\"op\":\"submit\",\"t\":0,\"job\":\"3\",\"user\":\"alice\",\"account\":\"a\"}\n";
    let r = moab(config, jobs);
    let all = evaluate(r.state(), &FairshareFactors::new());
    // staff: (2 + 3) * 50 = 250; the FS row shows the summed weight 5.
    let p1 = job(&all, "1");
    assert_eq!(p1.priority, 250);
    close(p1.factor("FS").unwrap().weight, 5.0);
    // A group with no GROUPCFG: 2 * 50 = 100.
    assert_eq!(job(&all, "2").priority, 100);
    // Group a (the account, no `group` field): (2 - 2) * 50 = 0.
    close(weighted(job(&all, "3"), "FS"), 0.0);
    // FSCAP 20 caps the sum before the weight: staff 5 * 20 = 100.
    let r = moab(&format!("{config},\"FSCAP\":20"), jobs);
    let all = evaluate(r.state(), &FairshareFactors::new());
    assert_eq!(job(&all, "1").priority, 100);
    // The other components' weights are not adjusted: CRED with a group
    // priority 7 stays CREDWEIGHT 1: 250 + 7. (A second `config` event adds
    // PRIORITY to staff's attributes, keeping its FSWEIGHT.)
    let r = moab(
        &format!("{config},\"GROUPWEIGHT\":1"),
        &format!(
            "{{\"op\":\"config\",\"t\":0,\"set\":{{\"GROUPCFG[staff]\":\"PRIORITY=7\"}}}}\n{jobs}"
        ),
    );
    let all = evaluate(r.state(), &FairshareFactors::new());
    assert_eq!(job(&all, "1").priority, 257);
}

/// `RequeueDelay=120` (Slurm's default `requeue_delay`, the credential
/// lifetime): a job requeued at 60000 may begin at 60000 + 120 + 1 = 60121,
/// so it is not listed at 60100, and at 81600 its age is
/// (81600 - 60121) / 86400 * 1000 = 248.59 -> 248 (without the delay: 250).
#[test]
fn slurm_requeue_delays_the_begin_time() {
    let log = r#"{"op":"config","t":0,"set":{"PriorityWeightAge":1000,"PriorityMaxAge":"1-0","RequeueDelay":120}}
{"op":"account","t":0,"name":"a"}
{"op":"user","t":0,"user":"u","account":"a"}
{"op":"submit","t":0,"job":"1","user":"u","account":"a"}
{"op":"start","t":50000,"job":"1"}
{"op":"requeue","t":60000,"job":"1"}
"#;
    let r = replay(&format!("{log}{{\"op\":\"tick\",\"t\":60100}}\n"));
    assert!(evaluate(r.state(), &FairshareFactors::new()).is_empty());
    let r = replay(&format!("{log}{{\"op\":\"tick\",\"t\":81600}}\n"));
    assert_eq!(
        evaluate(r.state(), &FairshareFactors::new())[0].priority,
        248
    );
}
