//! The book's SLUID index: which active job each SLUID (Slurm 26.05's second
//! job key, `fairflow_model::sluid`) names, so that a job is found by its
//! SLUID as by its id ([`crate::Book::resolve_job`]). Derived from the jobs
//! (`Job::spec.sluid`): built from them on restore, where two jobs holding one
//! SLUID make the state invalid, and kept after every event that adds,
//! removes or re-keys a job (`submit`, `update`, `cancel`, `end`,
//! `remove_user`). A book without SLUIDs (Slurm 22.05 to 25.11) keeps it
//! empty and pays nothing.

use fairflow_model::event::Op;
use fairflow_model::Sluid;

use crate::state::{Jobs, State};
use crate::RestoreError;

/// SLUID to job id, shared copy-on-write as the jobs are ([`Jobs`]), so a
/// what-if's copy of a book copies a pointer.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct SluidIndex {
    jobs: imbl::OrdMap<Sluid, String>,
}

/// What an event's index change needs from before it: the SLUIDs of the jobs
/// it may remove or re-key.
pub(crate) struct SluidsBefore(Vec<Sluid>);

impl SluidIndex {
    /// The index of `jobs`; an error names two jobs holding one SLUID.
    pub(crate) fn of(jobs: &Jobs) -> Result<SluidIndex, RestoreError> {
        let mut index = SluidIndex::default();
        for (id, job) in jobs {
            let Some(sluid) = job.spec.sluid else {
                continue;
            };
            if let Some(other) = index.jobs.insert(sluid, id.clone()) {
                return Err(RestoreError::SharedSluid {
                    first: other,
                    second: id.clone(),
                    sluid,
                });
            }
        }
        Ok(index)
    }

    /// The active job holding `sluid`.
    pub(crate) fn job(&self, sluid: Sluid) -> Option<&str> {
        self.jobs.get(&sluid).map(String::as_str)
    }

    /// Does no job hold a SLUID?
    pub(crate) fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    /// Every (SLUID, job), in SLUID order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (Sluid, &str)> {
        self.jobs.iter().map(|(sluid, job)| (*sluid, job.as_str()))
    }

    /// The SLUIDs `op` may take away, read before it applies.
    pub(crate) fn before(&self, state: &State, op: &Op) -> SluidsBefore {
        if self.jobs.is_empty() {
            return SluidsBefore(Vec::new());
        }
        let sluid_of = |job: &str| state.jobs.get(job).and_then(|j| j.spec.sluid);
        SluidsBefore(match op {
            Op::Update { job, .. } | Op::Cancel { job } | Op::End { job } => {
                sluid_of(job).into_iter().collect()
            }
            Op::RemoveUser { user, account } => (state.jobs.values())
                .filter(|j| j.account == *account && j.user == *user)
                .filter_map(|j| j.spec.sluid)
                .collect(),
            _ => Vec::new(),
        })
    }

    /// Keep the index after `op` applied to `state`: the SLUIDs read
    /// before it leave, the SLUID of the job it names (if still active)
    /// enters.
    pub(crate) fn after(&mut self, state: &State, op: &Op, before: SluidsBefore) {
        for sluid in before.0 {
            self.jobs.remove(&sluid);
        }
        if let Op::Submit { job, .. } | Op::Update { job, .. } = op {
            if let Some(sluid) = state.jobs.get(job).and_then(|j| j.spec.sluid) {
                self.jobs.insert(sluid, job.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use fairflow_ingest::reader::read_events;
    use fairflow_ingest::Rejection;
    use fairflow_model::{Config, Sluid};

    use crate::{snapshot, Book};

    // Two hand-encoded SLUIDs (`fairflow_model::sluid`'s tests): cluster 3
    // at 2026-01-01T00:00:00Z, sequences 5 and 6.
    const FIVE: &str = "s00DKDVDNA0005";
    const SIX: &str = "s00DKDVDNA0006";

    fn run(book: &mut Book, log: &str) -> Vec<Rejection> {
        read_events(log.as_bytes())
            .filter_map(|line| book.apply_line(line.unwrap()).err())
            .collect()
    }

    fn tree() -> Book {
        let mut book = Book::new(Config::default());
        let log = r#"{"op":"account","t":1,"name":"a"}
{"op":"user","t":1,"user":"u","account":"a"}
{"op":"user","t":1,"user":"v","account":"a"}
"#;
        assert!(run(&mut book, log).is_empty());
        book
    }

    fn sluid(text: &str) -> Sluid {
        Sluid::parse(text).unwrap()
    }

    #[test]
    fn either_key_finds_the_job_and_the_index_follows_every_event() {
        let mut book = tree();
        let log = format!(
            r#"{{"op":"submit","t":2,"job":"17","user":"u","account":"a","sluid":"{}"}}
{{"op":"submit","t":2,"job":"18","user":"v","account":"a"}}
{{"op":"submit","t":2,"job":"{SIX}","user":"v","account":"a"}}
"#,
            FIVE.to_lowercase()
        );
        assert!(run(&mut book, &log).is_empty());
        assert_eq!(book.resolve_job("17"), "17");
        assert_eq!(book.resolve_job(FIVE), "17");
        assert_eq!(book.resolve_job("S00dkdvdnaoOO5"), "17");
        // An id that reads as a SLUID is its own job's.
        assert_eq!(book.resolve_job(SIX), SIX);
        assert_eq!(book.resolve_job("s00DKDVDNA0007"), "s00DKDVDNA0007");
        assert_eq!(book.sluid_of("17"), Some(sluid(FIVE)));

        // An update re-keys job 18 (Slurm gives a requeued job a new SLUID);
        // job 17's SLUID is then 17's alone: 18 may not take it.
        let rejected = run(
            &mut book,
            &format!(
                r#"{{"op":"update","t":3,"job":"18","sluid":"s00DKDVDNA0008"}}
{{"op":"update","t":3,"job":"18","sluid":"s00DKDVDNA0009"}}
{{"op":"update","t":3,"job":"18","sluid":"{FIVE}"}}
{{"op":"submit","t":3,"job":"19","user":"u","account":"a","sluid":"{FIVE}"}}
{{"op":"update","t":3,"job":"17","sluid":"{FIVE}"}}
"#
            ),
        );
        let fields: Vec<_> = rejected
            .iter()
            .map(|r| (r.line, r.field.as_deref(), r.reason.contains("job `17`")))
            .collect();
        assert_eq!(fields, [(3, Some("sluid"), true), (4, Some("sluid"), true)]);
        assert_eq!(book.resolve_job("s00DKDVDNA0008"), "s00DKDVDNA0008");
        assert_eq!(book.resolve_job("s00DKDVDNA0009"), "18");
        assert_eq!(book.state().jobs.len(), 3);

        // Cancel, start and end, and a removed user: the SLUIDs go with
        // their jobs, and become free again.
        let log = format!(
            r#"{{"op":"cancel","t":4,"job":"17"}}
{{"op":"start","t":4,"job":"18"}}
{{"op":"submit","t":5,"job":"20","user":"u","account":"a","sluid":"{FIVE}"}}
{{"op":"end","t":6,"job":"18"}}
{{"op":"submit","t":6,"job":"21","user":"u","account":"a","sluid":"s00DKDVDNA0009"}}
"#
        );
        assert!(run(&mut book, &log).is_empty());
        assert_eq!(book.resolve_job(FIVE), "20");
        assert_eq!(book.resolve_job("s00DKDVDNA0009"), "21");
        assert!(run(
            &mut book,
            r#"{"op":"remove_user","t":7,"user":"u","account":"a"}"#
        )
        .is_empty());
        assert_eq!(book.sluids().count(), 0);
        assert!(!book.sluids_held());
        assert_eq!(book.resolve_job(FIVE), FIVE);
    }

    #[test]
    fn a_snapshot_keeps_the_sluids_and_a_shared_one_is_damage() {
        let mut book = tree();
        let log = format!(
            r#"{{"op":"submit","t":2,"job":"1","user":"u","account":"a","sluid":"{FIVE}"}}
{{"op":"submit","t":2,"job":"2","user":"u","account":"a","sluid":"{SIX}"}}
{{"op":"submit","t":2,"job":"3","user":"u","account":"a"}}
"#
        );
        assert!(run(&mut book, &log).is_empty());
        let (restored, applied) = snapshot::decode(&snapshot::encode(&book, 7)).unwrap();
        assert_eq!(applied, 7);
        assert_eq!(restored, book);
        let pairs: Vec<_> = restored
            .sluids()
            .map(|(s, j)| (s.to_string(), j.to_string()))
            .collect();
        assert_eq!(pairs, [(FIVE.into(), "1".into()), (SIX.into(), "2".into())]);
        assert_eq!(restored.resolve_job(SIX), "2");
        assert_eq!(restored.state().jobs["1"].spec.sluid, Some(sluid(FIVE)));

        let mut copy = restored.clone();
        let shared = vec![
            (sluid(FIVE), "1".to_string()),
            (sluid(FIVE), "2".to_string()),
        ];
        let error = copy.set_sluids(shared).unwrap_err();
        assert!(error.to_string().contains("hold one SLUID"), "{error}");
        let error = copy
            .set_sluids(vec![(sluid(FIVE), "9".into())])
            .unwrap_err();
        assert!(error.to_string().contains("job `9`"), "{error}");
        assert_eq!(copy, restored, "a refused restore changes nothing");
    }

    #[test]
    fn versions_6_and_7_snapshots_read_back_without_sluids() {
        let mut book = tree();
        let log = r#"{"op":"submit","t":2,"job":"1","user":"u","account":"a"}"#;
        assert!(run(&mut book, log).is_empty());
        // Format 7 is format 8 without the trailing list of SLUIDs, and
        // format 6 is 7 without the list of expedited jobs before it (an
        // empty list is postcard's one byte 0).
        let eight = snapshot::encode(&book, 3);
        assert_eq!(&eight[eight.len() - 2..], &[0, 0]);
        for (version, trailing) in [(7u32, 1), (6, 2)] {
            let body = &eight[16..eight.len() - trailing];
            let mut old_bytes = snapshot::MAGIC.to_vec();
            old_bytes.extend_from_slice(&version.to_le_bytes());
            old_bytes.extend_from_slice(&crc32fast::hash(body).to_le_bytes());
            old_bytes.extend_from_slice(body);
            let (old, applied) = snapshot::decode(&old_bytes).unwrap();
            assert_eq!((applied, &old), (3, &book), "version {version}");
            assert!(!old.sluids_held());
        }
    }
}
