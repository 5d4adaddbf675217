//! The targets of the readers fuzzed since issue 16: the event log, SWF,
//! `jobcomp/filetxt`, `slurm.conf`, `moab.cfg`, `import slurm`'s inputs, the
//! durable log's segments and the checkpoints.

use fairflow_ingest::import_slurm::{import_slurm as import_slurm_texts, SlurmImport, Source};
use fairflow_store::{Checkpoints, EventLog, OpenMode};

/// The event-log reader, parser and the book's checks: any bytes, as a log.
pub fn events(data: &[u8]) {
    let mut book = fairflow_book::Book::default();
    for line in fairflow_ingest::reader::read_events(data).flatten() {
        if let Ok(event) = line.event {
            let _ = book.apply(line.line, &event);
        }
    }
}

/// The SWF converter: any bytes, as a trace.
pub fn swf(data: &[u8]) {
    let _ = fairflow_ingest::swf::convert_swf(data);
}

/// The `jobcomp/filetxt` reader: any text, records joined over lines.
pub fn jobcomp(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut reader = fairflow_ingest::jobcomp::JobcompReader::local();
    for (index, line) in text.lines().enumerate() {
        let _ = reader.line(index as u64 + 1, line);
    }
}

/// `slurm.conf`'s priority lines into a configuration.
pub fn slurm_conf(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let mut config = fairflow_model::Config::default();
        let _ = fairflow_ingest::slurm_conf::apply_slurm_conf(&mut config, text);
    }
}

/// `moab.cfg`'s priority parameters into a configuration.
pub fn moab_cfg(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let mut config = fairflow_model::Config::default();
        let _ = fairflow_ingest::moab_cfg::apply_moab_cfg(&mut config, text);
    }
}

/// `import slurm`: the input split at NUL bytes into the sacctmgr
/// associations, sshare, slurm.conf, squeue, sacctmgr QOS, scontrol nodes
/// and sacct texts, in that order (a text not given is absent).
pub fn import_slurm(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut parts = text.split('\0');
    let mut next = |name| parts.next().map(|text| Source { name, text });
    let assoc = next("assoc").unwrap_or(Source {
        name: "assoc",
        text: "",
    });
    let sshare = next("sshare");
    let slurm_conf = next("slurm.conf");
    let squeue = next("squeue");
    let qos = next("qos");
    let nodes = next("nodes");
    let sacct = next("sacct");
    let _ = import_slurm_texts(&SlurmImport {
        assoc,
        sshare,
        slurm_conf,
        squeue,
        qos,
        nodes,
        sacct,
        cluster: None,
        t: 1_700_000_000,
    });
}

/// The durable log's reader: any bytes as a segment, opened strictly and
/// with `--recover`. Asserts that the records either open keeps are whole
/// (the next sequence follows them) and that the log takes an append.
pub fn log_reader(data: &[u8]) {
    for mode in [OpenMode::Strict, OpenMode::Recover] {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let segment = dir.path().join("events-00000000000000000000.wal");
        std::fs::write(&segment, data).expect("writing the segment");
        if let Ok((mut log, recovery)) = EventLog::open_with(dir.path(), mode) {
            let next = log.next_sequence();
            assert_eq!(next, recovery.first_kept + recovery.records.len() as u64);
            assert_eq!(log.append(&[b"x".to_vec()]).expect("append"), next);
        }
    }
}

/// The checkpoint reader: any bytes as the newest checkpoint, an intact
/// older one beside it. Asserts that a damaged newest one falls back to the
/// older one.
pub fn checkpoint_reader(data: &[u8]) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let checkpoints = Checkpoints::new(dir.path());
    checkpoints
        .write(1, b"older")
        .expect("writing a checkpoint");
    std::fs::write(dir.path().join("checkpoint-00000000000000000002.bin"), data)
        .expect("writing the fuzzed checkpoint");
    let (sequence, body) = checkpoints.latest().expect("reading").expect("one holds");
    assert!(sequence == 2 || (sequence, body.as_slice()) == (1, b"older".as_slice()));
}
