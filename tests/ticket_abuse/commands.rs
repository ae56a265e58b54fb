//! The ticket commands' flags and arguments: `LOCK.CANCEL` is no write, `LOCK.GRANTS` is no
//! command for scripts, and `LOCK.FENCED` tells a stream named `block` from the option.

use redis::Value;

use crate::support::{error_text, field, int, pairs, raw, text_of, Server};
use crate::{client_id, stat, wait};

/// The flags of `name` in `COMMAND INFO`.
fn flags(con: &mut redis::Connection, name: &str) -> Vec<String> {
    let reply = raw(con, &["COMMAND", "INFO", name]);
    let Value::Array(outer) = &reply else {
        panic!("COMMAND INFO {name}: {reply:?}");
    };
    match outer.first() {
        Some(Value::Array(info)) => match info.get(2) {
            Some(Value::Array(flags)) => flags.iter().filter_map(text_of).collect(),
            Some(Value::Set(flags)) => flags.iter().filter_map(text_of).collect(),
            other => panic!("COMMAND INFO {name} flags: {other:?}"),
        },
        other => panic!("COMMAND INFO {name}: {other:?}"),
    }
}

#[test]
fn cancel_runs_without_enough_replicas_to_write() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["LOCK.ACQUIRE", "L", "holder"]);
    let me = client_id(&mut con).to_string();
    let id = wait(&mut con, "L", "x", &["TO", &me]);
    raw(&mut con, &["CONFIG", "SET", "min-replicas-to-write", "1"]);
    let refused = raw(&mut con, &["LOCK.RELEASE", "L", "holder"]);
    assert!(error_text(&refused).is_some_and(|t| t.starts_with("NOREPLICAS")));
    assert_eq!(int(&mut con, &["LOCK.CANCEL", "L", &id.to_string()]), 0);
    assert_eq!(stat(&mut con, "rlock_waiters"), 0);
    assert!(!flags(&mut con, "lock.cancel").contains(&"write".to_owned()));
    assert!(flags(&mut con, "lock.cancel").contains(&"fast".to_owned()));
}

#[test]
fn grants_is_refused_inside_scripts_and_functions() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["LOCK.ACQUIRE", "L", "holder"]);
    let me = client_id(&mut con).to_string();
    wait(&mut con, "L", "x", &["WAIT", "1", "TO", &me]);
    let script = raw(&mut con, &["EVAL", "return redis.call('LOCK.GRANTS')", "0"]);
    let text = error_text(&script).unwrap_or_else(|| panic!("EVAL: {script:?}"));
    assert!(text.contains("not allowed from script"), "{text}");
    let library = "#!lua name=g\nredis.register_function('g', function() return redis.call('LOCK.GRANTS') end)";
    assert_eq!(
        raw(&mut con, &["FUNCTION", "LOAD", library]),
        Value::BulkString(b"g".to_vec())
    );
    let function = raw(&mut con, &["FCALL", "g", "0"]);
    let text = error_text(&function).unwrap_or_else(|| panic!("FCALL: {function:?}"));
    assert!(text.contains("not allowed from script"), "{text}");
    assert!(flags(&mut con, "lock.grants").contains(&"noscript".to_owned()));
    // The mailbox was not read by either.
    let read = raw(&mut con, &["LOCK.GRANTS", "BLOCK", "5000"]);
    assert!(
        matches!(&read, Value::Array(items) if items.len() == 2),
        "{read:?}"
    );
}

#[test]
fn fenced_xread_tells_a_stream_named_block_from_the_option() {
    let server = Server::start();
    let mut con = server.conn();
    let token = int(&mut con, &["LOCK.ACQUIRE", "L", "me"]).to_string();
    raw(&mut con, &["XADD", "block", "1-1", "f", "v"]);
    raw(&mut con, &["XGROUP", "CREATE", "block", "block", "0"]);
    let fenced = |args: &[&str]| {
        let mut command = vec!["LOCK.FENCED", "L", "me", token.as_str()];
        command.extend_from_slice(args);
        command.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    };
    let read = raw(
        &mut con,
        &fenced(&["XREAD", "COUNT", "1", "STREAMS", "block", "0"]),
    );
    assert!(matches!(&read, Value::Array(s) if s.len() == 1), "{read:?}");
    let group = fenced(&[
        "XREADGROUP",
        "GROUP",
        "block",
        "block",
        "STREAMS",
        "block",
        ">",
    ]);
    let read = raw(&mut con, &group);
    assert!(matches!(&read, Value::Array(s) if s.len() == 1), "{read:?}");
    for blocking in [
        fenced(&["XREAD", "BLOCK", "10", "STREAMS", "block", "0"]),
        fenced(&[
            "xreadgroup",
            "GROUP",
            "g",
            "c",
            "block",
            "10",
            "STREAMS",
            "s",
            ">",
        ]),
    ] {
        let text = error_text(&raw(&mut con, &blocking)).unwrap_or_default();
        assert!(text.ends_with("it may block"), "{blocking:?}: {text}");
    }
    let info = pairs(&raw(&mut con, &["XINFO", "STREAM", "block"]));
    assert!(field(&info, "length").is_some());
}
