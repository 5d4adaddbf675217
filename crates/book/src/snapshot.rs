//! Snapshots of the book: what the live service checkpoints, in one format
//! that either engine writes and restores (the incremental engine rebuilds
//! its dataflow's inputs from the book; nothing of a dataflow is kept).
//!
//! # What is kept
//! The book's state (which holds Slurm's `INCR_ONLY` memory), the time of the
//! last accepted event and the count of applied events. The book's indexes
//! are derived again on restore, and the state is checked then (every parent
//! exists, the tree has no cycle, every job's association exists).
//!
//! # Format
//! `MAGIC` (8 bytes), the format version (`u32` little-endian), the CRC-32 of
//! the body (`u32` little-endian), then the body in `postcard`. A foreign or
//! damaged snapshot is a [`SnapshotError`], never a panic: the magic and the
//! version are checked, then the checksum, then the decoding, then the
//! state's consistency.
//!
//! # Versions
//! - 1 held three books (the validator's, the engine's ledger and an oracle
//!   state): refused.
//! - 2 stored usage in frame units of `2^-20` TRES-seconds: read and converted
//!   exactly to version 3's units (`State::convert_binary_frame_units`).
//! - 3 stores usage in frame units of `2^-20 · 5^-6` TRES-seconds
//!   (`fairflow_model::usage`), the same layout as 2.
//! - 4 adds the partitions' `PriorityTier`s after the applied count (a map
//!   from partition to tier, the tiers that are not 0); 2 and 3 had none, so
//!   every partition reads back in tier 0 (and every job's partition list
//!   is in the order that tier 0 gives: the order given).
//! - 5 adds, after the tiers, `INCR_ONLY`'s floors per (partition, QOS) pair
//!   (`State::pair_floor`, a map from job to its floors by pair index) and the
//!   configuration's usage model (`UsageModel` and flux-accounting's usage
//!   weights); 2 to 4 had none, so they read back without pair floors and
//!   with Slurm's usage model.
//! - 6 adds, after the usage model, flux-accounting's bin parameters
//!   (`FluxUsageResetPeriod`, `FluxDecayFactor`, `FluxHalfLifePeriodEnd`)
//!   and the book's bins (`State::flux_bins`: every association's bins and
//!   the period clock); 2 to 5 had none: a format-5 book under
//!   `UsageModel=flux` (whose usage decayed continuously) reads back with
//!   the default parameters and its usage as of its time in bin 0.
//! - 7 adds, after the bins, the jobs marked for expedited requeue
//!   (`State::expedited`); 2 to 6 had none: they read back with no job
//!   marked.
//! - 8 adds, after those, the jobs' SLUIDs (Slurm 26.05's second job key:
//!   a list of (SLUID, job) in SLUID order, `JobSpec::sluid`); 2 to 7 had
//!   none, so their jobs read back without one.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use fairflow_model::config::{FluxUsageBins, FluxUsageWeights, UsageModel};
use fairflow_model::Sluid;

use crate::flux_bins::FluxBins;
use crate::{Book, RestoreError};

/// The first bytes of every snapshot.
pub const MAGIC: &[u8; 8] = b"FFLOWENG";

/// The format version this build writes (and reads; see the module's
/// "Versions" for the older ones).
pub const VERSION: u32 = 8;

/// The oldest format version this build reads (converting it).
pub const OLDEST_READ: u32 = 2;

const HEADER_BYTES: usize = MAGIC.len() + 4 + 4;

/// Why a snapshot cannot be restored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SnapshotError {
    /// Not a fairflow snapshot.
    #[error("not a fairflow snapshot (no `FFLOWENG` header)")]
    Foreign,
    /// Written by a build with another format.
    #[error(
        "snapshot format version {found} is not supported (this build reads versions {OLDEST_READ} to {VERSION}); rebuild the state from the event log"
    )]
    Version {
        /// The version found.
        found: u32,
    },
    /// Damaged: short, wrong checksum or undecodable.
    #[error("damaged snapshot: {0}")]
    Corrupt(String),
    /// Damaged: decoded, but not a state the book can hold.
    #[error("damaged snapshot: {0}")]
    Inconsistent(#[from] RestoreError),
}

// Each version's body is the one before it, then what the version adds:
// postcard writes a nested struct's fields in line (no length, no tag), so
// nesting is the flat layout and each field is declared once. The writer
// borrows (`Cow::Borrowed`) what the book holds; the reader owns.

/// The body of versions 2 and 3.
#[derive(serde::Serialize, serde::Deserialize)]
struct BodyV3<'a> {
    book: Cow<'a, Book>,
    applied: u64,
}

/// The body of version 4: version 3's, then the partitions' tiers.
#[derive(serde::Serialize, serde::Deserialize)]
struct BodyV4<'a> {
    v3: BodyV3<'a>,
    tiers: BTreeMap<String, u16>,
}

/// The body of version 5: version 4's, then the pair floors and the usage
/// model.
#[derive(serde::Serialize, serde::Deserialize)]
struct BodyV5<'a> {
    v4: BodyV4<'a>,
    pair_floors: Cow<'a, BTreeMap<String, Vec<u64>>>,
    usage_model: UsageModel,
    flux_usage: Cow<'a, FluxUsageWeights>,
}

/// The body of version 6: version 5's, then flux-accounting's bins.
#[derive(serde::Serialize, serde::Deserialize)]
struct BodyV6<'a> {
    v5: BodyV5<'a>,
    flux_bins_config: Cow<'a, FluxUsageBins>,
    flux_bins: Cow<'a, Option<FluxBins>>,
}

/// The body of version 7: version 6's, then the expedited jobs.
#[derive(serde::Serialize, serde::Deserialize)]
struct BodyV7<'a> {
    v6: BodyV6<'a>,
    expedited: Cow<'a, BTreeSet<String>>,
}

/// The body of version 8 (this build's): version 7's, then the SLUIDs.
#[derive(serde::Serialize, serde::Deserialize)]
struct Body<'a> {
    v7: BodyV7<'a>,
    sluids: Vec<(Sluid, Cow<'a, str>)>,
}

impl<'a> BodyV3<'a> {
    /// As version 4: every partition in tier 0.
    fn upgrade(self) -> BodyV4<'a> {
        BodyV4 {
            v3: self,
            tiers: BTreeMap::new(),
        }
    }
}

impl<'a> BodyV4<'a> {
    /// As version 5: no pair floors, Slurm's usage model.
    fn upgrade(self) -> BodyV5<'a> {
        BodyV5 {
            v4: self,
            pair_floors: Cow::Owned(BTreeMap::new()),
            usage_model: UsageModel::default(),
            flux_usage: Cow::Owned(FluxUsageWeights::default()),
        }
    }
}

impl<'a> BodyV5<'a> {
    /// As version 6: the default bin parameters, no bins.
    fn upgrade(self) -> BodyV6<'a> {
        BodyV6 {
            v5: self,
            flux_bins_config: Cow::Owned(FluxUsageBins::default()),
            flux_bins: Cow::Owned(None),
        }
    }
}

impl<'a> BodyV6<'a> {
    /// As version 7: no job marked expedited.
    fn upgrade(self) -> BodyV7<'a> {
        BodyV7 {
            v6: self,
            expedited: Cow::Owned(BTreeSet::new()),
        }
    }
}

impl<'a> BodyV7<'a> {
    /// As version 8: no SLUIDs.
    fn upgrade(self) -> Body<'a> {
        Body {
            v7: self,
            sluids: Vec::new(),
        }
    }
}

/// `book`, which applied `applied` events, as a snapshot.
pub fn encode(book: &Book, applied: u64) -> Vec<u8> {
    let tiers = book
        .state()
        .partitions
        .iter()
        .filter(|(_, p)| p.priority_tier != 0)
        .map(|(name, p)| (name.clone(), p.priority_tier))
        .collect();
    let state = book.state();
    let body = postcard::to_stdvec(&Body {
        v7: BodyV7 {
            v6: BodyV6 {
                v5: BodyV5 {
                    v4: BodyV4 {
                        v3: BodyV3 {
                            book: Cow::Borrowed(book),
                            applied,
                        },
                        tiers,
                    },
                    pair_floors: Cow::Borrowed(&state.pair_floor),
                    usage_model: state.config.usage_model,
                    flux_usage: Cow::Borrowed(&state.config.flux_usage),
                },
                flux_bins_config: Cow::Borrowed(&state.config.flux_bins),
                flux_bins: Cow::Borrowed(&state.flux_bins),
            },
            expedited: Cow::Borrowed(&state.expedited),
        },
        sluids: book
            .sluids()
            .map(|(sluid, job)| (sluid, Cow::Borrowed(job)))
            .collect(),
    })
    .expect("a book is always serialisable");
    let mut bytes = Vec::with_capacity(HEADER_BYTES + body.len());
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&VERSION.to_le_bytes());
    bytes.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
    bytes.extend_from_slice(&body);
    bytes
}

/// Does `bytes` start like a fairflow snapshot?
pub fn is_snapshot(bytes: &[u8]) -> bool {
    bytes.starts_with(MAGIC)
}

/// The book and the applied count of a snapshot.
pub fn decode(bytes: &[u8]) -> Result<(Book, u64), SnapshotError> {
    if !is_snapshot(bytes) {
        return Err(SnapshotError::Foreign);
    }
    if bytes.len() < HEADER_BYTES {
        return Err(SnapshotError::Corrupt(format!(
            "{} bytes is shorter than the {HEADER_BYTES}-byte header",
            bytes.len()
        )));
    }
    let word = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
    let version = word(MAGIC.len());
    if !(OLDEST_READ..=VERSION).contains(&version) {
        return Err(SnapshotError::Version { found: version });
    }
    let checksum = word(MAGIC.len() + 4);
    let body = &bytes[HEADER_BYTES..];
    if crc32fast::hash(body) != checksum {
        return Err(SnapshotError::Corrupt(
            "the checksum does not match the content".into(),
        ));
    }
    let undecodable =
        |e: postcard::Error| SnapshotError::Corrupt(format!("cannot decode the book: {e}"));
    let body: Body = match version {
        2..=3 => postcard::from_bytes::<BodyV3>(body)
            .map(|v3| v3.upgrade().upgrade().upgrade().upgrade().upgrade()),
        4 => postcard::from_bytes::<BodyV4>(body)
            .map(|v4| v4.upgrade().upgrade().upgrade().upgrade()),
        5 => postcard::from_bytes::<BodyV5>(body).map(|v5| v5.upgrade().upgrade().upgrade()),
        6 => postcard::from_bytes::<BodyV6>(body).map(|v6| v6.upgrade().upgrade()),
        7 => postcard::from_bytes::<BodyV7>(body).map(BodyV7::upgrade),
        _ => postcard::from_bytes::<Body>(body),
    }
    .map_err(undecodable)?;
    restore(body, version)
}

/// The book of a decoded `body` of format `version` (converted to this
/// build's), its parts set and checked, and the applied count.
fn restore(body: Body, version: u32) -> Result<(Book, u64), SnapshotError> {
    let Body { v7, sluids } = body;
    let BodyV7 { v6, expedited } = v7;
    let BodyV6 {
        v5,
        flux_bins_config,
        flux_bins,
    } = v6;
    let BodyV5 {
        v4,
        pair_floors,
        usage_model,
        flux_usage,
    } = v5;
    let BodyV4 { v3, tiers } = v4;
    let mut book = v3.book.into_owned();
    // Times and accrual before anything computes with them (format 2's
    // conversion recomputes the offsets from the jobs; format 5's flux
    // books settle accrual).
    book.state.check_restored_times()?;
    book.state.check_restored_accrual(version != 2)?;
    if version == 2 {
        book.convert_binary_frame_units();
    }
    book.set_partition_tiers(tiers)?;
    book.set_pair_floors(pair_floors.into_owned())?;
    book.set_expedited(expedited.into_owned())?;
    book.set_usage_model(usage_model, flux_usage.into_owned());
    book.set_flux_bins(flux_bins_config.into_owned(), flux_bins.into_owned())?;
    book.set_sluids(
        sluids
            .into_iter()
            .map(|(sluid, job)| (sluid, job.into_owned()))
            .collect(),
    )?;
    book.state().check_restored_values()?;
    let config = &book.state().config;
    config
        .check_values()
        .map_err(|invalid| RestoreError::InvalidConfig {
            key: invalid.key,
            reason: invalid.error.reason,
        })?;
    Ok((book, v3.applied))
}

#[cfg(test)]
mod tests {
    use super::*;
    use fairflow_ingest::reader::read_events;
    use fairflow_model::moab::Credential;
    use fairflow_model::Config;

    use crate::JobPhase;

    fn book_of(log: &str) -> Book {
        let mut book = Book::new(Config::default());
        for line in read_events(log.as_bytes()) {
            let _ = book.apply_line(line.unwrap());
        }
        book
    }

    #[test]
    fn a_snapshot_restores_the_same_book_and_damage_is_an_error() {
        let book = book_of(
            r#"{"op":"account","t":1,"name":"a","shares":"parent"}
{"op":"user","t":2,"user":"u","account":"a","shares":3}
{"op":"usage","t":3,"account":"a","user":"u","amount":123456789.5}
{"op":"submit","t":4,"job":"1","user":"u","account":"a","tres":{"cpu":64}}
{"op":"start","t":5,"job":"1"}
"#,
        );
        let bytes = encode(&book, 5);
        let (restored, applied) = decode(&bytes).unwrap();
        assert_eq!(restored, book);
        assert_eq!(applied, 5);
        assert_eq!(restored.running_jobs_of("a", "u"), 1);
        assert_eq!(decode(b"{\"not\":1}"), Err(SnapshotError::Foreign));
        let mut flipped = bytes.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        assert!(matches!(decode(&flipped), Err(SnapshotError::Corrupt(_))));
        let mut other_version = bytes.clone();
        other_version[8] = 1;
        assert_eq!(
            decode(&other_version),
            Err(SnapshotError::Version { found: 1 })
        );
        assert!(matches!(
            decode(&bytes[..10]),
            Err(SnapshotError::Corrupt(_))
        ));
        other_version[8] = 9;
        let refused = decode(&other_version).unwrap_err();
        assert_eq!(refused, SnapshotError::Version { found: 9 });
        assert_eq!(
            refused.to_string(),
            "snapshot format version 9 is not supported (this build reads versions 2 to 8); \
             rebuild the state from the event log"
        );
    }

    /// A snapshot whose configuration holds a value no `config` event could
    /// set (here a NaN usage weight, as the fuzzer's `snapshot` target made
    /// one: such a book compared unequal to itself) is damaged, and says
    /// which parameter; nothing is restored from it.
    #[test]
    fn a_configuration_value_out_of_its_rule_makes_a_snapshot_damaged() {
        use fairflow_model::config::{FluxUsageWeights, UsageModel};
        let mut book = book_of(
            r#"{"op":"config","t":1,"set":{"UsageModel":"flux"}}
{"op":"account","t":1,"name":"a","shares":1}
"#,
        );
        let weights = FluxUsageWeights {
            node: f64::NAN,
            ..FluxUsageWeights::default()
        };
        book.set_usage_model(UsageModel::Flux, weights);
        let error = decode(&encode(&book, 2)).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("the configuration's FluxNodeWeight: `NaN` is not a number from 0 to"),
            "{error}"
        );
    }

    /// A snapshot holding a value no event could have set (a NaN TRES count
    /// of a partition, as the fuzzer's `snapshot` target made one) is
    /// damaged, naming where the value is held and its field.
    #[test]
    fn a_state_value_out_of_its_rule_makes_a_snapshot_damaged() {
        let mut book = book_of(
            r#"{"op":"partition","t":1,"name":"p2","tres":{"cpu":16}}
"#,
        );
        let partition = book.state.partitions.get_mut("p2").unwrap();
        let tres = partition.tres.as_mut().unwrap();
        tres.insert("cpu".into(), f64::NAN);
        let error = decode(&encode(&book, 1)).unwrap_err();
        assert_eq!(
            error.to_string(),
            "damaged snapshot: partition `p2`'s tres.cpu: must be a number"
        );
    }

    /// A user association's accrual rate is the sum of its running jobs'
    /// rates, which the snapshot also holds: one that is not (the fuzzer's
    /// `snapshot` target made one near 2^119, whose usage summed up the
    /// tree overflowed) makes the snapshot damaged. The job runs at 64 CPUs:
    /// 64 · 2^10 = 65,536 fixed-point units a second, started at t = 5 in
    /// a frame without decay whose epoch is 1, so its offset is 65,536 ·
    /// (5 - 1) · 16,000,000 clock units.
    #[test]
    fn an_accrual_rate_unequal_to_the_running_jobs_makes_a_snapshot_damaged() {
        let mut book = book_of(
            r#"{"op":"config","t":1,"set":{"PriorityDecayHalfLife":"0"}}
{"op":"account","t":1,"name":"a","shares":1}
{"op":"user","t":1,"user":"u","account":"a","shares":1}
{"op":"submit","t":4,"job":"1","user":"u","account":"a","tres":{"cpu":64}}
{"op":"start","t":5,"job":"1"}
"#,
        );
        let key = ("a".to_string(), "u".to_string());
        let usage = &book.state.users.get(&key).unwrap().usage;
        assert_eq!(
            (usage.rate, usage.rate_offset),
            (65_536, 65_536 * 4 * 16_000_000)
        );
        assert!(decode(&encode(&book, 4)).is_ok());
        book.state.users.get_mut(&key).unwrap().usage.rate =
            664_613_997_892_457_936_451_903_530_140_172_287;
        assert_eq!(
            decode(&encode(&book, 4)).unwrap_err().to_string(),
            "damaged snapshot: association `a`/`u`'s usage.rate: is \
             664613997892457936451903530140172287, but its running jobs' sum is 65536"
        );
        let user = book.state.users.get_mut(&key).unwrap();
        user.usage.rate = 65_536;
        user.usage.rate_offset += 1;
        assert!(decode(&encode(&book, 4))
            .unwrap_err()
            .to_string()
            .contains("`a`/`u`'s usage.rate_offset: is 4194304000001"));
    }

    /// A running job's rate above the largest one, a start after the
    /// state's time, and a settled total past `MAX_SETTLED_TOTAL` (each no
    /// event could make) make a snapshot damaged.
    #[test]
    fn usage_no_event_could_reach_makes_a_snapshot_damaged() {
        use fairflow_model::usage::{MAX_FIXED_RATE, MAX_SETTLED_TOTAL};
        let log = r#"{"op":"config","t":1,"set":{"PriorityDecayHalfLife":"0"}}
{"op":"account","t":1,"name":"a","shares":1}
{"op":"user","t":1,"user":"u","account":"a","shares":1}
{"op":"submit","t":4,"job":"1","user":"u","account":"a","tres":{"cpu":1}}
{"op":"start","t":5,"job":"1"}
"#;
        let key = ("a".to_string(), "u".to_string());
        let running = |book: &mut Book, since: i64, rate: u128| {
            let job = book.state.job_mut("1").unwrap();
            job.phase = JobPhase::Running { since, rate };
            let usage = &mut book.state.users.get_mut(&key).unwrap().usage;
            usage.rate = rate;
            usage.rate_offset = rate * (since as u128 - 1) * 16_000_000;
        };
        let mut book = book_of(log);
        running(&mut book, 5, MAX_FIXED_RATE);
        assert!(decode(&encode(&book, 4)).is_ok());
        running(&mut book, 5, MAX_FIXED_RATE + 1);
        assert_eq!(
            decode(&encode(&book, 4)).unwrap_err().to_string(),
            "damaged snapshot: job `1`'s rate: 68719476737 is above the largest fixed-point \
             rate 68719476736"
        );
        running(&mut book, 6, 1024);
        assert_eq!(
            decode(&encode(&book, 4)).unwrap_err().to_string(),
            "damaged snapshot: job `1`'s since: 6 is after the state's time 5"
        );
        let mut book = book_of(log);
        book.state.users.get_mut(&key).unwrap().usage.settled = MAX_SETTLED_TOTAL;
        assert!(decode(&encode(&book, 4)).is_ok());
        book.state.accounts.get_mut("a").unwrap().usage.settled = 1;
        assert!(decode(&encode(&book, 4)).unwrap_err().to_string().contains(
            "the state's usage: the settled usage of every association and credential \
                       totals more than"
        ));
    }

    /// Times no event could carry make a snapshot damaged before the
    /// restore computes with them: the fuzzer's `snapshot` target made a
    /// frame whose epoch is before 0 and whose half-life is near 2^62
    /// (testing for a re-base overflowed), under a configuration without
    /// decay.
    #[test]
    fn times_no_event_could_carry_make_a_snapshot_damaged() {
        use fairflow_model::usage::DecayFrame;
        let log = r#"{"op":"config","t":1,"set":{"PriorityDecayHalfLife":"0"}}
{"op":"account","t":1,"name":"a","shares":1}
{"op":"user","t":1,"user":"u","account":"a","shares":1}
{"op":"submit","t":4,"job":"1","user":"u","account":"a","tres":{"cpu":1}}
{"op":"hold","t":5,"job":"1"}
"#;
        let damaged = |change: &dyn Fn(&mut Book)| {
            let mut book = book_of(log);
            assert!(decode(&encode(&book, 5)).is_ok());
            change(&mut book);
            decode(&encode(&book, 5)).unwrap_err().to_string()
        };
        assert_eq!(
            damaged(&|book| book.state.frame = DecayFrame::new(4_215_369_243_508_134_307, -103_760)),
            "damaged snapshot: the decay frame's epoch: -103760 is not a time from 0 to \
             253402300799"
        );
        assert_eq!(
            damaged(&|book| book.state.frame = DecayFrame::new(4_215_369_243_508_134_307, 1)),
            "damaged snapshot: the decay frame's half_life_secs: 4215369243508134307 is not a \
             duration from 0 to 253402300799 s"
        );
        assert_eq!(
            damaged(&|book| book.state.frame = DecayFrame::new(3_600, 1)),
            "damaged snapshot: the decay frame's half_life_secs: is 3600, but the \
             configuration's is 0"
        );
        assert_eq!(
            damaged(&|book| book.state.job_mut("1").unwrap().held_since = Some(9)),
            "damaged snapshot: job `1`'s held_since: 9 is after the state's time 5"
        );
        assert_eq!(
            damaged(&|book| book.state.next_reset = Some(5)),
            "damaged snapshot: the state's next_reset: 5 is not after the state's time 5"
        );
    }

    #[test]
    fn the_expedited_mark_survives_a_snapshot_and_a_start_clears_it() {
        let log = r#"{"op":"account","t":1,"name":"a","shares":1}
{"op":"user","t":1,"user":"u","account":"a","shares":1}
{"op":"submit","t":2,"job":"1","user":"u","account":"a"}
{"op":"submit","t":2,"job":"2","user":"u","account":"a"}
{"op":"start","t":3,"job":"1"}
{"op":"start","t":3,"job":"2"}
{"op":"requeue","t":4,"job":"1","expedite":true}
{"op":"requeue","t":4,"job":"2"}
"#;
        let book = book_of(log);
        let marked: Vec<&String> = book.state().expedited.iter().collect();
        assert_eq!(marked, vec!["1"]);
        let (restored, _) = decode(&encode(&book, 8)).unwrap();
        assert_eq!(restored.state().expedited, book.state().expedited);
        // Slurm clears JOB_EXPEDITING when the job launches again.
        let started = book_of(&format!(
            "{log}{{\"op\":\"start\",\"t\":5,\"job\":\"1\"}}\n"
        ));
        assert!(started.state().expedited.is_empty());
    }

    #[test]
    fn partition_tiers_survive_a_snapshot_and_a_version_3_snapshot_reads_in_tier_0() {
        let log = r#"{"op":"partition","t":1,"name":"ptlow","priority_tier":1}
{"op":"partition","t":1,"name":"pthigh","priority_tier":100}
{"op":"partition","t":1,"name":"plain"}
{"op":"account","t":1,"name":"a","shares":1}
{"op":"user","t":1,"user":"u","account":"a","shares":1}
{"op":"submit","t":2,"job":"1","user":"u","account":"a","partition":"ptlow,pthigh"}
"#;
        let book = book_of(log);
        // Sorted at submission, highest tier first (Slurm's test_165_4).
        assert_eq!(
            book.state().jobs["1"].spec.partition.as_deref(),
            Some("pthigh,ptlow")
        );
        let (restored, _) = decode(&encode(&book, 6)).unwrap();
        assert_eq!(restored, book);
        assert_eq!(restored.state().partitions["pthigh"].priority_tier, 100);
        assert_eq!(restored.state().partitions["ptlow"].priority_tier, 1);

        // Format 3 had no tiers: its body is the book and the applied count.
        let body = postcard::to_stdvec(&(&book, 6u64)).unwrap();
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&3u32.to_le_bytes());
        bytes.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
        bytes.extend_from_slice(&body);
        let (old, applied) = decode(&bytes).unwrap();
        assert_eq!(applied, 6);
        assert!(old
            .state()
            .partitions
            .values()
            .all(|p| p.priority_tier == 0));
        assert_eq!(
            old.state().jobs["1"].spec.partition.as_deref(),
            Some("pthigh,ptlow")
        );
    }

    #[test]
    fn pair_floors_and_the_usage_model_survive_a_snapshot_and_a_version_4_snapshot_reads_without() {
        let log = r#"{"op":"config","t":1,"set":{"UsageModel":"flux","FluxCoreWeight":2}}
{"op":"partition","t":1,"name":"p1"}
{"op":"partition","t":1,"name":"p2"}
{"op":"account","t":1,"name":"a","shares":1}
{"op":"user","t":1,"user":"u","account":"a","shares":1}
{"op":"submit","t":2,"job":"1","user":"u","account":"a","partition":"p1,p2"}
"#;
        let mut book = book_of(log);
        book.remember_pair_priorities("1", &[7, 9]);
        book.remember_pair_priorities("1", &[8, 3]);
        assert_eq!(book.state().pair_floor["1"], vec![8, 9]);
        let (restored, _) = decode(&encode(&book, 5)).unwrap();
        assert_eq!(restored.state().pair_floor, book.state().pair_floor);
        assert_eq!(restored.state().config.usage_model, UsageModel::Flux);
        assert_eq!(restored.state().config.flux_usage.core, 2.0);
        assert_eq!(restored, book);

        // Format 4: the book, the applied count and the tiers; its builds had
        // Slurm's usage model only (a flux book's frame, without decay, is
        // no format-4 book's: the restore refuses a frame unlike the
        // configuration's half-life).
        let mut book = book_of(log.split_once('\n').unwrap().1);
        book.remember_pair_priorities("1", &[7, 9]);
        let body = postcard::to_stdvec(&(&book, 5u64, BTreeMap::<String, u16>::new())).unwrap();
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&4u32.to_le_bytes());
        bytes.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
        bytes.extend_from_slice(&body);
        let (old, applied) = decode(&bytes).unwrap();
        assert_eq!(applied, 5);
        assert!(old.state().pair_floor.is_empty());
        assert_eq!(old.state().config.usage_model, UsageModel::Slurm);
    }

    #[test]
    fn flux_usage_bins_survive_a_snapshot_and_a_version_5_flux_book_reads_its_usage_into_bin_0() {
        use fairflow_model::usage::FRAME_UNITS_PER_TRES_SEC as NS;
        let log = r#"{"op":"config","t":0,"set":{"UsageModel":"flux","FluxUsageResetPeriod":"21-0","FluxDecayFactor":0.25}}
{"op":"account","t":0,"name":"a","shares":1}
{"op":"user","t":0,"user":"u","account":"a","shares":1}
{"op":"usage","t":0,"account":"a","user":"u","amount":80,"period":1}
{"op":"usage","t":5,"account":"a","user":"u","amount":8}
"#;
        let book = book_of(log);
        let key = ("a".to_string(), Some("u".to_string()));
        // 3 weeks of 1-week bins: [8, 80, 0].
        let bins = &book.state().flux_bins.as_ref().unwrap().bins[&key];
        assert_eq!(bins, &vec![8 * NS, 80 * NS, 0]);
        let (restored, applied) = decode(&encode(&book, 5)).unwrap();
        assert_eq!(applied, 5);
        assert_eq!(restored, book);
        assert_eq!(restored.state().config.flux_bins.decay_factor, 0.25);
        assert_eq!(
            restored.state().config.flux_bins.reset_period_secs,
            21 * 86_400
        );

        // Format 5 had no bins: a flux book then decayed continuously (here a
        // Slurm book's usage of 100 charged at 0, read at one half-life, 1
        // week: 50). It reads back with its usage as of then in bin 0.
        let slurm = book_of(
            r#"{"op":"account","t":0,"name":"a","shares":1}
{"op":"user","t":0,"user":"u","account":"a","shares":1}
{"op":"usage","t":0,"account":"a","user":"u","amount":100}
{"op":"tick","t":604800}
"#,
        );
        let body = postcard::to_stdvec(&(
            &slurm,
            4u64,
            BTreeMap::<String, u16>::new(),
            BTreeMap::<String, Vec<u64>>::new(),
            UsageModel::Flux,
            FluxUsageWeights::default(),
        ))
        .unwrap();
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&5u32.to_le_bytes());
        bytes.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
        bytes.extend_from_slice(&body);
        let (old, applied) = decode(&bytes).unwrap();
        assert_eq!(applied, 4);
        assert_eq!(old.state().config.usage_model, UsageModel::Flux);
        let bins = &old.state().flux_bins.as_ref().unwrap().bins[&key];
        assert_eq!(bins, &vec![50 * NS, 0, 0, 0]);
        let own = old.state().users[&("a".into(), "u".into())].usage;
        assert_eq!(old.state().visible_usage(&own), 50 * NS);
    }

    #[test]
    fn a_version_2_snapshot_is_converted_to_this_builds_frame_units() {
        let log = r#"{"op":"config","t":1,"set":{"PriorityDecayHalfLife":0}}
{"op":"account","t":1,"name":"a","shares":1}
{"op":"user","t":2,"user":"u","account":"a","shares":3}
{"op":"usage","t":3,"account":"a","user":"u","amount":3}
{"op":"usage","t":3,"account":"a","amount":0.5}
{"op":"submit","t":4,"job":"1","user":"u","account":"a","tres":{"cpu":2}}
{"op":"start","t":10,"job":"1"}
"#;
        let book = book_of(log);
        // The same state as format 2 stored it, by hand, in units of 2^-20
        // TRES-seconds: u's 3 TRES-seconds were 3 · 2^20 = 3_145_728, a's 0.5
        // were 524_288; the running job's rate 2 · 2^10 = 2048 times the old
        // clock at its start, (10 - epoch) · 2^10 s; Moab's group "a" was
        // charged both usage events, 3.5 · 2^20 = 3_670_016.
        let mut old = book.state().clone();
        let epoch = old.frame.epoch;
        let user = &mut old.users.get_mut(&("a".into(), "u".into())).unwrap().usage;
        assert_eq!(user.rate, 2048);
        user.settled = 3_145_728;
        user.rate_offset = 2048 * ((10 - epoch) as u128 * 1024);
        old.accounts.get_mut("a").unwrap().usage.settled = 524_288;
        old.credential_usage = [((Credential::Group, "a".to_string()), 3_670_016)]
            .into_iter()
            .collect();
        let old = Book::from_state(old, book.last_event_at()).unwrap();
        let mut bytes = encode(&old, 7);
        bytes[8..12].copy_from_slice(&2u32.to_le_bytes());
        let (converted, applied) = decode(&bytes).unwrap();
        assert_eq!(applied, 7);
        assert_eq!(converted, book);
        // In this build's units: 3 · 2^20 · 5^6 and 0.5 · 2^20 · 5^6.
        let state = converted.state();
        assert_eq!(
            state.users[&("a".to_string(), "u".to_string())]
                .usage
                .settled,
            49_152_000_000
        );
        assert_eq!(state.accounts["a"].usage.settled, 8_192_000_000);
    }
}
