//! [`SprioRows`]: the rows sprio lists, in its order, over the jobs'
//! priorities held compactly (`fairflow_model::report::CompactJobs`, about a
//! fifth of what the decoded values take), so an answer sent slowly holds
//! the encoded jobs and an index; each row is decoded when it is rendered.

use fairflow_model::report::{CompactJobs, JobIdKey, JobPriority};

/// sprio's rows: every listed job except held ones, in job-id order, one
/// row per (partition, QOS) pair ([`JobPriority::pair_rows`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SprioRows {
    jobs: CompactJobs,
    /// Each row's job (its index in `jobs`) and pair (its index in the
    /// job's [`JobPriority::pair_rows`]), in sprio's order.
    rows: Vec<(usize, usize)>,
}

impl SprioRows {
    /// The rows of `jobs`.
    pub fn new(jobs: &[JobPriority]) -> Self {
        SprioRows::of(jobs.iter().collect())
    }

    /// The rows of the jobs in `jobs` (in any order).
    pub fn of(jobs: CompactJobs) -> Self {
        let mut listed: Vec<(JobIdKey, usize, usize)> = jobs
            .iter()
            .enumerate()
            .filter(|(_, job)| !job.held())
            .map(|(index, job)| (JobIdKey::new(&job.job), index, job.pairs.len().max(1)))
            .collect();
        listed.sort_by(|a, b| a.0.cmp(&b.0));
        let rows = listed
            .into_iter()
            .flat_map(|(_, index, pairs)| (0..pairs).map(move |pair| (index, pair)))
            .collect();
        SprioRows { jobs, rows }
    }

    /// The number of rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// No rows?
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Row `index` (`index < len()`): the job with its pair's cells.
    pub fn row(&self, index: usize) -> JobPriority {
        let (job, pair) = self.rows[index];
        let job = self.jobs.get(job).expect("an indexed job");
        if job.pairs.is_empty() {
            return job;
        }
        let mut pairs = job.pair_rows();
        pairs.swap_remove(pair)
    }

    /// Every row, in order.
    pub fn iter(&self) -> impl Iterator<Item = JobPriority> + '_ {
        (0..self.len()).map(|index| self.row(index))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fairflow_model::report::{JobState, PairPriority};
    use fairflow_model::PriorityModel;

    fn job(id: &str, state: JobState, pairs: &[&str]) -> JobPriority {
        JobPriority {
            job: id.to_string(),
            user: "u".to_string(),
            account: "a".to_string(),
            partition: pairs.first().unwrap_or(&"p").to_string(),
            qos: String::new(),
            submit_at: 0,
            priority: 9,
            state,
            model: PriorityModel::Slurm,
            factors: vec![],
            pairs: pairs
                .iter()
                .map(|partition| PairPriority {
                    partition: partition.to_string(),
                    qos: String::new(),
                    priority: partition.len() as u64,
                    factors: vec![],
                    priority_tier: 0,
                })
                .collect(),
            priority_tier: 0,
            expedited: false,
        }
    }

    #[test]
    fn rows_are_the_listed_jobs_by_id_one_per_pair_without_held_ones() {
        let jobs = [
            job("10", JobState::Pending, &[]),
            job("x", JobState::Pending, &[]),
            job("9", JobState::Held, &[]),
            job("2", JobState::Running, &["b", "aa"]),
        ];
        let rows = SprioRows::new(&jobs);
        // Numeric ids as numbers first ("2" before "10"), then the others;
        // job 2 once per pair, in its pairs' order, with the pair's cells.
        let seen: Vec<(String, String, u64)> = rows
            .iter()
            .map(|row| (row.job, row.partition, row.priority))
            .collect();
        let expected = [("2", "b", 1), ("2", "aa", 2), ("10", "p", 9), ("x", "p", 9)];
        let expected: Vec<(String, String, u64)> = expected
            .iter()
            .map(|(j, p, n)| (j.to_string(), p.to_string(), *n))
            .collect();
        assert_eq!(seen, expected);
        assert!(rows.iter().all(|row| row.pairs.is_empty()));
    }
}
