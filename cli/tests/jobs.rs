//! Job control and leftovers: Ctrl-Z (`SIGTSTP`) stops the command's group with `rlock`, and
//! the processes a command leaves running keep the lock until they end (or are killed, with
//! `--kill-leftovers`).

// The client crate's test support: a redis-server of its own per test.
#[path = "../../client/tests/support/mod.rs"]
mod support;
mod tool;

use std::process::Child;
use std::time::{Duration, Instant};

use support::{poll, Server};
use tool::{first_line, group, members, rlock, send, state, Reap};

const WITHIN: Duration = Duration::from_secs(10);

/// Starts `rlock run job OPTIONS -- sh -c SCRIPT` (SCRIPT prints `$$` first); rlock and the
/// command's group id.
fn start(server: &Server, options: &[&str], script: &str) -> (Child, i32) {
    let mut args = vec!["run", "job"];
    args.extend_from_slice(options);
    args.extend_from_slice(&["--", "sh", "-c", script]);
    let mut child = rlock(server, &args).spawn().expect("spawn rlock");
    let pgid = first_line(&mut child).parse().expect("the shell's pid");
    (child, pgid)
}

/// Whether every process of group `pgid` (at least `n`) is stopped.
fn all_stopped(pgid: i32, n: usize) -> bool {
    let members = members(pgid);
    members.len() >= n && members.iter().all(|&(_, state)| state == 'T')
}

/// Waits (bounded) for `child` to end; its output.
fn end(mut child: Child) -> std::process::Output {
    let ended = poll(WITHIN, || matches!(child.try_wait(), Ok(Some(_))));
    if !ended {
        let _ = child.kill();
    }
    let out = child.wait_with_output().expect("wait for rlock");
    assert!(ended, "rlock did not end in {WITHIN:?}: {out:?}");
    out
}

#[test]
fn ctrl_z_stops_the_command_and_a_stop_past_the_lease_kills_it() {
    let server = Server::start();
    let options = ["--lease", "2s", "--renew", "--kill-grace", "200ms"];
    let (rlock, pgid) = start(&server, &options, "echo $$; sleep 100 & sleep 100");
    let _reap = Reap(pgid);
    assert!(poll(WITHIN, || group(pgid).len() == 3));
    send("-TSTP", rlock.id());
    assert!(
        poll(WITHIN, || all_stopped(pgid, 3)),
        "the command runs on: {:?}",
        members(pgid)
    );
    assert!(
        poll(WITHIN, || state(rlock.id()) == Some('T')),
        "rlock runs on"
    );
    // Stopped, rlock renews nothing: the lease runs out on the server.
    assert!(poll(WITHIN, || server.info("job").is_none()), "still held");
    assert!(
        all_stopped(pgid, 3),
        "the command ran on: {:?}",
        members(pgid)
    );
    send("-CONT", rlock.id());
    let out = end(rlock);
    assert_eq!(out.status.code(), Some(76), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("stopped until the lock's lease"),
        "{stderr}"
    );
    assert!(group(pgid).is_empty(), "survivors: {:?}", members(pgid));
}

#[test]
fn a_short_ctrl_z_continues_the_command() {
    let server = Server::start();
    // (The test read the first line and closed its end of the pipe: nothing more is said.)
    let (rlock, pgid) = start(&server, &[], "echo $$; sleep 1; exit 4");
    let _reap = Reap(pgid);
    assert!(poll(WITHIN, || group(pgid).len() == 2));
    send("-TSTP", rlock.id());
    assert!(
        poll(WITHIN, || all_stopped(pgid, 2)),
        "the command runs on: {:?}",
        members(pgid)
    );
    assert!(
        poll(WITHIN, || state(rlock.id()) == Some('T')),
        "rlock runs on"
    );
    send("-CONT", rlock.id());
    assert!(poll(WITHIN, || !all_stopped(pgid, 1)), "never continued");
    let out = end(rlock);
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    assert_eq!(server.info("job"), None, "released");
}

#[test]
fn what_the_command_leaves_running_keeps_the_lock_until_it_ends() {
    let server = Server::start();
    let started = Instant::now();
    // The background job leaves the pipes alone: they do not tell when it ends.
    let script = "echo $$; sleep 1 >/dev/null 2>&1 & exit 0";
    let (mut rlock, pgid) = start(&server, &[], script);
    let _reap = Reap(pgid);
    assert!(server.info("job").is_some(), "not held");
    let ended = poll(WITHIN, || matches!(rlock.try_wait(), Ok(Some(_))));
    let left = group(pgid);
    let out = end(rlock);
    assert!(ended && out.status.success(), "{out:?}");
    assert!(left.is_empty(), "released while {left:?} ran");
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert_eq!(server.info("job"), None, "released");
}

#[test]
fn kill_leftovers_stops_what_the_command_leaves_running() {
    let server = Server::start();
    let options = ["--kill-leftovers"];
    let (rlock, pgid) = start(&server, &options, "echo $$; sleep 100 & exit 3");
    let _reap = Reap(pgid);
    let out = end(rlock);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    assert!(group(pgid).is_empty(), "survivors: {:?}", group(pgid));
    assert_eq!(server.info("job"), None, "released");
}
