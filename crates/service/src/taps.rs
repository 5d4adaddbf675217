//! The accounting taps that feed the service besides `POST /v1/events`:
//! - a stream of JSON lines over TCP or a Unix socket: when the service has a
//!   token, the first line must be `{"token":"..."}`; then every batch of
//!   lines read together is applied and answered by one JSON line
//!   (`{"accepted":N,"rejected":[...]}`); lines and idle time are bounded;
//! - a Slurm `jobcomp/filetxt` file followed as it grows (rotation included),
//!   each completed job charging its usage;
//! - a Flux job-manager events journal (a followed file or standard input),
//!   each job's events becoming fairflow's;
//! - a replay of a file (event log or SWF trace) at a chosen speed.
//!
//! The calc-period ticker is in `ticks`.
//!
//! **Charged once, whatever restarts.** Each file tap (`jobcomp`, the Flux
//! journal read from a file, `--replay`) logs its position with the events
//! it produced, in the same append (`cursor`); at start it goes on from the
//! last one recovered, and a followed file rotated in any way is read from
//! its start exactly once (`fairflow_ingest::follow`). The Flux journal
//! rebuilds its jobs from the lines before its position (read, not
//! applied). A journal read from standard input has no position: it is read
//! from wherever the pipe starts.
//!
//! Tap events that would arrive "in the past" (a record ending before the
//! service's current time) are charged at the service's current time.
//!
//! **Bounded like HTTP writers.** Every tap batch takes its bytes from the
//! applier handle's write budget (`budget`, shared with `POST /v1/events`)
//! before it is parsed and holds them until it is answered, so a flooding
//! tap waits its turn instead of growing memory or starving HTTP writes.
//! Socket tap connections are capped (`StreamLimits::max_connections`); a
//! followed file is read at most `FOLLOW_READ_BYTES` at a time, with lines
//! over the line limit dropped as they are read; a replayed event log is
//! streamed in batches of at most `REPLAY_BATCH_LINES` lines.

pub mod cursor;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use fairflow_ingest::flux_journal::FluxJournal;
use fairflow_ingest::follow::{position_in, FilePosition, Follower};
use fairflow_ingest::jobcomp::JobcompReader;
use fairflow_ingest::reader::{open_source, read_events};
use fairflow_ingest::swf::convert_swf;
use fairflow_ingest::{LogLine, Rejection};
use fairflow_model::Time;
use subtle::ConstantTimeEq;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Semaphore;

use crate::applier::{parse_body, ApplierHandle, WriteError};
use cursor::TapCursor;

/// Most bytes of a followed file read (and held) at once.
pub const FOLLOW_READ_BYTES: usize = 1 << 20;

/// The longest line of a followed `jobcomp` file held; longer ones are
/// rejected unread (a real record is a few hundred bytes).
pub const FOLLOW_MAX_LINE_BYTES: usize = 64 << 10;

/// Most lines of a replayed file written together.
pub const REPLAY_BATCH_LINES: usize = 10_000;

/// Limits of a socket tap connection.
#[derive(Debug, Clone)]
pub struct StreamLimits {
    /// Largest line.
    pub max_line_bytes: usize,
    /// Most lines applied together.
    pub max_batch_lines: usize,
    /// A connection silent for this long is closed.
    pub idle_timeout: Duration,
    /// Most connections open at once on one tap listener; more are answered
    /// with an error line and closed.
    pub max_connections: usize,
}

impl Default for StreamLimits {
    fn default() -> Self {
        StreamLimits {
            max_line_bytes: 64 << 10,
            max_batch_lines: 10_000,
            idle_timeout: Duration::from_secs(300),
            max_connections: 64,
        }
    }
}

/// The open connections of one stream tap listener.
#[derive(Debug, Clone)]
pub struct StreamSlots(Arc<Semaphore>);

impl StreamSlots {
    /// Room for `limits.max_connections` (at least one).
    pub fn new(limits: &StreamLimits) -> Self {
        StreamSlots(Arc::new(Semaphore::new(limits.max_connections.max(1))))
    }
}

/// Serve a newly accepted connection on its own task if the listener has
/// room for it; else answer it with an error line and close it.
pub fn admit_stream<S: AsyncRead + AsyncWrite + Unpin + Send + 'static>(
    mut stream: S,
    slots: &StreamSlots,
    applier: ApplierHandle,
    token: Option<String>,
    limits: StreamLimits,
) {
    match slots.0.clone().try_acquire_owned() {
        Ok(slot) => {
            tokio::spawn(async move {
                let _ = serve_stream(stream, applier, token, limits).await;
                drop(slot);
            });
        }
        Err(_) => {
            tokio::spawn(async move {
                let refusal = format!(
                    "{{\"error\":\"too many tap connections (at most {}): retry later\"}}\n",
                    limits.max_connections
                );
                let _ = stream.write_all(refusal.as_bytes()).await;
                let _ = stream.shutdown().await;
            });
        }
    }
}

/// Read one line of at most `limit` bytes; `Ok(None)` at end of stream. An
/// overlong line is consumed and returned as `Err(())`.
async fn read_bounded_line<R: AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
    limit: usize,
) -> std::io::Result<Option<Result<Vec<u8>, ()>>> {
    let mut line = Vec::new();
    let mut overlong = false;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(if line.is_empty() && !overlong {
                None
            } else if overlong {
                Some(Err(()))
            } else {
                Some(Ok(line))
            });
        }
        let (chunk, found) = match available.iter().position(|b| *b == b'\n') {
            Some(i) => (&available[..i], Some(i)),
            None => (available, None),
        };
        if !overlong {
            if line.len() + chunk.len() > limit {
                overlong = true;
                line.clear();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        let consumed = found.map_or(available.len(), |i| i + 1);
        reader.consume(consumed);
        if found.is_some() {
            return Ok(Some(if overlong { Err(()) } else { Ok(line) }));
        }
    }
}

/// Serve one stream connection until it closes, idles out or fails to log in.
pub async fn serve_stream<S: AsyncRead + AsyncWrite + Unpin>(
    stream: S,
    applier: ApplierHandle,
    token: Option<String>,
    limits: StreamLimits,
) -> std::io::Result<()> {
    let (read_half, mut write_half) = tokio::io::split(stream);
    let mut reader = BufReader::new(read_half);
    if let Some(token) = token {
        let hello =
            tokio::time::timeout(limits.idle_timeout, read_bounded_line(&mut reader, 4096)).await;
        let given = match hello {
            Ok(Ok(Some(Ok(line)))) => serde_json::from_slice::<serde_json::Value>(&line)
                .ok()
                .and_then(|v| v.get("token").and_then(|t| t.as_str()).map(str::to_string)),
            _ => None,
        };
        let ok = given.is_some_and(|g| bool::from(g.as_bytes().ct_eq(token.as_bytes())));
        if !ok {
            write_half.write_all(b"{\"error\":\"the first line must be {\\\"token\\\":\\\"...\\\"} with the service's token\"}\n").await?;
            return Ok(());
        }
    }
    loop {
        let first = match tokio::time::timeout(
            limits.idle_timeout,
            read_bounded_line(&mut reader, limits.max_line_bytes),
        )
        .await
        {
            Err(_) | Ok(Ok(None)) => return Ok(()),
            Ok(Err(e)) => return Err(e),
            Ok(Ok(Some(line))) => line,
        };
        // Take whatever else is already buffered into the same batch.
        let mut raw = vec![first];
        while raw.len() < limits.max_batch_lines && reader.buffer().contains(&b'\n') {
            match read_bounded_line(&mut reader, limits.max_line_bytes).await? {
                Some(line) => raw.push(line),
                None => break,
            }
        }
        // The batch's bytes come from the write budget before it is parsed
        // and are held until it is answered.
        let bytes: usize = raw
            .iter()
            .map(|line| line.as_ref().map_or(limits.max_line_bytes, Vec::len) + 1)
            .sum();
        let _held = applier.write_budget().take(bytes).await;
        let mut lines = Vec::with_capacity(raw.len());
        for (index, line) in raw.into_iter().enumerate() {
            let number = index as u64 + 1;
            match line {
                Ok(bytes) => {
                    let mut parsed = parse_body(&bytes, limits.max_line_bytes);
                    match parsed.pop() {
                        Some(mut one) => {
                            one.line = number;
                            if let Err(r) = &mut one.event {
                                r.line = number;
                            }
                            lines.push(one);
                        }
                        None => continue,
                    }
                }
                Err(()) => lines.push(LogLine {
                    line: number,
                    event: Err(Rejection::new(
                        number,
                        None,
                        format!("line is longer than {} bytes", limits.max_line_bytes),
                    )),
                }),
            }
        }
        let answer = match applier.write(lines).await {
            Ok(outcome) => serde_json::to_string(&outcome).expect("serialisable"),
            Err(reason) => serde_json::json!({ "error": reason.to_string() }).to_string(),
        };
        write_half.write_all(answer.as_bytes()).await?;
        write_half.write_all(b"\n").await?;
    }
}

/// Follow a `jobcomp/filetxt` file forever (until the applier stops), polling
/// every `interval`; its times are read in the site's zone (`TZ`, else the
/// system's).
pub async fn follow_jobcomp(path: PathBuf, applier: ApplierHandle, interval: Duration) {
    follow_jobcomp_in(path, applier, interval, chrono::Local).await
}

/// [`follow_jobcomp`] with the records' times read in `tz`.
pub async fn follow_jobcomp_in<Tz: chrono::TimeZone + Send + Sync + 'static>(
    path: PathBuf,
    applier: ApplierHandle,
    interval: Duration,
    tz: Tz,
) {
    follow_jobcomp_from(path, applier, interval, tz, None).await
}

/// [`follow_jobcomp_in`] from the tap's last logged position (`cursor`).
pub async fn follow_jobcomp_from<Tz: chrono::TimeZone + Send + Sync + 'static>(
    path: PathBuf,
    applier: ApplierHandle,
    interval: Duration,
    tz: Tz,
    from: Option<FilePosition>,
) {
    let follower = Follower::resume(&path, FOLLOW_MAX_LINE_BYTES, from.as_ref());
    let mut records = JobcompReader::new(tz);
    let convert = move |number: u64, text: &str, now: Time| {
        let read = records.line(number, text);
        for why in &read.ambiguous {
            tracing::warn!(
                tap = "jobcomp",
                ambiguous_records = records.ambiguous_records(),
                "line {number}: {why}"
            );
        }
        read.lines
            .into_iter()
            .map(|mut line| {
                if let Ok(event) = &mut line.event {
                    event.t = event.t.max(now);
                }
                line
            })
            .collect()
    };
    follow_file(follower, applier, interval, "jobcomp", convert).await
}

/// The events of one line of a Flux events journal, at the service's time
/// or later, or its rejection, and the held lines the journal dropped.
fn journal_lines(journal: &mut FluxJournal, number: u64, text: &str, now: Time) -> Vec<LogLine> {
    let mut lines = journal_line(journal, number, text, now);
    lines.extend(journal.take_dropped().into_iter().map(|r| LogLine {
        line: r.line,
        event: Err(r),
    }));
    lines
}

fn journal_line(journal: &mut FluxJournal, number: u64, text: &str, now: Time) -> Vec<LogLine> {
    match journal.line(number, text) {
        Ok(events) => events
            .into_iter()
            .map(|mut event| {
                event.t = event.t.max(now);
                LogLine {
                    line: number,
                    event: Ok(event),
                }
            })
            .collect(),
        Err(r) => vec![LogLine {
            line: number,
            event: Err(r),
        }],
    }
}

/// Follow a Flux job-manager events journal (one response a line, see
/// `fairflow_ingest::flux_journal`) forever: a file as it grows, or standard
/// input (`-`) until it ends; each job's events become fairflow's, its user
/// mapped by `journal`'s flux-accounting associations.
pub async fn follow_flux_journal(
    source: PathBuf,
    journal: FluxJournal,
    applier: ApplierHandle,
    interval: Duration,
) {
    follow_flux_journal_from(source, journal, applier, interval, None).await
}

/// [`follow_flux_journal`] from the tap's last logged position (`cursor`;
/// a file only): the journal's jobs are rebuilt from the lines before it.
pub async fn follow_flux_journal_from(
    source: PathBuf,
    mut journal: FluxJournal,
    applier: ApplierHandle,
    interval: Duration,
    from: Option<FilePosition>,
) {
    if source.as_os_str() != "-" {
        let mut follower = Follower::resume(&source, FOLLOW_MAX_LINE_BYTES, from.as_ref());
        let mut before = 0u64;
        let rebuilt = follower.read_before_position(|number, line| {
            before += 1;
            if let Ok(bytes) = line {
                let _ = journal.line(number, &String::from_utf8_lossy(bytes));
            }
        });
        // What the lines before the position dropped was reported then.
        journal.take_dropped();
        match rebuilt {
            Ok(()) if before > 0 => tracing::info!(
                tap = "flux-journal",
                lines = before,
                active_jobs = journal.active_jobs(),
                held_lines = journal.held_lines(),
                "jobs rebuilt from the lines before the position"
            ),
            Ok(()) => {}
            Err(e) => tracing::warn!(
                tap = "flux-journal",
                "reading the lines before the position ({e}): jobs submitted before it are unknown"
            ),
        }
        let convert = move |number: u64, text: &str, now: Time| {
            journal_lines(&mut journal, number, text, now)
        };
        return follow_file(follower, applier, interval, "flux-journal", convert).await;
    }
    // Standard input is read on a thread of its own (blocking reads), its
    // lines handed over in order.
    let (sender, mut lines) = tokio::sync::mpsc::channel::<std::io::Result<String>>(1024);
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::stdin().lock().lines() {
            if sender.blocking_send(line).is_err() {
                break;
            }
        }
    });
    let mut number = 0u64;
    loop {
        let text = match lines.recv().await {
            Some(Ok(text)) => text,
            None => {
                tracing::info!(tap = "flux-journal", "standard input ended");
                return;
            }
            Some(Err(e)) => {
                tracing::warn!(tap = "flux-journal", "reading standard input: {e}");
                return;
            }
        };
        number += 1;
        if text.trim().is_empty() {
            continue;
        }
        let now = applier.gauges().await.map_or(0, |g| g.now);
        let batch = journal_lines(&mut journal, number, &text, now);
        if batch.is_empty() {
            continue;
        }
        if !write_tap_batch(&applier, batch, None, "flux-journal", interval).await {
            return;
        }
    }
}

/// Write one tap batch with the tap's position after it (logged even when
/// the batch is empty or all rejected), retrying while writes are refused
/// for now; false when the applier has stopped.
async fn write_tap_batch(
    applier: &ApplierHandle,
    batch: Vec<LogLine>,
    cursor: Option<TapCursor>,
    tap: &'static str,
    interval: Duration,
) -> bool {
    // The applier logs rejected lines (rate-limited) and counts them. A
    // write refused for now (a full disk) is tried again: the follower has
    // moved past these records.
    loop {
        let written = match &cursor {
            Some(cursor) => applier.write_from_tap(batch.clone(), cursor.clone()).await,
            None => applier.write(batch.clone()).await,
        };
        match written {
            Ok(_) => break,
            Err(WriteError::Stopped) => {
                tracing::info!(tap, "stopped following");
                return false;
            }
            Err(WriteError::Unavailable(reason)) => {
                tracing::warn!(tap, "write refused, retrying: {reason}");
                tokio::time::sleep(interval.max(Duration::from_secs(1))).await;
            }
            Err(WriteError::Engine(reason)) => {
                tracing::error!(tap, "records not applied: {reason}");
                break;
            }
        }
    }
    true
}

/// Follow a file forever (until the applier stops) with `follower`,
/// polling every `interval`, each complete line turned into log lines by
/// `convert` (its number, its text, the service's current time), each poll's
/// lines written with the follower's position after them.
async fn follow_file(
    mut follower: Follower,
    applier: ApplierHandle,
    interval: Duration,
    tap: &'static str,
    mut convert: impl FnMut(u64, &str, Time) -> Vec<LogLine> + Send,
) {
    let path = follower.path().to_path_buf();
    // Log the follower's state when it changes, not every poll.
    let mut failing = false;
    loop {
        for note in follower.take_notes() {
            tracing::info!(tap, "{note}");
        }
        // The bytes of one poll are taken from the write budget before they
        // are read, and held until their write is answered.
        let read_bytes = FOLLOW_READ_BYTES.min(applier.write_budget().cap_bytes());
        let held = applier.write_budget().take(read_bytes).await;
        let lines = match follower.poll(read_bytes) {
            Ok(lines) => {
                if std::mem::take(&mut failing) {
                    tracing::info!(tap, path = %path.display(), "readable again");
                }
                lines
            }
            Err(e) => {
                if !std::mem::replace(&mut failing, true) {
                    tracing::warn!(tap, "following {}: {e}", path.display());
                }
                tokio::time::sleep(interval).await;
                continue;
            }
        };
        // More may be waiting: poll again at once, sleep only when idle.
        let idle = lines.is_empty();
        if !lines.is_empty() {
            let now = applier.gauges().await.map_or(0, |g| g.now);
            let mut batch: Vec<LogLine> = Vec::new();
            for (number, bytes) in lines {
                match bytes {
                    Ok(bytes) => {
                        let text = String::from_utf8_lossy(&bytes).to_string();
                        batch.extend(convert(number, &text, now));
                    }
                    Err(too_long) => {
                        let reason = format!("line is longer than {} bytes", too_long.limit_bytes);
                        batch.push(LogLine {
                            line: number,
                            event: Err(Rejection::new(number, None, reason)),
                        });
                    }
                }
            }
            let cursor = follower
                .position()
                .map(|position| TapCursor::new(tap, position));
            if !write_tap_batch(&applier, batch, cursor, tap, interval).await {
                return;
            }
        }
        drop(held);
        if idle {
            tokio::time::sleep(interval).await;
        }
    }
}

/// Why a replay stopped: the file cannot be opened or read, or the service
/// refused a batch. Its text is the cause's own.
#[derive(Debug, thiserror::Error)]
pub enum TapReplayError {
    /// The file cannot be opened.
    #[error(transparent)]
    Open(#[from] fairflow_ingest::IngestError),
    /// The file cannot be read.
    #[error(transparent)]
    Read(#[from] std::io::Error),
    /// The service refused a batch.
    #[error(transparent)]
    Write(#[from] WriteError),
}

/// Replay a file (event log, `.jsonl.gz`, or SWF `.swf`/`.swf.gz`) into the
/// service, `speed` times faster than its own clock (`0` = as fast as possible).
pub async fn replay_file(
    path: PathBuf,
    applier: ApplierHandle,
    speed: f64,
) -> Result<(), TapReplayError> {
    replay_file_from(path, applier, speed, None).await
}

/// [`replay_file`] after the lines a previous replay of the same file logged
/// (`from`, the tap's last cursor): nothing when it was complete; from the
/// start when the file is another one (identity, first bytes, or shorter).
pub async fn replay_file_from(
    path: PathBuf,
    applier: ApplierHandle,
    speed: f64,
    from: Option<FilePosition>,
) -> Result<(), TapReplayError> {
    let name = path.to_string_lossy().to_string();
    let stamp = |lines: u64| -> std::io::Result<FilePosition> {
        let mut file = std::fs::File::open(&path)?;
        let length = file.metadata()?.len();
        position_in(&mut file, length, lines)
    };
    let same_file = from.as_ref().is_some_and(|from| {
        std::fs::File::open(&path)
            .and_then(|mut file| {
                let meta = file.metadata()?;
                Ok(from.same_file(&mut file, &meta))
            })
            .is_ok_and(|head| head.is_some())
    });
    let skip = match &from {
        Some(from) if same_file => {
            tracing::info!(tap = "replay", path = %name, "going on after line {} replayed before", from.line);
            from.line
        }
        Some(_) => {
            tracing::info!(tap = "replay", path = %name, "not the file replayed before: replaying it from its start");
            0
        }
        None => 0,
    };
    let source = open_source(&name)?;
    // An SWF trace is converted whole (the converter sorts it by submit
    // time); an event log is streamed.
    let lines: Box<dyn Iterator<Item = std::io::Result<LogLine>> + Send> =
        if name.ends_with(".swf") || name.ends_with(".swf.gz") {
            let converted = convert_swf(source)?;
            Box::new(converted.into_iter().map(Ok))
        } else {
            Box::new(read_events(source))
        };
    // Each batch is logged with the count of the file's lines (parsed
    // events or rejections) replayed through it.
    let write = |batch: Vec<LogLine>, through: u64| {
        let cursor = stamp(through).map(|position| TapCursor::new("replay", position));
        let applier = applier.clone();
        async move {
            applier.write_from_tap(batch, cursor?).await?;
            Ok::<(), TapReplayError>(())
        }
    };
    let started = tokio::time::Instant::now();
    let mut first_t = None;
    let mut batch: Vec<LogLine> = Vec::new();
    let mut batch_t = None;
    let mut consumed = skip;
    for line in lines.skip(skip as usize) {
        let line = line?;
        let t = line.event.as_ref().ok().map(|e| e.t);
        if first_t.is_none() {
            first_t = t;
        }
        let full = batch.len() >= REPLAY_BATCH_LINES;
        if (full || (t.is_some() && t != batch_t)) && !batch.is_empty() {
            write(std::mem::take(&mut batch), consumed).await?;
        }
        if let (Some(t), true) = (t, speed > 0.0) {
            if t != batch_t.unwrap_or(i64::MIN) {
                let due =
                    Duration::from_secs_f64(((t - first_t.unwrap_or(t)).max(0) as f64) / speed);
                tokio::time::sleep_until(started + due).await;
            }
        }
        if t.is_some() {
            batch_t = t;
        }
        batch.push(line);
        consumed += 1;
    }
    if !batch.is_empty() {
        write(batch, consumed).await?;
    } else if consumed == skip && skip > 0 {
        tracing::info!(tap = "replay", path = %name, "already replayed whole ({skip} lines): nothing to replay");
    }
    Ok(())
}
