//! An option given without its value, or one the command does not take, is named in the
//! error as the command knows it, whatever the command's family, and changes nothing.

mod support;

use support::{expect_error, int, keyspace, Server};

const TOKEN: &str = "ERR TOKEN needs a value";

#[test]
fn an_option_without_its_value_says_so() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["LOCK.ACQUIRE", "lk", "a", "LEASE", "60000"]);
    int(
        &mut con,
        &["RWLOCK.ACQUIRE", "rw", "a", "READ", "LEASE", "60000"],
    );
    int(&mut con, &["SEM.PERMITS", "s", "2"]);
    int(&mut con, &["SEM.ACQUIRE", "s", "a", "1", "LEASE", "60000"]);
    int(&mut con, &["LATCH.SET", "l", "2"]);
    let before = keyspace(&mut con);
    let lease = "ERR LEASE needs a value in milliseconds";
    let wait = "ERR WAIT needs a value in milliseconds";
    let cases: [(&[&str], &str); 14] = [
        (&["SEM.RELEASE", "s", "a", "1", "TOKEN"], TOKEN),
        (&["SEM.RELEASE", "s", "a", "TOKEN"], TOKEN),
        (&["SEM.ACQUIRE", "s", "a", "1", "LEASE"], lease),
        (&["SEM.ACQUIRE", "s", "b", "1", "WAIT", "5", "WAIT"], wait),
        (&["SEM.RENEW", "s", "a", "TOKEN"], TOKEN),
        (&["SEM.WAIT", "s", "a", "1", "LEASE"], lease),
        (&["RWLOCK.RELEASE", "rw", "a", "READ", "TOKEN"], TOKEN),
        (&["RWLOCK.ACQUIRE", "rw", "a", "READ", "WAIT"], wait),
        (&["RWLOCK.RENEW", "rw", "a", "LEASE"], lease),
        (&["LOCK.RELEASE", "lk", "a", "TOKEN"], TOKEN),
        (&["LOCK.RENEW", "lk", "a", "TOKEN"], TOKEN),
        (&["LOCK.ACQUIRE", "lk", "a", "WAIT"], wait),
        (&["LATCH.AWAIT", "l", "WAIT"], wait),
        (&["LATCH.WAIT", "l", "WAIT"], wait),
    ];
    for (args, text) in cases {
        expect_error(&mut con, args, text);
    }
    assert_eq!(keyspace(&mut con), before, "an error changed the keyspace");
}

#[test]
fn an_unknown_option_names_the_options_the_command_takes() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["LATCH.SET", "l", "2"]);
    let before = keyspace(&mut con);
    let cases: [(&[&str], &str); 5] = [
        (
            &["LATCH.AWAIT", "l", "LEASE", "5"],
            "ERR unknown option 'LEASE', expected WAIT",
        ),
        (
            &["LATCH.WAIT", "l", "LEASE", "5", "TO", "1"],
            "ERR unknown option 'LEASE', expected WAIT",
        ),
        (
            &["LOCK.RELEASE", "lk", "a", "LEASE", "5"],
            "ERR unknown option 'LEASE', expected TOKEN",
        ),
        (
            &["SEM.RELEASE", "s", "a", "1", "WAIT", "5"],
            "ERR unknown option 'WAIT', expected TOKEN",
        ),
        (
            &["RWLOCK.RENEW", "rw", "a", "WAIT", "5"],
            "ERR unknown option 'WAIT', expected LEASE or TOKEN",
        ),
    ];
    for (args, text) in cases {
        expect_error(&mut con, args, text);
    }
    assert_eq!(keyspace(&mut con), before, "an error changed the keyspace");
}
