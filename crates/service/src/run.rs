//! Running the whole service: recover from the data directory, start the
//! applier, the HTTP listener and the configured taps, and stop gracefully on
//! SIGTERM or SIGINT (finish requests in flight, write a final checkpoint), or
//! with an error when the service failed (`health`: the engine could not be
//! rebuilt), so that `fairflow serve` exits non-zero and a supervisor
//! restarts it.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use fairflow_model::Time;
use tokio::net::TcpListener;

use crate::applier::{self, ApplierConfig, RecoveryReport};
use crate::backend::Backend;
use crate::clock::{EventLead, WallClock, JUMP_ACCEPT_AFTER_SECS};
use crate::http::{self, HttpConfig};
use crate::metrics::Metrics;
use crate::taps::StreamLimits;
use crate::ticks;

mod tasks;

/// Why the service did not start, or stopped failed.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// The async runtime cannot start.
    #[error("cannot start the runtime: {0}")]
    Runtime(std::io::Error),
    /// A tap's source is not a regular file (the flag, the reason and its
    /// cause).
    #[error("{flag}: {error}{}", cause_text(.error))]
    TapSource {
        /// The flag naming the source.
        flag: &'static str,
        /// Why the file is refused.
        error: fairflow_ingest::IngestError,
    },
    /// The applier cannot recover the durable state or start.
    #[error(transparent)]
    Recovery(#[from] applier::RecoveryError),
    /// An address (HTTP, a tap's) cannot be listened on.
    #[error("cannot listen on {address}: {source}")]
    Listen {
        /// The address or socket path.
        address: String,
        /// The system's error.
        source: std::io::Error,
    },
    /// The bound listener has no local address.
    #[error(transparent)]
    LocalAddress(std::io::Error),
    /// The applier's thread panicked while stopping.
    #[error("the applier thread panicked")]
    ApplierPanicked,
    /// The service failed (`health`): why.
    #[error("{0}")]
    Failed(String),
}

/// `: ` and the cause of `error`, if it has one.
fn cause_text(error: &fairflow_ingest::IngestError) -> String {
    std::error::Error::source(error)
        .map(|cause| format!(": {cause}"))
        .unwrap_or_default()
}

/// The default `--max-event-lead-secs`.
pub const DEFAULT_MAX_EVENT_LEAD_SECS: Time = 300;

/// Everything `fairflow serve` is told.
#[derive(Debug, Clone)]
pub struct ServiceConfig {
    /// The HTTP address.
    pub listen: SocketAddr,
    /// The durable log and checkpoints.
    pub data_dir: PathBuf,
    /// Limits and credentials of the HTTP layer.
    pub http: HttpConfig,
    /// Records between checkpoints.
    pub checkpoint_every: u64,
    /// Write batches that may wait for the applier before writers are slowed.
    pub queue_capacity: usize,
    /// A TCP address for the JSON-lines stream tap.
    pub tap_tcp: Option<SocketAddr>,
    /// A Unix socket path for the JSON-lines stream tap.
    pub tap_unix: Option<PathBuf>,
    /// A `jobcomp/filetxt` file to follow.
    pub follow_jobcomp: Option<PathBuf>,
    /// A Flux events journal to follow (a file, or `-` for standard input),
    /// with the flux-accounting associations its users map to.
    pub follow_flux_journal: Option<(PathBuf, fairflow_ingest::flux_journal::FluxJournal)>,
    /// A file to replay into the service, and its speed (0 = at once).
    pub replay: Option<(PathBuf, f64)>,
    /// Open a damaged log anyway, keeping what is provably intact
    /// (`--recover`; see `fairflow_store::wal`).
    pub recover: bool,
    /// Most connections open at once on each stream tap listener.
    pub max_tap_connections: usize,
    /// Settle each `PriorityCalcPeriod` boundary of the wall clock in a
    /// `tick` of its own, this long after the boundary (`ticks`; on by
    /// default, `DEFAULT_TICK_GRACE_SECS` after it), instead of in the batch
    /// of the first event after it (`None`, `--no-calc-period-ticks`).
    pub calc_period_ticks: Option<Duration>,
    /// The wall clock the ticker and the event lead read.
    pub clock: WallClock,
    /// How long a jump of the wall clock must hold before the ticker
    /// follows it (`clock::JUMP_ACCEPT_AFTER_SECS` by default).
    pub accept_clock_jump_after_secs: f64,
    /// The most seconds a written event may be timed ahead of the wall clock
    /// (`--max-event-lead-secs`); `None`: no bound.
    pub max_event_lead_secs: Option<Time>,
    /// Follow a running Slurm through its commands (`--follow-slurm`).
    pub follow_slurm: Option<crate::follow_slurm::FollowSlurm>,
}

impl ServiceConfig {
    /// Defaults for everything but the address and the data directory.
    pub fn new(listen: SocketAddr, data_dir: PathBuf) -> Self {
        ServiceConfig {
            listen,
            data_dir,
            http: HttpConfig::default(),
            checkpoint_every: 100_000,
            queue_capacity: 64,
            tap_tcp: None,
            tap_unix: None,
            follow_jobcomp: None,
            follow_flux_journal: None,
            replay: None,
            recover: false,
            max_tap_connections: StreamLimits::default().max_connections,
            calc_period_ticks: Some(Duration::from_secs(ticks::DEFAULT_TICK_GRACE_SECS)),
            clock: WallClock::system(),
            accept_clock_jump_after_secs: JUMP_ACCEPT_AFTER_SECS,
            max_event_lead_secs: Some(DEFAULT_MAX_EVENT_LEAD_SECS),
            follow_slurm: None,
        }
    }
}

async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut terminate =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(signal) => signal,
                Err(_) => {
                    let _ = interrupt.await;
                    return;
                }
            };
        tokio::select! {
            _ = interrupt => {}
            _ = terminate.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = interrupt.await;
    }
}

/// Run the service until a signal. `ready` is called once recovery is done and
/// the listener is bound, with the recovery report and the bound address.
pub fn run_blocking<B: Backend>(
    config: ServiceConfig,
    backend: B,
    ready: impl FnOnce(&RecoveryReport, SocketAddr),
) -> Result<(), ServiceError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(ServiceError::Runtime)?;
    check_tap_sources(&config)?;
    let metrics = Arc::new(Metrics::new());
    let applier_config = ApplierConfig {
        data_dir: config.data_dir.clone(),
        checkpoint_every: config.checkpoint_every.max(1),
        queue_capacity: config.queue_capacity.max(1),
        max_group: 256,
        recover: config.recover,
    };
    let (handle, report, thread) = applier::start(backend, applier_config, metrics.clone())?;
    tracing::info!(
        data_dir = %config.data_dir.display(),
        engine = report.engine,
        checkpoint = report.checkpoint_sequence,
        replayed = report.replayed,
        replay_rejected = report.replay_rejected,
        truncated_bytes = report.truncated_bytes,
        quarantined = report.quarantined,
        "recovered"
    );
    // HTTP writers and the taps share one write budget.
    let lead = config.max_event_lead_secs.map(|max_secs| EventLead {
        clock: config.clock.clone(),
        max_secs,
    });
    let handle = handle
        .with_write_budget(config.http.max_inflight_bytes)
        .with_event_lead(lead);
    let health = handle.health().clone();
    runtime.block_on(async {
        let listener =
            TcpListener::bind(config.listen)
                .await
                .map_err(|source| ServiceError::Listen {
                    address: config.listen.to_string(),
                    source,
                })?;
        let address = listener.local_addr().map_err(ServiceError::LocalAddress)?;
        tasks::start_stream_taps(&config, &handle).await?;
        tasks::start_followers(&config, &report, &handle, &metrics);
        tracing::info!(address = %address, "listening");
        ready(&report, address);
        let router = http::router(handle, metrics, config.http.clone());
        let stop = {
            let health = health.clone();
            async move {
                tokio::select! {
                    _ = shutdown_signal() => {}
                    _ = health.failed() => {}
                }
            }
        };
        http::serve(
            listener,
            router,
            &config.http,
            stop,
            Duration::from_secs(10),
        )
        .await;
        tracing::info!("shutting down: requests finished, the applier drains");
        Ok::<(), ServiceError>(())
    })?;
    // Every handle is gone with the runtime's tasks: the applier drains,
    // checkpoints and ends.
    runtime.shutdown_timeout(Duration::from_secs(5));
    thread.join().map_err(|_| ServiceError::ApplierPanicked)?;
    if let Some(failure) = health.failure() {
        return Err(ServiceError::Failed(failure));
    }
    tracing::info!("stopped");
    Ok(())
}

/// The taps' sources must be regular files at start: a missing `jobcomp`
/// file or replay file is an error, not a silent tap that never charges
/// anything, and a FIFO or a device would block or never end.
pub fn check_tap_sources(config: &ServiceConfig) -> Result<(), ServiceError> {
    let sources = [
        ("--follow-jobcomp", config.follow_jobcomp.as_ref()),
        (
            "--follow-flux-journal",
            config
                .follow_flux_journal
                .as_ref()
                .map(|(path, _)| path)
                .filter(|path| path.as_os_str() != "-"),
        ),
        ("--replay", config.replay.as_ref().map(|(path, _)| path)),
    ];
    for (flag, path) in sources {
        if let Some(path) = path {
            if let Err(error) = fairflow_ingest::files::require_regular_file(path) {
                return Err(ServiceError::TapSource { flag, error });
            }
        }
    }
    Ok(())
}
