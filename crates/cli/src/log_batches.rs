//! The logs of `--events`, read and parsed on a thread of their own in
//! batches of lines, at most [`BATCHES_AHEAD`] batches ahead of the engine
//! that applies them: parsing the next batch overlaps applying this one, and
//! a log is never held whole (a million jobs' events parsed at once took
//! gigabytes, most of a one-off `top`'s time spent zeroing their pages).
//!
//! Every source is opened before the first line is read, so a missing file
//! fails before anything is applied; a read error mid-log ends the replay
//! with an error naming the log.

use std::io::{BufRead, Read};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;

use anyhow::{anyhow, Context};
use fairflow_ingest::reader::{open_source, read_events};
use fairflow_ingest::LogLine;

/// Batches parsed ahead of the one being applied.
pub const BATCHES_AHEAD: usize = 4;

/// What [`read_ahead`] gives each batch to: the log's index and name, and
/// the batch (`None`: that log ended).
pub type ConsumeBatch<'a> = dyn FnMut(usize, &str, Option<Vec<LogLine>>) -> anyhow::Result<()> + 'a;

/// One opened log.
pub struct LogSource {
    /// How rejections name it (`<stdin>` for `-`).
    pub name: String,
    reader: Box<dyn BufRead + Send>,
}

/// The logs opened, with the bytes read from them so far (shared with the
/// reading thread) and their total, when every one is a regular
/// uncompressed file whose size says it.
pub struct OpenedLogs {
    /// The logs, in order.
    pub sources: Vec<LogSource>,
    /// Bytes consumed from the sources so far.
    pub bytes_read: Arc<AtomicU64>,
    /// The sources' total size in bytes (`None`: standard input or a
    /// compressed log, whose size is not its text's).
    pub total_bytes: Option<u64>,
}

/// Open every log of `paths` (`-` is standard input).
pub fn open_logs(paths: &[String]) -> anyhow::Result<OpenedLogs> {
    let bytes_read = Arc::new(AtomicU64::new(0));
    let mut total_bytes = Some(0u64);
    let mut sources = Vec::with_capacity(paths.len());
    for path in paths {
        let name = if path == "-" { "<stdin>" } else { path };
        let size = (path != "-" && !path.ends_with(".gz"))
            .then(|| std::fs::metadata(path).ok().map(|m| m.len()))
            .flatten();
        total_bytes = total_bytes.zip(size).map(|(sum, size)| sum + size);
        let reader = open_source(path).with_context(|| format!("cannot read {name}"))?;
        sources.push(LogSource {
            name: name.to_string(),
            reader: Box::new(Counted {
                inner: reader,
                bytes: Arc::clone(&bytes_read),
            }),
        });
    }
    Ok(OpenedLogs {
        sources,
        bytes_read,
        total_bytes,
    })
}

/// What the reading thread hands over, per log in order.
enum Piece {
    /// The next batch of parsed lines.
    Batch(Vec<LogLine>),
    /// The log ended.
    End,
    /// Reading it failed.
    Failed(std::io::Error),
}

/// Read `sources` on a thread of their own in batches of `batch_lines`
/// lines and give each to `consume` with its log's index, in order, then
/// `None` when that log ends. An error of `consume` stops the reading.
pub fn read_ahead(
    sources: Vec<LogSource>,
    batch_lines: usize,
    consume: &mut ConsumeBatch,
) -> anyhow::Result<()> {
    let names: Vec<String> = sources.iter().map(|s| s.name.clone()).collect();
    let (sender, receiver) = sync_channel(BATCHES_AHEAD);
    std::thread::scope(|scope| {
        scope.spawn(move || read_all(sources, batch_lines.max(1), sender));
        let outcome = take_all(&names, &receiver, consume);
        // Dropping the receiver stops the reader at its next batch.
        drop(receiver);
        outcome
    })
}

fn take_all(
    names: &[String],
    receiver: &Receiver<Piece>,
    consume: &mut ConsumeBatch,
) -> anyhow::Result<()> {
    for (index, name) in names.iter().enumerate() {
        loop {
            match receiver.recv() {
                Ok(Piece::Batch(lines)) => consume(index, name, Some(lines))?,
                Ok(Piece::End) => break,
                Ok(Piece::Failed(e)) => {
                    return Err(anyhow!(e).context(format!("cannot read {name}")))
                }
                Err(_) => return Err(anyhow!("cannot read {name}: its reader stopped")),
            }
        }
        consume(index, name, None)?;
    }
    Ok(())
}

/// The reading thread: every source in order; stops when the receiver is
/// gone.
fn read_all(sources: Vec<LogSource>, batch_lines: usize, sender: SyncSender<Piece>) {
    for source in sources {
        let mut batch = Vec::with_capacity(batch_lines);
        for line in read_events(source.reader) {
            match line {
                Ok(line) => batch.push(line),
                Err(e) => {
                    let _ = sender.send(Piece::Failed(e));
                    return;
                }
            }
            if batch.len() == batch_lines {
                let full = std::mem::replace(&mut batch, Vec::with_capacity(batch_lines));
                if sender.send(Piece::Batch(full)).is_err() {
                    return;
                }
            }
        }
        if !batch.is_empty() && sender.send(Piece::Batch(batch)).is_err() {
            return;
        }
        if sender.send(Piece::End).is_err() {
            return;
        }
    }
}

/// A reader that counts the bytes consumed from it.
struct Counted<R> {
    inner: R,
    bytes: Arc<AtomicU64>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bytes.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

impl<R: BufRead> BufRead for Counted<R> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        self.inner.fill_buf()
    }

    fn consume(&mut self, amount: usize) {
        self.bytes.fetch_add(amount as u64, Ordering::Relaxed);
        self.inner.consume(amount);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(name: &str, text: &'static str) -> LogSource {
        LogSource {
            name: name.to_string(),
            reader: Box::new(text.as_bytes()),
        }
    }

    #[test]
    fn every_line_arrives_in_order_batch_by_batch_then_each_logs_end() {
        let first =
            "{\"op\":\"a\",\"t\":1}\n# comment\n{\"op\":\"b\",\"t\":2}\n{\"op\":\"c\",\"t\":3}\n";
        let second = "{\"op\":\"d\",\"t\":4}\n";
        let mut seen: Vec<(usize, String, Option<Vec<u64>>)> = Vec::new();
        read_ahead(
            vec![source("one", first), source("two", second)],
            2,
            &mut |index, name, lines| {
                let numbers = lines.map(|l| l.iter().map(|l| l.line).collect());
                seen.push((index, name.to_string(), numbers));
                Ok(())
            },
        )
        .unwrap();
        // Line numbers as in the file (the comment is line 2).
        let want = vec![
            (0, "one".to_string(), Some(vec![1, 3])),
            (0, "one".to_string(), Some(vec![4])),
            (0, "one".to_string(), None),
            (1, "two".to_string(), Some(vec![1])),
            (1, "two".to_string(), None),
        ];
        assert_eq!(seen, want);
    }

    #[test]
    fn an_error_of_the_consumer_stops_the_reading() {
        let text: &'static str =
            Box::leak("{\"op\":\"a\",\"t\":1}\n".repeat(1000).into_boxed_str());
        let mut batches = 0;
        let outcome = read_ahead(vec![source("log", text)], 1, &mut |_, _, _| {
            batches += 1;
            Err(anyhow!("stop"))
        });
        assert_eq!(outcome.unwrap_err().to_string(), "stop");
        assert_eq!(batches, 1);
    }

    #[test]
    fn a_missing_log_fails_before_anything_is_read() {
        let missing = "/nonexistent/fairflow-log.jsonl".to_string();
        let error = open_logs(&[missing])
            .err()
            .expect("a missing file is an error");
        assert!(
            format!("{error:#}").contains("cannot read /nonexistent/fairflow-log.jsonl"),
            "{error:#}"
        );
    }
}
