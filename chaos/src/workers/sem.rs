//! Semaphore workers: raw `SEM.*` commands on keys of their own, as a client in any
//! language sends them. Each key's total is 3 permits (set by `SEM.PERMITS` when a worker
//! finds the key missing: at the start, and after a failover lost it). Each acquisition of
//! a fresh owner asks 1 or 2 permits with a lease and `WAIT`; the holder now and then adds
//! a permit (the token must stay), renews during long work, gives back one permit before
//! the rest, and now and then dies silently (its lease runs out). What it believes it holds
//! is recorded as spans ([`SemSpan`]), cut at the end of its lease. The unsafe switch never
//! renews and believes past the lease.

use std::sync::Arc;
use std::time::Duration;

use redis::Value;

use super::field_owner::probe;
use super::raw::Target;
use super::rw_conn::{lease_ms, Node};
use super::sem_tally::{tally, ADDED, DIED, PARTIAL, RENEWAL};
use super::{Ctx, LEASE};
use crate::check_sem::SEM_TOTAL;
use crate::history::{now_us, Event, Wait};
use crate::history_sem::SemSpan;

pub use super::rw_conn::SEM_KEYS;
/// The worker's own safety margin on its lease.
const MARGIN_US: u64 = 50_000;
/// Commands that do not wait get their reply within this.
const REPLY: Duration = Duration::from_secs(10);
/// How long the work goes on between two renewals.
const RENEW_EVERY: Duration = Duration::from_millis(600);

/// A holding, and the span of permits being believed now.
struct Held {
    span: SemSpan,
    /// Until when the worker believes its lease runs (microseconds, this machine's clock).
    deadline_us: u64,
}

struct Sem<'a> {
    ctx: &'a Ctx,
    node: Node,
    name: &'a str,
}

/// One worker thread until the run stops.
pub fn run(ctx: Arc<Ctx>, target: Target, name: String) {
    let mut n = 0u64;
    while !ctx.stopped() {
        let Some(node) = target().and_then(Node::open) else {
            std::thread::sleep(Duration::from_millis(100));
            continue;
        };
        let mut w = Sem {
            ctx: &ctx,
            node,
            name: &name,
        };
        while !ctx.stopped() && !w.node.dead {
            n += 1;
            w.round(n);
        }
    }
}

fn lease_end(sent_us: u64) -> u64 {
    sent_us + LEASE.as_micros() as u64 - MARGIN_US
}

impl Sem<'_> {
    fn call(&mut self, cmd: &redis::Cmd) -> redis::RedisResult<Value> {
        self.node.call(cmd, REPLY)
    }

    /// One acquisition of a fresh owner, and its holding if granted.
    fn round(&mut self, n: u64) {
        let (ctx, name) = (self.ctx, self.name);
        if ctx.rng.chance(5) {
            if let Some((key, what)) = probe(&mut self.node, &ctx.rng, &ctx.keys) {
                self.wrong(&key, what);
            }
        }
        let key = ctx.rng.pick(SEM_KEYS).to_string();
        let owner = format!("{name}:{n}");
        let permits = ctx.rng.range(1, 3);
        let wait = ctx.rng.millis(0, 2000);
        let mut cmd = redis::cmd("SEM.ACQUIRE");
        cmd.arg(&key).arg(&owner).arg(permits);
        cmd.arg("LEASE")
            .arg(lease_ms())
            .arg("WAIT")
            .arg(wait.as_millis() as u64);
        let mut event = Wait {
            worker: name.to_owned(),
            key: key.clone(),
            replies: 0,
            conn_error: false,
        };
        let sent_us = now_us();
        let reply = self.node.wait(&cmd, wait, &mut event);
        ctx.history.push(Event::Wait(event));
        let token = match reply {
            Some(Ok(Value::Int(token))) => token.unsigned_abs(),
            Some(Ok(_)) => return,
            Some(Err(e)) if e.to_string().contains("the semaphore has 0") => {
                return self.set_total(&key);
            }
            // A demoted master: ask for the master again (a fresh connection).
            Some(Err(e)) if e.code() == Some("READONLY") => {
                ctx.history.acquired(name, false);
                self.node.dead = true;
                return;
            }
            _ => {
                ctx.history.acquired(name, false);
                return std::thread::sleep(Duration::from_millis(50));
            }
        };
        ctx.history.acquired(name, true);
        let span = SemSpan {
            worker: name.to_owned(),
            key,
            owner,
            token,
            permits,
            from_us: now_us(),
            to_us: 0,
            sent_us,
        };
        let deadline_us = lease_end(sent_us);
        self.hold(&mut Held { span, deadline_us });
    }

    /// `SEM.PERMITS key 3`: the total every worker uses.
    fn set_total(&mut self, key: &str) {
        let mut cmd = redis::cmd("SEM.PERMITS");
        cmd.arg(key).arg(SEM_TOTAL);
        let _ = self.call(&cmd);
    }

    /// Holds `h` through its work, then releases it (or dies silently).
    fn hold(&mut self, h: &mut Held) {
        let rng = &self.ctx.rng;
        if rng.chance(20) {
            self.add(h);
        }
        self.work(h);
        if h.span.permits > 1 && rng.chance(30) {
            tally(PARTIAL);
            self.release(h, Some(1));
            self.work(h);
        }
        if rng.chance(10) {
            // Dies silently: believes nothing from now on; its lease runs out.
            tally(DIED);
            return self.end_span(h, now_us());
        }
        self.release(h, None);
    }

    /// Ends the span being believed at `at` (at the end of the lease at the latest, but
    /// for the unsafe switch) and records it.
    fn end_span(&self, h: &mut Held, at: u64) {
        let lost = !self.ctx.ignore_loss && at > h.deadline_us;
        h.span.to_us = if lost { h.deadline_us } else { at };
        if h.span.to_us > h.span.from_us {
            self.ctx.history.push(Event::Sem(h.span.clone()));
        }
    }

    /// A new span of `permits` from `at`.
    fn next_span(&self, h: &mut Held, at: u64, permits: u64) {
        self.end_span(h, at);
        h.span.from_us = at;
        h.span.permits = permits;
    }

    /// Adds one permit (no `WAIT`): granted with the same token, or nil.
    fn add(&mut self, h: &mut Held) {
        let mut cmd = redis::cmd("SEM.ACQUIRE");
        cmd.arg(&h.span.key)
            .arg(&h.span.owner)
            .arg(1)
            .arg("LEASE")
            .arg(lease_ms());
        let sent_us = now_us();
        let Ok(Value::Int(token)) = self.call(&cmd) else {
            return;
        };
        let (got_us, in_time) = (now_us(), now_us() < h.deadline_us);
        let token = token.unsigned_abs();
        if token != h.span.token && in_time {
            let what = format!("{}: an added permit gave token {token}", h.span.owner);
            self.wrong(&h.span.key, what);
        }
        if token == h.span.token {
            tally(ADDED);
            let permits = h.span.permits + 1;
            self.next_span(h, got_us, permits);
        } else {
            // The lease ran out: a fresh holding of one permit.
            self.end_span(h, got_us);
            (h.span.from_us, h.span.permits, h.span.sent_us) = (got_us, 1, sent_us);
            h.span.token = token;
        }
        h.deadline_us = lease_end(sent_us);
    }

    fn wrong(&self, key: &str, what: String) {
        eprintln!("{}: wrong reply on {key}: {what}", self.name);
        let (worker, key) = (self.name.to_owned(), key.to_owned());
        self.ctx.history.push(Event::Wrong { worker, key, what });
    }

    /// Works for a while, renewing now and then (never with the unsafe switch).
    fn work(&mut self, h: &mut Held) {
        let ctx = self.ctx;
        let until = std::time::Instant::now() + ctx.work();
        let renews = !ctx.ignore_loss && ctx.rng.chance(50);
        loop {
            let left = until.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return;
            }
            std::thread::sleep(left.min(RENEW_EVERY));
            if renews && now_us() < h.deadline_us {
                self.renew(h);
            }
        }
    }

    /// `SEM.RENEW ... TOKEN`: 1 while the holding is there, its lease reset.
    fn renew(&mut self, h: &mut Held) {
        let mut cmd = redis::cmd("SEM.RENEW");
        cmd.arg(&h.span.key)
            .arg(&h.span.owner)
            .arg("LEASE")
            .arg(lease_ms());
        cmd.arg("TOKEN").arg(h.span.token);
        let sent_us = now_us();
        if let Ok(Value::Int(1)) = self.call(&cmd) {
            tally(RENEWAL);
            h.deadline_us = lease_end(sent_us);
        }
    }

    /// Gives back `permits` (all when `None`): believed no more from the send.
    fn release(&mut self, h: &mut Held, permits: Option<u64>) {
        let mut cmd = redis::cmd("SEM.RELEASE");
        cmd.arg(&h.span.key).arg(&h.span.owner);
        if let Some(p) = permits {
            cmd.arg(p);
        }
        cmd.arg("TOKEN").arg(h.span.token);
        let left = h.span.permits - permits.unwrap_or(h.span.permits);
        self.next_span(h, now_us(), left);
        let _ = self.call(&cmd);
    }
}
