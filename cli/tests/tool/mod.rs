//! Running the `rlock` binary in tests.

use std::process::{Command, Stdio};

use crate::support::Server;

/// A `rlock` command for `server`, its output captured.
pub fn rlock(server: &Server, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rlock"));
    cmd.env_remove("RLOCK_URL")
        .arg("--url")
        .arg(server.url())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}
