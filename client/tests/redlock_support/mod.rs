//! What the RedLock test files share: servers in the canonical order, clients, contention.
// Each test file uses some of these.
#![allow(dead_code)]

use std::time::Duration;

use rlock_client::{Client, ClientOptions};

use crate::support::Server;

/// Short timeouts, so that a stopped or dead server costs little.
pub fn options() -> ClientOptions {
    ClientOptions::new()
        .connect_timeout(Duration::from_millis(500))
        .response_timeout(Duration::from_millis(500))
        .keepalive(Duration::from_millis(500))
}

pub async fn clients_with(servers: &[Server], options: ClientOptions) -> Vec<Client> {
    let mut clients = Vec::new();
    for server in servers {
        let client = Client::open_with(server.url(), options).await;
        clients.push(client.expect("open a client"));
    }
    clients
}

pub async fn clients(servers: &[Server]) -> Vec<Client> {
    clients_with(servers, options()).await
}

/// A token gap of an hour: a server learns a token up to twice the gap past its clock, so
/// that [`push_counter_ahead`] by an hour is learned (and raised to) as a counter a
/// promotion or a load of such a deployment could leave.
const HOUR_GAP: &str = "3600000000";

/// `n` servers in the RedLock's canonical order (by `run_id`): the first is the gate.
pub async fn in_canonical_order(n: usize) -> Vec<Server> {
    let mut keyed = Vec::new();
    let start = || Server::start_with(&["--rlock.token-gap", HOUR_GAP]);
    for server in (0..n).map(|_| start()) {
        let id = server.client().await.identity().to_owned();
        keyed.push((id, server));
    }
    keyed.sort_by(|a, b| a.0.cmp(&b.0));
    keyed.into_iter().map(|(_, s)| s).collect()
}

/// The wall clock in microseconds, the floor of the module's tokens.
pub fn now_us() -> u64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    since.expect("a clock after 1970").as_micros() as u64
}

/// Pushes `server`'s token counter `ahead` of the wall clock: it learns the token of a lock
/// written by hand (as a load, a promotion or a skewed clock would leave it).
pub fn push_counter_ahead(server: &Server, ahead: Duration) -> u64 {
    let token = now_us() + ahead.as_micros() as u64;
    let token_text = token.to_string();
    let _: i64 = server.cmd(&["HSET", "pushed", "someone:1", "1", "@token", &token_text]);
    let info = server.info("pushed").expect("a lock");
    assert_eq!(info.token, token);
    let _: i64 = server.cmd(&["DEL", "pushed"]);
    token
}
