//! `rlock run --shared`: a read hold of a read-write lock, shared between runs, excluded by
//! a write hold.

// The client crate's test support: a redis-server of its own per test.
#[path = "../../client/tests/support/mod.rs"]
mod support;
mod tool;

use std::time::Duration;

use redis::Value;
use support::{poll, Server};
use tool::{finish, info_field, rlock, text};

/// How long `rlock` may take to take or show a lock.
const WITHIN: Duration = Duration::from_secs(10);

fn holders(server: &Server, key: &str) -> usize {
    info_field(server, "RWLOCK.INFO", key, "holders").map_or(0, |v| {
        redis::from_redis_value::<Vec<Value>>(v).unwrap().len()
    })
}

fn waiters(server: &Server, key: &str) -> i64 {
    info_field(server, "RWLOCK.INFO", key, "waiters")
        .map_or(0, |v| redis::from_redis_value(v).unwrap())
}

#[test]
fn two_shared_runs_hold_the_lock_at_once() {
    let server = Server::start();
    let name = format!("rlock-shared-{}-{}", std::process::id(), server.port());
    let dir = std::env::temp_dir().join(name);
    std::fs::create_dir_all(&dir).unwrap();
    // Each command marks its start, then waits (10 s at most) for the other's mark: they
    // succeed only if they ran at the same time. Then they stay 1 s more, for the server
    // to be seen with both holders.
    let script = "touch \"$0/$1\"; for _ in $(seq 100); do \
                  [ -e \"$0/a\" ] && [ -e \"$0/b\" ] && sleep 1 && exit 0; sleep 0.1; done; \
                  exit 9";
    let dir_arg = dir.to_string_lossy().into_owned();
    let spawn = |name: &str| {
        let args = [
            "run", "--shared", "job", "--", "sh", "-c", script, &dir_arg, name,
        ];
        rlock(&server, &args).spawn().expect("spawn rlock")
    };
    let (a, b) = (spawn("a"), spawn("b"));
    assert!(
        poll(WITHIN, || holders(&server, "job") == 2),
        "never held by both"
    );
    let (a, b) = (finish(a), finish(b));
    assert!(a.status.success(), "{a:?}");
    assert!(b.status.success(), "{b:?}");
    assert_eq!(
        info_field(&server, "RWLOCK.INFO", "job", "mode"),
        None,
        "released by both"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_held_write_makes_a_shared_run_wait_until_it_is_released() {
    let server = Server::start();
    let token: Option<u64> = server.cmd(&["RWLOCK.ACQUIRE", "job", "writer", "WRITE"]);
    assert!(token.is_some());
    let args = [
        "run", "--shared", "job", "--wait", "20s", "--", "echo", "ran",
    ];
    let child = rlock(&server, &args).spawn().expect("spawn rlock");
    assert!(
        poll(WITHIN, || waiters(&server, "job") == 1),
        "never queued"
    );
    let released: i64 = server.cmd(&["RWLOCK.RELEASE", "job", "writer", "WRITE"]);
    assert_eq!(released, 0);
    let out = finish(child);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(text(&out.stdout), "ran\n");
    let stderr = text(&out.stderr);
    assert!(stderr.contains("held for writing by writer"), "{stderr}");
    assert_eq!(
        info_field(&server, "RWLOCK.INFO", "job", "mode"),
        None,
        "released after the command"
    );
}

#[test]
fn a_shared_run_whose_wait_runs_out_exits_75_without_running() {
    let server = Server::start();
    let _: Option<u64> = server.cmd(&["RWLOCK.ACQUIRE", "job", "writer", "WRITE"]);
    let args = [
        "run", "--shared", "job", "--wait", "300ms", "--", "echo", "ran",
    ];
    let out = rlock(&server, &args).output().expect("run rlock");
    assert_eq!(out.status.code(), Some(75), "{out:?}");
    assert_eq!(text(&out.stdout), "", "the command must not run");
    assert_eq!(waiters(&server, "job"), 0, "its wait left the queue");
}

#[test]
fn a_shared_run_whose_hold_is_removed_is_stopped_with_76() {
    let server = Server::start();
    let args = [
        "run", "--shared", "job", "--check", "200ms", "--", "sleep", "20",
    ];
    let child = rlock(&server, &args).spawn().expect("spawn rlock");
    assert!(poll(WITHIN, || holders(&server, "job") == 1), "never held");
    let removed: i64 = server.cmd(&["RWLOCK.FORCERELEASE", "job"]);
    assert_eq!(removed, 1);
    let out = finish(child);
    assert_eq!(out.status.code(), Some(76), "{out:?}");
}

#[test]
fn shared_is_refused_over_several_servers() {
    let servers = [Server::start(), Server::start(), Server::start()];
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_rlock"));
    cmd.env_remove("RLOCK_URL");
    for server in &servers {
        cmd.arg("--url").arg(server.url());
    }
    let out = cmd
        .args(["run", "--shared", "job", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        text(&out.stderr).contains("--shared"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn info_and_release_speak_of_the_read_write_lock_with_shared() {
    let server = Server::start();
    let token: Option<u64> = server.cmd(&["RWLOCK.ACQUIRE", "job", "reader", "READ"]);
    let token = token.expect("granted");
    let out = rlock(&server, &["info", "--shared", "job"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = text(&out.stdout);
    assert!(stdout.contains("mode: read\n"), "{stdout}");
    let holder = "holder: reader (reads: 1, writes: 0, ttl: ";
    assert!(stdout.contains(holder), "{stdout}");
    assert!(stdout.contains(&format!("token: {token})\n")), "{stdout}");
    let out = rlock(&server, &["release", "--force", "--shared", "job"])
        .output()
        .unwrap();
    assert_eq!(text(&out.stdout), "job: released\n", "{out:?}");
    assert_eq!(info_field(&server, "RWLOCK.INFO", "job", "mode"), None);
    let out = rlock(&server, &["info", "--shared", "job"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "free: {out:?}");
    assert_eq!(text(&out.stdout), "job: free\n");
}
