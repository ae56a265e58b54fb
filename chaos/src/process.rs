//! Real server processes on loopback: `redis-server` with the module (or without, for the
//! resource), and `redis-sentinel`. Each has a port and a dir of its own, is killed by its
//! pid when dropped, and can be killed (-9), stopped (SIGSTOP), continued and restarted on
//! its port. A process that exits when nobody killed it is counted as a crash.

use std::fs;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::machine::{connect, signal, temp_dir};

/// How long a process may take to answer its first `PING`.
const READY_WITHIN: Duration = Duration::from_secs(10);

/// One server process (`redis-server` or `redis-sentinel`).
pub struct Proc {
    pub name: String,
    pub port: u16,
    binary: String,
    args: Vec<String>,
    dir: PathBuf,
    child: Option<Child>,
    /// Exits nobody asked for, seen so far, that look like crashes (a fatal signal or a
    /// failure status).
    pub unasked_exits: usize,
    /// Exits from outside the run: a `SIGTERM` shutdown or a `SIGKILL` nobody here sent
    /// (another job's cleanup, the kernel's OOM killer). Reported, not counted as crashes.
    pub outside_stops: usize,
    stopped: bool,
    /// Crashes already reported (`report_crash`); the dir is kept when there were any.
    reported: usize,
}

impl Proc {
    /// Starts `binary args...` in a dir of its own and waits until it answers `PING`.
    pub fn start(name: &str, binary: &str, port: u16, args: Vec<String>) -> Proc {
        Proc::start_in(temp_dir(name), name, binary, port, args)
    }

    /// [`Proc::start`] in `dir` (made by [`temp_dir`]), which the process then owns.
    pub fn start_in(dir: PathBuf, name: &str, binary: &str, port: u16, args: Vec<String>) -> Proc {
        let mut proc = Proc {
            name: name.to_owned(),
            port,
            binary: binary.to_owned(),
            args,
            dir,
            child: None,
            unasked_exits: 0,
            outside_stops: 0,
            stopped: false,
            reported: 0,
        };
        proc.spawn();
        proc
    }

    /// Starts the process; tries again a few times when it exits at once (a port taken
    /// by another process in the meantime), then gives up.
    fn spawn(&mut self) {
        let mut failure = String::new();
        for _ in 0..5 {
            match self.try_spawn() {
                Ok(()) => return,
                Err(e) => failure = e,
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        panic!("{failure}");
    }

    fn try_spawn(&mut self) -> Result<(), String> {
        let log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("server.log"))
            .unwrap_or_else(|e| panic!("cannot open the log of {}: {e}", self.name));
        let err = log
            .try_clone()
            .unwrap_or_else(|e| panic!("log handle: {e}"));
        let child = Command::new(&self.binary)
            .args(&self.args)
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e} (run `make deps`)", self.binary));
        self.child = Some(child);
        self.stopped = false;
        self.await_ready()
    }

    fn await_ready(&mut self) -> Result<(), String> {
        let started = Instant::now();
        while started.elapsed() < READY_WITHIN {
            if self.ping() {
                return Ok(());
            }
            if let Some(Ok(Some(status))) = self.child.as_mut().map(Child::try_wait) {
                self.child = None;
                return Err(format!(
                    "{} exited with {status}:\n{}",
                    self.name,
                    self.log()
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(format!(
            "{} not ready within {READY_WITHIN:?}:\n{}",
            self.name,
            self.log()
        ))
    }

    fn ping(&self) -> bool {
        self.cmd::<String>(&["PING"]).is_some()
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// kill -9; the process stays down until [`Proc::restart`].
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        self.stopped = false;
    }

    /// Starts the process again on its port, with its dir (AOF, logs) and arguments.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    /// Replaces the arguments used by the next [`Proc::restart`].
    pub fn set_args(&mut self, args: Vec<String>) {
        self.args = args;
    }

    pub fn stop(&mut self) {
        if let Some(pid) = self.pid() {
            signal("STOP", pid);
            self.stopped = true;
        }
    }

    pub fn resume(&mut self) {
        if let Some(pid) = self.pid() {
            signal("CONT", pid);
            self.stopped = false;
        }
    }

    /// Notices an exit nobody asked for (a crash, or a stop from outside the run) and
    /// starts the process again.
    pub fn reap_unasked(&mut self) -> bool {
        let Some(Ok(Some(status))) = self.child.as_mut().map(Child::try_wait) else {
            return false;
        };
        if stopped_from_outside(status, &self.log()) {
            self.outside_stops += 1;
            eprintln!(
                "outside stop: {} ended with {status}, not by this run (not a crash); restarted",
                self.name
            );
        } else {
            self.unasked_exits += 1;
        }
        self.child = None;
        self.spawn();
        true
    }

    pub fn log(&self) -> String {
        fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
    }

    /// Lines of the log that say the server crashed or failed an assertion.
    pub fn crash_lines(&self) -> usize {
        self.crash_report().len()
    }

    /// The lines of the log that say the server crashed, with the lines that follow each
    /// mark (what crashed, and where).
    pub fn crash_report(&self) -> Vec<String> {
        let log = self.log();
        let marks = [
            "REDIS BUG REPORT",
            "VALKEY BUG REPORT",
            "ASSERTION",
            "Guru Meditation",
        ];
        log.lines()
            .filter(|l| marks.iter().any(|m| l.contains(m)))
            .map(str::to_owned)
            .collect()
    }

    /// Says on stderr that the process crashed (`crashes` in all, when more than already
    /// said), with its log's crash lines and where the log is kept (the dir is not removed).
    pub fn report_crash(&mut self, crashes: usize) {
        if crashes <= self.reported {
            return;
        }
        self.reported = crashes;
        eprintln!(
            "crash: {} ({} exits nobody asked for), log kept in {}",
            self.name,
            self.unasked_exits,
            self.dir.join("server.log").display()
        );
        for line in self.crash_report() {
            eprintln!("crash:   {line}");
        }
    }

    /// Runs a command on a fresh direct connection (1 s limits); `None` on any failure.
    pub fn cmd<T: redis::FromRedisValue>(&self, args: &[&str]) -> Option<T> {
        let mut conn = connect(self.port).ok()?;
        let mut cmd = redis::cmd(args[0]);
        for arg in &args[1..] {
            cmd.arg(*arg);
        }
        cmd.query(&mut conn).ok()
    }
}

/// Whether an exit was a stop from outside rather than a crash: killed by `SIGKILL` (no
/// server kills itself so), or a clean exit after the server logged a `SIGTERM`/`SIGINT`
/// shutdown. A crash ends with a fatal signal (`SIGSEGV`, `SIGABRT`...: the bug report
/// raises it again) or a failure status.
pub fn stopped_from_outside(status: std::process::ExitStatus, log: &str) -> bool {
    use std::os::unix::process::ExitStatusExt;
    const SIGKILL: i32 = 9;
    let shutdown = log
        .lines()
        .rev()
        .take(50)
        .any(|l| l.contains("Received SIGTERM") || l.contains("Received SIGINT"));
    status.signal() == Some(SIGKILL) || (status.success() && shutdown)
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Some(pid) = self.pid() {
            signal("CONT", pid);
        }
        self.kill();
        if self.reported == 0 && std::env::var_os("CHAOS_KEEP").is_none() {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::ExitStatusExt;
    use std::process::ExitStatus;

    use super::stopped_from_outside;

    #[test]
    fn a_fatal_signal_or_a_failure_is_a_crash_a_kill_or_a_shutdown_is_not() {
        let status = ExitStatus::from_raw;
        let shutdown = "1:signal-handler (1) Received SIGTERM scheduling shutdown...\n1:M ready to exit, bye bye";
        assert!(stopped_from_outside(status(9), ""), "SIGKILL");
        assert!(
            stopped_from_outside(status(0), shutdown),
            "SIGTERM shutdown"
        );
        assert!(!stopped_from_outside(status(11), shutdown), "SIGSEGV");
        assert!(!stopped_from_outside(status(6), ""), "SIGABRT");
        assert!(!stopped_from_outside(status(256), shutdown), "exit 1");
        assert!(
            !stopped_from_outside(status(0), "no shutdown asked"),
            "exit 0 unasked"
        );
    }
}
