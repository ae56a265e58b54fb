//! Running the `rlock` binary in tests, and looking at the process groups it runs.
// Each test file uses a part of it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};

use redis::Value;

use crate::support::Server;

/// A `rlock` command for `server`, its output captured.
pub fn rlock(server: &Server, args: &[&str]) -> Command {
    rlock_at(&server.url(), args)
}

/// A `rlock` command for the server at `url`, its output captured.
pub fn rlock_at(url: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rlock"));
    cmd.env_remove("RLOCK_URL")
        .arg("--url")
        .arg(url)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// The first line `child` prints, without its newline (the rest stays in its pipe).
pub fn first_line(child: &mut Child) -> String {
    let mut line = String::new();
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    stdout.read_line(&mut line).expect("read rlock's stdout");
    line.trim_end().to_owned()
}

/// The live (not zombie) processes of process group `pgid`, from `/proc`, with their state
/// letter (`S`, `R`, `T` for stopped, ...).
pub fn members(pgid: i32) -> Vec<(i32, char)> {
    let mut members = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return members;
    };
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid pgrp ...: the command name may hold spaces, not ')'.
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let state = fields.first().and_then(|s| s.chars().next());
        let pgrp = fields.get(2).and_then(|g| g.parse::<i32>().ok());
        match state {
            Some(state) if pgrp == Some(pgid) && state != 'Z' => members.push((pid, state)),
            _ => {}
        }
    }
    members
}

/// The live processes of process group `pgid`.
pub fn group(pgid: i32) -> Vec<i32> {
    members(pgid).into_iter().map(|(pid, _)| pid).collect()
}

/// The state letter of process `pid` (`T` when stopped), if it lives.
pub fn state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().next()?.chars().next()
}

/// Sends `signal` (`-TERM`, `-USR1`, ...) to process `pid`.
pub fn send(signal: &str, pid: u32) {
    let sent = Command::new("kill")
        .args([signal, &pid.to_string()])
        .status();
    assert!(sent.expect("run kill").success(), "kill {signal} {pid}");
}

/// Kills what is left of a group when a test fails, so no `sleep 100` outlives it.
pub struct Reap(pub i32);

impl Drop for Reap {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.0)])
            .stderr(Stdio::null())
            .status();
    }
}

/// A directory of its own for a test's files, removed on drop.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("rlock-cli-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create a scratch directory");
        Scratch(dir)
    }

    /// The path of `file` in it, as text for a shell command.
    pub fn path(&self, file: &str) -> String {
        self.0.join(file).to_string_lossy().into_owned()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Bytes a process printed, as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `child`'s exit and everything it printed.
pub fn finish(child: Child) -> Output {
    child.wait_with_output().expect("wait for rlock")
}

/// Field `name` of the map that `command key` answers (`RWLOCK.INFO`, `SEM.INFO`), or
/// `None` when the key does not exist.
pub fn info_field(server: &Server, command: &str, key: &str, name: &str) -> Option<Value> {
    let fields: Option<Vec<Value>> = server.cmd(&[command, key]);
    let fields = fields?;
    let at = fields
        .iter()
        .position(|v| *v == Value::BulkString(name.into()));
    Some(fields[at.expect("the field is there") + 1].clone())
}
