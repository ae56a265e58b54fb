//! `rlock run` has the command's whole group dead before the lock's lease may end, so no
//! next holder's command ever runs beside it, even when the command traps `SIGTERM`.

// The client crate's test support: a redis-server of its own per test.
#[path = "../../client/tests/support/mod.rs"]
mod support;
mod tool;

use std::process::Child;
use std::time::Duration;

use support::{poll, Server};
use tool::{first_line, group, rlock, rlock_at, Reap, Scratch};

/// The nanosecond stamps a command wrote to `path`, one a line.
fn stamps(path: &str) -> Vec<u128> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines().filter_map(|l| l.trim().parse().ok()).collect()
}

/// Waits (bounded) for `child` to end; its output.
fn end(child: Child, within: Duration) -> std::process::Output {
    let mut child = child;
    let ended = poll(within, || matches!(child.try_wait(), Ok(Some(_))));
    if !ended {
        let _ = child.kill();
    }
    let out = child.wait_with_output().expect("wait for rlock");
    assert!(ended, "rlock did not end in {within:?}: {out:?}");
    out
}

#[test]
fn a_command_that_traps_sigterm_is_dead_before_the_next_holder_starts() {
    let server = Server::start();
    let scratch = Scratch::new("lease-end");
    let (first, second) = (scratch.path("first"), scratch.path("second"));
    // The first holder connects as a user whose renewals the test can forbid: its lease
    // then runs out on the server, which hands the lock to the queued second holder.
    let user = ["ACL", "SETUSER", "first", "on", ">pw", "~*", "&*", "+@all"];
    assert_eq!(server.cmd::<String>(&user), "OK");
    let url = format!("redis://first:pw@127.0.0.1:{}/", server.port());
    let stamping =
        format!("trap '' TERM; echo $$; while :; do date +%s%N >> {first}; sleep 0.01; done");
    // 300 ms of grace leave the renewals (every 333 ms) over 300 ms to be late before the
    // lease counts as ending.
    let options = ["--lease", "1s", "--renew", "--kill-grace", "300ms"];
    let mut args = vec!["run", "job"];
    args.extend_from_slice(&options);
    args.extend_from_slice(&["--", "sh", "-c", &stamping]);
    let mut holder = rlock_at(&url, &args).spawn().expect("spawn rlock");
    let pgid: i32 = first_line(&mut holder).parse().expect("the shell's pid");
    let _reap = Reap(pgid);
    assert!(poll(Duration::from_secs(10), || !stamps(&first).is_empty()));

    // The second command notes when it starts, and whether the first one's group lives.
    let starting = format!(
        "date +%s%N > {second}; if kill -0 -- -{pgid}; then echo alive; else echo dead; fi"
    );
    let args = ["run", "job", "--wait", "30s", "--", "sh", "-c", &starting];
    let next = rlock(&server, &args).spawn().expect("spawn rlock");
    let queued = || server.info("job").is_some_and(|info| info.waiters == 1);
    assert!(poll(Duration::from_secs(10), queued), "never queued");
    // Nor may it release: the second holder gets the lock when the lease ends on the server.
    let forbid = ["ACL", "SETUSER", "first", "-lock.renew", "-lock.release"];
    assert_eq!(server.cmd::<String>(&forbid), "OK");

    let out = end(holder, Duration::from_secs(10));
    assert_eq!(out.status.code(), Some(76), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("stopping sh"), "no SIGTERM first: {stderr}");
    assert!(group(pgid).is_empty(), "survivors: {:?}", group(pgid));
    let out = end(next, Duration::from_secs(10));
    assert!(out.status.success(), "{out:?}");
    let seen = String::from_utf8_lossy(&out.stdout);
    assert_eq!(seen, "dead\n", "the first command's group lived on");
    let last = *stamps(&first).last().expect("stamps of the first command");
    let started = stamps(&second)[0];
    assert!(
        started > last,
        "the second command started {} ms before the first one's last stamp",
        (last - started) / 1_000_000
    );
    eprintln!(
        "the first command's last stamp came {} ms before the second one started",
        (started - last) / 1_000_000
    );
}

#[test]
fn a_kill_grace_that_does_not_fit_in_the_lease_is_refused() {
    let server = Server::start();
    let refused: [&[&str]; 2] = [
        &["--lease", "1s", "--kill-grace", "2s"],
        &["--lease", "1s", "--renew", "--kill-grace", "700ms"],
    ];
    for options in refused {
        let mut args = vec!["run", "job"];
        args.extend_from_slice(options);
        args.extend_from_slice(&["--", "echo", "ran"]);
        let out = rlock(&server, &args).output().expect("run rlock");
        assert_eq!(out.status.code(), Some(2), "{options:?}: {out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("does not fit in the lease"), "{stderr}");
        assert!(out.stdout.is_empty(), "the command ran: {out:?}");
    }
    let args = [
        "run",
        "job",
        "--lease",
        "1s",
        "--renew",
        "--kill-grace",
        "300ms",
    ];
    let out = rlock(&server, &[&args[..], &["--", "echo", "ran"]].concat())
        .output()
        .expect("run rlock");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(server.info("job"), None);
}
