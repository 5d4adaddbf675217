//! The listener: accepts connections and serves the router on them, with
//! the bounds no handler can enforce: a global cap on open connections and
//! one per client address (more are closed at once), the header deadline,
//! and the write deadline (`stream::WriteDeadline`: a client that stops
//! reading is dropped). When the service stops, running what-ifs are
//! stopped at once (`whatif::Stopping`) and the other requests finish
//! within the grace period.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tower::ServiceExt;

use crate::http::HttpConfig;
use crate::stream::WriteDeadline;

/// Serve `router` on `listener` until `shutdown` resolves, then finish the
/// requests in flight (for at most `grace`).
pub async fn serve(
    listener: TcpListener,
    router: Router,
    config: &HttpConfig,
    shutdown: impl std::future::Future<Output = ()>,
    grace: Duration,
) {
    let permits = Arc::new(Semaphore::new(config.max_connections.max(1)));
    let clients = ClientSlots::new(config.max_connections_per_client.max(1));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(config.header_timeout);
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            _ = &mut shutdown => break,
            permit = permits.clone().acquire_owned() => permit.expect("the semaphore is never closed"),
        };
        let (stream, peer): (_, SocketAddr) = tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(e) => {
                    tracing::warn!("accept failed: {e}");
                    continue;
                }
            },
        };
        let service = hyper::service::service_fn({
            let router = router.clone();
            move |request: hyper::Request<hyper::body::Incoming>| {
                router.clone().oneshot(request.map(axum::body::Body::new))
            }
        });
        let Some(client) = clients.admit(peer.ip()) else {
            // Over this client's limit: closed at once, its permit released.
            drop(stream);
            continue;
        };
        let stream = WriteDeadline::new(stream, config.write_timeout);
        let connection = builder.serve_connection(TokioIo::new(stream), service);
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            let _ = connection.await;
            drop((permit, client));
        });
    }
    drop(listener);
    config.stopping.raise();
    tokio::select! {
        _ = graceful.shutdown() => {}
        _ = tokio::time::sleep(grace) => tracing::warn!("connections still open after the grace period"),
    }
}

/// Open connections per client address, each held by a [`ClientSlot`].
#[derive(Clone)]
struct ClientSlots {
    limit: usize,
    open: Arc<std::sync::Mutex<std::collections::HashMap<std::net::IpAddr, usize>>>,
}

/// One open connection of a client; dropping it frees the slot.
struct ClientSlot {
    slots: ClientSlots,
    ip: std::net::IpAddr,
}

impl ClientSlots {
    fn new(limit: usize) -> Self {
        ClientSlots {
            limit,
            open: Arc::default(),
        }
    }

    /// A slot for a new connection from `ip`, unless it has `limit` open.
    fn admit(&self, ip: std::net::IpAddr) -> Option<ClientSlot> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let count = open.entry(ip).or_insert(0);
        if *count >= self.limit {
            return None;
        }
        *count += 1;
        Some(ClientSlot {
            slots: self.clone(),
            ip,
        })
    }
}

impl Drop for ClientSlot {
    fn drop(&mut self) {
        let mut open = self.slots.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = open.get_mut(&self.ip) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.ip);
            }
        }
    }
}
