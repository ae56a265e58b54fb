//! The gate's rules (SPEC.md §5): whether a fresh holding may be created now, decided from
//! a few facts about the node. Pure, so that every rule is tested as a table; the module's
//! `host/gate.rs` gathers the facts from Redis, and `handoff/door.rs` is the one door that
//! asks.
//!
//! The rules, in the order they are asked:
//! - a node still loading its data comes back when it is done;
//! - a waiter whose own `WAIT` has run out in server time gets nil, never a grant;
//! - a node that is not a master grants nothing: its waiters are sent to the master;
//! - while writes are paused (`CLIENT PAUSE WRITE`, `FAILOVER`) nothing is written;
//! - in a cluster, a key is created only on the node that serves it;
//! - after a stall (the node did not run for a while: it may have been failed over while it
//!   did not run), nothing is granted until its view of its replicas is fresh again;
//! - after a promotion, nothing is granted until the failover delay ends;
//! - while script clients have their turn on the lock (`registry/turns.rs`), no native
//!   waiter or newcomer is granted it until the turn ends;
//! - at or over `maxmemory` nothing is granted (a grant would only be evicted again);
//! - with `min-replicas-to-write`, nothing is granted while too few good replicas are there.

/// How often a check comes back while writes are paused or the node is loading (ms).
pub const PAUSED_RETRY_MS: i64 = 10;
/// How often a check comes back while too few replicas are connected (ms).
pub const REPLICAS_RETRY_MS: i64 = 100;
/// How often a check comes back while memory is at or over `maxmemory` (ms).
pub const MEMORY_RETRY_MS: i64 = 100;

/// What the gate knows when it is asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Facts {
    /// Server time (Unix ms).
    pub now: i64,
    /// The node is loading its data (RDB, AOF, a full sync).
    pub loading: bool,
    /// The node is a master (not a replica, writable or not).
    pub master: bool,
    /// Clients' writes are paused (`RedisModule_AvoidReplicaTraffic`).
    pub paused: bool,
    /// When the waiter to be served stops waiting (Unix ms); `None`: no limit, or the
    /// holding is for the client of the running command.
    pub wait_until: Option<i64>,
    /// The error that sends the key's waiters where it is served, if not here.
    pub redirect: Option<String>,
    /// When the hold-back after a stall of the node ends, if one is under way.
    pub stalled_until: Option<i64>,
    /// When the failover delay ends, if one is under way.
    pub delay_until: Option<i64>,
    /// When the script clients' turn on the lock ends, if one is under way.
    pub scripts_until: Option<i64>,
    /// Used memory is at or over `maxmemory`.
    pub over_memory: bool,
    /// `min-replicas-to-write` is met (true when it is not set).
    pub replicas_ok: bool,
}

/// What the gate decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Grant now.
    Go,
    /// The waiter's `WAIT` ran out: it gets nil, and the next waiter is asked about.
    Expired,
    /// Not now: ask again at this time (Unix ms).
    Later(i64),
    /// Never on this node: the waiters get this error.
    Refuse(String),
}

/// The error a waiter gets when the node it waits on is no longer a master.
pub const DEMOTED: &str =
    "READONLY rlock: this node became a replica while the client waited; acquire on the master";

/// The gate's decision.
pub fn decide(facts: &Facts) -> Verdict {
    let now = facts.now;
    if facts.loading {
        return Verdict::Later(now.saturating_add(PAUSED_RETRY_MS));
    }
    if facts.wait_until.is_some_and(|until| now >= until) {
        return Verdict::Expired;
    }
    if !facts.master {
        return Verdict::Refuse(DEMOTED.to_owned());
    }
    if facts.paused {
        return Verdict::Later(now.saturating_add(PAUSED_RETRY_MS));
    }
    if let Some(redirect) = &facts.redirect {
        return Verdict::Refuse(redirect.clone());
    }
    // The latest of the hold-backs, so that a check does not come back in between.
    let held = facts
        .stalled_until
        .max(facts.delay_until)
        .max(facts.scripts_until);
    if let Some(until) = held.filter(|until| *until > now) {
        return Verdict::Later(until);
    }
    if facts.over_memory {
        return Verdict::Later(now.saturating_add(MEMORY_RETRY_MS));
    }
    if !facts.replicas_ok {
        return Verdict::Later(now.saturating_add(REPLICAS_RETRY_MS));
    }
    Verdict::Go
}

#[cfg(test)]
#[path = "verdict_tests.rs"]
mod tests;
