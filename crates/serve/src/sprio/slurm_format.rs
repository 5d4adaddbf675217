//! Slurm's `sprio -o` format strings (`%.15i %9r %.10Y ...`), `sprio -l`'s
//! and the default formats Slurm builds from them, and `sprio -w`'s weights
//! row, as Slurm's `src/sprio/opts.c` (`parse_format`, `_parse_token`,
//! `fmt_data`), `sprio.c` (the default formats) and `print.c` (each
//! letter's header, cell and weights cell) write them.
//!
//! A format is an optional prefix (text before the first `%`, printed at the
//! start of every line), then `%` specifiers: `%[.][width]letter[suffix]`,
//! where `.` right-justifies, the width pads the cell with spaces and cuts a
//! longer one to its first `width` characters (no width: the cell as is), and
//! the suffix is printed as it is after the cell. Lines are printed without
//! trimming, as sprio does. A letter sprio does not know is an error naming
//! it (Slurm prints an error and leaves the column out).
//!
//! Letters (sprio's man page): `a`/`A` age normalized/weighted, `b`/`B`
//! association, `c` cluster name (fairflow: empty), `f`/`F` fair-share,
//! `i` job id, `j`/`J` job size, `n` QOS name (Slurm 23.02), `N` nice,
//! `o` account, `p`/`P` partition factor, `q`/`Q` QOS factor, `r` partition
//! name, `s` SLUID (Slurm 26.05: the job's, [`JobSluids`]; empty without
//! one), `S` site factor,
//! `t`/`T` TRES factors, `u` user, `y`/`Y` priority normalized (to
//! `2^32 - 1`, `%16.14f`)/integer. Normalized cells print `%.7f`, weighted
//! ones `%.0f`; a normalized cell whose weight is 0 is 0 (sprio divides the
//! weighted value by the weight, 0 when it is 0). Under Flux and Moab the
//! factor letters read the factor the default table shows in that column
//! (`AGE` is Flux's wait time, ...).

use fairflow_model::config::Config;
use fairflow_model::report::{JobPriority, PriorityFactor};
use fairflow_model::Sluid;

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{factor_cells, Cell, SprioRows};
use crate::pieces::Pieces;

/// sprio's `-l` format, weighted (`sprio.c`).
pub const LONG: &str =
    "%.15i %9r %.8u %.8o %.10Y %.10S %.10A %.10B %.10F %.10J %.10P %.10n %.10Q %.11N %.20T";

/// sprio's `-l` format with `-n`.
pub const LONG_NORMALIZED: &str =
    "%.15i %9r %.8u %.8o %10y %10a %10b %10f %10j %10p %10n %10q %20t";

/// A format that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid sprio format `{format}`: {reason}")]
pub struct FormatError {
    /// The format given.
    pub format: String,
    /// Why it cannot be read.
    pub reason: String,
}

/// One `%` specifier.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Field {
    letter: char,
    width: usize,
    right: bool,
    suffix: String,
}

/// A parsed format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Format {
    prefix: String,
    fields: Vec<Field>,
}

/// The widest cell a `%` specifier may ask for, characters (Slurm takes any
/// `int`; a wider cell is no use to a reader and would cost every line that
/// many bytes).
pub const MAX_WIDTH: usize = 4_096;

/// The most `%` specifiers a format may hold.
pub const MAX_FIELDS: usize = 256;

/// The letters sprio knows (`fmt_data` in `opts.c`).
const LETTERS: &str = "aAbBcfFijJnNopPrSqQsuyYtT";

impl Format {
    /// Read a format as `parse_format` does: the prefix, then each
    /// `%`-separated token (empty tokens, as in `%%`, are skipped).
    pub fn parse(format: &str) -> Result<Format, FormatError> {
        let error = |reason: String| FormatError {
            format: format.to_string(),
            reason,
        };
        let (prefix, rest) = match format.find('%') {
            Some(at) => (&format[..at], &format[at..]),
            None => (format, ""),
        };
        let mut fields = Vec::new();
        for token in rest.split('%').filter(|t| !t.is_empty()) {
            let (right, token) = match token.strip_prefix('.') {
                Some(t) => (true, t),
                None => (false, token),
            };
            let digits = token.len() - token.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            let too_wide = || {
                error(format!(
                    "the width `{}` is larger than {MAX_WIDTH}",
                    &token[..digits]
                ))
            };
            let width = if digits == 0 {
                0
            } else {
                token[..digits].parse().map_err(|_| too_wide())?
            };
            if width > MAX_WIDTH {
                return Err(too_wide());
            }
            if fields.len() == MAX_FIELDS {
                return Err(error(format!("more than {MAX_FIELDS} `%` specifiers")));
            }
            let mut chars = token[digits..].chars();
            let Some(letter) = chars.next() else {
                return Err(error("a `%` specifier without a letter".into()));
            };
            if !LETTERS.contains(letter) {
                return Err(error(format!(
                    "unknown specifier `%{letter}` (sprio's letters: {LETTERS})"
                )));
            }
            fields.push(Field {
                letter,
                width,
                right,
                suffix: chars.as_str().to_string(),
            });
        }
        Ok(Format {
            prefix: prefix.to_string(),
            fields,
        })
    }

    /// The format sprio uses when none is given (`sprio.c`): `-l`'s, or the
    /// short one, which has a user column only with `-u` and a factor's
    /// column only when its weight is not 0.
    pub fn default_for(config: &Config, long: bool, normalized: bool, users: bool) -> Format {
        let text = match (long, normalized) {
            (true, false) => LONG.to_string(),
            (true, true) => LONG_NORMALIZED.to_string(),
            (false, _) => {
                let mut text = String::from("%.15i %9r");
                if users {
                    text.push_str(" %.8u");
                }
                text.push_str(if normalized { " %10y" } else { " %.10Y %.10S" });
                let weighted = [
                    (f64::from(config.weight_age), 'a'),
                    (f64::from(config.weight_assoc), 'b'),
                    (f64::from(config.weight_fairshare), 'f'),
                    (f64::from(config.weight_job_size), 'j'),
                    (f64::from(config.weight_partition), 'p'),
                    (f64::from(config.weight_qos), 'q'),
                ];
                for (weight, letter) in weighted {
                    if weight != 0.0 {
                        text.push_str(&if normalized {
                            format!(" %10{letter}")
                        } else {
                            format!(" %.10{}", letter.to_ascii_uppercase())
                        });
                    }
                }
                if !config.weight_tres.is_empty() {
                    text.push_str(if normalized { " %20t" } else { " %.20T" });
                }
                text
            }
        };
        Format::parse(&text).expect("sprio's own formats parse")
    }
}

/// What one line prints.
enum Line<'a> {
    Header,
    Weights(&'a Config),
    Job(&'a JobPriority),
}

/// sprio's `_print_str`: pad to `width` (left when right-justified), cut to
/// the first `width` characters; no width, the text as is.
fn pad(text: &str, width: usize, right: bool) -> String {
    if width == 0 {
        return text.to_string();
    }
    let cut: String = text.chars().take(width).collect();
    if right {
        format!("{cut:>width$}")
    } else {
        format!("{cut:<width$}")
    }
}

/// `%.0f` of a number, without a negative zero.
fn integer(value: f64) -> String {
    format!("{:.0}", value + 0.0)
}

/// The factor a letter shows under the job's model, as the default table's
/// column of that name.
fn column_cell(job: &JobPriority, column: usize) -> Cell {
    factor_cells(job.model)[column]
}

/// The cell of a factor letter (`column`: its index in `factor_cells`).
fn factor_text(job: &JobPriority, column: usize, normalized: bool) -> String {
    match column_cell(job, column) {
        Cell::Integer(name) => job
            .factor(name)
            .map(|f| integer(f.normalized))
            .unwrap_or_default(),
        Cell::Factor(name) => match job.factor(name) {
            Some(f) if normalized => format!("{:.7}", normalized_value(f) + 0.0),
            Some(f) => integer(f.weighted),
            None => String::new(),
        },
        Cell::Tres => tres_text(job, normalized),
        Cell::Empty => String::new(),
    }
}

/// sprio's normalized cell: the weighted value over the weight, 0 for a
/// weight of 0.
fn normalized_value(f: &PriorityFactor) -> f64 {
    if f.weight == 0.0 {
        0.0
    } else {
        f.normalized
    }
}

/// `name=value` per TRES factor that is not 0: `%.2f` normalized, `%.0f`
/// weighted.
fn tres_text(job: &JobPriority, normalized: bool) -> String {
    job.factors
        .iter()
        .filter_map(|f| f.name.strip_prefix("tres/").map(|name| (name, f)))
        .filter(|(_, f)| f.weighted + 0.0 != 0.0)
        .map(|(name, f)| {
            if normalized {
                format!("{name}={:.2}", f.normalized)
            } else {
                format!("{name}={:.0}", f.weighted)
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// A factor letter's column in `factor_cells` and whether it is the
/// normalized (lower-case) form.
fn factor_letter(letter: char) -> Option<(usize, bool)> {
    let column = match letter.to_ascii_lowercase() {
        'a' => 1,
        'b' => 2,
        'f' => 3,
        'j' => 4,
        'p' => 5,
        'q' => 6,
        't' => 8,
        _ => return None,
    };
    Some((column, letter.is_ascii_lowercase()))
}

/// The weights row's cell of a factor letter (sprio's `-w`): the weight
/// (both letters), the TRES weights as configured for `T`, empty for `t`.
fn weight_text(config: &Config, letter: char) -> String {
    let weight = match letter.to_ascii_lowercase() {
        'a' => config.weight_age,
        'b' => config.weight_assoc,
        'f' => config.weight_fairshare,
        'j' => config.weight_job_size,
        'p' => config.weight_partition,
        'q' => config.weight_qos,
        _ => {
            return if letter == 'T' {
                config
                    .weight_tres
                    .weights
                    .iter()
                    .map(|(name, w)| format!("{name}={w}"))
                    .collect::<Vec<_>>()
                    .join(",")
            } else {
                String::new()
            }
        }
    };
    weight.to_string()
}

fn header(letter: char) -> &'static str {
    match letter {
        'a' | 'A' => "AGE",
        'b' | 'B' => "ASSOC",
        'c' => "CLUSTER",
        'f' | 'F' => "FAIRSHARE",
        'i' => "JOBID",
        'j' | 'J' => "JOBSIZE",
        'n' => "QOSNAME",
        'N' => "NICE",
        'o' => "ACCOUNT",
        'p' | 'P' => "PARTITION",
        'q' | 'Q' => "QOS",
        'r' => "PARTITION",
        's' => "SLUID",
        'S' => "SITE",
        't' | 'T' => "TRES",
        'u' => "USER",
        _ => "PRIORITY",
    }
}

/// The jobs' SLUIDs (Slurm 26.05) by job id, for `%s`: the jobs without
/// one print an empty cell.
pub type JobSluids = Arc<BTreeMap<String, Sluid>>;

fn cell(field: &Field, line: &Line, sluids: &BTreeMap<String, Sluid>) -> String {
    let letter = field.letter;
    let job = match line {
        Line::Header => return header(letter).to_string(),
        Line::Weights(config) => {
            return match letter {
                'i' => "Weights".to_string(),
                'S' => "1".to_string(),
                _ if factor_letter(letter).is_some() => weight_text(config, letter),
                _ => String::new(),
            }
        }
        Line::Job(job) => job,
    };
    if let Some((column, normalized)) = factor_letter(letter) {
        return factor_text(job, column, normalized);
    }
    match letter {
        'i' => job.job.clone(),
        'r' => job.partition.clone(),
        'u' => job.user.clone(),
        'o' => job.account.clone(),
        'n' => job.qos.clone(),
        'S' => factor_text(job, 0, false),
        'N' => factor_text(job, 7, false),
        'Y' => job.priority.to_string(),
        'y' => format!("{:16.14}", job.priority as f64 / f64::from(u32::MAX)),
        's' => sluids
            .get(&job.job)
            .map(Sluid::to_string)
            .unwrap_or_default(),
        // 'c' (fairflow serves one cluster, unnamed).
        _ => String::new(),
    }
}

fn line_text(format: &Format, line: &Line, sluids: &BTreeMap<String, Sluid>) -> String {
    let mut text = format.prefix.clone();
    for field in &format.fields {
        text.push_str(&pad(&cell(field, line, sluids), field.width, field.right));
        text.push_str(&field.suffix);
    }
    text.push('\n');
    text
}

/// The listed jobs (one line per (partition, QOS) pair, as the default
/// table) in `format`, after the header unless `header` is false.
pub fn render(jobs: &[JobPriority], format: &Format, header: bool) -> String {
    let rows = Arc::new(SprioRows::new(jobs));
    render_pieces(rows, format.clone(), header, JobSluids::default()).collect()
}

/// [`render`] in pieces (`crate::pieces`), rendered as they are taken, with
/// the jobs' SLUIDs.
pub fn render_pieces(
    rows: Arc<SprioRows>,
    format: Format,
    header: bool,
    sluids: JobSluids,
) -> Pieces {
    let head = if header {
        line_text(&format, &Line::Header, &sluids)
    } else {
        String::new()
    };
    let count = rows.len();
    let row_text = move |i: usize| line_text(&format, &Line::Job(&rows.row(i)), &sluids);
    Pieces::new(head, count, Box::new(row_text), String::new())
}

/// sprio's `-w`: the header (unless `header` is false) and the weights row
/// of `config`, in `format`.
pub fn render_weights(config: &Config, format: &Format, header: bool) -> String {
    let mut text = String::new();
    if header {
        text.push_str(&line_text(format, &Line::Header, &BTreeMap::new()));
    }
    text.push_str(&line_text(format, &Line::Weights(config), &BTreeMap::new()));
    text
}

#[cfg(test)]
mod tests;

/// How sprio prints in Slurm's fixed-width form: `-o` with `%` specifiers,
/// `-l` as a table, `-w`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SlurmView {
    /// A `%` format (`-o`); else Slurm's default for the other flags.
    pub format: Option<String>,
    /// `-l`: Slurm's long format.
    pub long: bool,
    /// `-w`: the weights row instead of the jobs.
    pub weights: bool,
    /// `-h`: no header line.
    pub noheader: bool,
}

impl SlurmView {
    /// Does its format print SLUIDs (`%s`)? (Only then are they read.)
    pub fn prints_sluids(&self) -> bool {
        let format = self.format.as_deref().and_then(|f| Format::parse(f).ok());
        format.is_some_and(|f| f.fields.iter().any(|field| field.letter == 's'))
    }
}

/// sprio's answer in Slurm's form: the jobs (already selected) or, with
/// `-w`, the weights of `config`, in the view's format (else Slurm's
/// default for `-l`, `-n` and whether users were selected, `users`); `%s`
/// prints the job's SLUID from `sluids`.
pub fn answer(
    jobs: &[JobPriority],
    config: &Config,
    normalized: bool,
    view: &SlurmView,
    users: bool,
    sluids: JobSluids,
) -> Result<String, FormatError> {
    let rows = Arc::new(SprioRows::new(jobs));
    Ok(answer_pieces(rows, config, normalized, view, users, sluids)?.collect())
}

/// [`answer`] in pieces (`crate::pieces`), rendered as they are taken.
pub fn answer_pieces(
    rows: Arc<SprioRows>,
    config: &Config,
    normalized: bool,
    view: &SlurmView,
    users: bool,
    sluids: JobSluids,
) -> Result<Pieces, FormatError> {
    let format = match &view.format {
        Some(text) => Format::parse(text)?,
        None => Format::default_for(config, view.long, normalized, users),
    };
    Ok(if view.weights {
        Pieces::whole(render_weights(config, &format, !view.noheader))
    } else {
        render_pieces(rows, format, !view.noheader, sluids)
    })
}
