//! The workload: clients that contend for a few locks on whichever node is master (with and
//! without `WAIT`), plain locks and read-write locks (read or write holds), hold, renew and
//! release them or let them run out, and an operator who force-releases them. Every command
//! goes into the history.

use std::sync::atomic::{AtomicBool, AtomicU16, Ordering};
use std::sync::Arc;
use std::time::Duration;

use redis::Value;

use crate::history::{Event, History, Op, Outcome};
use crate::node::connect;
use crate::support::Rng;

/// Locks the clients contend for.
pub const KEYS: u64 = 3;
/// The longest lease of the workload (below the failover delay).
pub const MAX_LEASE_MS: i64 = 150;
/// How long past its `WAIT` a reply may take on a loaded machine.
const REPLY_MARGIN: Duration = Duration::from_secs(8);

/// What the clients share with the run: where the master is, and when to stop.
#[derive(Clone)]
pub struct Shared {
    pub master: Arc<AtomicU16>,
    pub stop: Arc<AtomicBool>,
    pub history: History,
}

/// One client's connection to the master, made again after an error or a role change.
struct Link {
    shared: Shared,
    port: u16,
    con: Option<redis::Connection>,
}

impl Link {
    fn con(&mut self, limit: Duration) -> Option<&mut redis::Connection> {
        let master = self.shared.master.load(Ordering::Relaxed);
        if self.port != master {
            self.con = None;
            self.port = master;
        }
        if self.con.is_none() {
            self.con = connect(master, Duration::from_secs(2));
        }
        let con = self.con.as_mut()?;
        con.set_read_timeout(Some(limit)).ok()?;
        Some(con)
    }

    /// Sends `args` and records what came back.
    fn call(
        &mut self,
        op: Op,
        key: &str,
        owner: &str,
        args: &[String],
        limit: Duration,
    ) -> Outcome {
        let history = self.shared.history.clone();
        let sent = history.now();
        let outcome = match self.con(limit) {
            None => Outcome::Lost,
            Some(con) => outcome(redis::cmd(&args[0]).arg(&args[1..]).query::<Value>(con)),
        };
        let outcome = self.check_no_extra_reply(outcome);
        if matches!(
            outcome,
            Outcome::Lost | Outcome::NoReply | Outcome::Error(_)
        ) {
            self.con = None;
        }
        let (key, owner) = (key.to_owned(), owner.to_owned());
        let received = history.now();
        history.record(Event {
            op,
            key,
            owner,
            sent,
            received,
            outcome: outcome.clone(),
        });
        outcome
    }

    /// After a reply, a `PING` must get `PONG`: anything else is a second reply.
    fn check_no_extra_reply(&mut self, outcome: Outcome) -> Outcome {
        if !matches!(outcome, Outcome::Int(_) | Outcome::Nil) {
            return outcome;
        }
        let Some(con) = self.con.as_mut() else {
            return outcome;
        };
        match redis::cmd("PING").query::<Value>(con) {
            Ok(Value::SimpleString(s)) if s == "PONG" => outcome,
            Ok(Value::Okay) => outcome,
            Ok(other) => Outcome::Extra(format!("{other:?} after {outcome:?}")),
            Err(_) => outcome,
        }
    }
}

fn outcome(reply: redis::RedisResult<Value>) -> Outcome {
    match reply {
        Ok(Value::Int(n)) => Outcome::Int(n),
        Ok(Value::Nil) => Outcome::Nil,
        Ok(other) => Outcome::Error(format!("unexpected {other:?}")),
        Err(e) if e.is_timeout() => Outcome::NoReply,
        Err(e) if e.is_io_error() || e.is_connection_dropped() => Outcome::Lost,
        Err(e) => Outcome::Error(e.to_string()),
    }
}

fn args(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|p| (*p).to_owned()).collect()
}

/// One contending client, until the run stops.
pub fn client(shared: Shared, id: u64, seed: u64) {
    let mut rng = Rng::new(seed);
    let mut link = Link {
        shared: shared.clone(),
        port: 0,
        con: None,
    };
    let mut n = 0;
    while !shared.stop.load(Ordering::Relaxed) {
        n += 1;
        let mode = rng
            .chance(40)
            .then(|| if rng.chance(60) { "READ" } else { "WRITE" });
        let key = match mode {
            Some(_) => format!("rw:{}", rng.below(KEYS)),
            None => format!("rs:{}", rng.below(KEYS)),
        };
        let owner = format!("c{id}:{n}");
        let lease = rng.range(60, MAX_LEASE_MS);
        let wait = rng.chance(70).then(|| rng.range(50, 600));
        let mut cmd = match mode {
            Some(mode) => args(&["RWLOCK.ACQUIRE", &key, &owner, mode]),
            None => args(&["LOCK.ACQUIRE", &key, &owner]),
        };
        cmd.extend(args(&["LEASE", &lease.to_string()]));
        if let Some(w) = wait {
            cmd.extend(args(&["WAIT", &w.to_string()]));
        }
        let limit = Duration::from_millis(wait.unwrap_or(0) as u64) + REPLY_MARGIN;
        let shared = mode == Some("READ");
        let op = Op::Acquire {
            lease,
            wait,
            shared,
        };
        match link.call(op, &key, &owner, &cmd, limit) {
            Outcome::Int(token) => {
                let held = Held {
                    key: &key,
                    owner: &owner,
                    mode,
                };
                hold(&mut link, &mut rng, &held, token, lease)
            }
            Outcome::Nil => {}
            _ => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// A holding: its key, its owner, and its mode for a read-write lock.
struct Held<'a> {
    key: &'a str,
    owner: &'a str,
    mode: Option<&'a str>,
}

/// Renews at once (the moment of a handoff is unknown), works, maybe renews again, then
/// releases or lets the lease run out.
fn hold(link: &mut Link, rng: &mut Rng, held: &Held<'_>, token: i64, lease: i64) {
    let (key, owner) = (held.key, held.owner);
    let token = token.to_string();
    let family = if held.mode.is_some() {
        "RWLOCK"
    } else {
        "LOCK"
    };
    let renew = args(&[
        &format!("{family}.RENEW"),
        key,
        owner,
        "LEASE",
        &lease.to_string(),
        "TOKEN",
        &token,
    ]);
    let limit = REPLY_MARGIN;
    if link.call(Op::Renew { lease }, key, owner, &renew, limit) != Outcome::Int(1) {
        return;
    }
    std::thread::sleep(Duration::from_millis(rng.range(0, lease * 6 / 10) as u64));
    if rng.chance(30) {
        link.call(Op::Renew { lease }, key, owner, &renew, limit);
        std::thread::sleep(Duration::from_millis(rng.range(0, lease / 2) as u64));
    }
    if rng.chance(80) {
        let mut release = args(&[&format!("{family}.RELEASE"), key, owner]);
        release.extend(held.mode.map(str::to_owned));
        release.extend(args(&["TOKEN", &token]));
        link.call(Op::Release, key, owner, &release, limit);
    }
}

/// The operator: now and then force-releases one of the contended locks; takes locks of
/// its own with long leases on keys nobody else uses (data for the replicas to agree on),
/// and releases some of them.
pub fn operator(shared: Shared, seed: u64) {
    let mut rng = Rng::new(seed);
    let mut link = Link {
        shared: shared.clone(),
        port: 0,
        con: None,
    };
    let mut held: Vec<(String, String)> = Vec::new();
    let mut n = 0;
    while !shared.stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(rng.range(50, 300) as u64));
        n += 1;
        match rng.below(10) {
            0..=4 => {
                let (family, prefix) = match rng.chance(40) {
                    true => ("RWLOCK", "rw"),
                    false => ("LOCK", "rs"),
                };
                let key = format!("{prefix}:{}", rng.below(KEYS));
                let force = args(&[&format!("{family}.FORCERELEASE"), &key]);
                link.call(Op::Force, &key, "", &force, REPLY_MARGIN);
            }
            5..=7 => {
                let (key, owner) = (format!("rh:{n}"), format!("op:{n}"));
                let cmd = args(&["LOCK.ACQUIRE", &key, &owner, "LEASE", "30000"]);
                let op = Op::Acquire {
                    lease: 30_000,
                    wait: None,
                    shared: false,
                };
                if let Outcome::Int(_) = link.call(op, &key, &owner, &cmd, REPLY_MARGIN) {
                    held.push((key, owner));
                }
            }
            _ if !held.is_empty() => {
                let (key, owner) = held.swap_remove(rng.below(held.len() as u64) as usize);
                let release = args(&["LOCK.RELEASE", &key, &owner]);
                link.call(Op::Release, &key, &owner, &release, REPLY_MARGIN);
            }
            _ => {}
        }
    }
}
