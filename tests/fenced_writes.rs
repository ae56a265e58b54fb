//! `LOCK.FENCED key owner token command [arg ...]`: a command that runs only while its lock
//! is held by that holding. Refusals change nothing; a holder paused past its lease cannot
//! write. ACL, replication and Cluster are in `fenced_writes/topology.rs`; scripts and
//! argument fuzzing in `fenced_writes/scripts.rs`.

mod support;

#[path = "fenced_writes/topology.rs"]
mod topology;

#[path = "fenced_writes/scripts.rs"]
mod scripts;

#[path = "fenced_writes/holder.rs"]
mod holder;

use std::time::Duration;

use holder::Holder;
use redis::Value;
use support::{expect_error, int, keyspace, raw, text_of, wait_until, Server};

/// Longer than any lease the tests use, with room for a loaded machine.
const SETTLE: Duration = Duration::from_secs(10);

pub(crate) fn fenced<'a>(
    key: &'a str,
    owner: &'a str,
    token: &'a str,
    command: &[&'a str],
) -> Vec<&'a str> {
    let mut args = vec!["LOCK.FENCED", key, owner, token];
    args.extend_from_slice(command);
    args
}

#[test]
fn a_fenced_write_runs_while_the_holding_is_current_and_returns_its_reply() {
    let server = Server::start();
    let mut con = server.conn();
    let token = int(&mut con, &["LOCK.ACQUIRE", "lock:{o}", "a"]).to_string();
    let hset = fenced("lock:{o}", "a", &token, &["HSET", "{o}:data", "f", "v"]);
    assert_eq!(int(&mut con, &hset), 1);
    let script = "redis.call('SET', KEYS[1], ARGV[1]); return redis.call('INCR', KEYS[2])";
    let eval = ["EVAL", script, "2", "{o}:a", "{o}:n", "x"];
    assert_eq!(int(&mut con, &fenced("lock:{o}", "a", &token, &eval)), 1);
    let get = raw(
        &mut con,
        &fenced("lock:{o}", "a", &token, &["GET", "{o}:a"]),
    );
    assert_eq!(text_of(&get).as_deref(), Some("x"));
    // The reply comes in the caller's protocol: a map for RESP3.
    let mut resp3 = server.conn_resp3();
    let all = raw(
        &mut resp3,
        &fenced("lock:{o}", "a", &token, &["HGETALL", "{o}:data"]),
    );
    assert!(matches!(all, Value::Map(ref m) if m.len() == 1), "{all:?}");
    // An error of the command itself comes back as it is.
    let wrong = fenced("lock:{o}", "a", &token, &["LPUSH", "{o}:data", "x"]);
    expect_error(&mut con, &wrong, support::WRONGTYPE);
}

#[test]
fn acl_and_cluster_routing_see_the_lock_key_and_the_inner_keys() {
    let server = Server::start();
    let mut con = server.conn();
    let keys = |con: &mut redis::Connection, args: &[&str]| -> Vec<String> {
        let mut all = vec!["COMMAND", "GETKEYS"];
        all.extend_from_slice(args);
        match raw(con, &all) {
            Value::Array(items) => items.iter().filter_map(text_of).collect(),
            other => panic!("{other:?}"),
        }
    };
    let mset = fenced("lock:{o}", "a", "1", &["MSET", "{o}:x", "1", "{o}:y", "2"]);
    assert_eq!(keys(&mut con, &mset), ["lock:{o}", "{o}:x", "{o}:y"]);
    let eval = fenced(
        "lock:{o}",
        "a",
        "1",
        &["EVAL", "return 1", "1", "{o}:z", "arg"],
    );
    assert_eq!(keys(&mut con, &eval), ["lock:{o}", "{o}:z"]);
    let info = raw(&mut con, &["COMMAND", "INFO", "lock.fenced"]);
    assert!(format!("{info:?}").contains("movablekeys"), "{info:?}");
}

#[test]
fn a_stranger_or_an_older_holding_is_refused_and_changes_nothing() {
    let server = Server::start();
    let mut con = server.conn();
    let old = int(&mut con, &["LOCK.ACQUIRE", "k", "a"]).to_string();
    int(&mut con, &["LOCK.RELEASE", "k", "a"]);
    let new = int(&mut con, &["LOCK.ACQUIRE", "k", "a"]).to_string();
    let before = keyspace(&mut con);
    let stale = fenced("k", "a", &old, &["SET", "d", "stale"]);
    let text = format!("FENCED lock 'k' is held by 'a' with a newer token ({new}), not {old}");
    expect_error(&mut con, &stale, &text);
    let stranger = fenced("k", "b", &new, &["SET", "d", "stale"]);
    expect_error(&mut con, &stranger, "NOTHELD lock 'k' is not held by 'b'");
    let free = fenced("free", "a", &new, &["SET", "d", "stale"]);
    expect_error(&mut con, &free, "NOTHELD lock 'free' is not held by 'a'");
    assert_eq!(keyspace(&mut con), before);
}

#[test]
fn what_cannot_be_atomic_or_safe_is_refused_before_anything_runs() {
    let server = Server::start();
    let mut con = server.conn();
    let t = int(&mut con, &["LOCK.ACQUIRE", "k", "a"]).to_string();
    let before = keyspace(&mut con);
    let refused = |command: &[&str], why: &str| {
        let name = command[0];
        (
            fenced("k", "a", &t, command)
                .into_iter()
                .map(String::from)
                .collect::<Vec<_>>(),
            format!("ERR LOCK.FENCED refuses '{name}': {why}"),
        )
    };
    let cases = [
        refused(&["BLPOP", "l", "0"], "it may block"),
        refused(
            &["XREAD", "BLOCK", "0", "STREAMS", "s", "$"],
            "it may block",
        ),
        refused(
            &["MULTI"],
            "transactions and subscriptions cannot run inside it",
        ),
        refused(
            &["WATCH", "d"],
            "transactions and subscriptions cannot run inside it",
        ),
        refused(
            &["FLUSHALL"],
            "it names no key, so nothing ties it to the lock",
        ),
        refused(
            &["EVAL", "return redis.call('DEL', 'k')", "0"],
            "it names no key, so nothing ties it to the lock",
        ),
        refused(&["DEL", "d", "k"], "it may write the lock's own key"),
        refused(&["RENAME", "d", "k"], "it may write the lock's own key"),
        refused(
            &["EVAL", "return 1", "1", "k"],
            "it may write the lock's own key",
        ),
        refused(
            &["LOCK.RELEASE", "k", "a"],
            "lock commands cannot run inside it",
        ),
        refused(
            &["lock.fenced", "k", "a", "1", "SET", "d", "v"],
            "lock commands cannot run inside it",
        ),
    ];
    for (args, text) in &cases {
        expect_error(&mut con, args, text);
    }
    expect_error(
        &mut con,
        &fenced("k", "a", &t, &["NOSUCH", "d"]),
        "ERR unknown command 'NOSUCH' in LOCK.FENCED",
    );
    expect_error(
        &mut con,
        &fenced("k", "a", &t, &["HSET", "d"]),
        "ERR wrong number of arguments for 'HSET' in LOCK.FENCED",
    );
    expect_error(
        &mut con,
        &["LOCK.FENCED", "k", "a", &t],
        "ERR wrong number of arguments for 'lock.fenced' command",
    );
    expect_error(
        &mut con,
        &fenced("k", "a", "x", &["SET", "d", "v"]),
        "ERR TOKEN is not an integer or out of range",
    );
    expect_error(
        &mut con,
        &fenced("k", "a", "-1", &["SET", "d", "v"]),
        "ERR TOKEN must not be negative",
    );
    assert_eq!(keyspace(&mut con), before);
}

#[test]
fn an_inner_write_is_refused_at_maxmemory_but_a_read_runs() {
    let server = Server::start();
    let mut con = server.conn();
    let t = int(&mut con, &["LOCK.ACQUIRE", "k", "a"]).to_string();
    int(&mut con, &fenced("k", "a", &t, &["HSET", "d", "f", "v"]));
    assert_eq!(
        raw(&mut con, &["CONFIG", "SET", "maxmemory", "1"]),
        Value::Okay
    );
    let reply = raw(&mut con, &fenced("k", "a", &t, &["HSET", "d", "g", "v"]));
    let error = support::error_text(&reply).unwrap_or_default();
    assert!(error.starts_with("OOM command not allowed"), "{reply:?}");
    assert_eq!(int(&mut con, &fenced("k", "a", &t, &["HLEN", "d"])), 1);
}

#[test]
fn a_holder_paused_past_its_lease_cannot_write_in_twenty_rounds() {
    let server = Server::start();
    let mut con = server.conn();
    // The holder is a process of its own (`redis-cli`) with its own connection.
    let mut holder = Holder::start(server.port());
    for round in 0..20 {
        holder.send(&["LOCK.ACQUIRE", "lock:{o}", "p", "LEASE", "200"]);
        let old = holder.reply();
        assert!(old.parse::<u64>().is_ok(), "round {round}: {old:?}");
        // Stopped just as it sends its write: the write waits in its input meanwhile.
        holder.stop();
        let stale = format!("stale-{round}");
        holder.send(&fenced(
            "lock:{o}",
            "p",
            &old,
            &["RPUSH", "{o}:log", &stale],
        ));
        let expired = wait_until(SETTLE, || int(&mut con, &["EXISTS", "lock:{o}"]) == 0);
        assert!(expired, "the lease did not run out");
        // Every other round the new holder has the same owner id: a newer holding.
        let owner = if round % 2 == 0 { "q" } else { "p" };
        let acquire = ["LOCK.ACQUIRE", "lock:{o}", owner, "LEASE", "60000"];
        let new = int(&mut con, &acquire).to_string();
        let fresh = format!("fresh-{round}");
        int(
            &mut con,
            &fenced("lock:{o}", owner, &new, &["RPUSH", "{o}:log", &fresh]),
        );
        holder.resume();
        let reply = holder.reply();
        let code = if owner == "p" { "FENCED" } else { "NOTHELD" };
        assert!(reply.contains(code), "round {round}: {reply:?}");
        int(&mut con, &["LOCK.RELEASE", "lock:{o}", owner]);
    }
    let log = match raw(&mut con, &["LRANGE", "{o}:log", "0", "-1"]) {
        Value::Array(items) => items.iter().filter_map(text_of).collect::<Vec<_>>(),
        other => panic!("{other:?}"),
    };
    let fresh: Vec<String> = (0..20).map(|r| format!("fresh-{r}")).collect();
    assert_eq!(log, fresh, "only the new holders' writes land");
    // The same pause without the fence: the stale write lands.
    holder.send(&["LOCK.ACQUIRE", "lock:{o}", "p", "LEASE", "200"]);
    holder.reply();
    holder.stop();
    holder.send(&["RPUSH", "{o}:plain", "stale"]);
    assert!(wait_until(SETTLE, || int(
        &mut con,
        &["EXISTS", "lock:{o}"]
    ) == 0));
    int(&mut con, &["LOCK.ACQUIRE", "lock:{o}", "q"]);
    holder.resume();
    assert_eq!(
        holder.reply(),
        "1",
        "an unfenced write of a paused holder lands"
    );
}
