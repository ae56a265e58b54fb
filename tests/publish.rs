//! SPEC.md §4: the release message, its channel, and `rlock.publish`.
//!
//! Each test subscribes to the channel with both `SUBSCRIBE` and `SSUBSCRIBE`, acts, then
//! publishes a sentinel on the same command connection: Redis delivers messages in the
//! order their commands ran, so everything the module published arrives before it.

mod support;

use redis::Value;
use support::{channel, int, raw, Message, Server, Subscriber, DEFAULT_PREFIX};

const SENTINEL: &[u8] = b"sentinel-after-the-command";

/// Publishes the sentinel on `ch` and returns every message that came before it.
fn messages_before_sentinel(
    con: &mut redis::Connection,
    sub: &mut Subscriber,
    ch: &[u8],
) -> Vec<Message> {
    raw(con, &[&b"PUBLISH"[..], ch, SENTINEL]);
    sub.until(SENTINEL)
}

/// Takes `key` as owner `a` and releases it to zero.
fn take_and_release(con: &mut redis::Connection, key: &[u8]) {
    int(con, &[&b"LOCK.ACQUIRE"[..], key, b"a"]);
    assert_eq!(int(con, &[&b"LOCK.RELEASE"[..], key, b"a"]), 0);
}

fn config_set(con: &mut redis::Connection, name: &str, value: &str) {
    let ok = raw(con, &["CONFIG", "SET", name, value]);
    assert_eq!(ok, Value::Okay);
}

fn release_message(kind: &str, ch: &[u8]) -> Message {
    Message {
        kind: kind.to_owned(),
        channel: ch.to_vec(),
        payload: b"0".to_vec(),
    }
}

/// Takes and releases `key` on a fresh server; returns the release channel (default
/// prefix) and the messages published on it.
fn messages_of_a_release(key: &[u8]) -> (Vec<u8>, Vec<Message>) {
    let server = Server::start();
    let mut con = server.conn();
    let ch = channel(DEFAULT_PREFIX, key);
    let mut sub = Subscriber::both(&server, &ch);
    take_and_release(&mut con, key);
    let messages = messages_before_sentinel(&mut con, &mut sub, &ch);
    (ch, messages)
}

#[test]
fn release_to_zero_publishes_zero_on_the_default_channel() {
    let (ch, messages) = messages_of_a_release(b"lock:1");
    assert_eq!(ch, b"redisson_lock__channel:{lock:1}");
    assert_eq!(messages, [release_message("message", &ch)]);
}

#[test]
fn no_message_while_holds_remain() {
    let server = Server::start();
    let mut con = server.conn();
    let ch = channel(DEFAULT_PREFIX, b"lock:1");
    let mut sub = Subscriber::both(&server, &ch);
    int(&mut con, &["LOCK.ACQUIRE", "lock:1", "a"]);
    int(&mut con, &["LOCK.ACQUIRE", "lock:1", "a"]);
    assert_eq!(int(&mut con, &["LOCK.RELEASE", "lock:1", "a"]), 1);
    assert_eq!(messages_before_sentinel(&mut con, &mut sub, &ch), []);
    assert_eq!(int(&mut con, &["LOCK.RELEASE", "lock:1", "a"]), 0);
    assert_eq!(
        messages_before_sentinel(&mut con, &mut sub, &ch),
        [release_message("message", &ch)]
    );
}

#[test]
fn no_message_on_acquire_renew_info_or_refused_release() {
    let server = Server::start();
    let mut con = server.conn();
    let ch = channel(DEFAULT_PREFIX, b"lock:1");
    let mut sub = Subscriber::both(&server, &ch);
    int(&mut con, &["LOCK.ACQUIRE", "lock:1", "a"]);
    int(&mut con, &["LOCK.RENEW", "lock:1", "a"]);
    raw(&mut con, &["LOCK.INFO", "lock:1"]);
    raw(&mut con, &["LOCK.RELEASE", "lock:1", "b"]);
    raw(&mut con, &["LOCK.ACQUIRE", "lock:1", "b"]);
    assert_eq!(messages_before_sentinel(&mut con, &mut sub, &ch), []);
}

#[test]
fn forcerelease_publishes_zero() {
    let server = Server::start();
    let mut con = server.conn();
    let ch = channel(DEFAULT_PREFIX, b"lock:1");
    let mut sub = Subscriber::both(&server, &ch);
    int(&mut con, &["LOCK.ACQUIRE", "lock:1", "a"]);
    int(&mut con, &["LOCK.ACQUIRE", "lock:1", "a"]);
    assert_eq!(int(&mut con, &["LOCK.FORCERELEASE", "lock:1"]), 1);
    assert_eq!(
        messages_before_sentinel(&mut con, &mut sub, &ch),
        [release_message("message", &ch)]
    );
    assert_eq!(int(&mut con, &["LOCK.FORCERELEASE", "lock:1"]), 0);
    assert_eq!(messages_before_sentinel(&mut con, &mut sub, &ch), []);
}

#[test]
fn key_with_a_brace_is_not_wrapped_again() {
    let (ch, messages) = messages_of_a_release(b"{order}:42");
    assert_eq!(ch, b"redisson_lock__channel:{order}:42");
    assert_eq!(messages, [release_message("message", &ch)]);
}

#[test]
fn binary_key_gets_a_binary_channel() {
    let (ch, messages) = messages_of_a_release(b"lock:\xff\x00\r\n");
    assert_eq!(messages, [release_message("message", &ch)]);
}

#[test]
fn channel_prefix_config_changes_the_channel() {
    let server = Server::start();
    let mut con = server.conn();
    config_set(&mut con, "rlock.channel-prefix", "my_locks");
    let old = channel(DEFAULT_PREFIX, b"lock:1");
    let new = channel("my_locks", b"lock:1");
    let mut old_sub = Subscriber::both(&server, &old);
    let mut new_sub = Subscriber::both(&server, &new);
    take_and_release(&mut con, b"lock:1");
    assert_eq!(
        messages_before_sentinel(&mut con, &mut new_sub, &new),
        [release_message("message", &new)]
    );
    assert_eq!(messages_before_sentinel(&mut con, &mut old_sub, &old), []);
}

#[test]
fn spublish_mode_sends_a_sharded_message() {
    let server = Server::start();
    let mut con = server.conn();
    config_set(&mut con, "rlock.publish", "spublish");
    let ch = channel(DEFAULT_PREFIX, b"lock:1");
    let mut sub = Subscriber::both(&server, &ch);
    take_and_release(&mut con, b"lock:1");
    int(&mut con, &["LOCK.ACQUIRE", "lock:1", "a"]);
    assert_eq!(int(&mut con, &["LOCK.FORCERELEASE", "lock:1"]), 1);
    assert_eq!(
        messages_before_sentinel(&mut con, &mut sub, &ch),
        [
            release_message("smessage", &ch),
            release_message("smessage", &ch)
        ]
    );
}

#[test]
fn none_mode_publishes_nothing() {
    let server = Server::start();
    let mut con = server.conn();
    config_set(&mut con, "rlock.publish", "none");
    let ch = channel(DEFAULT_PREFIX, b"lock:1");
    let mut sub = Subscriber::both(&server, &ch);
    take_and_release(&mut con, b"lock:1");
    int(&mut con, &["LOCK.ACQUIRE", "lock:1", "a"]);
    assert_eq!(int(&mut con, &["LOCK.FORCERELEASE", "lock:1"]), 1);
    assert_eq!(messages_before_sentinel(&mut con, &mut sub, &ch), []);

    config_set(&mut con, "rlock.publish", "publish");
    take_and_release(&mut con, b"lock:1");
    assert_eq!(
        messages_before_sentinel(&mut con, &mut sub, &ch),
        [release_message("message", &ch)]
    );
}
