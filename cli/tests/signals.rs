//! Signals that would end `rlock` without a release are caught: passed on to the command's
//! group, and the lock is released once it ended.

// The client crate's test support: a redis-server of its own per test.
#[path = "../../client/tests/support/mod.rs"]
mod support;
mod tool;

use std::time::Duration;

use support::{poll, Server};
use tool::{first_line, rlock, send};

#[test]
fn sigusr1_and_sigquit_reach_the_command_and_the_lock_is_released() {
    let server = Server::start();
    // No core file from SIGQUIT.
    let script = "ulimit -c 0; echo started; exec sleep 100";
    for (signal, number) in [("-USR1", libc_number::USR1), ("-QUIT", libc_number::QUIT)] {
        let mut child = rlock(&server, &["run", "job", "--", "sh", "-c", script])
            .spawn()
            .expect("spawn rlock");
        assert_eq!(first_line(&mut child), "started");
        assert!(server.info("job").is_some(), "not held");
        send(signal, child.id());
        let ended = poll(Duration::from_secs(10), || {
            matches!(child.try_wait(), Ok(Some(_)))
        });
        if !ended {
            let _ = child.kill();
        }
        let out = child.wait_with_output().expect("wait for rlock");
        assert!(ended, "rlock did not end: {out:?}");
        assert_eq!(out.status.code(), Some(128 + number), "{signal}: {out:?}");
        assert_eq!(server.info("job"), None, "{signal}: not released");
    }
}

/// Signal numbers on Linux.
mod libc_number {
    pub const QUIT: i32 = 3;
    pub const USR1: i32 = 10;
}
