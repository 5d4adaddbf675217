//! OpenMetrics text written by hand for the gauge families with one sample
//! per association (`metrics::scraped`, `metrics::exporter`): a family's
//! `# HELP` and `# TYPE` lines and its samples, straight from borrowed label
//! values, without a metric object or a `String` per label. The lines are
//! the ones `prometheus-client` writes for a `Family` of `f64` gauges: label
//! values escaped as the exposition format says (`\` as `\\`, `"` as `\"`, a
//! newline as `\n`), values formatted by the same `dtoa`; a family without a
//! sample is not written at all, as the registry leaves out an empty one.

/// One gauge family being written into an exposition.
pub(crate) struct GaugeFamily<'o> {
    out: &'o mut String,
    name: &'static str,
    /// Where the family's `# HELP` line starts: cut back to it when the
    /// family ends without a sample.
    start: usize,
    samples: usize,
}

impl<'o> GaugeFamily<'o> {
    /// Open the family `name`: its `# HELP` (`help` as it is: the registry
    /// adds a period to its own families' help, the exporters do not) and
    /// `# TYPE` lines.
    pub(crate) fn open(out: &'o mut String, name: &'static str, help: &str) -> Self {
        let start = out.len();
        for piece in ["# HELP ", name, " ", help, "\n# TYPE ", name, " gauge\n"] {
            out.push_str(piece);
        }
        GaugeFamily {
            out,
            name,
            start,
            samples: 0,
        }
    }

    /// One sample: `name{key="value",...} value` (`name value` without
    /// labels).
    pub(crate) fn sample(&mut self, labels: &[(&str, &str)], value: f64) {
        let out = &mut *self.out;
        out.push_str(self.name);
        for (index, (key, label_value)) in labels.iter().enumerate() {
            out.push(if index == 0 { '{' } else { ',' });
            out.push_str(key);
            out.push_str("=\"");
            push_escaped(out, label_value);
            out.push('"');
        }
        if !labels.is_empty() {
            out.push('}');
        }
        out.push(' ');
        out.push_str(dtoa::Buffer::new().format(value));
        out.push('\n');
        self.samples += 1;
    }

    /// End the family; without a sample it is not written at all.
    pub(crate) fn close(self) {
        if self.samples == 0 {
            self.out.truncate(self.start);
        }
    }
}

/// `value` as an OpenMetrics label value (between its quotes).
pub(crate) fn push_escaped(out: &mut String, value: &str) {
    if !value.bytes().any(|b| matches!(b, b'\\' | b'"' | b'\n')) {
        out.push_str(value);
        return;
    }
    for character in value.chars() {
        match character {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            other => out.push(other),
        }
    }
}
