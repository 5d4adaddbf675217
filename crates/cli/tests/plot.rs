//! `fairflow plot tree` and `fairflow plot history` end to end: the files
//! they write, checked structurally (boxes at hand-computed widths, labels,
//! panels and lines), PNGs decoding to their size, the service's picture
//! and the page's overview equal to the command's, and bad requests refused
//! with a message.

#[path = "support/binary.rs"]
mod binary;
#[path = "support/service.rs"]
mod service;
use binary::{fairflow, text};

/// root -> A (3 shares: a1, a2) and B (1 share: b1); a1 charged 100 at
/// 1000, b1 300 at 4600; jobs j1 (a2) at 1000 and j2 (b1) at 2000; no decay.
const EVENTS: &str = r#"{"op":"config","t":1000,"set":{"PriorityDecayHalfLife":0,"PriorityWeightFairshare":1000}}
{"op":"account","t":1000,"name":"A","shares":3}
{"op":"account","t":1000,"name":"B","shares":1}
{"op":"user","t":1000,"user":"a1","account":"A","shares":1}
{"op":"user","t":1000,"user":"a2","account":"A","shares":1}
{"op":"user","t":1000,"user":"b1","account":"B","shares":1}
{"op":"usage","t":1000,"account":"A","user":"a1","amount":100}
{"op":"submit","t":1000,"job":"j1","user":"a2","account":"A"}
{"op":"submit","t":2000,"job":"j2","user":"b1","account":"B"}
{"op":"usage","t":4600,"account":"B","user":"b1","amount":300}
{"op":"tick","t":8200}
"#;

fn plot(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    let log = dir.join("events.jsonl");
    std::fs::write(&log, EVENTS).unwrap();
    let mut all = vec!["plot"];
    all.extend(args);
    all.extend(["--events", log.to_str().unwrap()]);
    fairflow(&all)
}

fn png_size(path: &std::path::Path) -> (u32, u32) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let reader = decoder.read_info().unwrap();
    let info = reader.info();
    (info.width, info.height)
}

/// In 1000 pixels inside the 10-pixel margins: A 750 px from x 10, B 250
/// px from x 760; a1, a2 375 px each; b1 250 px.
#[test]
fn tree_to_svg_and_png() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("tree.svg");
    let out = plot(
        dir.path(),
        &["tree", "--width-px", "1020", "-o", svg.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let picture = std::fs::read_to_string(&svg).unwrap();
    for label in ["root", "A", "B", "a1", "a2", "b1"] {
        assert!(
            picture.contains(&format!(">\n{label}\n</text>"))
                || picture.contains(&format!(">{label}\n</text>")),
            "{label}"
        );
    }
    for (x, width) in [(10, 750), (760, 250), (10, 375), (385, 375)] {
        // One pixel of white separates neighbours.
        let rect = format!("x=\"{x}\" y=\"");
        let found = picture.match_indices(&rect).any(|(at, _)| {
            picture[at..]
                .split('"')
                .nth(5)
                .and_then(|w| w.parse::<i32>().ok())
                == Some(width - 1)
        });
        assert!(found, "a box at x {x} of width {width}");
    }

    let png = dir.path().join("tree.png");
    let out = plot(
        dir.path(),
        &["tree", "--color", "factor", "-o", png.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(png_size(&png).0, 1200);
}

/// Samples every 600 s from 1000 to 8200: 13 samples. Three panels, one
/// legend entry per followed line (a1, b1, account B), and lines drawn.
#[test]
fn history_to_svg_and_png() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("history.svg");
    let out = plot(
        dir.path(),
        &[
            "history",
            "--users",
            "a1,b1",
            "--accounts",
            "B",
            "--every",
            "600",
            "-o",
            svg.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let picture = std::fs::read_to_string(&svg).unwrap();
    for caption in [
        "13 samples every 600 s",
        "Fair-share factor",
        "Raw usage",
        "Queue position",
        "a1 (A)",
        "b1 (B)",
        "account B",
    ] {
        assert!(picture.contains(caption), "{caption}");
    }
    assert!(picture.matches("<polyline").count() >= 6);

    let png = dir.path().join("history.png");
    let out = plot(
        dir.path(),
        &["history", "--users", "a2", "-o", png.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(png_size(&png), (1200, 30 + 3 * 300));
}

#[test]
fn bad_requests_are_refused_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let pdf = dir.path().join("tree.pdf");
    let out = plot(dir.path(), &["tree", "-o", pdf.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("must end in .svg or .png"));

    let svg = dir.path().join("h.svg");
    let out = plot(
        dir.path(),
        &["history", "--users", "nobody", "-o", svg.to_str().unwrap()],
    );
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("no association of user `nobody`"),
        "{}",
        text(&out.stderr)
    );
    let out = plot(dir.path(), &["history", "-o", svg.to_str().unwrap()]);
    assert!(text(&out.stderr).contains("nothing to follow"));

    // A rejected line is reported with its line number; the rest is drawn.
    let log = dir.path().join("with-a-bad-line.jsonl");
    std::fs::write(
        &log,
        format!("{EVENTS}{{\"op\":\"submit\",\"t\":9000,\"job\":\"j9\",\"user\":\"zed\",\"account\":\"A\"}}\n"),
    )
    .unwrap();
    let out = fairflow(&[
        "plot",
        "history",
        "--users",
        "a1",
        "--events",
        log.to_str().unwrap(),
        "-o",
        svg.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("line 12"),
        "{}",
        text(&out.stderr)
    );
}

/// The service draws the same tree (`GET /v1/plot/tree.svg`, and `plot tree
/// --server`) as the command from the log; the live page is served at `/`;
/// bad parameters are refused.
#[test]
fn the_service_draws_the_same_tree() {
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, "a-long-enough-token").unwrap();
    std::fs::set_permissions(
        &token_file,
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
    let service = service::Service::start(&dir.path().join("data"), &token_file, &[]);
    let (status, body) = service.request("POST", "/v1/events", Some("a-long-enough-token"), EVENTS);
    assert_eq!(status, 200, "{body}");

    let local = dir.path().join("local.svg");
    let out = plot(
        dir.path(),
        &["tree", "--width-px", "900", "-o", local.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let local = std::fs::read_to_string(&local).unwrap();
    let (status, served) = service.request("GET", "/v1/plot/tree.svg?width_px=900", None, "");
    assert_eq!(status, 200, "{served}");
    assert_eq!(served, local);

    let remote = dir.path().join("remote.svg");
    let url = format!("http://{}", service.address);
    let out = fairflow(&[
        "plot",
        "tree",
        "--server",
        &url,
        "--width-px",
        "900",
        "-o",
        remote.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(&remote).unwrap(), local);

    // The page's overview: the same picture, and the accounts by usage. B
    // charged 300 of root's 400 (0.75), A 100 (0.25).
    let (status, body) = service.request("GET", "/v1/overview?width_px=900", None, "");
    assert_eq!(status, 200, "{body}");
    let overview: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(overview["tree_svg"].as_str().unwrap(), local);
    assert_eq!(overview["accounts"][0]["account"], "B");
    assert_eq!(overview["accounts"][0]["usage_share"], 0.75);
    assert_eq!(overview["accounts"][0]["norm_shares"], 0.25);
    assert_eq!(overview["accounts"][1]["account"], "A");
    assert_eq!(overview["accounts"][1]["usage_share"], 0.25);

    let (status, page) = service.request("GET", "/", None, "");
    assert_eq!(status, 200);
    assert!(page.contains("<title>fairflow · live</title>"), "{page}");
    let (status, body) = service.request("GET", "/v1/plot/tree.svg?color=pink", None, "");
    assert_eq!(status, 400);
    assert!(body.contains("usage or factor"), "{body}");
    let (status, _) = service.request("GET", "/v1/plot/tree.svg?width_px=5", None, "");
    assert_eq!(status, 400);
    service.kill();
}
