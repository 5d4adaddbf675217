//! Reading an event log: `.jsonl`, `.jsonl.gz` (by name or by magic bytes) or
//! standard input (`-`), line by line, skipping blank and `#` lines. Invalid
//! UTF-8 and malformed JSON become rejections of their line; reading goes on.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};

use fairflow_model::Event;
use flate2::read::MultiGzDecoder;

use crate::parse::parse_event;
use crate::{IngestError, Rejection};

/// One parsed line of a log.
#[derive(Debug, Clone, PartialEq)]
pub struct LogLine {
    /// 1-based line number.
    pub line: u64,
    /// The event, or why the line is not one.
    pub event: Result<Event, Rejection>,
}

/// Open a source for reading, transparently decompressing gzip.
pub fn open_source(path: &str) -> Result<Box<dyn BufRead + Send>, IngestError> {
    let io = |source| IngestError::Io {
        path: path.to_string(),
        source,
    };
    let raw: Box<dyn Read + Send> = if path == "-" {
        Box::new(std::io::stdin())
    } else {
        Box::new(File::open(path).map_err(io)?)
    };
    let mut reader = BufReader::with_capacity(1 << 16, raw);
    let gzip = reader.fill_buf().map_err(io)?.starts_with(&[0x1f, 0x8b]);
    Ok(if gzip {
        Box::new(BufReader::with_capacity(
            1 << 16,
            MultiGzDecoder::new(reader),
        ))
    } else {
        Box::new(reader)
    })
}

/// Iterate over the events of a reader. An IO error mid-stream ends the
/// iteration with an `Err`.
pub fn read_events<R: BufRead>(reader: R) -> impl Iterator<Item = Result<LogLine, std::io::Error>> {
    let mut reader = reader;
    let mut line = 0u64;
    let mut buffer = Vec::new();
    std::iter::from_fn(move || loop {
        buffer.clear();
        match reader.read_until(b'\n', &mut buffer) {
            Err(e) => return Some(Err(e)),
            Ok(0) => return None,
            Ok(_) => {}
        }
        line += 1;
        let text = match std::str::from_utf8(&buffer) {
            Ok(text) => text.trim(),
            Err(_) => {
                return Some(Ok(LogLine {
                    line,
                    event: Err(Rejection::new(line, None, "not valid UTF-8")),
                }))
            }
        };
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        return Some(Ok(LogLine {
            line,
            event: parse_event(line, text),
        }));
    })
}

/// Read a whole log file (or `-`) into memory.
pub fn read_log(path: &str) -> Result<Vec<LogLine>, IngestError> {
    let reader = open_source(path)?;
    read_events(reader)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| IngestError::Io {
            path: path.to_string(),
            source,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blank_comment_and_bad_lines() {
        let text = b"# header\n\n{\"op\":\"tick\",\"t\":1}\n\xff\xfe\nnot json\n  {\"op\":\"tick\",\"t\":2}  ";
        let lines: Vec<LogLine> = read_events(&text[..]).map(Result::unwrap).collect();
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[0].line, 3);
        assert!(lines[0].event.is_ok());
        assert_eq!(
            lines[1].event.as_ref().unwrap_err().reason,
            "not valid UTF-8"
        );
        assert_eq!(lines[1].line, 4);
        assert!(lines[2].event.is_err());
        assert_eq!(lines[3].event.as_ref().unwrap().t, 2);
    }

    #[test]
    fn gzip_is_detected_by_its_magic() {
        use flate2::write::GzEncoder;
        use std::io::Write;
        let dir = std::env::temp_dir().join(format!("fairflow-reader-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("log.jsonl.gz");
        let mut gz = GzEncoder::new(File::create(&path).unwrap(), flate2::Compression::fast());
        gz.write_all(b"{\"op\":\"tick\",\"t\":9}\n").unwrap();
        gz.finish().unwrap();
        let lines = read_log(path.to_str().unwrap()).unwrap();
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0].event.as_ref().unwrap().t, 9);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
