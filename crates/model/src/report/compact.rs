//! [`CompactJobs`]: jobs' priorities held as bytes, read back one at a time.
//!
//! A [`JobPriority`] in memory is about 1.2 KB (five strings and a list of
//! factors, each its own allocation); a server that keeps every job's row
//! while slow clients read an answer would hold over 100 MB at 100,000 jobs.
//! The same row encoded is about a fifth of that, in one allocation: each
//! string as its length (LEB128) and bytes, each number as its 8 bytes, in
//! field order, the job id first (so rows are ordered and merged by id
//! without decoding them). [`CompactJobs::get`] decodes one row, equal to
//! the row encoded.

use std::borrow::Cow;

use super::{JobPriority, JobState, PairPriority, PriorityFactor};
use crate::config::PriorityModel;

/// Rows encoded back to back, and where each starts; see the module
/// documentation.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CompactJobs {
    bytes: Vec<u8>,
    starts: Vec<usize>,
}

impl CompactJobs {
    /// No rows.
    pub fn new() -> Self {
        CompactJobs::default()
    }

    /// Append `job` as the last row.
    pub fn push(&mut self, job: &JobPriority) {
        self.starts.push(self.bytes.len());
        encode_job(job, &mut self.bytes);
    }

    /// The number of rows.
    pub fn len(&self) -> usize {
        self.starts.len()
    }

    /// No rows?
    pub fn is_empty(&self) -> bool {
        self.starts.is_empty()
    }

    /// The bytes the rows take: their encoding and where each starts.
    pub fn encoded_bytes(&self) -> usize {
        self.bytes.len() + self.starts.len() * std::mem::size_of::<usize>()
    }

    /// Row `index`, decoded (`None` past the last).
    pub fn get(&self, index: usize) -> Option<JobPriority> {
        let start = *self.starts.get(index)?;
        let mut reader = Reader {
            bytes: &self.bytes[start..],
        };
        Some(reader.job())
    }

    /// Every row, decoded in order.
    pub fn iter(&self) -> impl Iterator<Item = JobPriority> + '_ {
        (0..self.len()).filter_map(|index| self.get(index))
    }

    /// Row `index`'s job id, read in place (`None` past the last).
    pub fn job_id(&self, index: usize) -> Option<&str> {
        let start = *self.starts.get(index)?;
        let mut reader = Reader {
            bytes: &self.bytes[start..],
        };
        let len = reader.len();
        let text = reader.take(len);
        Some(std::str::from_utf8(text).expect("encoded from a str"))
    }

    /// The bytes of row `index` as encoded.
    fn encoded(&self, index: usize) -> &[u8] {
        let end = self
            .starts
            .get(index + 1)
            .copied()
            .unwrap_or(self.bytes.len());
        &self.bytes[self.starts[index]..end]
    }

    /// The rows ordered by job id (as `str`s compare), copied as encoded.
    pub fn sorted_by_job(self) -> CompactJobs {
        let mut order: Vec<usize> = (0..self.len()).collect();
        order.sort_by(|&a, &b| self.job_id(a).cmp(&self.job_id(b)));
        let mut sorted = CompactJobs {
            bytes: Vec::with_capacity(self.bytes.len()),
            starts: Vec::with_capacity(self.starts.len()),
        };
        for index in order {
            sorted.starts.push(sorted.bytes.len());
            sorted.bytes.extend_from_slice(self.encoded(index));
        }
        sorted
    }

    /// Lists each ordered by job id merged into one so ordered, each row
    /// decoded, passed through `each` and encoded again; each list is
    /// dropped as soon as its last row is taken.
    pub fn merge_by_job(
        lists: Vec<CompactJobs>,
        mut each: impl FnMut(JobPriority) -> JobPriority,
    ) -> CompactJobs {
        let mut lists: Vec<(CompactJobs, usize)> = lists
            .into_iter()
            .filter(|list| !list.is_empty())
            .map(|list| (list, 0))
            .collect();
        let mut merged = CompactJobs::new();
        while let Some(first) = (0..lists.len()).min_by(|&a, &b| {
            let id = |i: usize| lists[i].0.job_id(lists[i].1);
            id(a).cmp(&id(b))
        }) {
            let (list, next) = &mut lists[first];
            let job = list.get(*next).expect("a list is dropped when taken whole");
            merged.push(&each(job));
            *next += 1;
            if *next == list.len() {
                lists.swap_remove(first);
            }
        }
        merged.shrink_to_fit();
        merged
    }

    /// Free what pushing reserved beyond the rows.
    pub fn shrink_to_fit(&mut self) {
        self.bytes.shrink_to_fit();
        self.starts.shrink_to_fit();
    }
}

impl<'a> FromIterator<&'a JobPriority> for CompactJobs {
    fn from_iter<I: IntoIterator<Item = &'a JobPriority>>(jobs: I) -> Self {
        let mut compact = CompactJobs::new();
        for job in jobs {
            compact.push(job);
        }
        compact.shrink_to_fit();
        compact
    }
}

fn put_str(text: &str, out: &mut Vec<u8>) {
    put_len(text.len(), out);
    out.extend_from_slice(text.as_bytes());
}

/// A length as LEB128: seven bits a byte, low first, the high bit set on
/// every byte but the last.
fn put_len(len: usize, out: &mut Vec<u8>) {
    let mut rest = len as u64;
    while rest >= 0x80 {
        out.push((rest as u8 & 0x7f) | 0x80);
        rest >>= 7;
    }
    out.push(rest as u8);
}

fn put_u64(value: u64, out: &mut Vec<u8>) {
    out.extend_from_slice(&value.to_le_bytes());
}

fn put_f64(value: f64, out: &mut Vec<u8>) {
    out.extend_from_slice(&value.to_bits().to_le_bytes());
}

fn encode_factors(factors: &[PriorityFactor], out: &mut Vec<u8>) {
    put_len(factors.len(), out);
    for factor in factors {
        put_str(&factor.name, out);
        match &factor.component {
            None => out.push(0),
            Some(component) => {
                out.push(1);
                put_str(component, out);
            }
        }
        put_f64(factor.normalized, out);
        put_f64(factor.weight, out);
        put_f64(factor.weighted, out);
        match factor.cap {
            None => out.push(0),
            Some(cap) => {
                out.push(1);
                put_f64(cap, out);
            }
        }
    }
}

fn encode_job(job: &JobPriority, out: &mut Vec<u8>) {
    for text in [&job.job, &job.user, &job.account, &job.partition, &job.qos] {
        put_str(text, out);
    }
    put_u64(job.submit_at as u64, out);
    put_u64(job.priority, out);
    out.push(match job.state {
        JobState::Pending => 0,
        JobState::Held => 1,
        JobState::Running => 2,
    });
    out.push(match job.model {
        PriorityModel::Slurm => 0,
        PriorityModel::Flux => 1,
        PriorityModel::Moab => 2,
    });
    out.extend_from_slice(&job.priority_tier.to_le_bytes());
    out.push(u8::from(job.expedited));
    encode_factors(&job.factors, out);
    put_len(job.pairs.len(), out);
    for pair in &job.pairs {
        put_str(&pair.partition, out);
        put_str(&pair.qos, out);
        put_u64(pair.priority, out);
        out.extend_from_slice(&pair.priority_tier.to_le_bytes());
        encode_factors(&pair.factors, out);
    }
}

/// Reads what `encode_job` wrote (only ever its own bytes: a short read is
/// a bug, and panics).
struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> &'a [u8] {
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        head
    }

    fn u8(&mut self) -> u8 {
        self.take(1)[0]
    }

    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take(8).try_into().expect("8 bytes"))
    }

    fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.take(2).try_into().expect("2 bytes"))
    }

    fn f64(&mut self) -> f64 {
        f64::from_bits(self.u64())
    }

    fn len(&mut self) -> usize {
        let mut value = 0u64;
        let mut shift = 0;
        loop {
            let byte = self.u8();
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return value as usize;
            }
            shift += 7;
        }
    }

    fn string(&mut self) -> String {
        let len = self.len();
        String::from_utf8(self.take(len).to_vec()).expect("encoded from a str")
    }

    fn factors(&mut self) -> Vec<PriorityFactor> {
        let count = self.len();
        (0..count)
            .map(|_| {
                let name = Cow::Owned(self.string());
                let component = (self.u8() == 1).then(|| self.string());
                let (normalized, weight, weighted) = (self.f64(), self.f64(), self.f64());
                let cap = (self.u8() == 1).then(|| self.f64());
                PriorityFactor {
                    name,
                    component,
                    normalized,
                    weight,
                    weighted,
                    cap,
                }
            })
            .collect()
    }

    fn job(&mut self) -> JobPriority {
        let (job, user, account) = (self.string(), self.string(), self.string());
        let (partition, qos) = (self.string(), self.string());
        let submit_at = self.u64() as i64;
        let priority = self.u64();
        let state = match self.u8() {
            0 => JobState::Pending,
            1 => JobState::Held,
            _ => JobState::Running,
        };
        let model = match self.u8() {
            0 => PriorityModel::Slurm,
            1 => PriorityModel::Flux,
            _ => PriorityModel::Moab,
        };
        let priority_tier = self.u16();
        let expedited = self.u8() == 1;
        let factors = self.factors();
        let pair_count = self.len();
        let pairs = (0..pair_count)
            .map(|_| PairPriority {
                partition: self.string(),
                qos: self.string(),
                priority: self.u64(),
                priority_tier: self.u16(),
                factors: self.factors(),
            })
            .collect();
        JobPriority {
            job,
            user,
            account,
            partition,
            qos,
            submit_at,
            priority,
            state,
            model,
            factors,
            pairs,
            priority_tier,
            expedited,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn factor(name: &'static str, component: Option<&str>, cap: Option<f64>) -> PriorityFactor {
        PriorityFactor {
            name: Cow::Borrowed(name),
            component: component.map(str::to_string),
            normalized: 0.25,
            weight: 1000.0,
            weighted: 250.0,
            cap,
        }
    }

    fn job(id: &str, state: JobState, model: PriorityModel) -> JobPriority {
        JobPriority {
            job: id.to_string(),
            user: "ü-user".to_string(),
            account: "acct".to_string(),
            partition: String::new(),
            qos: "normal".to_string(),
            submit_at: -5,
            priority: u64::MAX,
            state,
            model,
            factors: vec![
                factor("age", None, None),
                factor("QUEUETIME", Some("SERV"), Some(-1.5)),
            ],
            pairs: vec![],
            priority_tier: 0,
            expedited: false,
        }
    }

    #[test]
    fn every_row_reads_back_equal_to_the_row_encoded() {
        let mut paired = job("7", JobState::Pending, PriorityModel::Slurm);
        paired.pairs = vec![
            PairPriority {
                partition: "a".to_string(),
                qos: String::new(),
                priority: 3,
                factors: vec![factor("tres/cpu", None, None)],
                priority_tier: 700,
            },
            PairPriority {
                partition: "b".to_string(),
                qos: "high".to_string(),
                priority: 0,
                factors: vec![],
                priority_tier: 0,
            },
        ];
        paired.priority_tier = 700;
        paired.expedited = true;
        let mut nan = job("8", JobState::Running, PriorityModel::Moab);
        nan.factors[0].normalized = f64::INFINITY;
        let rows = vec![
            job("1", JobState::Held, PriorityModel::Flux),
            paired,
            nan,
            job("", JobState::Pending, PriorityModel::Slurm),
        ];
        let compact: CompactJobs = rows.iter().collect();
        assert_eq!(compact.len(), 4);
        assert_eq!(compact.iter().collect::<Vec<_>>(), rows);
        assert_eq!(compact.get(4), None);
        assert_eq!(compact.job_id(1), Some("7"));
        // By id as strs compare: "", "1", "7", "8".
        let sorted = compact.clone().sorted_by_job();
        let ids: Vec<String> = sorted.iter().map(|j| j.job).collect();
        assert_eq!(ids, ["", "1", "7", "8"]);
        assert_eq!(sorted.get(2).as_ref(), rows.get(1));
    }

    #[test]
    fn lists_ordered_by_id_merge_into_one_with_each_row_passed_through() {
        let list = |ids: &[&str]| -> CompactJobs {
            let rows: Vec<JobPriority> = ids
                .iter()
                .map(|id| job(id, JobState::Pending, PriorityModel::Slurm))
                .collect();
            rows.iter().collect()
        };
        let merged = CompactJobs::merge_by_job(
            vec![list(&["10", "3", "9"]), list(&[]), list(&["2", "30"])],
            |mut row| {
                row.user = format!("of {}", row.job);
                row
            },
        );
        let rows: Vec<(String, String)> = merged.iter().map(|j| (j.job, j.user)).collect();
        let expected = ["10", "2", "3", "30", "9"].map(|id| (id.to_string(), format!("of {id}")));
        assert_eq!(rows, expected);
    }

    #[test]
    fn a_length_takes_one_byte_below_128_and_more_above() {
        let mut out = Vec::new();
        for len in [0usize, 127, 128, 300, usize::MAX >> 1] {
            out.clear();
            put_len(len, &mut out);
            let mut reader = Reader { bytes: &out };
            assert_eq!(reader.len(), len);
            assert!(reader.bytes.is_empty());
        }
        let mut bytes = Vec::new();
        put_len(300, &mut bytes);
        // 300 = 0b10_0101100: 0xAC (low seven bits, continued), then 0x02.
        assert_eq!(bytes, [0xAC, 0x02]);
    }

    #[test]
    fn a_row_takes_a_fraction_of_its_size_in_memory() {
        let row = job("123456", JobState::Pending, PriorityModel::Slurm);
        let compact: CompactJobs = std::iter::repeat_n(&row, 1000).collect();
        // Per row, by hand: 5 strings of 1 length byte and 6 + 7 ("ü" is
        // two bytes) + 4 + 0 + 6 bytes = 28; submit time and priority 16;
        // state and model 2; the queue marks 3 (`PriorityTier` 2, expedited
        // 1); the factors' count 1; `age`: 1 + 3 name, 1 (no component),
        // 24, 1 (no cap) = 30; `QUEUETIME`: 1 + 9, 1 + 1 + 4 (`SERV`), 24,
        // 1 + 8 = 49; the pairs' count 1; where it starts 8.
        let per_row = 28 + 16 + 2 + 3 + 1 + 30 + 49 + 1 + 8;
        assert_eq!(per_row, 138);
        assert_eq!(compact.encoded_bytes(), 1000 * per_row);
    }
}
