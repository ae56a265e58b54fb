//! A node of the role-swap deployment: a `redis-server` (or `valkey-server`) with the module,
//! an AOF, and a port and dir of its own that it keeps across `kill -9` and restart.

use std::fs;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::support::{free_port, info_field, module_path, server_binary, temp_dir, wait_until};

/// How long a start, a sync or a role change may take on a loaded machine.
pub const SETTLE: Duration = Duration::from_secs(10);
/// The failover delay of every node: above the longest lease of the workload.
pub const FAILOVER_DELAY_MS: u64 = 250;

/// The failover delay, or `$RLOCK_ROLESWAP_FAILOVER_DELAY` (ms): 0 is a known-unsafe
/// setting, to see the checker catch what it allows.
fn failover_delay() -> String {
    std::env::var("RLOCK_ROLESWAP_FAILOVER_DELAY").unwrap_or(FAILOVER_DELAY_MS.to_string())
}

pub struct Node {
    pub port: u16,
    dir: PathBuf,
    child: Option<Child>,
}

impl Node {
    /// Starts a node; `master`: the port of the node it replicates.
    pub fn start(master: Option<u16>) -> Node {
        let port = free_port();
        let dir = temp_dir();
        let mut node = Node {
            port,
            dir,
            child: None,
        };
        node.spawn(master);
        node
    }

    fn spawn(&mut self, master: Option<u16>) {
        let mut cmd = Command::new(server_binary());
        cmd.args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .arg("--dir")
            .arg(&self.dir)
            .arg("--logfile")
            .arg(self.dir.join("server.log"))
            .args([
                "--save",
                "",
                "--appendonly",
                "yes",
                "--appendfsync",
                "everysec",
            ])
            .args([
                "--repl-diskless-sync",
                "yes",
                "--repl-diskless-sync-delay",
                "0",
            ])
            .args(["--maxclients", "1000"])
            .arg("--loadmodule")
            .arg(module_path())
            .args(["--rlock.failover-delay", &failover_delay()]);
        if let Some(master) = master {
            cmd.args(["--replicaof", "127.0.0.1", &master.to_string()]);
        }
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the server (apt-get install -y redis-server, or set RLOCK_SERVER)");
        self.child = Some(child);
        let port = self.port;
        let up = wait_until(SETTLE, || {
            connect(port, Duration::from_millis(500))
                .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c).ok())
                .is_some()
        });
        assert!(up, "node {port} did not start:\n{}", self.log());
    }

    /// `kill -9`, and reaps the process.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the killed node again on its files, as a replica of `master`.
    pub fn restart_as_replica_of(&mut self, master: u16) {
        self.kill();
        self.spawn(Some(master));
    }

    pub fn conn(&self) -> redis::Connection {
        connect(self.port, SETTLE).unwrap_or_else(|| panic!("cannot connect to {}", self.port))
    }

    pub fn log(&self) -> String {
        fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
    }

    /// `role` of `INFO replication` (`master`, `slave`), `None` if it does not answer.
    pub fn role(&self) -> Option<String> {
        let mut con = connect(self.port, Duration::from_secs(2))?;
        let info = redis::cmd("INFO")
            .arg("replication")
            .query::<String>(&mut con)
            .ok()?;
        info.lines()
            .find_map(|l| l.strip_prefix("role:"))
            .map(|r| r.trim().to_owned())
    }

    /// Whether this replica's link to its master is up.
    pub fn link_up(&self) -> bool {
        let mut con = self.conn();
        info_field(&mut con, "replication", "master_link_status").as_deref() == Some("up")
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.kill();
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// A connection with read and write timeouts, or `None` if the node does not answer.
pub fn connect(port: u16, timeout: Duration) -> Option<redis::Connection> {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}/")).ok()?;
    let con = client.get_connection_with_timeout(timeout).ok()?;
    con.set_read_timeout(Some(timeout)).ok()?;
    con.set_write_timeout(Some(timeout)).ok()?;
    Some(con)
}
