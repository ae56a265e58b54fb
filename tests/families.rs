//! Every command of the semaphore and the countdown latch is known to Redis as the lock's
//! are: `COMMAND DOCS` (summary, arguments), its key at position 1 (`COMMAND GETKEYS`), its
//! flags, and ACL key patterns and command rules applied to it.

mod support;

use redis::Value;
use support::{error_text, int, raw, Server};

fn assert_known(con: &mut redis::Connection, call: &[&str]) {
    let name = call[0];
    let docs = format!("{:?}", raw(con, &["COMMAND", "DOCS", name]));
    let described = docs.contains("summary") && docs.contains("arguments");
    assert!(described, "{name}: {docs}");
    let mut getkeys = vec!["COMMAND", "GETKEYS"];
    getkeys.extend_from_slice(call);
    let key = Value::Array(vec![Value::BulkString(b"k".to_vec())]);
    assert_eq!(raw(con, &getkeys), key, "{name}");
}

#[test]
fn the_semaphores_and_the_latchs_commands_are_described_with_their_key() {
    let server = Server::start();
    let mut con = server.conn();
    let calls: [&[&str]; 13] = [
        &["sem.permits", "k", "3"],
        &["sem.acquire", "k", "o", "1"],
        &["sem.wait", "k", "o", "1"],
        &["sem.release", "k", "o"],
        &["sem.renew", "k", "o"],
        &["sem.info", "k"],
        &["sem.forcerelease", "k"],
        &["sem.apply", "k", "o", "1", "0", "0"],
        &["latch.set", "k", "2"],
        &["latch.countdown", "k"],
        &["latch.count", "k"],
        &["latch.await", "k"],
        &["latch.wait", "k"],
    ];
    for call in calls {
        assert_known(&mut con, call);
    }
    let info = format!("{:?}", raw(&mut con, &["COMMAND", "INFO", "sem.acquire"]));
    assert!(
        info.contains("blocking") && info.contains("begin_search"),
        "{info}"
    );
}

#[test]
fn acl_key_patterns_and_command_rules_apply_to_them() {
    let server = Server::start();
    let mut con = server.conn();
    let setuser = [
        "ACL",
        "SETUSER",
        "app",
        "on",
        ">pw",
        "~jobs:*",
        "+sem.permits",
        "+sem.acquire",
        "+latch.set",
    ];
    assert_eq!(raw(&mut con, &setuser), Value::Okay);
    let mut app = server.conn_as("app", "pw");
    assert_eq!(int(&mut app, &["SEM.PERMITS", "jobs:1", "2"]), 2);
    assert!(int(&mut app, &["SEM.ACQUIRE", "jobs:1", "me", "1"]) > 0);
    assert_eq!(int(&mut app, &["LATCH.SET", "jobs:2", "2"]), 1);
    for denied in [
        &["SEM.ACQUIRE", "other:1", "me", "1"][..],
        &["LATCH.SET", "other:2", "2"],
        &["SEM.FORCERELEASE", "jobs:1"],
        &["LATCH.COUNTDOWN", "jobs:2"],
    ] {
        let reply = raw(&mut app, denied);
        let text = error_text(&reply).unwrap_or_default();
        assert!(text.starts_with("NOPERM"), "{denied:?}: {reply:?}");
    }
}
