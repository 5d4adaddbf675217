//! Reads that copy (`Engine::top`): a read with nothing changed shares the
//! last read's values (the same allocation, no deep copy), a smaller `k`
//! is a prefix of it, and after each batch the top `k'` the engine keeps
//! (read in the batch's round trip) equals the oracle's queue, for 1 and 2
//! workers.

use fairflow_dataflow::Engine;
use fairflow_model::Config;
use fairflow_oracle::{fairshare, priority, Replay};

mod common;
use common::lines;

const BATCHES: [&str; 3] = [
    r#"{"op":"config","t":100,"set":{"PriorityDecayHalfLife":0,"PriorityWeightAge":1000,"PriorityWeightFairshare":10000}}
{"op":"account","t":100,"name":"a","shares":3}
{"op":"account","t":100,"name":"b","shares":1}
{"op":"user","t":100,"user":"ua","account":"a"}
{"op":"user","t":100,"user":"ub","account":"b"}
{"op":"submit","t":100,"job":"1","user":"ua","account":"a","tres":{"cpu":1}}
{"op":"submit","t":100,"job":"2","user":"ub","account":"b","tres":{"cpu":1}}"#,
    r#"{"op":"usage","t":200,"account":"a","user":"ua","amount":1000}
{"op":"submit","t":200,"job":"3","user":"ua","account":"a","tres":{"cpu":1}}"#,
    r#"{"op":"submit","t":300,"job":"4","user":"ub","account":"b","tres":{"cpu":1}}"#,
];

#[test]
fn a_repeated_read_shares_and_the_kept_top_equals_the_oracle() {
    for workers in [1, 2] {
        let mut engine = Engine::start(workers, Config::default()).expect("engine starts");
        let mut oracle = Replay::new(Config::default());
        for (index, batch) in BATCHES.iter().enumerate() {
            let context = format!("{workers} workers, batch {index}");
            engine.apply_batch(lines(batch)).expect("batch applies");
            oracle.feed_all(lines(batch));
            let factors = fairshare::user_factors(oracle.state());
            let queue = priority::entry_queue(&priority::evaluate(oracle.state(), &factors));
            // From the second batch on, the top 3 was kept by the batch itself.
            let first = engine.top(3).expect("top reads");
            assert_eq!(first, queue[..queue.len().min(3)], "{context}: top 3");
            let again = engine.top(3).expect("top reads");
            assert!(
                std::ptr::eq(first.as_ptr(), again.as_ptr()),
                "{context}: a repeated read shares the values"
            );
            let one = engine.top(1).expect("top reads");
            assert_eq!(one, queue[..1], "{context}: top 1");
            assert!(
                std::ptr::eq(first.as_ptr(), one.as_ptr()),
                "{context}: a smaller k is a prefix of the last read"
            );
        }
    }
}
