//! What `rlock` says when it cannot use its server: the server's address and what happened.

// The client crate's test support: a redis-server of its own per test.
#[path = "../../client/tests/support/mod.rs"]
mod support;
mod tool;

use std::net::TcpListener;
use std::process::Output;
use std::time::Duration;

use support::{poll, Server};
use tool::{rlock, rlock_at};

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A loopback port where nothing listens.
fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    listener.local_addr().expect("its address").port()
}

#[test]
fn a_server_at_maxclients_is_named_with_its_reason() {
    let server = Server::start();
    // This connection is the only one: the server takes no other.
    let mut held = server.conn();
    let set: String = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxclients")
        .arg("1")
        .query(&mut held)
        .expect("set maxclients");
    assert_eq!(set, "OK");
    let expected = format!(
        "rlock: server 127.0.0.1:{} refused the connection: max number of clients reached",
        server.port()
    );
    for (args, code) in [
        (&["run", "job", "--", "echo", "ran"][..], 1),
        (&["info", "job"][..], 2),
        (&["release", "job", "--force"][..], 1),
    ] {
        let out = rlock(&server, args).output().expect("run rlock");
        fails_with(&out, args, code, &expected);
    }
    drop(held);
}

/// `out`, of `rlock args`, exited with `code`, printed nothing on stdout and `expected` on
/// stderr.
fn fails_with(out: &Output, args: &[&str], code: i32, expected: &str) {
    assert_eq!(out.status.code(), Some(code), "{args:?}: {out:?}");
    assert!(stderr(out).contains(expected), "{args:?}: {}", stderr(out));
    assert!(out.stdout.is_empty(), "{out:?}");
}

#[test]
fn a_port_without_a_server_is_named() {
    let port = closed_port();
    let url = format!("redis://127.0.0.1:{port}/");
    let expected = format!("rlock: cannot reach 127.0.0.1:{port}: connection refused");
    for (args, code) in [
        (&["run", "job", "--", "echo", "ran"][..], 1),
        (&["info", "job"][..], 2),
    ] {
        let out = rlock_at(&url, args).output().expect("run rlock");
        fails_with(&out, args, code, &expected);
    }
}

#[test]
fn a_server_that_goes_down_during_a_wait_is_named() {
    let mut server = Server::start();
    server.hold("job", "someone", &[]);
    let args = ["run", "job", "--wait", "30s", "--", "echo", "ran"];
    let mut child = rlock(&server, &args).spawn().expect("spawn rlock");
    let queued = || server.info("job").is_some_and(|info| info.waiters == 1);
    assert!(poll(Duration::from_secs(5), queued), "never queued");
    let port = server.port();
    server.kill();
    let ended = poll(Duration::from_secs(20), || {
        matches!(child.try_wait(), Ok(Some(_)))
    });
    if !ended {
        let _ = child.kill();
    }
    let out = child.wait_with_output().expect("wait for rlock");
    assert!(ended, "rlock waited on: {out:?}");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let expected = format!("rlock: lost the connection to server 127.0.0.1:{port}");
    assert!(stderr(&out).contains(&expected), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("connection refused"),
        "{}",
        stderr(&out)
    );
    assert!(out.stdout.is_empty(), "{out:?}");
}

#[test]
fn a_wait_held_back_by_the_server_says_why() {
    let server = Server::start_with(&["--enable-debug-command", "yes"]);
    let mut admin = server.conn();
    // The server stands still for 1.2 s: a stall, after which it holds grants back for 2 s.
    let slept: String = redis::cmd("DEBUG")
        .arg(&["SLEEP", "1.2"])
        .query(&mut admin)
        .expect("debug sleep");
    assert_eq!(slept, "OK");
    let out = rlock(&server, &["run", "never-used", "--", "true"])
        .output()
        .expect("run rlock");
    assert!(out.status.success(), "{}", stderr(&out));
    let said = stderr(&out);
    assert!(
        said.contains("it is free, but the server holds grants back"),
        "{said}"
    );
}
