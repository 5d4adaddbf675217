//! A real Slurm 22.05 (Debian 12's `slurm-wlm`) on this machine, as root, in
//! a temporary directory: munge, a private MariaDB, slurmdbd, slurmctld and
//! one slurmd that claims 256 CPUs (`/work/shared/notes/real-slurm.md`'s
//! recipe). Every daemon is stopped by its pid when the cluster is dropped.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::service::free_port;

/// The programs the cluster needs.
pub const PROGRAMS: [&str; 9] = [
    "munged",
    "mungekey",
    "mariadbd",
    "mariadb-install-db",
    "mariadb",
    "slurmdbd",
    "slurmctld",
    "slurmd",
    "sacctmgr",
];

/// The reason the cluster cannot run here (a program missing, not root),
/// if it cannot.
pub fn missing_prerequisite() -> Option<String> {
    for program in PROGRAMS {
        let found = std::env::var_os("PATH").is_some_and(|path| {
            std::env::split_paths(&path).any(|dir| dir.join(program).is_file())
        }) || Path::new("/usr/sbin").join(program).is_file();
        if !found {
            return Some(format!(
                "`{program}` is not installed (Debian 12: slurm-wlm slurmctld slurmd slurmdbd slurm-client mariadb-server munge)"
            ));
        }
    }
    let uid = Command::new("id").arg("-u").output().ok()?;
    if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
        return Some("the real Slurm runs as root".into());
    }
    None
}

/// A running cluster.
pub struct SlurmCluster {
    /// Its directory (configuration, state, logs).
    pub dir: PathBuf,
    /// `slurm.conf`.
    pub conf: PathBuf,
    mariadb: Option<Child>,
}

/// Wait until `ready` holds, at most `limit`; panics naming `what`.
pub fn wait_for(what: &str, limit: Duration, mut ready: impl FnMut() -> bool) {
    let started = Instant::now();
    while !ready() {
        assert!(
            started.elapsed() < limit,
            "timed out after {limit:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn run_checked(command: &mut Command) -> Output {
    let output = command.output().expect("the command starts");
    assert!(
        output.status.success(),
        "{command:?} failed: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn pid_in(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

fn kill_pid_file(path: &Path) {
    if let Some(pid) = pid_in(path) {
        let _ = Command::new("kill").arg(&pid).status();
        // Wait for it to go (its pid file names a live process until then).
        let started = Instant::now();
        while Path::new(&format!("/proc/{pid}")).exists()
            && started.elapsed() < Duration::from_secs(15)
        {
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = std::fs::remove_file(path);
    }
}

impl SlurmCluster {
    /// A Slurm command (with `SLURM_CONF`) as `command`.
    pub fn command(&self, program: &str) -> Command {
        let mut command = Command::new(program);
        command.env("SLURM_CONF", &self.conf);
        command
    }

    /// Run a Slurm command; panics when it fails. Its standard output.
    pub fn run(&self, program: &str, args: &[&str]) -> String {
        let output = run_checked(self.command(program).args(args));
        String::from_utf8_lossy(&output.stdout).to_string()
    }

    /// Does a Slurm command succeed?
    pub fn succeeds(&self, program: &str, args: &[&str]) -> bool {
        self.command(program)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }

    /// Start munge, MariaDB and slurmdbd in a new directory (slurmctld and
    /// slurmd start with [`SlurmCluster::start_controller`], after the
    /// accounts exist). `slurm_conf` is the site part of slurm.conf
    /// (priority settings, node, partitions).
    pub fn start(slurm_conf: &str) -> SlurmCluster {
        let dir = std::env::temp_dir().join(format!("ff-real-slurm-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for sub in ["munge", "db", "run", "state", "spool", "log", "work"] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
        }
        let chmod = |path: &Path, mode: u32| {
            std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(mode))
                .unwrap()
        };
        chmod(&dir, 0o755);
        chmod(&dir.join("work"), 0o777);
        run_checked(Command::new("chown").args(["munge", dir.join("munge").to_str().unwrap()]));
        chmod(&dir.join("munge"), 0o711);
        for sub in ["db", "run"] {
            run_checked(Command::new("chown").args(["mysql", dir.join(sub).to_str().unwrap()]));
        }
        let path = |sub: &str| dir.join(sub).to_str().unwrap().to_string();
        let socket = path("munge/munge.sock");
        let key = path("munge/munge.key");
        run_checked(Command::new("runuser").args([
            "-u",
            "munge",
            "--",
            "mungekey",
            "--create",
            "--keyfile",
            &key,
        ]));
        run_checked(Command::new("runuser").args([
            "-u",
            "munge",
            "--",
            "munged",
            &format!("--socket={socket}"),
            &format!("--key-file={key}"),
            &format!("--pid-file={}", path("munge/munged.pid")),
            &format!("--log-file={}", path("munge/munged.log")),
            &format!("--seed-file={}", path("munge/seed")),
        ]));

        let (db_port, ctld_port, slurmd_port, dbd_port) =
            (free_port(), free_port(), free_port(), free_port());
        let cnf = path("my.cnf");
        std::fs::write(
            &cnf,
            format!(
                "[mysqld]\ndatadir={}\nsocket={}\nport={db_port}\nbind-address=127.0.0.1\n\
                 pid-file={}\nlog-error={}\nskip-name-resolve\ninnodb_buffer_pool_size=32M\n",
                path("db"),
                path("run/mysql.sock"),
                path("run/mysql.pid"),
                path("run/mysql.err"),
            ),
        )
        .unwrap();
        run_checked(Command::new("mariadb-install-db").args([
            &format!("--defaults-file={cnf}"),
            "--user=mysql",
            "--skip-test-db",
            "--auth-root-authentication-method=socket",
        ]));
        let mariadb = Command::new("mariadbd")
            .args([&format!("--defaults-file={cnf}"), "--user=mysql"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("mariadbd starts");
        let mysql_socket = path("run/mysql.sock");
        wait_for("MariaDB's socket", Duration::from_secs(60), || {
            Path::new(&mysql_socket).exists()
        });
        run_checked(Command::new("mariadb").args([
            &format!("--socket={mysql_socket}"),
            "-u",
            "root",
            "-e",
            "create database slurm_acct_db; create user 'slurm'@'127.0.0.1' identified by 'pw'; \
             grant all on slurm_acct_db.* to 'slurm'@'127.0.0.1';",
        ]));

        let conf = dir.join("slurm.conf");
        std::fs::write(
            &conf,
            format!(
                "ClusterName=ffc\nSlurmctldHost=localhost\nSlurmUser=root\nSlurmdUser=root\n\
                 SlurmctldPort={ctld_port}\nSlurmdPort={slurmd_port}\nAuthType=auth/munge\n\
                 AuthInfo=socket={socket}\nStateSaveLocation={}\nSlurmdSpoolDir={}\n\
                 SlurmctldPidFile={}\nSlurmdPidFile={}\nSlurmctldLogFile={}\nSlurmdLogFile={}\n\
                 ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n\
                 JobAcctGatherType=jobacct_gather/none\nSelectType=select/cons_tres\n\
                 SelectTypeParameters=CR_CPU\nSlurmdParameters=config_overrides\n\
                 AccountingStorageType=accounting_storage/slurmdbd\nAccountingStorageHost=localhost\n\
                 AccountingStoragePort={dbd_port}\nAccountingStoragePass={socket}\n\
                 AccountingStorageEnforce=associations,limits,qos\nPriorityType=priority/multifactor\n\
                 SchedulerParameters=bf_interval=5,sched_interval=5\nMinJobAge=600\nReturnToService=2\n\
                 {slurm_conf}",
                path("state"),
                path("spool"),
                path("run/slurmctld.pid"),
                path("run/slurmd.pid"),
                path("log/slurmctld.log"),
                path("log/slurmd.log"),
            ),
        )
        .unwrap();
        let dbd_conf = dir.join("slurmdbd.conf");
        std::fs::write(
            &dbd_conf,
            format!(
                "AuthType=auth/munge\nAuthInfo=socket={socket}\nDbdHost=localhost\nDbdPort={dbd_port}\n\
                 SlurmUser=root\nPidFile={}\nLogFile={}\nStorageType=accounting_storage/mysql\n\
                 StorageHost=127.0.0.1\nStoragePort={db_port}\nStorageUser=slurm\nStoragePass=pw\n\
                 StorageLoc=slurm_acct_db\n",
                path("run/slurmdbd.pid"),
                path("log/slurmdbd.log"),
            ),
        )
        .unwrap();
        chmod(&dbd_conf, 0o600);
        let cluster = SlurmCluster {
            dir: dir.clone(),
            conf,
            mariadb: Some(mariadb),
        };
        run_checked(&mut cluster.command("slurmdbd"));
        wait_for("slurmdbd", Duration::from_secs(60), || {
            cluster.succeeds("sacctmgr", &["-n", "show", "cluster"])
        });
        cluster
    }

    /// Start slurmctld (and slurmd, the first time); waits until the node
    /// is idle or allocated.
    pub fn start_controller(&self) {
        run_checked(&mut self.command("slurmctld"));
        wait_for("slurmctld", Duration::from_secs(60), || {
            self.succeeds("scontrol", &["ping"])
        });
        if pid_in(&self.dir.join("run/slurmd.pid")).is_none() {
            run_checked(self.command("slurmd").args(["-N", "localhost"]));
        }
        wait_for("the node", Duration::from_secs(60), || {
            let state = self.run("sinfo", &["-h", "-N", "-o", "%t"]);
            ["idle", "mix", "alloc", "drain", "drng"]
                .iter()
                .any(|s| state.contains(s))
        });
    }

    /// Stop slurmctld, append `line` to slurm.conf, start it again.
    pub fn restart_controller_with(&self, line: &str) {
        kill_pid_file(&self.dir.join("run/slurmctld.pid"));
        let mut conf = std::fs::read_to_string(&self.conf).unwrap();
        conf.push_str(line);
        conf.push('\n');
        std::fs::write(&self.conf, conf).unwrap();
        self.start_controller();
    }

    /// The time of the decay thread's last pass (`priority_last_decay_ran`).
    pub fn last_decay_pass(&self) -> Vec<u8> {
        std::fs::read(self.dir.join("state/priority_last_decay_ran")).unwrap_or_default()
    }

    /// Wait for the decay thread's first pass: until it ran, Slurm charges
    /// no usage, not even at a job's end.
    pub fn wait_for_first_decay_pass(&self) {
        wait_for("the first decay pass", Duration::from_secs(150), || {
            !self.last_decay_pass().is_empty()
        });
    }

    /// Wait for the decay thread to run once more.
    pub fn wait_for_decay_pass(&self) {
        let before = self.last_decay_pass();
        wait_for("a decay pass", Duration::from_secs(150), || {
            self.last_decay_pass() != before
        });
    }

    /// Submit `sleep SECS` as `user` with sbatch `options`; the job id.
    pub fn submit(&self, user: &str, options: &[&str], secs: u32) -> String {
        let mut command = self.command("runuser");
        command
            .current_dir(self.dir.join("work"))
            .args([
                "-u",
                user,
                "--",
                "sbatch",
                "--parsable",
                "-o",
                "/dev/null",
                "-e",
                "/dev/null",
            ])
            .args(options)
            .args(["--wrap", &format!("sleep {secs}")]);
        let output = run_checked(&mut command);
        String::from_utf8_lossy(&output.stdout)
            .trim()
            .split(';')
            .next()
            .unwrap()
            .to_string()
    }
}

impl Drop for SlurmCluster {
    fn drop(&mut self) {
        for pid_file in ["run/slurmd.pid", "run/slurmctld.pid", "run/slurmdbd.pid"] {
            kill_pid_file(&self.dir.join(pid_file));
        }
        if let Some(mut mariadb) = self.mariadb.take() {
            let _ = Command::new("kill").arg(mariadb.id().to_string()).status();
            let _ = mariadb.wait();
        }
        kill_pid_file(&self.dir.join("munge/munged.pid"));
        if std::env::var_os("FAIRFLOW_KEEP_SLURM_DIR").is_none() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}
