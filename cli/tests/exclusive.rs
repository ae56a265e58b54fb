//! `rlock run -x`: the writer side of `--shared`, a write hold of the same read-write lock;
//! and what `run`, `info` and `release` say of a key that is another kind of object.

// The client crate's test support: a redis-server of its own per test.
#[path = "../../client/tests/support/mod.rs"]
mod support;
mod tool;

use std::path::Path;
use std::process::Child;
use std::time::Duration;

use support::{poll, Server};
use tool::{finish, info_field, rlock, text};

/// How long `rlock` may take to take or show a lock.
const WITHIN: Duration = Duration::from_secs(10);

fn waiters(server: &Server, key: &str) -> i64 {
    info_field(server, "RWLOCK.INFO", key, "waiters")
        .map_or(0, |v| redis::from_redis_value(v).unwrap())
}

fn mode(server: &Server, key: &str) -> Option<String> {
    info_field(server, "RWLOCK.INFO", key, "mode").map(|v| redis::from_redis_value(v).unwrap())
}

/// A run of `flags` on `job` whose command marks `<name>-ran` in `dir`, then waits for
/// `go-<name>` there.
fn spawn(server: &Server, dir: &Path, flags: &[&str], name: &str) -> Child {
    let script = "touch \"$0/$1-ran\"; while [ ! -e \"$0/go-$1\" ]; do sleep 0.05; done";
    let dir = dir.to_string_lossy();
    let mut args = vec!["run"];
    args.extend_from_slice(flags);
    args.extend(["job", "--wait", "30s", "--", "sh", "-c", script, &dir, name]);
    rlock(server, &args).spawn().expect("spawn rlock")
}

#[test]
fn an_exclusive_run_waits_for_shared_runs_and_they_for_it() {
    let server = Server::start();
    let dir =
        std::env::temp_dir().join(format!("rlock-x-{}-{}", std::process::id(), server.port()));
    std::fs::create_dir_all(&dir).unwrap();
    let ran = |name: &str| dir.join(format!("{name}-ran")).exists();
    let go = |name: &str| std::fs::write(dir.join(format!("go-{name}")), "").unwrap();
    let reader = spawn(&server, &dir, &["--shared"], "a");
    assert!(poll(WITHIN, || ran("a")), "the shared run never ran");
    let writer = spawn(&server, &dir, &["-x"], "b");
    assert!(
        poll(WITHIN, || waiters(&server, "job") == 1),
        "-x never queued"
    );
    let late = spawn(&server, &dir, &["-s"], "c");
    assert!(
        poll(WITHIN, || waiters(&server, "job") == 2),
        "-s never queued"
    );
    assert!(!ran("b"), "the exclusive run ran beside a shared one");
    go("a");
    assert!(poll(WITHIN, || ran("b")), "the exclusive run never ran");
    assert_eq!(mode(&server, "job").as_deref(), Some("write"));
    std::thread::sleep(Duration::from_millis(300));
    assert!(!ran("c"), "a shared run ran beside the exclusive one");
    go("b");
    assert!(poll(WITHIN, || ran("c")), "the last shared run never ran");
    go("c");
    for child in [reader, writer, late] {
        let out = finish(child);
        assert!(out.status.success(), "{out:?}");
    }
    assert_eq!(mode(&server, "job"), None, "released by all");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn exclusive_does_not_go_with_shared_or_permits() {
    let server = Server::start();
    for flags in [["-x", "--shared"], ["-x", "--permits=2"]] {
        let mut args = vec!["run"];
        args.extend(flags);
        args.extend(["job", "--", "true"]);
        let out = rlock(&server, &args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{out:?}");
    }
}

/// `rlock` with `args` exits 1 and says `wanted` on stderr.
fn refused(server: &Server, args: &[&str], wanted: &[&str]) {
    let out = rlock(server, args).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = text(&out.stderr);
    for part in wanted {
        assert!(stderr.contains(part), "no {part:?} in {stderr}");
    }
}

#[test]
fn a_run_of_the_wrong_kind_says_what_the_key_is_and_which_flag_fits() {
    let server = Server::start();
    let _: Option<u64> = server.cmd(&["RWLOCK.ACQUIRE", "rw", "reader", "READ"]);
    let _: u64 = server.cmd(&["SEM.PERMITS", "sem", "2"]);
    let _: u64 = server.cmd(&["LOCK.ACQUIRE", "plain", "holder"]);
    let read_write = "'rw' is a read-write lock, not a plain lock";
    refused(
        &server,
        &["run", "rw", "--", "true"],
        &[read_write, "--shared", "--exclusive"],
    );
    let semaphore = "'sem' is a semaphore, not a plain lock";
    refused(
        &server,
        &["run", "sem", "--", "true"],
        &[semaphore, "--permits"],
    );
    let plain = "'plain' is a plain lock, not a read-write lock";
    refused(
        &server,
        &["run", "-x", "plain", "--", "true"],
        &[plain, "without --exclusive"],
    );
    refused(
        &server,
        &["release", "--force", "rw"],
        &[read_write, "--shared"],
    );
}

#[test]
fn info_shows_a_read_write_lock_or_a_semaphore_without_a_flag() {
    let server = Server::start();
    let token: Option<u64> = server.cmd(&["RWLOCK.ACQUIRE", "rw", "reader", "READ"]);
    let token = token.expect("granted");
    let out = rlock(&server, &["info", "rw"]).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = text(&out.stdout);
    assert!(stdout.contains("mode: read\n"), "{stdout}");
    let holder = "holder: reader (reads: 1, writes: 0, ttl: ";
    assert!(stdout.contains(holder), "{stdout}");
    assert!(stdout.contains(&format!("token: {token})\n")), "{stdout}");
    let _: u64 = server.cmd(&["SEM.PERMITS", "sem", "2"]);
    let _: Option<u64> = server.cmd(&["SEM.ACQUIRE", "sem", "runner", "1"]);
    let out = rlock(&server, &["info", "sem"]).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = text(&out.stdout);
    assert!(stdout.contains("permits: 2\navailable: 1\n"), "{stdout}");
    assert!(stdout.contains("holder: runner (permits: 1"), "{stdout}");
}
