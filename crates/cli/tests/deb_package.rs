//! The Debian package, end to end on this machine: `packaging/build-deb
//! --no-build` packs the release binary these tests run (nothing is built
//! again), `dpkg -i` installs it, and the test checks what an administrator
//! gets: `/usr/bin/fairflow --version`, the man pages (`man -w`), the bash,
//! zsh and fish completions, the unit and its drop-in (`systemd-analyze
//! verify`), the `fairflow` system user, the conffile, and the service as
//! the unit runs it (the package's user, its config file, its data
//! directory) answering `/healthz`; then a second `dpkg -i` (the maintainer
//! scripts are idempotent), `dpkg -r` and `dpkg --purge`, after which no
//! file, user or data directory of the package is left.
//!
//! It installs into the machine, so it runs only as root (CI's throwaway
//! machine); otherwise it says it was skipped. cargo-deb, dpkg, man-db and
//! systemd-analyze are prerequisites (`.ci/run` installs them): a missing
//! one is skipped with a message, and under `CI=true` fails. On a developer
//! machine that already has a `fairflow` package installed it is skipped
//! (that package is left alone).

#[path = "support/service.rs"]
mod service;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn run(program: &str, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{program} {args:?}: {e}"))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `program args` succeeded; its standard output.
fn succeeds(program: &str, args: &[&str]) -> String {
    let out = run(program, args);
    assert!(
        out.status.success(),
        "{program} {args:?}: {}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// Whether `program args` runs at all (the prerequisite is there).
fn present(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn repository() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Whether a `fairflow` package is installed (any state but purged).
fn package_installed() -> bool {
    run("dpkg-query", &["-W", "-f=${Status}", "fairflow"])
        .stdout
        .starts_with(b"install ok")
}

/// What must be there before anything is installed; `false` (after saying
/// why) to skip.
fn prerequisites() -> bool {
    for (what, program, args) in [
        (
            "cargo-deb (cargo install cargo-deb --locked)",
            "cargo",
            &["deb", "--version"][..],
        ),
        ("dpkg", "dpkg", &["--version"][..]),
        ("man-db (man -w)", "man", &["--version"][..]),
        (
            "systemd-analyze (Debian's systemd)",
            "systemd-analyze",
            &["--version"][..],
        ),
    ] {
        if !present(program, args) {
            fairflow_testkit::prerequisite_missing(what);
            return false;
        }
    }
    let root = run("id", &["-u"]).stdout == b"0\n";
    if !root {
        fairflow_testkit::prerequisite_missing("root, to install the package into this machine");
        return false;
    }
    if package_installed() && !fairflow_testkit::under_ci() {
        println!("skipped: a fairflow package is installed on this machine; it is left alone");
        return false;
    }
    true
}

/// Build the package from the binary the tests run; its path.
fn build_package() -> PathBuf {
    let binary = PathBuf::from(env!("CARGO_BIN_EXE_fairflow"));
    let target_dir = binary
        .parent()
        .and_then(Path::parent)
        .expect("the binary is in TARGET/release/");
    let out = Command::new(repository().join("packaging/build-deb"))
        .arg("--no-build")
        .env("CARGO_TARGET_DIR", target_dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "build-deb: {}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let path = text(&out.stdout)
        .lines()
        .chain(text(&out.stderr).lines())
        .filter_map(|l| {
            l.trim()
                .strip_suffix(".deb")
                .map(|p| PathBuf::from(format!("{p}.deb")))
        })
        .next_back()
        .expect("build-deb names the package it wrote");
    assert!(path.is_file(), "{}", path.display());
    path
}

/// The files the package installed (`dpkg -L`).
fn installed_files() -> Vec<String> {
    succeeds("dpkg", &["-L", "fairflow"])
        .lines()
        .map(str::to_string)
        .collect()
}

/// The installed service, run as its unit runs it (the `fairflow` user,
/// the conffile; the listen address moved to a free port), answers
/// `/healthz` and writes its log into the data directory.
fn the_service_runs_as_the_unit_runs_it() {
    // What systemd's StateDirectory=fairflow makes before the start.
    succeeds(
        "install",
        &[
            "-d",
            "-o",
            "fairflow",
            "-g",
            "fairflow",
            "-m",
            "0750",
            "/var/lib/fairflow",
        ],
    );
    let port = service::free_port();
    let listen = format!("127.0.0.1:{port}");
    // setpriv execs the service in its own process (as systemd does), so
    // SIGTERM and the exit status are the service's.
    let mut child = Command::new("setpriv")
        .args(["--reuid=fairflow", "--regid=fairflow", "--init-groups"])
        .args(["/usr/bin/fairflow", "serve"])
        .args([
            "--config",
            "/etc/fairflow/fairflow.toml",
            "--listen",
            &listen,
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut reader = BufReader::new(child.stderr.take().unwrap());
    let mut said = String::new();
    let mut line = String::new();
    while !line.contains("listening on") {
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            let _ = child.wait();
            panic!("the installed service exited before listening: {said}");
        }
        said.push_str(&line);
    }
    let running = service::Service {
        child,
        address: listen.parse().unwrap(),
        banner: line,
    };
    let (status, body) = running.request("GET", "/healthz", None, "");
    let exit = running.terminate();
    assert_eq!(status, 200, "{body}");
    assert!(exit.success(), "{exit:?}");
    let kept: Vec<_> = std::fs::read_dir("/var/lib/fairflow")
        .unwrap()
        .filter_map(Result::ok)
        .collect();
    assert!(!kept.is_empty(), "nothing written in /var/lib/fairflow");
}

/// What `dpkg -i` gave: the binary, man pages, completions, unit, user and
/// conffile.
fn the_installed_package_has_what_an_administrator_expects(files: &[String]) {
    let version = succeeds("/usr/bin/fairflow", &["--version"]);
    assert_eq!(
        version.trim(),
        format!("fairflow {}", env!("CARGO_PKG_VERSION"))
    );
    assert_eq!(
        succeeds("man", &["-w", "fairflow"]).trim(),
        "/usr/share/man/man1/fairflow.1.gz"
    );
    assert_eq!(
        succeeds("man", &["-w", "fairflow-serve"]).trim(),
        "/usr/share/man/man1/fairflow-serve.1.gz"
    );
    for completion in [
        "/usr/share/bash-completion/completions/fairflow",
        "/usr/share/zsh/vendor-completions/_fairflow",
        "/usr/share/fish/vendor_completions.d/fairflow.fish",
    ] {
        let script = std::fs::read_to_string(completion).unwrap_or_default();
        assert!(script.contains("fairflow"), "{completion}: {script:.200}");
    }
    let unit = files
        .iter()
        .find(|f| f.ends_with("/system/fairflow.service"))
        .expect("the package installs fairflow.service");
    let drop_in = files
        .iter()
        .find(|f| f.ends_with("/system/fairflow.service.d/package.conf"))
        .expect("the package installs its drop-in");
    let unit_dir = Path::new(unit).parent().unwrap();
    assert_eq!(
        std::fs::canonicalize(unit_dir).unwrap(),
        std::fs::canonicalize(Path::new(drop_in).parent().unwrap().parent().unwrap()).unwrap(),
        "the drop-in is beside the unit"
    );
    let verified = run("systemd-analyze", &["verify", unit]);
    let said = text(&verified.stderr);
    let ours: Vec<&str> = said.lines().filter(|l| l.contains("fairflow")).collect();
    assert!(
        verified.status.success() && ours.is_empty(),
        "systemd-analyze verify: {said}"
    );
    let user = succeeds("getent", &["passwd", "fairflow"]);
    let fields: Vec<&str> = user.trim().split(':').collect();
    assert_eq!(fields[5], "/var/lib/fairflow", "{user}");
    assert!(fields[6].ends_with("nologin"), "{user}");
    let conffiles = succeeds("dpkg-query", &["-W", "-f=${Conffiles}", "fairflow"]);
    assert!(
        conffiles.contains("/etc/fairflow/fairflow.toml"),
        "{conffiles}"
    );
}

#[test]
fn the_debian_package_installs_runs_and_purges_cleanly() {
    if !prerequisites() {
        return;
    }
    let package = build_package();
    let package = package.to_str().unwrap();
    let contents = succeeds("dpkg-deb", &["-c", package]);
    assert!(contents.contains("./usr/bin/fairflow"), "{contents}");
    succeeds("dpkg", &["-i", package]);
    let files = installed_files();
    the_installed_package_has_what_an_administrator_expects(&files);
    the_service_runs_as_the_unit_runs_it();
    // Configured again: the user exists, nothing fails.
    succeeds("dpkg", &["-i", package]);
    succeeds("dpkg", &["-r", "fairflow"]);
    assert!(!Path::new("/usr/bin/fairflow").exists());
    assert!(
        Path::new("/etc/fairflow/fairflow.toml").exists(),
        "dpkg -r keeps the conffile"
    );
    succeeds("dpkg", &["--purge", "fairflow"]);
    assert!(!package_installed());
    for gone in ["/etc/fairflow/fairflow.toml", "/var/lib/fairflow"] {
        assert!(!Path::new(gone).exists(), "{gone} is left after the purge");
    }
    for file in &files {
        assert!(!Path::new(file).is_file(), "{file} is left after the purge");
    }
    assert!(
        !run("getent", &["passwd", "fairflow"]).status.success(),
        "the fairflow user is left after the purge"
    );
}
