//! Reading an SWF trace's text: its header comments (`UnixStartTime`,
//! `MaxNodes`, `MaxProcs`) and its job lines, 18 numbers each; a line that
//! is not valid UTF-8, has another count of fields or a field that is not a
//! number is rejected naming the line (and the field).

use std::io::BufRead;

use fairflow_model::limits::{time_in_range, MAX_TRES_COUNT};

use super::{SwfHeader, FIELD_NAMES};
use crate::reader::LogLine;
use crate::Rejection;

/// What the text of a trace holds: the header, the job lines that parsed
/// (line, the 18 values) and the rejections of those that did not.
pub(super) struct SwfTrace {
    pub(super) header: SwfHeader,
    pub(super) jobs: Vec<(u64, [i64; 18])>,
    pub(super) lines: Vec<LogLine>,
}

/// Read a trace's header and job lines, in the file's order.
pub(super) fn read_swf<R: BufRead>(reader: R) -> Result<SwfTrace, std::io::Error> {
    let mut trace = SwfTrace {
        header: SwfHeader::default(),
        jobs: Vec::new(),
        lines: Vec::new(),
    };
    for (index, text) in reader.lines().enumerate() {
        let line = index as u64 + 1;
        let text = match text {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                trace.lines.push(LogLine {
                    line,
                    event: Err(Rejection::new(line, None, "not valid UTF-8")),
                });
                continue;
            }
            Err(e) => return Err(e),
        };
        let text = text.trim();
        if let Some(comment) = text.strip_prefix(';') {
            read_header_comment(&mut trace.header, comment);
        } else if !text.is_empty() {
            match job_values(line, text) {
                Ok(values) => trace.jobs.push((line, values)),
                Err(rejection) => trace.lines.push(LogLine {
                    line,
                    event: Err(rejection),
                }),
            }
        }
    }
    Ok(trace)
}

/// Take what a header comment (`; Key: value`, without the `;`) says.
fn read_header_comment(header: &mut SwfHeader, comment: &str) {
    let Some((key, value)) = comment.split_once(':') else {
        return;
    };
    let value = value.trim();
    match key.trim() {
        "UnixStartTime" => {
            header.unix_start_time = value
                .parse()
                .ok()
                .filter(|t| time_in_range(*t))
                .unwrap_or(0)
        }
        // Sizes beyond what a TRES count holds are taken as unknown.
        "MaxNodes" => header.max_nodes = parse_size(value),
        "MaxProcs" => header.max_procs = parse_size(value),
        _ => {}
    }
}

/// A job line's 18 values (each a finite number, truncated to an integer).
fn job_values(line: u64, text: &str) -> Result<[i64; 18], Rejection> {
    let fields: Vec<&str> = text.split_whitespace().collect();
    if fields.len() != 18 {
        return Err(Rejection::new(
            line,
            None,
            format!("an SWF job line has 18 fields, this has {}", fields.len()),
        ));
    }
    let mut values = [0i64; 18];
    for (i, field) in fields.iter().enumerate() {
        match field.parse::<f64>() {
            Ok(v) if v.is_finite() => values[i] = v as i64,
            _ => {
                return Err(Rejection::new(
                    line,
                    Some(FIELD_NAMES[i]),
                    format!("`{}` is not a number", fields[i]),
                ))
            }
        }
    }
    Ok(values)
}

/// A header size, if it is a count a TRES can hold.
fn parse_size(value: &str) -> Option<u64> {
    value
        .parse::<u64>()
        .ok()
        .filter(|n| *n as f64 <= MAX_TRES_COUNT)
}
