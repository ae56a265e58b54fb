//! The module never takes Redis down and leaves no trace it should not: crash reports
//! without the gauges, configs read without leaking, ACL read-only access to `LOCK.INFO`,
//! every server API checked at load, and RDB files that load without the module where the
//! server allows it.

mod support;

use std::fs;
use std::path::Path;

use redis::Value;
use support::{error_text, info_field, int, raw, wait_until, Server};

fn used_memory(con: &mut redis::Connection) -> i64 {
    info_field(con, "memory", "used_memory")
        .and_then(|v| v.parse().ok())
        .expect("INFO memory has used_memory")
}

#[test]
fn config_get_of_the_channel_prefix_does_not_leak() {
    let server = Server::start();
    let mut con = server.conn();
    let mut pipe = redis::pipe();
    for _ in 0..20_000 {
        pipe.cmd("CONFIG").arg("GET").arg("rlock.channel-prefix");
    }
    let _: Vec<Value> = pipe.query(&mut con).expect("warm-up pipeline");
    let before = used_memory(&mut con);
    let _: Vec<Value> = pipe.query(&mut con).expect("pipeline");
    let grown = used_memory(&mut con) - before;
    // A leaked string per call would be about 1 MB here.
    assert!(grown < 200_000, "used_memory grew by {grown} bytes");
    let ok = raw(&mut con, &["CONFIG", "SET", "rlock.channel-prefix", "p"]);
    assert_eq!(ok, Value::Okay);
    let got = raw(&mut con, &["CONFIG", "GET", "rlock.channel-prefix"]);
    assert_eq!(support::pairs(&got)[0].1, Value::BulkString(b"p".to_vec()));
}

#[test]
fn a_crash_report_lists_the_counters_but_not_the_gauges() {
    let server = Server::start_with(&["--enable-debug-command", "yes"]);
    let mut con = server.conn();
    int(&mut con, &["LOCK.ACQUIRE", "k", "a"]);
    let crashed = support::try_raw(&mut con, &["DEBUG", "SEGFAULT"]);
    assert!(crashed.is_err(), "DEBUG SEGFAULT answered {crashed:?}");
    let reported = wait_until(std::time::Duration::from_secs(10), || {
        server.log().contains("rlock_acquired:1")
    });
    let log = server.log();
    assert!(reported, "no rlock section in the crash report:\n{log}");
    assert!(
        !log.contains("rlock_waiters:"),
        "gauges in the crash report"
    );
}

#[test]
fn a_read_only_key_pattern_allows_lock_info() {
    let server = Server::start();
    let mut admin = server.conn();
    let user = [
        "ACL",
        "SETUSER",
        "reader",
        "on",
        ">pw",
        "%R~lock:*",
        "+lock.info",
    ];
    assert_eq!(raw(&mut admin, &user), Value::Okay);
    int(&mut admin, &["LOCK.ACQUIRE", "lock:1", "a"]);
    let mut reader = server.conn_as("reader", "pw");
    let info = raw(&mut reader, &["LOCK.INFO", "lock:1"]);
    assert!(matches!(info, Value::Array(_) | Value::Map(_)), "{info:?}");
    assert_eq!(raw(&mut reader, &["LOCK.INFO", "lock:2"]), Value::Nil);
    let denied = error_text(&raw(&mut reader, &["LOCK.INFO", "other:1"]));
    assert!(denied.is_some_and(|e| e.starts_with("NOPERM")));
}

#[test]
fn every_server_api_the_sources_call_is_checked_at_load() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let checked = fs::read_to_string(src.join("host/apis.rs")).expect("src/host/apis.rs");
    let mut unchecked = Vec::new();
    for path in sources(&src) {
        let text = fs::read_to_string(&path).expect("read a source");
        for name in api_names(&text) {
            if !checked.contains(&name) && !unchecked.contains(&name) {
                unchecked.push(name);
            }
        }
    }
    assert!(
        unchecked.is_empty(),
        "not in src/host/apis.rs: {unchecked:?}"
    );
    assert!(api_names(&checked).len() > 50, "the list looks truncated");
}

fn sources(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in fs::read_dir(dir).expect("read src").flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(sources(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
    found
}

/// Every `RedisModule_<Name>` in a text.
fn api_names(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    for (at, _) in text.match_indices("RedisModule_") {
        let rest = &text[at..];
        let end = rest
            .char_indices()
            .find(|(_, c)| !(c.is_ascii_alphanumeric() || *c == '_'))
            .map_or(rest.len(), |(i, _)| i);
        names.push(rest[..end].to_owned());
    }
    names
}

/// `redis_version` as (major, minor).
fn version(con: &mut redis::Connection) -> (u32, u32) {
    let text = info_field(con, "server", "redis_version").expect("redis_version");
    let mut parts = text.split('.').map(|p| p.parse().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

#[test]
fn an_rdb_saved_while_the_clock_covers_the_counter_loads_without_the_module_on_7_2() {
    let server = Server::start();
    let mut con = server.conn();
    int(
        &mut con,
        &["LOCK.ACQUIRE", "lock:held", "a", "LEASE", "600000"],
    );
    int(&mut con, &["LOCK.ACQUIRE", "lock:gone", "a"]);
    int(&mut con, &["LOCK.RELEASE", "lock:gone", "a"]);
    assert_eq!(raw(&mut con, &["SAVE"]), Value::Okay);
    let dir = server.dir().to_str().expect("utf-8 dir").to_owned();
    let plain = Server::builder().without_loadmodule().args([
        "--dir",
        dir.as_str(),
        "--dbfilename",
        "dump.rdb",
    ]);
    if version(&mut con) >= (7, 2) {
        let plain = plain.start();
        let mut other = plain.conn();
        assert_eq!(int(&mut other, &["HLEN", "lock:held"]), 2);
    } else {
        // Redis 7.0 has no aux_save2: the counter is in every RDB, which needs the module.
        let log = plain.start_expecting_failure();
        assert!(log.contains("rlock-tok"), "{log}");
    }
}

#[test]
fn lock_commands_are_in_acl_categories_where_the_server_allows_it() {
    let server = Server::start();
    let mut con = server.conn();
    let members = |con: &mut redis::Connection, category: &str| -> Vec<String> {
        match raw(con, &["ACL", "CAT", category]) {
            Value::Array(items) => items.iter().filter_map(support::text_of).collect(),
            other => panic!("ACL CAT {category}: {other:?}"),
        }
    };
    let hash = members(&mut con, "hash");
    let dangerous = members(&mut con, "dangerous");
    if version(&mut con) >= (7, 2) {
        for command in ["lock.acquire", "lock.release", "lock.renew", "lock.info"] {
            assert!(hash.iter().any(|c| c == command), "{command} not in @hash");
        }
        assert!(dangerous.iter().any(|c| c == "lock.forcerelease"));
        assert!(!dangerous.iter().any(|c| c == "lock.acquire"));
    } else {
        // Redis 7.0 has no way for a module to set categories.
        assert!(!hash.iter().any(|c| c.starts_with("lock.")), "{hash:?}");
    }
}

/// Every function of the module that Redis calls (`extern "C"`) runs its body in `guard`'s
/// `catch_unwind`, and no callback is left to `redis-module`'s generated ones (its config
/// registration helpers catch no panic).
#[test]
fn every_callback_redis_calls_is_contained() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut bare = Vec::new();
    for path in sources(&src) {
        let text = fs::read_to_string(&path).expect("read a source");
        for helper in ["register_i64_configuration", "register_enum_configuration"] {
            if text.contains(helper) {
                bare.push(format!("{}: {helper}", path.display()));
            }
        }
        let lines: Vec<&str> = text.lines().collect();
        for (at, line) in lines.iter().enumerate() {
            if !line.contains("extern \"C\" fn ") {
                continue;
            }
            // The body's first lines: past the signature, the first statement is the guard.
            let body = lines[at..lines.len().min(at + 12)].join("\n");
            if !body.contains("guard::") && !line.contains("RedisModule_OnLoad") {
                bare.push(format!("{}:{}: {}", path.display(), at + 1, line.trim()));
            }
        }
    }
    assert!(
        bare.is_empty(),
        "callbacks without containment:\n{}",
        bare.join("\n")
    );
}
