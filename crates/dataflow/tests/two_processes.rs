//! Timely's multi-process mode, both processes in this test: "process 1"
//! runs on a thread as a follower, "process 0" hosts the driver; they talk
//! over TCP on localhost. The results equal the single-process engine's:
//! the fair-share table, and with hundreds of jobs of many users queued
//! (sharded across both processes' workers by user association, each
//! process holding about half, the job names travelling to the process
//! whose shard holds them) the top `k`, `sprio`, each job's explanation,
//! its place in line and a share change's what-if.

use std::io::Write;

use fairflow_dataflow::cluster::WorkerLayout;
use fairflow_dataflow::Engine;
use fairflow_model::Config;

mod common;
use common::lines;

const LOG: &str = r#"{"op":"config","t":100,"set":{"PriorityDecayHalfLife":0}}
{"op":"account","t":100,"name":"a","shares":3}
{"op":"account","t":100,"name":"b","shares":1}
{"op":"account","t":100,"name":"c","parent":"b","shares":"parent"}
{"op":"user","t":100,"user":"ua","account":"a"}
{"op":"user","t":100,"user":"ub","account":"b"}
{"op":"user","t":100,"user":"uc","account":"c","shares":2}
{"op":"usage","t":100,"account":"a","user":"ua","amount":100}
{"op":"usage","t":101,"account":"b","user":"ub","amount":40}
{"op":"usage","t":102,"account":"c","user":"uc","amount":70}"#;

/// Many users in three accounts, usage, and `jobs` jobs: nice values and
/// sizes that give ties (equal priorities and submit seconds across users),
/// some jobs started.
fn many_jobs(jobs: usize) -> String {
    let mut log = String::from(
        r#"{"op":"config","t":200,"set":{"PriorityDecayHalfLife":0,"PriorityWeightFairshare":10000,"PriorityWeightAge":1000,"PriorityMaxAge":"1:00:00","PriorityWeightJobSize":200}}
{"op":"account","t":200,"name":"x","shares":3}
{"op":"account","t":200,"name":"y","shares":1}
{"op":"account","t":200,"name":"z","parent":"y","shares":2}
"#,
    );
    let users = 24;
    for u in 0..users {
        let account = ["x", "y", "z"][u % 3];
        log.push_str(&format!(
            "{{\"op\":\"user\",\"t\":200,\"user\":\"u{u}\",\"account\":\"{account}\"}}\n"
        ));
        log.push_str(&format!(
            "{{\"op\":\"usage\",\"t\":200,\"account\":\"{account}\",\"user\":\"u{u}\",\"amount\":{}}}\n",
            (u * 37) % 200
        ));
    }
    for j in 0..jobs {
        let u = (j * 7) % users;
        let account = ["x", "y", "z"][u % 3];
        let t = 200 + (j / 40) as i64;
        let nice = [0, -100, 50][j % 3];
        let cpus = 1 + j % 4;
        log.push_str(&format!(
            "{{\"op\":\"submit\",\"t\":{t},\"job\":\"{j}\",\"user\":\"u{u}\",\"account\":\"{account}\",\"nice\":{nice},\"tres\":{{\"cpu\":{cpus}}}}}\n"
        ));
    }
    let t = 200 + (jobs / 40) as i64 + 60;
    for j in (0..jobs).step_by(29) {
        log.push_str(&format!("{{\"op\":\"start\",\"t\":{t},\"job\":\"{j}\"}}\n"));
    }
    log
}

/// Users with jobs in each of the twin accounts.
const TWIN_USERS: usize = 8;

/// Jobs of [`twin_accounts`].
const TWIN_JOBS: usize = 2 * TWIN_USERS * 3;

/// Classic fair-share and two mirrored subtrees: `ta` holds `p` and `pp`,
/// `tb` holds `r` and `rr`, every one with one share, so that each user of
/// `p` ties its twin of `r` (the same usage, the same normalised shares,
/// the same arithmetic). Each user of `p` and `r` has three jobs alike,
/// all at `t`; `pp`'s and `rr`'s one user each has usage and no job. The
/// job ids are text (`t99999-p0`), `p`'s sorting after their twins' of
/// `r`, so their probes travel between processes by name (plain numbers
/// travel as numbers).
fn twin_accounts(t: i64) -> String {
    let mut log =
        format!("{{\"op\":\"config\",\"t\":{t},\"set\":{{\"PriorityFlags\":\"NO_FAIR_TREE\"}}}}\n");
    for (top, accounts) in [("ta", ["p", "pp"]), ("tb", ["r", "rr"])] {
        log.push_str(&format!(
            "{{\"op\":\"account\",\"t\":{t},\"name\":\"{top}\",\"shares\":1}}\n"
        ));
        for account in accounts {
            log.push_str(&format!(
                "{{\"op\":\"account\",\"t\":{t},\"name\":\"{account}\",\"parent\":\"{top}\",\"shares\":1}}\n"
            ));
        }
    }
    let mut job = 0;
    for account in ["p", "r", "pp", "rr"] {
        let (users, jobs) = match account {
            "p" | "r" => (TWIN_USERS, 3),
            _ => (1, 0),
        };
        for u in 0..users {
            let user = format!("{account}{u}");
            log.push_str(&format!(
                "{{\"op\":\"user\",\"t\":{t},\"user\":\"{user}\",\"account\":\"{account}\"}}\n\
                 {{\"op\":\"usage\",\"t\":{t},\"account\":\"{account}\",\"user\":\"{user}\",\"amount\":{}}}\n",
                10 * (u + 1)
            ));
            for _ in 0..jobs {
                job += 1;
                log.push_str(&format!(
                    "{{\"op\":\"submit\",\"t\":{t},\"job\":\"t{}-{user}\",\"user\":\"{user}\",\"account\":\"{account}\"}}\n",
                    100_000 - job
                ));
            }
        }
    }
    log
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn two_processes_compute_what_one_does() {
    let dir = std::env::temp_dir().join(format!("fairflow-hosts-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let hostfile = dir.join("hosts");
    let mut file = std::fs::File::create(&hostfile).unwrap();
    writeln!(file, "127.0.0.1:{}", free_port()).unwrap();
    writeln!(file, "127.0.0.1:{}", free_port()).unwrap();
    drop(file);
    let layout = |process| WorkerLayout {
        workers: 2,
        processes: 2,
        process,
        hostfile: Some(hostfile.clone()),
        ..WorkerLayout::default()
    };
    let follower_layout = layout(1);
    let follower = std::thread::spawn(move || {
        Engine::start_layout(&follower_layout, Config::default()).map(|e| e.is_none())
    });
    let mut engine = Engine::start_layout(&layout(0), Config::default())
        .unwrap()
        .expect("process 0 hosts worker 0");
    assert_eq!(engine.workers(), 4);
    engine.apply_batch(lines(LOG)).unwrap();
    let cluster_table = engine.fairshare_table().unwrap();

    let mut single = Engine::start(1, Config::default()).unwrap();
    single.apply_batch(lines(LOG)).unwrap();
    assert_eq!(cluster_table, single.fairshare_table().unwrap());
    // The root holds all 210 TRES-seconds (no decay).
    assert_eq!(cluster_table.rows[0].raw_usage, 210);

    // Hundreds of jobs, queued on both processes' shards.
    let jobs = 400;
    let log = many_jobs(jobs);
    engine.top(50).unwrap();
    single.top(50).unwrap();
    for engine in [&mut engine, &mut single] {
        let report = engine.apply_batch(lines(&log)).unwrap();
        assert!(report.rejected.is_empty(), "{:?}", report.rejected);
        engine.advance_to(200 + (jobs / 40) as i64 + 600).unwrap();
    }
    assert_eq!(engine.top(50).unwrap(), single.top(50).unwrap(), "top 50");
    let all = single.top(jobs).unwrap();
    assert!(all.len() > jobs / 2, "most jobs are pending: {}", all.len());
    assert_eq!(engine.top(jobs).unwrap(), all, "the whole queue");
    let sprio = single.priorities().unwrap();
    assert_eq!(engine.priorities().unwrap(), sprio, "sprio");
    for p in sprio.iter().step_by(13) {
        assert_eq!(
            engine.job(&p.job).unwrap().as_ref(),
            Some(p),
            "job {}",
            p.job
        );
        assert_eq!(
            engine.queue_through(&p.job).unwrap(),
            single.queue_through(&p.job).unwrap(),
            "through {}",
            p.job
        );
    }
    assert_eq!(
        engine.fairshare_table().unwrap(),
        single.fairshare_table().unwrap()
    );
    // A share change's what-if: the changed jobs' keys travel to the other
    // process as their ids' numbers (ties of priority and submit time
    // decided there).
    let now = 200 + (jobs / 40) as i64 + 600;
    let proposal = format!(
        "{{\"op\":\"account\",\"t\":{now},\"name\":\"x\",\"shares\":1}}\n\
         {{\"op\":\"account\",\"t\":{now},\"name\":\"y\",\"shares\":100}}"
    );
    for k in [3, 1000] {
        let cluster = engine.whatif_rows(&lines(&proposal), k).unwrap();
        let one = single.whatif_rows(&lines(&proposal), k).unwrap();
        assert!(one.as_ref().is_some_and(|w| w.jobs_changed > 0), "{one:?}");
        assert_eq!(cluster, one, "what-if, {k} rows");
    }
    // Two mirrored subtrees: `p`'s users tie their twins of `r` on factor,
    // and each user's jobs tie on priority and submit time. Giving `p`
    // more shares than its sibling changes `p`'s and `pp`'s factors only:
    // every changed job's key before ties an unchanged job of `r`, on
    // whichever process holds it (its name decides there).
    let twins = twin_accounts(now + 1);
    for engine in [&mut engine, &mut single] {
        let report = engine.apply_batch(lines(&twins)).unwrap();
        assert!(report.rejected.is_empty(), "{:?}", report.rejected);
    }
    let proposal = format!(
        r#"{{"op":"account","t":{},"name":"p","shares":3}}"#,
        now + 1
    );
    for k in [3, 1000] {
        let cluster = engine.whatif_rows(&lines(&proposal), k).unwrap();
        let one = single.whatif_rows(&lines(&proposal), k).unwrap();
        assert!(one.as_ref().is_some_and(|w| w.jobs_changed > 0), "{one:?}");
        assert_eq!(cluster, one, "twins' what-if, {k} rows");
    }
    let per_process = engine.jobs_per_process().unwrap();
    assert_eq!(per_process.len(), 2);
    // Every active job (pending and running) has its record on one shard.
    assert_eq!(per_process.iter().sum::<usize>(), jobs + TWIN_JOBS);
    for held in &per_process {
        // By user association: 24 users, about half the jobs each.
        assert!(
            *held * 10 >= jobs * 3 && *held * 10 <= jobs * 7,
            "each process holds about half the jobs: {per_process:?}"
        );
    }
    drop(engine);
    assert!(follower.join().unwrap().unwrap(), "process 1 follows");
    std::fs::remove_dir_all(&dir).ok();
}
