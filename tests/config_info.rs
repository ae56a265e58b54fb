//! SPEC.md §2 and §7: module configs, `INFO rlock`, `COMMAND DOCS`/`COMMAND INFO`, ACL key
//! patterns and read-only replicas.

mod support;

use std::collections::BTreeMap;

use redis::Value;
use support::{
    error_text, expect_error, field, info, int, module_path, pairs, pttl, raw, text_of, Server,
};

const CONFIGS: [(&str, &str); 8] = [
    ("rlock.default-lease", "30000"),
    ("rlock.channel-prefix", "redisson_lock__channel"),
    ("rlock.publish", "publish"),
    ("rlock.token-gap", "1048576"),
    ("rlock.failover-delay", "30000"),
    ("rlock.max-waiters", "0"),
    ("rlock.max-waiters-per-key", "0"),
    ("rlock.script-turn", "0"),
];

const COMMANDS: [&str; 5] = [
    "lock.acquire",
    "lock.release",
    "lock.renew",
    "lock.info",
    "lock.forcerelease",
];

fn config_get(con: &mut redis::Connection, name: &str) -> String {
    let reply = raw(con, &["CONFIG", "GET", name]);
    let pairs = pairs(&reply);
    assert_eq!(pairs.len(), 1, "CONFIG GET {name} replied {reply:?}");
    assert_eq!(text_of(&pairs[0].0).as_deref(), Some(name));
    text_of(&pairs[0].1).expect("config value")
}

fn config_set(con: &mut redis::Connection, name: &str, value: &str) -> Value {
    raw(con, &["CONFIG", "SET", name, value])
}

// ---------------------------------------------------------------- configs

#[test]
fn configs_have_their_defaults() {
    let server = Server::start();
    let mut con = server.conn();
    for (name, default) in CONFIGS {
        assert_eq!(config_get(&mut con, name), default, "{name}");
    }
    let all = pairs(&raw(&mut con, &["CONFIG", "GET", "rlock.*"]));
    let mut names: Vec<String> = all.iter().filter_map(|(k, _)| text_of(k)).collect();
    names.sort();
    let mut expected: Vec<&str> = CONFIGS.iter().map(|(n, _)| *n).collect();
    expected.sort();
    assert_eq!(names, expected);
}

#[test]
fn configs_can_be_set_at_runtime() {
    let server = Server::start();
    let mut con = server.conn();
    let values = [
        ("rlock.default-lease", "1234"),
        ("rlock.channel-prefix", "other_prefix"),
        ("rlock.publish", "spublish"),
        ("rlock.publish", "none"),
        ("rlock.publish", "publish"),
        ("rlock.token-gap", "4096"),
        ("rlock.failover-delay", "0"),
        ("rlock.script-turn", "250"),
        ("rlock.script-turn", "0"),
    ];
    for (name, value) in values {
        assert_eq!(
            config_set(&mut con, name, value),
            Value::Okay,
            "{name} {value}"
        );
        assert_eq!(config_get(&mut con, name), value);
    }
    int(&mut con, &["LOCK.ACQUIRE", "k", "a"]);
    let ttl = pttl(&mut con, b"k");
    assert!((1000..=1234).contains(&ttl), "{ttl}");
}

#[test]
fn bad_config_values_are_refused_and_the_old_value_kept() {
    let server = Server::start();
    let mut con = server.conn();
    let bad = [
        ("rlock.default-lease", "0"),
        ("rlock.default-lease", "-1"),
        ("rlock.default-lease", "abc"),
        ("rlock.default-lease", ""),
        ("rlock.channel-prefix", ""),
        ("rlock.publish", "bogus"),
        ("rlock.publish", ""),
        ("rlock.token-gap", "abc"),
        ("rlock.token-gap", "-1"),
        ("rlock.max-waiters", "-1"),
        ("rlock.max-waiters-per-key", "abc"),
        ("rlock.script-turn", "-1"),
        ("rlock.script-turn", "60001"),
    ];
    for (name, value) in bad {
        let reply = config_set(&mut con, name, value);
        let text = error_text(&reply)
            .unwrap_or_else(|| panic!("CONFIG SET {name} {value:?} accepted: {reply:?}"));
        assert!(
            text.starts_with("ERR ") && text.contains(name),
            "CONFIG SET {name} {value:?} error does not name the config: {text}"
        );
        let default = CONFIGS.iter().find(|(n, _)| *n == name).map(|(_, d)| *d);
        assert_eq!(Some(config_get(&mut con, name).as_str()), default);
    }
}

#[test]
fn configs_on_the_command_line_after_loadmodule() {
    let server = Server::start_with(&[
        "--rlock.default-lease",
        "5000",
        "--rlock.channel-prefix",
        "cli_prefix",
        "--rlock.publish",
        "none",
        "--rlock.token-gap",
        "77",
    ]);
    let mut con = server.conn();
    assert_eq!(config_get(&mut con, "rlock.default-lease"), "5000");
    assert_eq!(config_get(&mut con, "rlock.channel-prefix"), "cli_prefix");
    assert_eq!(config_get(&mut con, "rlock.publish"), "none");
    assert_eq!(config_get(&mut con, "rlock.token-gap"), "77");
    int(&mut con, &["LOCK.ACQUIRE", "k", "a"]);
    let ttl = pttl(&mut con, b"k");
    assert!((4000..=5000).contains(&ttl), "{ttl}");
}

#[test]
fn configs_in_a_conf_file_after_its_loadmodule_line() {
    let conf = format!(
        "loadmodule {}\nrlock.default-lease 6000\nrlock.channel-prefix conf_prefix\n\
         rlock.publish spublish\nrlock.token-gap 2048\n",
        module_path().display()
    );
    let server = Server::builder().conf(&conf).without_loadmodule().start();
    let mut con = server.conn();
    assert_eq!(config_get(&mut con, "rlock.default-lease"), "6000");
    assert_eq!(config_get(&mut con, "rlock.channel-prefix"), "conf_prefix");
    assert_eq!(config_get(&mut con, "rlock.publish"), "spublish");
    assert_eq!(config_get(&mut con, "rlock.token-gap"), "2048");
}

#[test]
fn configs_in_a_conf_file_with_the_module_loaded_on_the_command_line() {
    let conf = "rlock.default-lease 7000\nrlock.channel-prefix conf_prefix\n";
    let server = Server::builder().conf(conf).start();
    let mut con = server.conn();
    assert_eq!(config_get(&mut con, "rlock.default-lease"), "7000");
    assert_eq!(config_get(&mut con, "rlock.channel-prefix"), "conf_prefix");
    int(&mut con, &["LOCK.ACQUIRE", "k", "a"]);
    let ttl = pttl(&mut con, b"k");
    assert!((6000..=7000).contains(&ttl), "{ttl}");
}

#[test]
fn bad_config_at_startup_stops_the_server() {
    for (name, value) in [("--rlock.default-lease", "0"), ("--rlock.publish", "bogus")] {
        let log = Server::builder()
            .args([name, value])
            .start_expecting_failure();
        let config = name.trim_start_matches('-');
        assert!(
            log.contains(config),
            "the log does not say which config is bad ({config} {value}):\n{log}"
        );
    }
}

#[test]
fn bad_config_in_a_conf_file_stops_the_server() {
    for (name, value) in [
        ("rlock.default-lease", "0"),
        ("rlock.default-lease", "-5"),
        ("rlock.publish", "bogus"),
    ] {
        let conf = format!("loadmodule {}\n{name} {value}\n", module_path().display());
        let log = Server::builder()
            .conf(&conf)
            .without_loadmodule()
            .start_expecting_failure();
        assert!(
            log.contains(name),
            "the log does not say which config is bad ({name} {value}):\n{log}"
        );
    }
}

#[test]
fn module_arguments_are_refused_rather_than_applied_unchecked() {
    let conf = format!("loadmodule {} default-lease -5\n", module_path().display());
    let log = Server::builder()
        .conf(&conf)
        .without_loadmodule()
        .start_expecting_failure();
    assert!(
        log.contains("rlock: the module takes no arguments"),
        "the log does not say why the module refused to load:\n{log}"
    );
}

// ---------------------------------------------------------------- INFO rlock

const COUNTERS: [&str; 12] = [
    "rlock_acquired",
    "rlock_reentered",
    "rlock_released",
    "rlock_renewed",
    "rlock_handoffs",
    "rlock_expiry_handoffs",
    "rlock_wait_timeouts",
    "rlock_not_held_errors",
    "rlock_renewals_lost",
    "rlock_contended",
    "rlock_force_releases",
    "rlock_revoked_grants",
];

const GAUGES: [&str; 5] = [
    "rlock_waiters",
    "rlock_locks_with_waiters",
    "rlock_waiters_memory",
    "rlock_next_token",
    "rlock_failover_delay_remaining",
];

fn rlock_info(con: &mut redis::Connection) -> BTreeMap<String, i64> {
    let fields = info(con, "rlock");
    COUNTERS
        .iter()
        .chain(GAUGES.iter())
        .map(|name| {
            let value = fields
                .get(*name)
                .unwrap_or_else(|| panic!("INFO rlock has no {name}: {fields:?}"));
            let value = value
                .parse()
                .unwrap_or_else(|_| panic!("{name} is not an integer: {value}"));
            (name.to_string(), value)
        })
        .collect()
}

#[test]
fn info_rlock_has_every_field_starting_at_zero() {
    let server = Server::start();
    let mut con = server.conn();
    let fields = rlock_info(&mut con);
    for name in COUNTERS.iter().chain(&GAUGES[..3]) {
        assert_eq!(fields[*name], 0, "{name}");
    }
    assert!(fields["rlock_next_token"] > 0);
    let everything = info(&mut con, "everything");
    assert!(everything.contains_key("rlock_acquired"));
}

#[test]
fn info_counters_move_with_the_commands() {
    let server = Server::start();
    let mut con = server.conn();
    let before = rlock_info(&mut con);
    let token = int(&mut con, &["LOCK.ACQUIRE", "k", "a"]);
    int(&mut con, &["LOCK.ACQUIRE", "k", "a"]);
    int(&mut con, &["LOCK.ACQUIRE", "k", "a"]);
    assert_eq!(raw(&mut con, &["LOCK.ACQUIRE", "k", "b"]), Value::Nil);
    int(&mut con, &["LOCK.ACQUIRE", "k2", "b"]);
    assert_eq!(int(&mut con, &["LOCK.RENEW", "k", "a"]), 1);
    assert_eq!(int(&mut con, &["LOCK.RENEW", "k", "b"]), 0);
    assert_eq!(int(&mut con, &["LOCK.RENEW", "absent", "b"]), 0);
    assert_eq!(int(&mut con, &["LOCK.RELEASE", "k", "a"]), 2);
    let not_held = raw(&mut con, &["LOCK.RELEASE", "k", "b"]);
    assert_eq!(
        error_text(&not_held).as_deref(),
        Some("NOTHELD lock 'k' is not held by 'b'")
    );
    assert_eq!(int(&mut con, &["LOCK.RELEASE", "k", "a"]), 1);
    assert_eq!(int(&mut con, &["LOCK.RELEASE", "k", "a"]), 0);
    raw(&mut con, &["LOCK.RELEASE", "k", "a"]);
    raw(&mut con, &["LOCK.INFO", "k2"]);
    let after = rlock_info(&mut con);
    let delta = |name: &str| after[name] - before[name];
    assert_eq!(delta("rlock_acquired"), 2);
    assert_eq!(delta("rlock_reentered"), 2);
    assert_eq!(delta("rlock_renewed"), 1);
    assert_eq!(delta("rlock_released"), 3);
    assert_eq!(delta("rlock_not_held_errors"), 2);
    for name in [
        "rlock_handoffs",
        "rlock_expiry_handoffs",
        "rlock_wait_timeouts",
        "rlock_waiters",
        "rlock_locks_with_waiters",
    ] {
        assert_eq!(after[name], 0, "{name}");
    }
    assert!(after["rlock_next_token"] > token);
}

// ---------------------------------------------------------------- COMMAND DOCS / INFO

#[test]
fn command_docs_have_summary_since_and_arguments() {
    let server = Server::start();
    let mut con = server.conn();
    for (name, min_args) in COMMANDS.iter().zip([3, 2, 3, 1, 1]) {
        let reply = raw(&mut con, &["COMMAND", "DOCS", name]);
        let outer = pairs(&reply);
        assert_eq!(outer.len(), 1, "COMMAND DOCS {name} replied {reply:?}");
        assert_eq!(text_of(&outer[0].0).as_deref(), Some(*name));
        let doc = pairs(&outer[0].1);
        let summary = field(&doc, "summary").and_then(text_of).unwrap_or_default();
        assert!(!summary.trim().is_empty(), "{name} has no summary");
        let since = field(&doc, "since").and_then(text_of).unwrap_or_default();
        assert!(!since.trim().is_empty(), "{name} has no since");
        let args = match field(&doc, "arguments") {
            Some(Value::Array(a)) => a.clone(),
            other => panic!("{name} has no arguments: {other:?}"),
        };
        assert!(
            args.len() >= min_args,
            "{name} documents {} arguments",
            args.len()
        );
        let first = pairs(&args[0]);
        assert_eq!(
            field(&first, "type").and_then(text_of).as_deref(),
            Some("key"),
            "{name}: first argument is not the key"
        );
    }
}

#[test]
fn command_info_has_key_positions_and_flags() {
    let server = Server::start();
    let mut con = server.conn();
    let flags: [&[&str]; 5] = [
        &["write", "denyoom"],
        &["write", "fast"],
        &["write", "fast"],
        &["readonly", "fast"],
        &["write", "fast"],
    ];
    for (name, want) in COMMANDS.iter().zip(flags) {
        let reply = raw(&mut con, &["COMMAND", "INFO", name]);
        let info = match &reply {
            Value::Array(outer) if outer.len() == 1 => match &outer[0] {
                Value::Array(info) => info.clone(),
                other => panic!("COMMAND INFO {name}: {other:?}"),
            },
            other => panic!("COMMAND INFO {name}: {other:?}"),
        };
        assert_eq!(text_of(&info[0]).as_deref(), Some(*name));
        assert_eq!(
            (&info[3], &info[4], &info[5]),
            (&Value::Int(1), &Value::Int(1), &Value::Int(1)),
            "{name} key positions"
        );
        let have: Vec<String> = match &info[2] {
            Value::Array(f) | Value::Set(f) => f.iter().filter_map(text_of).collect(),
            other => panic!("{name} flags: {other:?}"),
        };
        for flag in want {
            assert!(
                have.iter().any(|h| h == flag),
                "{name} flags {have:?} lack {flag}"
            );
        }
    }
}

#[test]
fn command_getkeys_finds_the_lock_key() {
    let server = Server::start();
    let mut con = server.conn();
    let cases: [&[&str]; 6] = [
        &["LOCK.ACQUIRE", "k", "o"],
        &["LOCK.ACQUIRE", "k", "o", "LEASE", "100", "WAIT", "5"],
        &["LOCK.RELEASE", "k", "o"],
        &["LOCK.RENEW", "k", "o", "LEASE", "100"],
        &["LOCK.INFO", "k"],
        &["LOCK.FORCERELEASE", "k"],
    ];
    for args in cases {
        let mut cmd = vec!["COMMAND", "GETKEYS"];
        cmd.extend_from_slice(args);
        let reply = raw(&mut con, &cmd);
        assert_eq!(
            reply,
            Value::Array(vec![Value::BulkString(b"k".to_vec())]),
            "{args:?}"
        );
    }
}

// ---------------------------------------------------------------- ACL and replicas

#[test]
fn acl_key_patterns_apply_to_lock_commands() {
    let server = Server::start();
    let mut admin = server.conn();
    let ok = raw(
        &mut admin,
        &[
            "ACL",
            "SETUSER",
            "limited",
            "on",
            ">secret",
            "~allowed:*",
            "+@all",
        ],
    );
    assert_eq!(ok, Value::Okay);
    let mut con = server.conn_as("limited", "secret");
    let token = int(&mut con, &["LOCK.ACQUIRE", "allowed:x", "a"]);
    assert!(token > 0);
    assert_eq!(int(&mut con, &["LOCK.RENEW", "allowed:x", "a"]), 1);
    raw(&mut con, &["LOCK.INFO", "allowed:x"]);
    assert_eq!(int(&mut con, &["LOCK.RELEASE", "allowed:x", "a"]), 0);
    assert_eq!(int(&mut admin, &["EXISTS", "allowed:x"]), 0);

    let denied = error_text(&raw(&mut con, &["HSET", "other:x", "a", "1"]))
        .expect("HSET on a key outside the pattern is refused");
    assert!(denied.starts_with("NOPERM"), "{denied}");
    let cases: [&[&str]; 5] = [
        &["LOCK.ACQUIRE", "other:x", "a"],
        &["LOCK.RELEASE", "other:x", "a"],
        &["LOCK.RENEW", "other:x", "a"],
        &["LOCK.INFO", "other:x"],
        &["LOCK.FORCERELEASE", "other:x"],
    ];
    for args in cases {
        expect_error(&mut con, args, &denied);
    }
    assert_eq!(int(&mut admin, &["EXISTS", "other:x"]), 0);
}

#[test]
fn lock_commands_on_a_read_only_replica_are_refused() {
    let master = Server::start();
    let replica = master.replica();
    let mut con = replica.conn();
    let readonly = error_text(&raw(&mut con, &["SET", "x", "1"])).expect("SET refused");
    assert!(readonly.starts_with("READONLY "), "{readonly}");
    expect_error(&mut con, &["LOCK.ACQUIRE", "k", "a"], &readonly);
    expect_error(
        &mut con,
        &["LOCK.ACQUIRE", "k", "a", "LEASE", "100"],
        &readonly,
    );
    assert_eq!(int(&mut con, &["EXISTS", "k"]), 0);
}
