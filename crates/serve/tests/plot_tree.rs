//! The share-tree picture (`fairflow_serve::plot::tree`) checked structurally
//! from tables whose layout is computed by hand: every box's rectangle at
//! its hand-computed place and width (within a pixel), each label present,
//! over- and under-served boxes on opposite sides of the colour scale, the
//! "N others" box of narrow siblings, 100,000 associations drawn in a
//! bounded picture, and the PNG decoding to the right size.

use fairflow_model::report::{FairshareRow, FairshareTable};
use fairflow_model::{Algorithm, Shares};
use fairflow_serve::plot::tree::{TreeColor, TreeOptions, TreePicture, MARGIN_PX, ROW_PX};
use fairflow_serve::plot::{png, svg, Picture};

fn row(
    account: &str,
    user: Option<&str>,
    depth: usize,
    shares: u32,
    usage: u64,
    factor: Option<f64>,
) -> FairshareRow {
    let mut r = FairshareRow::new(account, user, depth);
    r.raw_shares = (depth > 0).then_some(Shares::Value(shares));
    r.raw_usage = usage;
    r.fairshare = factor;
    r
}

/// root (usage 400) -> A (3 shares, usage 100: a1 1 share 100, a2 1 share
/// 0) and B (1 share, usage 300: b1 1 share 300), as `fairflow audit`'s
/// hand-computed tree.
fn small_table() -> FairshareTable {
    FairshareTable {
        algorithm: Algorithm::FairTree,
        as_of: 2000,
        rows: vec![
            row("root", None, 0, 0, 400, None),
            row("A", None, 1, 3, 100, None),
            row("A", Some("a1"), 2, 1, 100, Some(2.0 / 3.0)),
            row("A", Some("a2"), 2, 1, 0, Some(1.0)),
            row("B", None, 1, 1, 300, None),
            row("B", Some("b1"), 2, 1, 300, Some(1.0 / 3.0)),
        ],
    }
}

/// A `<rect>` of the SVG: x, y, width, height and fill.
#[derive(Debug, Clone, PartialEq)]
struct Rect {
    x: f64,
    y: f64,
    width: f64,
    height: f64,
    fill: String,
}

fn attribute(tag: &str, name: &str) -> Option<String> {
    let start = tag.find(&format!(" {name}=\""))? + name.len() + 3;
    let end = start + tag[start..].find('"')?;
    Some(tag[start..end].to_string())
}

fn rects(svg: &str) -> Vec<Rect> {
    svg.match_indices("<rect")
        .map(|(at, _)| {
            let tag = &svg[at..at + svg[at..].find('>').unwrap()];
            let number = |n: &str| attribute(tag, n).unwrap().parse::<f64>().unwrap();
            Rect {
                x: number("x"),
                y: number("y"),
                width: number("width"),
                height: number("height"),
                fill: attribute(tag, "fill").unwrap(),
            }
        })
        .collect()
}

fn texts(svg: &str) -> Vec<String> {
    svg.match_indices("<text")
        .map(|(at, _)| {
            let open = at + svg[at..].find('>').unwrap() + 1;
            let close = open + svg[open..].find("</text>").unwrap();
            svg[open..close].trim().to_string()
        })
        .collect()
}

fn rgb(fill: &str) -> (u8, u8, u8) {
    let hex = fill.trim_start_matches('#');
    let channel = |i: usize| u8::from_str_radix(&hex[i..i + 2], 16).unwrap();
    (channel(0), channel(2), channel(4))
}

/// The box of the row at `depth` starting at `x` (pixels), if drawn.
fn rect_at(all: &[Rect], depth: usize, x: f64) -> Rect {
    let top = TreePicture::row_top_px(depth) as f64;
    all.iter()
        .find(|r| r.y == top && (r.x - x).abs() <= 1.0)
        .unwrap_or_else(|| panic!("no box at depth {depth}, x {x}: {all:?}"))
        .clone()
}

/// With 1000 pixels inside the margins: A is 3/4 of the width (750 px),
/// B 1/4 (250 px); a1 and a2 half of A's each (375 px); b1 all of B's.
#[test]
fn boxes_at_hand_computed_places_and_widths() {
    let options = TreeOptions {
        width_px: 1000 + 2 * MARGIN_PX,
        ..TreeOptions::default()
    };
    let picture = TreePicture::new(&small_table(), &options);
    let text = svg(&picture).unwrap();
    let all = rects(&text);
    let left = MARGIN_PX as f64;
    // (depth, x, width, label)
    let expected = [
        (0, left, 1000.0, "root"),
        (1, left, 750.0, "A"),
        (1, left + 750.0, 250.0, "B"),
        (2, left, 375.0, "a1"),
        (2, left + 375.0, 375.0, "a2"),
        (2, left + 750.0, 250.0, "b1"),
    ];
    let labels = texts(&text);
    for (depth, x, width, label) in expected {
        let r = rect_at(&all, depth, x);
        // One pixel of white separates neighbours.
        assert!(
            (r.width - width).abs() <= 1.0,
            "{label}: width {} against {width}",
            r.width
        );
        assert_eq!(r.height, ROW_PX as f64 - 1.0, "{label}");
        assert!(labels.iter().any(|l| l == label), "{label} in {labels:?}");
    }
    // Six boxes, the background and the legend's 40 steps.
    assert_eq!(all.len(), 6 + 1 + 40, "{all:?}");
    let (width, height) = picture.size_px();
    assert!(text.contains(&format!("width=\"{width}\" height=\"{height}\"")));
}

/// Usage against shares: A used 100/400 = 0.25 of the cluster for 0.75 of
/// the shares (ratio 1/3: under-served, blue side), B 0.75 for 0.25 (ratio
/// 3: over-served, red side); a2 used nothing (ratio 0: the bluest end);
/// root used all of it for all the shares (ratio 1: the pale middle).
#[test]
fn over_and_under_served_on_opposite_sides() {
    let options = TreeOptions {
        width_px: 1020,
        ..TreeOptions::default()
    };
    let picture = TreePicture::new(&small_table(), &options);
    let ratios: Vec<(String, Option<f64>)> = picture
        .boxes()
        .iter()
        .map(|b| (b.label.clone(), b.usage_ratio))
        .collect();
    let ratio = |label: &str| ratios.iter().find(|(l, _)| l == label).unwrap().1.unwrap();
    assert!((ratio("A") - 1.0 / 3.0).abs() < 1e-12, "{ratios:?}");
    assert!((ratio("B") - 3.0).abs() < 1e-12);
    assert_eq!(ratio("a2"), 0.0);
    assert!((ratio("root") - 1.0).abs() < 1e-12);

    let all = rects(&svg(&picture).unwrap());
    let a = rgb(&rect_at(&all, 1, 10.0).fill);
    let b = rgb(&rect_at(&all, 1, 760.0).fill);
    let a2 = rgb(&rect_at(&all, 2, 385.0).fill);
    let root = rgb(&rect_at(&all, 0, 10.0).fill);
    assert!(a.2 > a.0, "A is on the blue side: {a:?}");
    assert!(b.0 > b.2, "B is on the red side: {b:?}");
    // ColorBrewer RdBu's ends and middle.
    assert_eq!(a2, (33, 102, 172));
    assert_eq!(root, (247, 247, 247));
}

/// Coloured by factor: a2 (factor 1) green, b1 (1/3) red-yellow, the
/// accounts (no factor) grey.
#[test]
fn coloured_by_factor() {
    let options = TreeOptions {
        width_px: 1020,
        color: TreeColor::Factor,
        ..TreeOptions::default()
    };
    let all = rects(&svg(&TreePicture::new(&small_table(), &options)).unwrap());
    assert_eq!(rgb(&rect_at(&all, 2, 385.0).fill), (26, 152, 80));
    assert_eq!(rgb(&rect_at(&all, 1, 10.0).fill), (200, 200, 200));
    let b1 = rgb(&rect_at(&all, 2, 760.0).fill);
    assert!(b1.0 > b1.1 && b1.0 > b1.2, "{b1:?}");
}

/// X (1 share) holds `big` (1000 shares) and 50 users of 1 share: in 1000
/// pixels each small user would be 1000/1050 ≈ 0.95 px, under the 4 px
/// threshold, so they are one "50 others" box of 50·1000/1050 ≈ 47.6 px
/// after `big`'s 1000·1000/1050 ≈ 952.4 px.
#[test]
fn narrow_siblings_aggregate_into_one_box() {
    let mut rows = vec![
        row("root", None, 0, 0, 0, None),
        row("X", None, 1, 1, 0, None),
        row("X", Some("big"), 2, 1000, 0, Some(0.5)),
    ];
    for u in 0..50 {
        rows.push(row("X", Some(&format!("u{u:02}")), 2, 1, 0, Some(0.5)));
    }
    let table = FairshareTable {
        algorithm: Algorithm::Classic,
        as_of: 0,
        rows,
    };
    let options = TreeOptions {
        width_px: 1020,
        ..TreeOptions::default()
    };
    let picture = TreePicture::new(&table, &options);
    let text = svg(&picture).unwrap();
    let all = rects(&text);
    let big = rect_at(&all, 2, 10.0);
    assert!(
        (big.width - 1000.0 * 1000.0 / 1050.0).abs() <= 1.5,
        "{big:?}"
    );
    let others = rect_at(&all, 2, 10.0 + 1000.0 * 1000.0 / 1050.0);
    assert!(
        (others.width - 50.0 * 1000.0 / 1050.0).abs() <= 1.5,
        "{others:?}"
    );
    // "50 others" does not fit in 47 px at 13 px: its short form does.
    assert!(picture.boxes().iter().any(|b| b.label == "50 others"));
    assert!(
        texts(&text).iter().any(|t| t == "+50"),
        "{:?}",
        texts(&text)
    );
    assert!(!texts(&text).iter().any(|t| t == "u00"));
    // root, X, big, others, the background and the legend.
    assert_eq!(all.len(), 4 + 1 + 40);
    // No usage anywhere: nothing is over- or under-served.
    assert!(picture.boxes().iter().all(|b| b.usage_ratio.is_none()));

    // Below the threshold count (a 0.5 px threshold), every user is drawn.
    let fine = TreeOptions {
        min_width_px: 0.5,
        ..options
    };
    let boxes = TreePicture::new(&table, &fine).boxes().len();
    assert_eq!(boxes, 3 + 50);
}

/// 100,000 user associations in 100 accounts of 1,000 users: the picture
/// stays bounded (each account is 10 px wide, its users 0.01 px: one
/// "1000 others" box each).
#[test]
fn a_hundred_thousand_associations_stay_readable() {
    let mut rows = vec![row("root", None, 0, 0, 1_000_000, None)];
    for a in 0..100 {
        let account = format!("acct{a:03}");
        rows.push(row(&account, None, 1, 1, 10_000, None));
        for u in 0..1000 {
            rows.push(row(&account, Some(&format!("u{u}")), 2, 1, 10, Some(0.5)));
        }
    }
    let table = FairshareTable {
        algorithm: Algorithm::FairTree,
        as_of: 0,
        rows,
    };
    let options = TreeOptions {
        width_px: 1020,
        ..TreeOptions::default()
    };
    let picture = TreePicture::new(&table, &options);
    assert_eq!(picture.boxes().len(), 1 + 100 + 100);
    assert!(picture
        .boxes()
        .iter()
        .filter(|b| b.depth == 2)
        .all(|b| b.others == 1000));
    let text = svg(&picture).unwrap();
    assert_eq!(rects(&text).len(), 201 + 1 + 40);
    assert!(text.len() < 200_000, "{} bytes", text.len());
}

/// The PNG decodes to the picture's size and is not one flat colour.
#[test]
fn png_decodes_to_the_right_size() {
    let options = TreeOptions {
        width_px: 800,
        ..TreeOptions::default()
    };
    let picture = TreePicture::new(&small_table(), &options);
    let bytes = png(&picture).unwrap();
    let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    let mut reader = decoder.read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut pixels).unwrap();
    assert_eq!((info.width, info.height), picture.size_px());
    let first = &pixels[..3];
    let distinct = pixels.chunks(3).filter(|p| *p != first).take(1000).count();
    assert!(distinct >= 1000, "a flat picture");
}
