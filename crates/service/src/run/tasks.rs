//! What the service runs beside its HTTP listener, started once recovery is
//! done: the stream taps' listeners (TCP, Unix socket), and the followers
//! (a `jobcomp` file, a Flux journal, a running Slurm, a replayed file) and
//! the calc-period ticker, each resuming from its recovered cursor.

use std::future::Future;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;

use super::{ServiceConfig, ServiceError};
use crate::applier::{ApplierHandle, RecoveryReport};
use crate::metrics::Metrics;
use crate::taps::cursor::TapPosition;
use crate::taps::{self, StreamLimits, StreamSlots};
use crate::ticks;

/// Bind the configured stream taps and accept their connections, each tap
/// within `--max-tap-connections`, sharing the writers' token and budget.
pub(super) async fn start_stream_taps(
    config: &ServiceConfig,
    handle: &ApplierHandle,
) -> Result<(), ServiceError> {
    let limits = StreamLimits {
        max_line_bytes: config.http.max_line_bytes,
        max_connections: config.max_tap_connections.max(1),
        ..StreamLimits::default()
    };
    let token = config.http.write_token.clone();
    if let Some(tap) = config.tap_tcp {
        let tap_listener = TcpListener::bind(tap)
            .await
            .map_err(|source| ServiceError::Listen {
                address: tap.to_string(),
                source,
            })?;
        tracing::info!(tap = "tcp", address = %tap, "stream tap listening");
        admit_each(tap_listener, handle, &token, &limits);
    }
    #[cfg(unix)]
    if let Some(path) = &config.tap_unix {
        let _ = std::fs::remove_file(path);
        let tap_listener =
            tokio::net::UnixListener::bind(path).map_err(|source| ServiceError::Listen {
                address: path.display().to_string(),
                source,
            })?;
        tracing::info!(tap = "unix", path = %path.display(), "stream tap listening");
        admit_each(tap_listener, handle, &token, &limits);
    }
    Ok(())
}

/// A stream tap's listener: TCP, or a Unix socket.
trait TapListener: Send + Sync + 'static {
    /// Its connections.
    type Stream: AsyncRead + AsyncWrite + Unpin + Send + 'static;
    /// The next connection.
    fn next_stream(&self) -> impl Future<Output = std::io::Result<Self::Stream>> + Send;
}

impl TapListener for TcpListener {
    type Stream = tokio::net::TcpStream;
    async fn next_stream(&self) -> std::io::Result<Self::Stream> {
        self.accept().await.map(|(stream, _)| stream)
    }
}

#[cfg(unix)]
impl TapListener for tokio::net::UnixListener {
    type Stream = tokio::net::UnixStream;
    async fn next_stream(&self) -> std::io::Result<Self::Stream> {
        self.accept().await.map(|(stream, _)| stream)
    }
}

/// Admit each connection `listener` accepts (until it fails), within the
/// tap's `limits`.
fn admit_each(
    listener: impl TapListener,
    handle: &ApplierHandle,
    token: &Option<String>,
    limits: &StreamLimits,
) {
    let (handle, token, limits) = (handle.clone(), token.clone(), limits.clone());
    let slots = StreamSlots::new(&limits);
    tokio::spawn(async move {
        while let Ok(stream) = listener.next_stream().await {
            let (handle, token, limits) = (handle.clone(), token.clone(), limits.clone());
            taps::admit_stream(stream, &slots, handle, token, limits);
        }
    });
}

/// Start the configured followers, the calc-period ticker and the replay,
/// from the cursors `report` recovered.
pub(super) fn start_followers(
    config: &ServiceConfig,
    report: &RecoveryReport,
    handle: &ApplierHandle,
    metrics: &std::sync::Arc<Metrics>,
) {
    if let Some(path) = config.follow_jobcomp.clone() {
        tracing::info!(tap = "jobcomp", path = %path.display(), "following");
        tokio::spawn(taps::follow_jobcomp_from(
            path,
            handle.clone(),
            Duration::from_millis(200),
            chrono::Local,
            report
                .tap_cursors
                .get("jobcomp")
                .and_then(TapPosition::file)
                .cloned(),
        ));
    }
    if let Some((path, journal)) = config.follow_flux_journal.clone() {
        tracing::info!(tap = "flux-journal", path = %path.display(), "following");
        tokio::spawn(taps::follow_flux_journal_from(
            path,
            journal,
            handle.clone(),
            Duration::from_millis(200),
            report
                .tap_cursors
                .get("flux-journal")
                .and_then(TapPosition::file)
                .cloned(),
        ));
    }
    if let Some(settings) = config.follow_slurm.clone() {
        tracing::info!(
            tap = "follow-slurm",
            poll_secs = settings.poll.as_secs(),
            "following"
        );
        let recovered = report
            .tap_cursors
            .get(crate::follow_slurm::FOLLOW_SLURM_TAP)
            .and_then(TapPosition::slurm)
            .cloned();
        tokio::spawn(crate::follow_slurm::follow_slurm(
            settings,
            config.data_dir.clone(),
            recovered,
            handle.clone(),
            metrics.clone(),
        ));
    }
    if let Some(grace) = config.calc_period_ticks {
        tracing::info!(
            grace_secs = grace.as_secs(),
            "settling calc-period boundaries on the wall clock"
        );
        tokio::spawn(ticks::tick_calc_periods(
            handle.clone(),
            grace,
            config.clock.clone(),
            config.accept_clock_jump_after_secs,
        ));
    }
    if let Some((path, speed)) = config.replay.clone() {
        let handle = handle.clone();
        let from = report
            .tap_cursors
            .get("replay")
            .and_then(TapPosition::file)
            .cloned();
        tracing::info!(tap = "replay", path = %path.display(), speed, "replaying");
        tokio::spawn(async move {
            match taps::replay_file_from(path.clone(), handle, speed, from).await {
                Ok(()) => tracing::info!(tap = "replay", path = %path.display(), "replay done"),
                Err(e) => tracing::warn!(tap = "replay", "replaying {}: {e}", path.display()),
            }
        });
    }
}
