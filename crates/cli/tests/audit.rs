//! `fairflow audit` on a small tree computed by hand, on both engines.

#[path = "support/binary.rs"]
mod binary;
use binary::{fairflow_with_input, text};

/// root -> A (3 shares: users a1, a2, 1 each) and B (1 share: user b1).
/// No decay: raw usage is what was charged: a1 100, b1 300 (A 100, B 300,
/// root 400). Job j1 (a2) waits from 1000, j2 (a1) from 1500; now 2000.
const EVENTS: &str = r#"{"op":"config","t":1000,"set":{"PriorityDecayHalfLife":0,"PriorityWeightFairshare":1000}}
{"op":"account","t":1000,"name":"A","shares":3}
{"op":"account","t":1000,"name":"B","shares":1}
{"op":"user","t":1000,"user":"a1","account":"A","shares":1}
{"op":"user","t":1000,"user":"a2","account":"A","shares":1}
{"op":"user","t":1000,"user":"b1","account":"B","shares":1}
{"op":"usage","t":1000,"account":"A","user":"a1","amount":100}
{"op":"usage","t":1000,"account":"B","user":"b1","amount":300}
{"op":"submit","t":1000,"job":"j1","user":"a2","account":"A"}
{"op":"submit","t":1500,"job":"j2","user":"a1","account":"A"}
{"op":"tick","t":2000}
"#;

fn audit(extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["audit", "--json", "--events", "-"];
    args.extend(extra);
    let out = fairflow_with_input(&args, EVENTS.as_bytes());
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_str(&text(&out.stdout)).unwrap()
}

fn row(list: &serde_json::Value, index: usize) -> (String, String, f64, f64, f64, f64) {
    let r = &list[index];
    (
        r["account"].as_str().unwrap().to_string(),
        r["user"].as_str().unwrap_or("").to_string(),
        r["level_share"].as_f64().unwrap(),
        r["level_usage"].as_f64().unwrap(),
        r["level_error"].as_f64().unwrap(),
        r["global_error"].as_f64().unwrap(),
    )
}

/// By hand. Depth 1: A's share 3/4 = 0.75, usage 100/400 = 0.25, error
/// −0.5 (under-served); B 0.25, 0.75, +0.5 (over-served). Depth 2, among
/// siblings: a1 1/2, 100/100 = 1, +0.5; a2 0.5, 0, −0.5; b1 1, 1, 0
/// (neither). Against the cluster: a1 0.75·0.5 = 0.375 of the shares, 0.25
/// of the usage (−0.125); a2 0.375, 0 (−0.375); B +0.5.
/// Fair Tree: LevelFS A 0.75/0.25 = 3 before B 0.25/0.75; in A a2 (no
/// usage: infinite) before a1 (0.5/1): ranks a2 3, a1 2, b1 1 of 3, factors
/// 1, 2/3, 1/3. Waiting (factor ≥ 0.5): a2 since 1000 (1000 s, j1), then a1
/// since 1500 (500 s, j2).
#[test]
fn a_small_tree_by_hand() {
    for engine in [
        &["--engine", "batch"][..],
        &["--engine", "incremental", "--workers", "2"],
    ] {
        let json = audit(engine);
        let levels = json["levels"].as_array().unwrap();
        assert_eq!(levels.len(), 2, "{json}");
        assert_eq!(levels[0]["depth"], 1);
        assert_eq!(
            row(&levels[0]["over"], 0),
            ("B".into(), "".into(), 0.25, 0.75, 0.5, 0.5)
        );
        assert_eq!(
            row(&levels[0]["under"], 0),
            ("A".into(), "".into(), 0.75, 0.25, -0.5, -0.5)
        );
        assert_eq!(
            levels[1]["over"].as_array().unwrap().len(),
            1,
            "b1 is neither: {json}"
        );
        assert_eq!(
            row(&levels[1]["over"], 0),
            ("A".into(), "a1".into(), 0.5, 1.0, 0.5, 0.25 - 0.375)
        );
        assert_eq!(
            row(&levels[1]["under"], 0),
            ("A".into(), "a2".into(), 0.5, 0.0, -0.5, -0.375)
        );
        let waiting = json["waiting"].as_array().unwrap();
        assert_eq!(waiting.len(), 2, "{json}");
        assert_eq!(waiting[0]["user"], "a2");
        assert_eq!(waiting[0]["fairshare"], 1.0);
        assert_eq!(waiting[0]["longest_wait_secs"], 1000);
        assert_eq!(waiting[0]["oldest_job"], "j1");
        assert_eq!(waiting[1]["user"], "a1");
        assert_eq!(waiting[1]["longest_wait_secs"], 500);
        assert_eq!(waiting[1]["fairshare"], 2.0 / 3.0);
    }
    // A higher bar keeps only a2; --top 1 one association per side and level.
    let json = audit(&["--min-factor", "0.9", "--top", "1"]);
    assert_eq!(json["waiting"].as_array().unwrap().len(), 1);
    // The table names each part.
    let out = fairflow_with_input(&["audit", "--events", "-"], EVENTS.as_bytes());
    let table = text(&out.stdout);
    assert!(table.contains("most over-served"), "{table}");
    assert!(table.contains("most under-served"), "{table}");
    assert!(
        table.contains("high fair-share users whose jobs wait longest"),
        "{table}"
    );
    // A factor outside 0..1 is refused.
    let out = fairflow_with_input(
        &["audit", "--min-factor", "2", "--events", "-"],
        EVENTS.as_bytes(),
    );
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("--min-factor 2"));
}
