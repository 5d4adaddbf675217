//! An applier running on a backend in a temporary data directory, as the
//! service's write-path tests start and stop it.

#![allow(dead_code)]

use std::sync::Arc;

use fairflow_service::applier::{self, ApplierConfig, ApplierHandle};
use fairflow_service::backend::Backend;
use fairflow_service::metrics::Metrics;

/// The applier, its metrics, its thread and its data directory.
pub struct Running {
    pub applier: ApplierHandle,
    pub metrics: Arc<Metrics>,
    pub thread: std::thread::JoinHandle<()>,
    _dir: tempfile::TempDir,
}

/// Start an applier on `backend`, checkpointing every `checkpoint_every`
/// events.
pub fn start_applier<B: Backend>(backend: B, checkpoint_every: u64) -> Running {
    let dir = tempfile::tempdir().unwrap();
    let metrics = Arc::new(Metrics::new());
    let config = ApplierConfig {
        data_dir: dir.path().to_path_buf(),
        checkpoint_every,
        queue_capacity: 8,
        max_group: 16,
        recover: false,
    };
    let (applier, _report, thread) = applier::start(backend, config, metrics.clone()).unwrap();
    Running {
        applier,
        metrics,
        thread,
        _dir: dir,
    }
}

impl Running {
    /// Close the applier and wait for its thread.
    pub async fn stop(self) {
        drop(self.applier);
        tokio::task::spawn_blocking(move || self.thread.join().unwrap())
            .await
            .unwrap();
    }
}

/// A raw HTTP/1.1 exchange on loopback (`raw` is the whole request): the
/// status and the body, a `Transfer-Encoding: chunked` body decoded. Waits at
/// most 15 s for the server to close.
pub async fn http_exchange(address: &str, raw: &[u8]) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    stream.write_all(raw).await.unwrap();
    let mut response = Vec::new();
    let read = stream.read_to_end(&mut response);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(15), read).await;
    fairflow_testkit::http_answer(&response)
}
