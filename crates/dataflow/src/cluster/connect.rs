//! Connecting the processes of timely's cluster mode, with a deadline.
//!
//! Timely's own connection phase (`timely_communication::networking`) waits
//! forever: a process whose peer never starts, or whose host file names a
//! wrong port, retries every second and prints `awaiting connections` on
//! standard output without end. fairflow makes the sockets itself, with
//! the same shape timely expects (process `i` connects to every process
//! below it and accepts every process above it, at its own address of the
//! host file), then hands them to timely
//! (`initialize_networking_from_sockets`). Each connection opens with a
//! handshake both ways, [`MAGIC`] and the sender's process index (8 bytes,
//! big-endian), so a wrong port that happens to accept (another program)
//! is an error too. Anything not done by the deadline is an error naming
//! the peer and its address; nothing is printed.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use super::LayoutError;

/// The first bytes each side of a connection writes.
const MAGIC: &[u8; 8] = b"fairflw1";

/// How long to wait between attempts to reach a peer that is not listening yet.
const RETRY_PAUSE: Duration = Duration::from_millis(100);

/// A socket to every other process, in process order (`None` at `me`), or
/// why not by `timeout` after the call.
pub(super) fn connect_peers(
    addresses: &[String],
    me: usize,
    timeout: Duration,
) -> Result<Vec<Option<TcpStream>>, LayoutError> {
    let deadline = Instant::now() + timeout;
    let listen_at = &addresses[me];
    let listener = TcpListener::bind(listen_at.as_str()).map_err(|e| {
        LayoutError(format!(
            "process {me} cannot listen on {listen_at} (its line of the host file): {e}"
        ))
    })?;
    let lower: Vec<(usize, String)> = addresses[..me].iter().cloned().enumerate().collect();
    let connecting = std::thread::spawn(move || {
        lower
            .into_iter()
            .map(|(peer, address)| reach(&address, peer, me, deadline, timeout))
            .collect::<Result<Vec<TcpStream>, LayoutError>>()
    });
    let accepted = accept_higher(&listener, addresses, me, deadline, timeout);
    let reached = connecting
        .join()
        .map_err(|_| LayoutError("the connecting thread failed".into()))?;
    let mut sockets: Vec<Option<TcpStream>> = reached?.into_iter().map(Some).collect();
    sockets.push(None);
    sockets.extend(accepted?.into_iter().map(Some));
    for socket in sockets.iter().flatten() {
        // Timely's network threads read and write blocking, without timeouts.
        let ready = socket
            .set_read_timeout(None)
            .and_then(|()| socket.set_write_timeout(None))
            .and_then(|()| socket.set_nonblocking(false))
            .and_then(|()| socket.set_nodelay(true));
        ready.map_err(|e| LayoutError(format!("process {me}: cannot set up a socket: {e}")))?;
    }
    Ok(sockets)
}

/// Connect to process `peer` at `address` (retrying until `deadline`) and
/// exchange the handshake.
fn reach(
    address: &str,
    peer: usize,
    me: usize,
    deadline: Instant,
    timeout: Duration,
) -> Result<TcpStream, LayoutError> {
    let failed = |why: String| {
        LayoutError(format!(
            "process {me} could not reach process {peer} at {address} within {} s: {why}",
            timeout.as_secs_f64()
        ))
    };
    let mut last_error = String::from("no attempt");
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(failed(last_error));
        }
        match try_reach(address, left) {
            Ok(mut stream) => {
                stream
                    .set_read_timeout(Some(left.max(Duration::from_millis(1))))
                    .map_err(|e| failed(e.to_string()))?;
                write_hello(&mut stream, me).map_err(|e| failed(e.to_string()))?;
                return match read_hello(&mut stream) {
                    Ok(index) if index == peer => Ok(stream),
                    Ok(index) => Err(failed(format!(
                        "process {index} answered there (is the host file the same everywhere?)"
                    ))),
                    Err(e) => Err(failed(format!("not a fairflow process there ({e})"))),
                };
            }
            Err(e) => last_error = e.to_string(),
        }
        std::thread::sleep(RETRY_PAUSE.min(deadline.saturating_duration_since(Instant::now())));
    }
}

/// Why one attempt to reach a peer failed.
#[derive(Debug, thiserror::Error)]
enum ReachError {
    /// The address does not resolve.
    #[error("cannot resolve it: {0}")]
    Resolve(std::io::Error),
    /// The address resolves to nothing.
    #[error("{0} resolves to no address")]
    NoAddress(String),
    /// No resolved address accepted (the last one's error).
    #[error(transparent)]
    Connect(std::io::Error),
}

/// One attempt to connect to any of `address`'s resolved addresses.
fn try_reach(address: &str, left: Duration) -> Result<TcpStream, ReachError> {
    let resolved: Vec<SocketAddr> = address
        .to_socket_addrs()
        .map_err(ReachError::Resolve)?
        .collect();
    let mut last = ReachError::NoAddress(address.to_string());
    for socket in resolved {
        match TcpStream::connect_timeout(&socket, left.min(Duration::from_secs(1))) {
            Ok(stream) => return Ok(stream),
            Err(e) => last = ReachError::Connect(e),
        }
    }
    Err(last)
}

/// Accept one connection from every process above `me`, by `deadline`.
fn accept_higher(
    listener: &TcpListener,
    addresses: &[String],
    me: usize,
    deadline: Instant,
    timeout: Duration,
) -> Result<Vec<TcpStream>, LayoutError> {
    let mut from: Vec<Option<TcpStream>> = (me + 1..addresses.len()).map(|_| None).collect();
    listener
        .set_nonblocking(true)
        .map_err(|e| LayoutError(format!("process {me}: cannot poll its listener: {e}")))?;
    while from.iter().any(Option::is_none) {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            let missing: Vec<String> = (from.iter().enumerate())
                .filter(|(_, socket)| socket.is_none())
                .map(|(i, _)| format!("process {} ({})", me + 1 + i, addresses[me + 1 + i]))
                .collect();
            return Err(LayoutError(format!(
                "process {me}, listening on {}, heard nothing from {} within {} s (is it started, with the same host file?)",
                addresses[me],
                missing.join(", "),
                timeout.as_secs_f64()
            )));
        }
        match listener.accept() {
            Ok((mut stream, _)) => {
                // A connection that does not say hello in time is not a peer.
                let greeted = stream
                    .set_nonblocking(false)
                    .and_then(|()| stream.set_read_timeout(Some(left)))
                    .and_then(|()| read_hello(&mut stream));
                if let Ok(index) = greeted {
                    let slot = index.checked_sub(me + 1).and_then(|i| from.get_mut(i));
                    if let Some(slot @ None) = slot {
                        write_hello(&mut stream, me).map_err(|e| {
                            LayoutError(format!("process {me}: process {index} left: {e}"))
                        })?;
                        *slot = Some(stream);
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(RETRY_PAUSE.min(left));
            }
            Err(e) => return Err(LayoutError(format!("process {me}: cannot accept: {e}"))),
        }
    }
    Ok(from.into_iter().flatten().collect())
}

fn write_hello(stream: &mut TcpStream, me: usize) -> std::io::Result<()> {
    let mut hello = [0u8; 16];
    hello[..8].copy_from_slice(MAGIC);
    hello[8..].copy_from_slice(&(me as u64).to_be_bytes());
    stream.write_all(&hello)
}

/// The peer's process index from its handshake.
fn read_hello(stream: &mut TcpStream) -> std::io::Result<usize> {
    let mut hello = [0u8; 16];
    stream.read_exact(&mut hello)?;
    if &hello[..8] != MAGIC {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "it did not open with fairflow's handshake",
        ));
    }
    let mut index = [0u8; 8];
    index.copy_from_slice(&hello[8..]);
    usize::try_from(u64::from_be_bytes(index))
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn free_address() -> String {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().to_string()
    }

    #[test]
    fn three_processes_connect_each_to_each() {
        let addresses: Vec<String> = (0..3).map(|_| free_address()).collect();
        let handles: Vec<_> = (0..3)
            .map(|me| {
                let addresses = addresses.clone();
                std::thread::spawn(move || connect_peers(&addresses, me, Duration::from_secs(20)))
            })
            .collect();
        for (me, handle) in handles.into_iter().enumerate() {
            let sockets = handle.join().unwrap().unwrap();
            let present: Vec<bool> = sockets.iter().map(Option::is_some).collect();
            let mut want = vec![true; 3];
            want[me] = false;
            assert_eq!(present, want, "process {me}");
        }
    }

    #[test]
    fn a_peer_that_never_comes_is_an_error_by_the_deadline() {
        let addresses = vec![free_address(), free_address()];
        let started = Instant::now();
        let lonely_follower = connect_peers(&addresses, 1, Duration::from_millis(500)).unwrap_err();
        assert!(
            lonely_follower.0.contains("could not reach process 0 at"),
            "{lonely_follower}"
        );
        let lonely_leader = connect_peers(&addresses, 0, Duration::from_millis(500)).unwrap_err();
        assert!(
            lonely_leader.0.contains("heard nothing from process 1"),
            "{lonely_leader}"
        );
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn a_program_that_is_not_a_peer_is_refused() {
        // Something listens at process 0's address, but says nothing.
        let stranger = TcpListener::bind("127.0.0.1:0").unwrap();
        let addresses = vec![stranger.local_addr().unwrap().to_string(), free_address()];
        let error = connect_peers(&addresses, 1, Duration::from_millis(500)).unwrap_err();
        assert!(error.0.contains("not a fairflow process there"), "{error}");
    }
}
