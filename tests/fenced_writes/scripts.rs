//! `LOCK.FENCED` called from scripts and functions, and fed random arguments: it refuses
//! what Redis cannot run, and never takes the server down.

use redis::Value;

use crate::fenced;
use crate::support::{error_text, int, raw, try_raw, Server};

#[test]
fn a_script_inside_a_script_is_refused_and_the_server_lives() {
    let server = Server::start();
    let mut con = server.conn();
    let t = int(&mut con, &["LOCK.ACQUIRE", "k", "a"]).to_string();
    let library = "#!lua name=lib\n\
        redis.register_function('f', function(keys, args) return redis.call('SET', keys[1], args[1]) end)\n\
        redis.register_function('g', function(keys, args) \
            return redis.call('LOCK.FENCED', keys[1], 'a', args[1], 'FCALL', 'f', '1', 'x', 'g') end)";
    assert!(matches!(
        raw(&mut con, &["FUNCTION", "LOAD", library]),
        Value::BulkString(_)
    ));
    let inner_eval =
        "return redis.call('LOCK.FENCED', KEYS[1], 'a', ARGV[1], 'EVAL', 'return 1', '1', 'x')";
    let inner_fcall =
        "return redis.call('LOCK.FENCED', KEYS[1], 'a', ARGV[1], 'FCALL', 'f', '1', 'x', 'e')";
    for reply in [
        raw(&mut con, &["EVAL", inner_eval, "1", "k", &t]),
        raw(&mut con, &["EVAL", inner_fcall, "1", "k", &t]),
        raw(&mut con, &["FCALL", "g", "1", "k", &t]),
    ] {
        let text = error_text(&reply).unwrap_or_default();
        assert!(text.contains("it cannot run inside a script"), "{reply:?}");
    }
    assert_eq!(int(&mut con, &["EXISTS", "x"]), 0);
    // A plain write from a script, and a function from the top level, run.
    let inner_set = "return redis.call('LOCK.FENCED', KEYS[1], 'a', ARGV[1], 'SET', 'x', 's')";
    assert_eq!(
        raw(&mut con, &["EVAL", inner_set, "1", "k", &t]),
        Value::Okay
    );
    let fcall = fenced("k", "a", &t, &["FCALL", "f", "1", "x", "top"]);
    assert_eq!(raw(&mut con, &fcall), Value::Okay);
    assert_eq!(raw(&mut con, &["PING"]), Value::SimpleString("PONG".into()));
}

#[test]
fn a_renamed_script_command_inside_a_script_is_refused_too() {
    let server = Server::start_with(&["--rename-command", "FCALL", "MYFCALL"]);
    let mut con = server.conn();
    let t = int(&mut con, &["LOCK.ACQUIRE", "k", "a"]).to_string();
    let library = "#!lua name=lib\n\
        redis.register_function('f', function(keys, args) return redis.call('SET', keys[1], args[1]) end)";
    assert!(matches!(
        raw(&mut con, &["FUNCTION", "LOAD", library]),
        Value::BulkString(_)
    ));
    let inner =
        "return redis.call('LOCK.FENCED', KEYS[1], 'a', ARGV[1], 'MYFCALL', 'f', '1', 'x', 'v')";
    let reply = raw(&mut con, &["EVAL", inner, "1", "k", &t]);
    let text = error_text(&reply).unwrap_or_default();
    assert!(
        text.contains("refuses 'MYFCALL': it cannot run inside a script"),
        "{reply:?}"
    );
    assert_eq!(int(&mut con, &["EXISTS", "x"]), 0);
    let top = fenced("k", "a", &t, &["MYFCALL", "f", "1", "x", "top"]);
    assert_eq!(raw(&mut con, &top), Value::Okay);
}

#[test]
fn a_lock_written_by_a_script_based_client_is_fenced_with_token_0() {
    let server = Server::start();
    let mut con = server.conn();
    // Redisson's layout: one owner field, no `@token`.
    int(&mut con, &["HSET", "k", "uuid:1", "1"]);
    int(&mut con, &["PEXPIRE", "k", "30000"]);
    assert_eq!(
        raw(&mut con, &fenced("k", "uuid:1", "0", &["SET", "d", "v"])),
        Value::Okay
    );
    let stale = raw(&mut con, &fenced("k", "uuid:1", "5", &["SET", "d", "w"]));
    let text = error_text(&stale).unwrap_or_default();
    assert_eq!(
        text,
        "FENCED lock 'k' is held by 'uuid:1' with another token (0), not 5"
    );
    assert_eq!(
        crate::text_of(&raw(&mut con, &["GET", "d"])).as_deref(),
        Some("v")
    );
}

#[test]
fn a_deeply_nested_lock_fenced_is_not_expanded_for_its_keys() {
    let server = Server::start();
    let mut con = server.conn();
    let mut nested = Vec::new();
    for _ in 0..100_000 {
        nested.extend(["LOCK.FENCED", "k", "o", "1"]);
    }
    nested.extend(["SET", "a", "b"]);
    let mut getkeys = vec!["COMMAND", "GETKEYS"];
    getkeys.extend(&nested);
    // `try_raw`: a failure should not print the 400,000 arguments.
    let keys = try_raw(&mut con, &getkeys).map_err(|e| e.to_string());
    assert!(
        matches!(keys, Ok(Value::Array(ref k)) if k.len() == 1),
        "{keys:?}"
    );
    // A user with key patterns makes Redis ask for the keys before the command runs.
    let acl = ["ACL", "SETUSER", "u", "on", ">pw", "+@all", "~k", "~a"];
    assert_eq!(raw(&mut con, &acl), Value::Okay);
    let reply = try_raw(&mut server.conn_as("u", "pw"), &nested).expect("the server lives");
    let text = error_text(&reply).unwrap_or_default();
    assert_eq!(
        text,
        "ERR LOCK.FENCED refuses 'LOCK.FENCED': lock commands cannot run inside it"
    );
    assert_eq!(raw(&mut con, &["PING"]), Value::SimpleString("PONG".into()));
}

#[test]
fn random_arguments_never_take_the_server_down() {
    let server = Server::start();
    let mut con = server.conn();
    let t = int(&mut con, &["LOCK.ACQUIRE", "k", "a"]).to_string();
    let words = [
        "",
        "k",
        "a",
        "0",
        "-1",
        &t,
        "SET",
        "EVAL",
        "LOCK.FENCED",
        "LOCK.INFO",
        "GET",
        "\u{0}x",
        "MULTI",
        "99999999999999999999",
        "CONFIG",
        "numkeys",
    ];
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    for _ in 0..3000 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let n = (seed % 9) as usize;
        let mut args = vec!["LOCK.FENCED"];
        args.extend((0..n).map(|i| words[((seed >> (4 * i + 8)) % 16) as usize]));
        let _ = raw(&mut con, &args);
    }
    let mut huge = fenced("k", "a", &t, &["MSET"]);
    let pairs: Vec<String> = (0..200_000).map(|i| format!("x{}", i / 2)).collect();
    huge.extend(pairs.iter().map(String::as_str));
    assert_eq!(raw(&mut con, &huge), Value::Okay);
    assert_eq!(raw(&mut con, &["PING"]), Value::SimpleString("PONG".into()));
    assert!(!server.log().contains("panic"), "{}", server.log());
}
