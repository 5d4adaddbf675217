//! The service's inputs: the serve config file
//! (`fairflow_service::config_file`) and the bodies of the write routes, as
//! the handlers parse them: `POST /v1/events`
//! (`fairflow_service::applier::parse_body`, which the stream taps use too)
//! and `POST /v1/whatif` (`read_events`, `fairflow_engine::whatif`'s bounds,
//! then its evaluation). The server itself is not run.

use std::sync::OnceLock;

use clap::{Arg, ArgAction, Command};
use fairflow_book::Book;
use fairflow_engine::whatif::{check_bounds, evaluate};
use fairflow_service::applier::parse_body;
use fairflow_service::config_file::config_tokens;

/// `--max-line-bytes`' default: the longest line a body may hold.
const MAX_LINE_BYTES: usize = 64 << 10;

/// A command with a flag of each kind `fairflow serve` has (the real one
/// is the `fairflow` binary's, which a library cannot name): an address, a
/// path, counts, a real number, switches, a choice of values, a value
/// parser of its own, an optional value with a default that conflicts with
/// a switch, and a flag that requires another.
fn serve_like_command() -> &'static Command {
    static COMMAND: OnceLock<Command> = OnceLock::new();
    COMMAND.get_or_init(|| {
        let valued = |long: &'static str| Arg::new(long).long(long).action(ArgAction::Set);
        let switch = |long: &'static str| Arg::new(long).long(long).action(ArgAction::SetTrue);
        Command::new("serve").args([
            valued("config"),
            valued("listen")
                .value_parser(clap::value_parser!(std::net::SocketAddr))
                .default_value("127.0.0.1:7471"),
            valued("data-dir").value_parser(clap::value_parser!(std::path::PathBuf)),
            valued("workers").value_parser(clap::value_parser!(usize)),
            valued("slurm-poll-secs").value_parser(clap::value_parser!(u64)),
            valued("replay-speed").value_parser(clap::value_parser!(f64)),
            switch("recover"),
            switch("reads-need-token"),
            valued("engine").value_parser(["incremental", "batch", "auto"]),
            valued("metrics-associations").value_parser(|text: &str| match text {
                "all" => Ok(usize::MAX),
                n => n.parse::<usize>().map_err(|e| e.to_string()),
            }),
            valued("calc-period-ticks")
                .value_parser(clap::value_parser!(u64))
                .num_args(0..=1)
                .default_missing_value("2")
                .conflicts_with("no-calc-period-ticks"),
            switch("no-calc-period-ticks"),
            valued("follow-flux-journal").requires("flux-db"),
            valued("flux-db"),
        ])
    })
}

/// The serve config file: any text as the TOML table of serve flags.
/// Asserts that every token it gives is a flag followed by its value, or a
/// switch.
pub fn serve_config(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(tokens) = config_tokens(text, serve_like_command()) {
        assert!(
            tokens.first().is_none_or(|t| t.starts_with("--")),
            "the tokens start with a flag: {tokens:?}"
        );
    }
}

/// The base the write bodies are applied to: the book of the example log
/// (`datasets/events/priority.jsonl`) and its applied count.
fn base() -> &'static (Book, u64) {
    static BASE: OnceLock<(Book, u64)> = OnceLock::new();
    BASE.get_or_init(|| crate::book_of(crate::BASE_LOG))
}

/// `POST /v1/events`' body: parsed as the handler parses it, then each event
/// applied to the base book as the engine's checks apply it. Asserts that
/// the lines are numbered in order, each at most once.
pub fn http_events(data: &[u8]) {
    let lines = parse_body(data, MAX_LINE_BYTES);
    assert!(
        lines.windows(2).all(|pair| pair[0].line < pair[1].line),
        "body lines numbered in order"
    );
    let mut book = base().0.clone();
    for line in lines {
        let _ = book.apply_line(line);
    }
}

/// `POST /v1/whatif`'s body: read as the handler reads it, bounded as it
/// bounds it, then evaluated against the base book.
pub fn http_whatif(data: &[u8]) {
    let Ok(lines) = fairflow_ingest::reader::read_events(data).collect::<Result<Vec<_>, _>>()
    else {
        return;
    };
    if check_bounds(&lines).is_err() {
        return;
    }
    let (book, applied) = base();
    let _ = evaluate(book, *applied, lines);
}
