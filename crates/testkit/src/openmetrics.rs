//! OpenMetrics text parsed back as a scraper reads it, strictly: the text
//! ends with `# EOF`; every sample follows its own family's `# HELP`/`# TYPE`
//! lines (a family's samples are contiguous) and carries its family's name or
//! one of its type's suffixes (`_total`/`_created` of a counter, `_bucket`,
//! `_sum`, `_count`, `_created` of a histogram, `_info` of an info); label
//! values are quoted with `\\`, `\"` and `\n` escapes; a value is a number,
//! `+Inf`, `-Inf` or `NaN`; no family is declared twice and no sample (name
//! and labels) appears twice. Every departure is an error naming the line.

/// A declared family.
#[derive(Debug, Clone, PartialEq)]
pub struct Family {
    /// Its name.
    pub name: String,
    /// Its type (`gauge`, `counter`, `histogram`, `info`, ...).
    pub kind: String,
    /// Its help text (empty without `# HELP`).
    pub help: String,
}

/// One sample.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// The sample's name (the family's, or with its type's suffix).
    pub name: String,
    /// The family it belongs to.
    pub family: String,
    /// Its labels, unescaped, in their order.
    pub labels: Labels,
    /// Its value.
    pub value: f64,
}

/// A whole exposition.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Exposition {
    /// The families, in their order.
    pub families: Vec<Family>,
    /// The samples, in their order.
    pub samples: Vec<Sample>,
}

impl Exposition {
    /// The family named `name`.
    pub fn family(&self, name: &str) -> Option<&Family> {
        self.families.iter().find(|f| f.name == name)
    }

    /// The value of the sample `name` with exactly these labels (any order).
    pub fn value(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let mut wanted: Vec<(&str, &str)> = labels.to_vec();
        wanted.sort();
        self.samples
            .iter()
            .find(|s| {
                let mut have: Vec<(&str, &str)> = s
                    .labels
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str()))
                    .collect();
                have.sort();
                s.name == name && have == wanted
            })
            .map(|s| s.value)
    }

    /// The samples of the family `name`.
    pub fn samples_of<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Sample> + 'a {
        self.samples.iter().filter(move |s| s.family == name)
    }
}

/// The suffixes a sample of a family of `kind` may add to its name.
fn suffixes(kind: &str) -> &'static [&'static str] {
    match kind {
        "counter" => &["_total", "_created"],
        "histogram" | "gaugehistogram" => {
            &["_bucket", "_sum", "_count", "_created", "_gsum", "_gcount"]
        }
        "summary" => &["", "_sum", "_count", "_created"],
        "info" => &["_info"],
        "stateset" | "gauge" | "unknown" => &[""],
        _ => &[],
    }
}

/// Parse `text` (see the module documentation).
// String: a test's own failure text, printed by the assertion that reads it.
pub fn parse(text: &str) -> Result<Exposition, String> {
    let body = text
        .strip_suffix("# EOF\n")
        .or_else(|| text.strip_suffix("# EOF"))
        .ok_or("the text does not end with `# EOF`")?;
    let mut exposition = Exposition::default();
    let mut seen = std::collections::HashSet::new();
    for (index, line) in body.lines().enumerate() {
        let at = |reason: String| format!("line {}: {reason}: `{line}`", index + 1);
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').unwrap_or((rest, ""));
            if exposition.family(name).is_some() {
                return Err(at(format!("family `{name}` declared twice")));
            }
            exposition.families.push(Family {
                name: name.to_string(),
                kind: "unknown".to_string(),
                help: help.to_string(),
            });
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').ok_or_else(|| at("no type".into()))?;
            match exposition.families.last_mut() {
                Some(family) if family.name == name => family.kind = kind.to_string(),
                _ => {
                    return Err(at(format!(
                        "`# TYPE {name}` without its `# HELP` just before"
                    )));
                }
            }
        } else if line.starts_with("# UNIT ") {
        } else if line.starts_with('#') || line.is_empty() {
            return Err(at("not a sample, `# HELP`, `# TYPE` or `# UNIT`".into()));
        } else {
            let sample = parse_sample(line, &exposition).map_err(at)?;
            let key = (sample.name.clone(), sample.labels.clone());
            if !seen.insert(key) {
                return Err(at("the same sample twice".into()));
            }
            exposition.samples.push(sample);
        }
    }
    Ok(exposition)
}

/// One sample line, of the family declared last.
// String: a test's own failure text, printed by the assertion that reads it.
fn parse_sample(line: &str, exposition: &Exposition) -> Result<Sample, String> {
    let name_end = line
        .find(['{', ' '])
        .ok_or_else(|| "a sample without a value".to_string())?;
    let name = &line[..name_end];
    let family = exposition
        .families
        .last()
        .ok_or_else(|| "a sample before any family".to_string())?;
    let belongs = suffixes(&family.kind)
        .iter()
        .any(|suffix| name.strip_suffix(suffix) == Some(family.name.as_str()));
    if !belongs {
        return Err(format!(
            "`{name}` is not a sample of `{}` ({})",
            family.name, family.kind
        ));
    }
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if let Some(inner) = rest.strip_prefix('{') {
        let (parsed, after) = parse_labels(inner)?;
        labels = parsed;
        rest = after;
    }
    let value_text = rest
        .strip_prefix(' ')
        .ok_or_else(|| "no space before the value".to_string())?;
    let value_text = value_text.split(' ').next().unwrap_or_default();
    let value = match value_text {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        "NaN" => f64::NAN,
        number => number
            .parse::<f64>()
            .map_err(|_| format!("`{number}` is not a value"))?,
    };
    Ok(Sample {
        name: name.to_string(),
        family: family.name.clone(),
        labels,
        value,
    })
}

/// A sample's labels: `(name, value)` in their order.
type Labels = Vec<(String, String)>;

/// The labels after `{`, and what follows their `}`.
// String: a test's own failure text, printed by the assertion that reads it.
fn parse_labels(mut text: &str) -> Result<(Labels, &str), String> {
    let mut labels = Vec::new();
    loop {
        if let Some(after) = text.strip_prefix('}') {
            return Ok((labels, after));
        }
        if !labels.is_empty() {
            text = text
                .strip_prefix(',')
                .ok_or_else(|| "labels not separated by `,`".to_string())?;
        }
        let (key, after) = text
            .split_once("=\"")
            .ok_or_else(|| "a label without `=\"`".to_string())?;
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!("`{key}` is not a label name"));
        }
        let mut value = String::new();
        let mut chars = after.char_indices();
        let end = loop {
            match chars.next() {
                None => return Err("a label value without its closing quote".to_string()),
                Some((at, '"')) => break at,
                Some((_, '\\')) => match chars.next() {
                    Some((_, '\\')) => value.push('\\'),
                    Some((_, '"')) => value.push('"'),
                    Some((_, 'n')) => value.push('\n'),
                    _ => return Err("a bad escape in a label value".to_string()),
                },
                Some((_, '\n')) => return Err("a raw newline in a label value".to_string()),
                Some((_, c)) => value.push(c),
            }
        };
        labels.push((key.to_string(), value));
        text = &after[end + 1..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_exposition_reads_back_with_escapes_and_suffixes() {
        let text = "# HELP a_total_x Counts\n# TYPE a_total_x counter\na_total_x_total 3\n\
                    # HELP g A gauge\n# TYPE g gauge\ng{k=\"x\\\"y\\\\z\\nw\",l=\"\"} 1.5\ng{k=\"v\"} +Inf\n# EOF\n";
        let parsed = parse(text).unwrap();
        assert_eq!(parsed.families.len(), 2);
        assert_eq!(parsed.family("g").unwrap().help, "A gauge");
        assert_eq!(parsed.value("a_total_x_total", &[]), Some(3.0));
        assert_eq!(
            parsed.value("g", &[("l", ""), ("k", "x\"y\\z\nw")]),
            Some(1.5)
        );
        assert_eq!(parsed.value("g", &[("k", "v")]), Some(f64::INFINITY));
    }

    #[test]
    fn departures_are_errors_naming_the_line() {
        let bad = [
            ("# HELP g x\n# TYPE g gauge\ng 1\n", "EOF"),
            ("# HELP g x\n# TYPE g gauge\nh 1\n# EOF\n", "line 3"),
            (
                "# HELP g x\n# TYPE g gauge\ng{k=\"a} 1\n# EOF\n",
                "closing quote",
            ),
            (
                "# HELP g x\n# TYPE g gauge\ng{k=\"a\"} 1\ng{k=\"a\"} 2\n# EOF\n",
                "twice",
            ),
            ("# HELP g x\n# TYPE g gauge\ng one\n# EOF\n", "not a value"),
            (
                "# HELP c x\n# TYPE c counter\nc 1\n# EOF\n",
                "not a sample of",
            ),
        ];
        for (text, reason) in bad {
            let error = parse(text).unwrap_err();
            assert!(error.contains(reason), "{error} (wanted {reason})");
        }
    }
}
