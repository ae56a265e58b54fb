//! `rlock run` asks the server who holds the lock every `--check` while the command runs,
//! and kills the command on the first answer that shows the lock taken from it, without
//! waiting for the next renewal (every third of the lease: 10 s by default). The checks
//! find what the server does not announce: here `rlock` signs in as a user that may not
//! listen for announcements (`LOCK.LISTEN`), so only the checks can tell (announced losses:
//! `announced.rs`).

// The client crate's test support: a redis-server of its own per test.
#[path = "../../client/tests/support/mod.rs"]
mod support;
mod tool;

use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use support::{poll, Server};
use tool::{first_line, group, rlock, rlock_at, Reap};

/// The default `--check`.
const CHECK: Duration = Duration::from_secs(1);
/// What the bound allows beyond the check interval (a reply, the kill, a loaded machine).
const MARGIN: Duration = Duration::from_secs(2);

/// Waits (bounded: past it, rlock hung) for `child` to end; its output.
fn end(mut child: Child) -> Output {
    let ended = poll(Duration::from_secs(30), || {
        matches!(child.try_wait(), Ok(Some(_)))
    });
    if !ended {
        let _ = child.kill();
    }
    let out = child.wait_with_output().expect("wait for rlock");
    assert!(ended, "rlock never ended: {out:?}");
    out
}

/// Runs a long sleep under `rlock run job` with `options`; rlock and the command's group.
fn sleeper(server: &Server, options: &[&str]) -> (Child, Reap) {
    let mut args = vec!["run", "job"];
    args.extend_from_slice(options);
    args.extend_from_slice(&["--", "sh", "-c", "echo $$; exec sleep 100"]);
    let mut child = rlock_at(&server.unlistened_url(), &args)
        .spawn()
        .expect("spawn rlock");
    let pgid: i32 = first_line(&mut child).parse().expect("the shell's pid");
    assert!(
        poll(Duration::from_secs(5), || server.info("job").is_some()),
        "never held"
    );
    (child, Reap(pgid))
}

#[test]
fn a_lock_taken_by_another_owner_stops_the_command_within_the_check_interval() {
    let server = Server::start();
    // The watchdog's default lease: its next renewal is 10 s away.
    let (child, reap) = sleeper(&server, &[]);
    let taken = Instant::now();
    take_over(&server);
    let out = end(child);
    let took = taken.elapsed();
    assert_eq!(out.status.code(), Some(76), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("the lock was lost") && stderr.contains("held by intruder"),
        "{stderr}"
    );
    assert!(group(reap.0).is_empty(), "the command's group lives on");
    assert!(
        took <= CHECK + MARGIN,
        "stopped {took:?} after the lock was taken"
    );
    eprintln!("stopped {} ms after the lock was taken", took.as_millis());
    assert_eq!(server.info("job").unwrap().owner, "intruder", "untouched");
}

#[test]
fn a_lock_found_free_stops_the_command_within_a_shorter_check_interval() {
    let server = Server::start();
    let check = Duration::from_millis(200);
    let (child, reap) = sleeper(&server, &["--check", "200ms"]);
    let released = Instant::now();
    server.cmd::<u64>(&["LOCK.FORCERELEASE", "job"]);
    let out = end(child);
    let took = released.elapsed();
    assert_eq!(out.status.code(), Some(76), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("the server shows it free"), "{stderr}");
    assert!(group(reap.0).is_empty(), "the command's group lives on");
    assert!(took <= check + MARGIN, "stopped {took:?} after the release");
    eprintln!("stopped {} ms after the release", took.as_millis());
}

#[test]
fn checks_that_find_the_lock_held_leave_the_command_alone() {
    let server = Server::start();
    // Checks far more often than renewals, over several renewals of a short lease.
    let args = [
        "run", "job", "--lease", "600ms", "--renew", "--check", "20ms", "--", "sleep", "1.5",
    ];
    let out = end(rlock(&server, &args).spawn().expect("spawn rlock"));
    assert!(out.status.success(), "{out:?}");
    assert_eq!(server.info("job"), None, "released");
}

/// Takes `job` on `server` from whoever holds it and gives it to `intruder`, in one step (no
/// check may see it free in between).
fn take_over(server: &Server) {
    let mut take = redis::pipe();
    take.atomic()
        .cmd("LOCK.FORCERELEASE")
        .arg("job")
        .cmd("LOCK.ACQUIRE")
        .arg("job")
        .arg("intruder");
    let _: (u64, u64) = take.query(&mut server.conn()).expect("take the lock over");
}

#[test]
fn a_redlock_is_stopped_once_a_majority_of_its_servers_show_it_taken() {
    let servers = [Server::start(), Server::start(), Server::start()];
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rlock"));
    cmd.env_remove("RLOCK_URL");
    for server in &servers {
        cmd.arg("--url").arg(server.unlistened_url());
    }
    let script = "echo $$; exec sleep 100";
    cmd.args(["run", "job", "--check", "100ms", "--", "sh", "-c", script])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn rlock");
    let pgid: i32 = first_line(&mut child).parse().expect("the shell's pid");
    let reap = Reap(pgid);
    let on_all = || servers.iter().all(|s| s.info("job").is_some());
    assert!(
        poll(Duration::from_secs(5), on_all),
        "not held on every server"
    );
    // One server of three taken: the majority still holds, the command runs on.
    take_over(&servers[0]);
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        matches!(child.try_wait(), Ok(None)),
        "stopped with a majority holding"
    );
    let taken = Instant::now();
    take_over(&servers[2]);
    let out = end(child);
    let took = taken.elapsed();
    assert_eq!(out.status.code(), Some(76), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("2 of 3 servers show it free or held by another"),
        "{stderr}"
    );
    assert!(group(reap.0).is_empty(), "the command's group lives on");
    let check = Duration::from_millis(100);
    assert!(
        took <= check + MARGIN,
        "stopped {took:?} after a majority was taken"
    );
    eprintln!("stopped {} ms after a majority was taken", took.as_millis());
}
