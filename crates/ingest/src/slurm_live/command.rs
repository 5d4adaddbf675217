//! Running one of the site's Slurm commands: found on `PATH` (with
//! `SLURM_CONF` and the rest of the environment inherited), its standard
//! output read whole, killed when it outlives its timeout. A command that
//! cannot start, exits non-zero, hangs or prints something that is not
//! UTF-8 is a [`CommandError`] naming the command line and the reason.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A command that did not give a usable answer: the command line, the line of
/// its output at fault (when one is) and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{command}`: {}{reason}", line.map(|l| format!("line {l}: ")).unwrap_or_default())]
pub struct CommandError {
    /// The command line as run.
    pub command: String,
    /// The 1-based line of its output at fault, if one is.
    pub line: Option<u64>,
    /// What went wrong.
    pub reason: String,
}

impl CommandError {
    /// An error of `command` about output line `line` (if any).
    pub fn new(command: &str, line: Option<u64>, reason: impl Into<String>) -> Self {
        CommandError {
            command: command.to_string(),
            line,
            reason: reason.into(),
        }
    }
}

/// One command line: a program and its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlurmCommand {
    /// The program, looked up on `PATH`.
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
}

impl SlurmCommand {
    /// `program` with `args`.
    pub fn new(program: &str, args: &[&str]) -> Self {
        SlurmCommand {
            program: program.to_string(),
            args: args.iter().map(|a| a.to_string()).collect(),
        }
    }

    /// The command line as a shell would show it (arguments with spaces or
    /// `|` quoted), for messages and for naming its output.
    pub fn line(&self) -> String {
        let mut line = self.program.clone();
        for arg in &self.args {
            line.push(' ');
            if arg.contains([' ', '|', '%', '"']) {
                line.push('\'');
                line.push_str(arg);
                line.push('\'');
            } else {
                line.push_str(arg);
            }
        }
        line
    }

    /// Run it and return its standard output; killed after `timeout`.
    pub fn run(&self, timeout: Duration) -> Result<String, CommandError> {
        let line = self.line();
        let err = |reason: String| CommandError::new(&line, None, reason);
        let mut child = Command::new(&self.program)
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| err(format!("cannot start `{}`: {e}", self.program)))?;
        // The pipes are drained on threads of their own, so a command that
        // writes more than a pipe holds is not blocked while we wait.
        let mut stdout = child.stdout.take().expect("piped");
        let mut stderr = child.stderr.take().expect("piped");
        let out = std::thread::spawn(move || {
            let mut bytes = Vec::new();
            stdout.read_to_end(&mut bytes).map(|_| bytes)
        });
        let errors = std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = stderr.read_to_end(&mut bytes);
            bytes
        });
        let started = Instant::now();
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if started.elapsed() >= timeout => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(err(format!(
                        "no answer within {} s: killed",
                        timeout.as_secs_f64()
                    )));
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(5)),
                Err(e) => return Err(err(format!("waiting for it: {e}"))),
            }
        };
        let bytes = out
            .join()
            .map_err(|_| err("reading its output failed".into()))?
            .map_err(|e| err(format!("reading its output: {e}")))?;
        let stderr_text = String::from_utf8_lossy(&errors.join().unwrap_or_default()).to_string();
        if !status.success() {
            let first = stderr_text.lines().find(|l| !l.trim().is_empty());
            return Err(err(format!(
                "exited with {status}{}",
                first.map(|l| format!(": {}", l.trim())).unwrap_or_default()
            )));
        }
        String::from_utf8(bytes).map_err(|e| {
            let before = &e.as_bytes()[..e.utf8_error().valid_up_to()];
            let bad_line = before.iter().filter(|b| **b == b'\n').count() as u64 + 1;
            CommandError::new(&line, Some(bad_line), "the output is not UTF-8")
        })
    }
}
