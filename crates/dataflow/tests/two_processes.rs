//! Timely's multi-process mode, both processes in this test: "process 1"
//! runs on a thread as a follower, "process 0" hosts the driver; they talk
//! over TCP on localhost. The results equal the single-process engine's.

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
    drop(engine);
    assert!(follower.join().unwrap().unwrap(), "process 1 follows");

    let mut single = Engine::start(1, Config::default()).unwrap();
    single.apply_batch(lines(LOG)).unwrap();
    assert_eq!(cluster_table, single.fairshare_table().unwrap());
    // The root holds all 210 TRES-seconds (no decay).
    assert_eq!(cluster_table.rows[0].raw_usage, 210);
    std::fs::remove_dir_all(&dir).ok();
}
