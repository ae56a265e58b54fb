//! What the checker finds on this machine: free loopback ports, the module and server
//! binaries, fresh temp dirs, signals to a pid, a direct connection to a port.

use std::fs;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// A free port of 127.0.0.1 (bind port 0).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("cannot bind 127.0.0.1:0: {e}"))
}

/// The module: `$RLOCK_MODULE`, else the workspace's release build.
pub fn module_path() -> PathBuf {
    if let Some(path) = std::env::var_os("RLOCK_MODULE") {
        return PathBuf::from(path);
    }
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| workspace.join("target"), PathBuf::from)
        .join("release/librlock.so")
}

/// The server binary: `$RLOCK_SERVER`, else `redis-server`.
pub fn server_binary() -> String {
    std::env::var("RLOCK_SERVER").unwrap_or_else(|_| "redis-server".to_owned())
}

/// A fresh dir under the system temp dir, removed when its process is dropped.
pub fn temp_dir(label: &str) -> PathBuf {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("rlock-chaos-{}-{label}-{n}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
    dir
}

/// A direct connection to `port` with 1 s connect, read and write limits.
pub fn connect(port: u16) -> redis::RedisResult<redis::Connection> {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}/"))?;
    let limit = Duration::from_secs(1);
    let conn = client.get_connection_with_timeout(limit)?;
    conn.set_read_timeout(Some(limit))?;
    conn.set_write_timeout(Some(limit))?;
    Ok(conn)
}

/// Sends `SIG<name>` to `pid` with kill(1) (std has no signal API but SIGKILL).
pub fn signal(name: &str, pid: u32) {
    let _ = Command::new("kill")
        .arg(format!("-{name}"))
        .arg(pid.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}
