//! `rlock run` stops its command at once when the server announces that it ended the lock
//! (here `LOCK.FORCERELEASE`), with checks far apart and the next renewal 10 s away.

// The client crate's test support: a redis-server of its own per test.
#[path = "../../client/tests/support/mod.rs"]
mod support;
mod tool;

use std::time::{Duration, Instant};

use support::{poll, Server};
use tool::{group, rlock, Reap};

#[test]
fn a_force_release_stops_the_command_within_a_second() {
    let server = Server::start();
    let args = [
        "run",
        "job",
        "--check",
        "60s",
        "--",
        "sh",
        "-c",
        "echo $$; exec sleep 30",
    ];
    let mut child = rlock(&server, &args).spawn().expect("spawn rlock");
    let pgid: i32 = tool::first_line(&mut child)
        .parse()
        .expect("the shell's pid");
    let _reap = Reap(pgid);
    assert!(
        poll(Duration::from_secs(5), || server.info("job").is_some()),
        "never held"
    );
    let forced = Instant::now();
    server.cmd::<u64>(&["LOCK.FORCERELEASE", "job"]);
    let stopped = poll(Duration::from_secs(1), || {
        matches!(child.try_wait(), Ok(Some(_)))
    });
    if !stopped {
        let _ = child.kill();
    }
    let out = child.wait_with_output().expect("wait for rlock");
    assert!(
        stopped,
        "still running 1 s after the force release: {out:?}"
    );
    assert_eq!(out.status.code(), Some(76), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("force-released"), "{stderr}");
    assert!(group(pgid).is_empty(), "the command's group lives on");
    eprintln!(
        "stopped {} ms after the force release",
        forced.elapsed().as_millis()
    );
}
