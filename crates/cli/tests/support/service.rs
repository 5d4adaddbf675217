//! Starting `fairflow serve` as a child process on loopback and talking to it
//! with plain HTTP/1.1 over a TCP stream. Each test binary uses a part of it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A running `fairflow serve`.
pub struct Service {
    pub child: Child,
    pub address: SocketAddr,
    /// The line the service printed when it began listening (engine, recovery).
    pub banner: String,
}

/// A file in `dir` holding `token`, readable by its owner only (the service
/// refuses a token file other users can read).
pub fn token_file(dir: &Path, token: &str) -> PathBuf {
    let path = dir.join("token");
    std::fs::write(&path, token).unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    path
}

/// A loopback port that was free a moment ago.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A service a test did not stop is killed when it is dropped: no
/// `fairflow serve` outlives the test that started it (stopped ones are
/// already reaped; killing them again does nothing).
impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Service {
    /// Start the service with `extra` flags; waits until it listens.
    pub fn start(data_dir: &Path, token_file: &Path, extra: &[&str]) -> Service {
        Self::start_logging(data_dir, token_file, extra, None)
    }

    /// [`Service::start`], keeping every line the service writes to standard
    /// error in `log` (when given), those before it began listening included.
    pub fn start_logging(
        data_dir: &Path,
        token_file: &Path,
        extra: &[&str],
        log: Option<Arc<Mutex<Vec<String>>>>,
    ) -> Service {
        Self::start_with_env(data_dir, token_file, extra, log, &[])
    }

    /// [`Service::start_logging`] with `env` added to the service's
    /// environment.
    pub fn start_with_env(
        data_dir: &Path,
        token_file: &Path,
        extra: &[&str],
        log: Option<Arc<Mutex<Vec<String>>>>,
        env: &[(&str, String)],
    ) -> Service {
        let port = free_port();
        let mut child = Command::new(env!("CARGO_BIN_EXE_fairflow"))
            .envs(env.iter().map(|(k, v)| (k, v)))
            .args([
                "serve",
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--data-dir",
            ])
            .arg(data_dir)
            .arg("--token-file")
            .arg(token_file)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the fairflow binary starts");
        let stderr = child.stderr.take().unwrap();
        let mut reader = BufReader::new(stderr);
        let mut line = String::new();
        loop {
            line.clear();
            if reader.read_line(&mut line).unwrap() == 0 {
                panic!("fairflow serve exited before listening");
            }
            if let Some(log) = &log {
                log.lock().unwrap().push(line.clone());
            }
            if line.contains("listening on") {
                break;
            }
        }
        // Keep draining stderr so the child never blocks on a full pipe.
        std::thread::spawn(move || {
            let mut sink = String::new();
            while reader.read_line(&mut sink).map(|n| n > 0).unwrap_or(false) {
                if let Some(log) = &log {
                    log.lock().unwrap().push(sink.clone());
                }
                sink.clear();
            }
        });
        Service {
            child,
            address: format!("127.0.0.1:{port}").parse().unwrap(),
            banner: line,
        }
    }

    /// Send SIGKILL and reap.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Send SIGTERM and wait for a clean exit.
    pub fn terminate(mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        self.child.wait().unwrap()
    }

    /// A sample's value in `/metrics` (`-1` when absent).
    pub fn metric(&self, name: &str) -> f64 {
        let (_, body) = self.request("GET", "/metrics", None, "");
        body.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or(-1.0)
    }

    /// One HTTP exchange: `(status, body)`; status 0 when the connection failed.
    pub fn request(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: &str,
    ) -> (u16, String) {
        let auth = token.map(|t| format!("Bearer {t}"));
        let headers: Vec<(&str, &str)> = auth
            .iter()
            .map(|value| ("Authorization", value.as_str()))
            .collect();
        exchange(self.address, method, path, &headers, body)
    }
}

/// One HTTP exchange with the service at `address`, with extra `headers`:
/// `(status, body)`; status 0 when the connection failed.
pub fn exchange(
    address: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    let Ok(mut stream) = TcpStream::connect_timeout(&address, Duration::from_secs(5)) else {
        return (0, String::new());
    };
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let extra: String = headers
        .iter()
        .map(|(name, value)| format!("{name}: {value}\r\n"))
        .collect();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: fairflow\r\nConnection: close\r\n{extra}Content-Length: {}\r\n\r\n",
        body.len()
    );
    if stream
        .write_all(head.as_bytes())
        .and_then(|_| stream.write_all(body.as_bytes()))
        .is_err()
    {
        return (0, String::new());
    }
    let mut response = Vec::new();
    if stream.read_to_end(&mut response).is_err() && response.is_empty() {
        return (0, String::new());
    }
    fairflow_testkit::http_answer(&response)
}
