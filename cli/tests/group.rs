//! `rlock run` stops the command's whole process group when the lock is lost or when rlock
//! itself is killed, and never hangs on a server that stopped answering.

// The client crate's test support: a redis-server of its own per test.
#[path = "../../client/tests/support/mod.rs"]
mod support;
mod tool;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use support::{poll, Server};
use tool::{group, rlock, Reap};

/// A command whose shell leaves a background child: `sh` and two `sleep`s in one group.
const FAMILY: &str = "echo $$; sleep 100 & sleep 100";

/// Starts `rlock run job ... -- sh -c FAMILY`; returns rlock and the group's id (the
/// shell's pid, which it prints), once the whole family runs.
fn start_family(server: &Server, options: &[&str]) -> (Child, i32) {
    let mut args = vec!["run", "job"];
    args.extend_from_slice(options);
    args.extend_from_slice(&["--", "sh", "-c", FAMILY]);
    let mut child = rlock(server, &args).spawn().expect("spawn rlock");
    let mut line = String::new();
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    stdout.read_line(&mut line).expect("read the shell's pid");
    let pgid: i32 = line.trim().parse().expect("a pid");
    assert!(
        poll(Duration::from_secs(10), || group(pgid).len() == 3),
        "the family never ran: {:?}",
        group(pgid)
    );
    (child, pgid)
}

#[test]
fn a_force_release_stops_the_whole_group() {
    let server = Server::start();
    let options = ["--lease", "900ms", "--renew", "--kill-grace", "300ms"];
    let (rlock, pgid) = start_family(&server, &options);
    let _reap = Reap(pgid);
    assert_eq!(server.cmd::<i64>(&["LOCK.FORCERELEASE", "job"]), 1);
    let out = rlock.wait_with_output().expect("wait for rlock");
    assert_eq!(out.status.code(), Some(76), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("the lock was lost"), "{stderr}");
    assert!(
        poll(Duration::from_secs(10), || group(pgid).is_empty()),
        "survivors: {:?}",
        group(pgid)
    );
}

#[test]
fn killing_rlock_stops_the_whole_group() {
    let server = Server::start();
    let (mut rlock, pgid) = start_family(&server, &["--kill-grace", "1s"]);
    let _reap = Reap(pgid);
    rlock.kill().expect("kill -9 rlock");
    rlock.wait().expect("reap rlock");
    assert!(
        poll(Duration::from_secs(10), || group(pgid).is_empty()),
        "survivors: {:?}",
        group(pgid)
    );
}

#[test]
fn a_command_that_ignores_sigterm_is_killed_after_the_grace() {
    let server = Server::start();
    let script = "trap '' TERM; echo $$; sleep 100 & sleep 100";
    let args = [
        "run",
        "job",
        "--lease",
        "900ms",
        "--renew",
        "--kill-grace",
        "300ms",
        "--",
        "sh",
        "-c",
        script,
    ];
    let mut child = rlock(&server, &args).spawn().expect("spawn rlock");
    let mut line = String::new();
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    stdout.read_line(&mut line).expect("read the shell's pid");
    let pgid: i32 = line.trim().parse().expect("a pid");
    let _reap = Reap(pgid);
    assert!(poll(Duration::from_secs(10), || group(pgid).len() == 3));
    assert_eq!(server.cmd::<i64>(&["LOCK.FORCERELEASE", "job"]), 1);
    let status = child.wait().expect("wait for rlock");
    assert_eq!(status.code(), Some(76));
    assert!(
        poll(Duration::from_secs(10), || group(pgid).is_empty()),
        "survivors: {:?}",
        group(pgid)
    );
}

#[test]
fn run_against_a_stopped_server_fails_in_time() {
    let server = Server::start();
    server.stop();
    let started = Instant::now();
    let out = rlock(&server, &["--timeout", "0.3", "run", "job", "--", "true"])
        .output()
        .expect("run rlock");
    server.resume();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with("rlock: "), "{stderr}");
}

#[test]
fn a_waiting_run_fails_in_time_when_the_server_stops() {
    let server = Server::start();
    server.hold("job", "someone", &[]);
    let mut child = rlock(&server, &["--timeout", "0.3", "run", "job", "--", "true"])
        .spawn()
        .expect("spawn rlock");
    assert!(poll(Duration::from_secs(10), || server
        .info("job")
        .is_some_and(|info| info.waiters == 1)));
    server.stop();
    let started = Instant::now();
    let finished = poll(Duration::from_secs(10), || {
        matches!(child.try_wait(), Ok(Some(_)))
    });
    server.resume();
    if !finished {
        let _ = child.kill();
    }
    let out = child.wait_with_output().expect("wait for rlock");
    assert!(finished, "rlock hung: {out:?}");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("did not answer in time"), "{stderr}");
    eprintln!(
        "a waiting rlock run failed {:?} after the server stopped",
        started.elapsed()
    );
}

#[test]
fn info_exits_2_on_errors_and_durations_take_fractions() {
    let server = Server::start();
    server.stop();
    let out = rlock(&server, &["--timeout", "0.2", "info", "job"])
        .output()
        .expect("run rlock");
    server.resume();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    // A server stopped for over a second grants nothing for a while after it resumes (it
    // may have been failed over meanwhile): poll until it grants again.
    let take = || server.cmd::<Option<u64>>(&["LOCK.ACQUIRE", "job", "someone"]);
    assert!(poll(Duration::from_secs(10), || take().is_some()));
    let started = Instant::now();
    let out = rlock(&server, &["run", "job", "--wait", "0.3", "--", "true"])
        .output()
        .expect("run rlock");
    assert_eq!(out.status.code(), Some(75), "{out:?}");
    assert!(started.elapsed() >= Duration::from_millis(300));
}

#[test]
fn sigterm_to_rlock_reaches_the_whole_group() {
    let server = Server::start();
    let (rlock, pgid) = start_family(&server, &[]);
    let _reap = Reap(pgid);
    let pid = rlock.id().to_string();
    let sent = Command::new("kill").args(["-TERM", &pid]).status();
    assert!(sent.expect("run kill").success());
    let out = rlock.wait_with_output().expect("wait for rlock");
    assert_eq!(out.status.code(), Some(128 + 15), "{out:?}");
    assert!(
        poll(Duration::from_secs(10), || group(pgid).is_empty()),
        "survivors: {:?}",
        group(pgid)
    );
    assert_eq!(server.info("job"), None, "released after the command ended");
}
