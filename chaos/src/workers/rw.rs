//! Read-write workers: raw `RWLOCK.*` commands on keys of their own, as a client in any
//! language sends them. Each acquisition asks `READ` (7 in 10) or `WRITE`, with `WAIT`, a
//! fresh owner each time. A holder renews its lease during long work now and then, reenters
//! now and then (the token must stay), and a writer now and then downgrades: it takes a read
//! hold and releases its write holds, and works on as a reader under the same token.
//! Writers and readers try `LOCK.FENCED` (a reader's must be refused), and readers now and
//! then ask `WRITE` (an upgrade, which must be refused). A reply the interface rules out,
//! while the worker's lease still ran, is recorded as [`Event::Wrong`]. The unsafe switch
//! never renews, writes and believes past the lease, and forgets one holding in ten.

use std::sync::Arc;
use std::time::{Duration, Instant};

use redis::{RedisResult, Value};

use super::field_owner::probe;
use super::raw::{resource_conn, Target};
use super::rw_conn::{lease_ms, mode_arg, Node};
use super::ticket::{ask, End, Receiver};
use super::{Ctx, LEASE};
use crate::history::{Event, Mode, Section, Wait};
use crate::resource::Stamp;

pub use super::rw_conn::RW_KEYS;
/// The worker's own safety margin on its lease.
pub(super) const MARGIN: Duration = Duration::from_millis(50);
/// Commands that do not wait get their reply within this.
const REPLY: Duration = Duration::from_secs(10);
/// How long the work goes on between two renewals.
const RENEW_EVERY: Duration = Duration::from_millis(600);

/// A holding being held: its holds, and until when the worker believes it holds them
/// (from the send of the command that last set its lease).
pub(super) struct Holding {
    pub key: String,
    pub owner: String,
    pub token: u64,
    pub reads: u32,
    pub writes: u32,
    pub deadline: Instant,
    /// A release was not answered with a count: the holds may still be there.
    pub unsure: bool,
}

impl Holding {
    pub fn lost(&self) -> bool {
        Instant::now() >= self.deadline
    }
}

/// One worker's connections (its steps while holding are in `rw_steps.rs`).
pub(super) struct Rw<'a> {
    pub ctx: &'a Ctx,
    pub node: Node,
    /// Where tickets' outcomes come (opened when first needed), when tickets are used.
    receiver: Option<Receiver>,
    tickets: bool,
    pub res: &'a mut redis::Connection,
    pub name: &'a str,
}

/// What an acquisition brought.
enum Got {
    Token(i64),
    /// Not granted within its `WAIT`.
    Busy,
    /// An error reply: nothing was granted.
    Failed,
    /// No reply, or the connection broke first: a grant may have been made that nobody
    /// could be told of (it ends with its lease, as the interface says).
    Unknown,
}

/// One worker thread until the run stops; with `tickets`, 3 acquisitions in 10 are
/// tickets (`RWLOCK.WAIT`, their outcomes pushed on a RESP3 connection; not in a cluster).
pub fn run(ctx: Arc<Ctx>, target: Target, name: String, tickets: bool) {
    let Some(mut res) = resource_conn(&ctx) else {
        return;
    };
    let mut n = 0u64;
    while !ctx.stopped() {
        let Some(node) = target().and_then(Node::open) else {
            std::thread::sleep(Duration::from_millis(100));
            continue;
        };
        let mut w = Rw {
            ctx: &ctx,
            node,
            receiver: None,
            tickets,
            res: &mut res,
            name: &name,
        };
        // Until the run stops or the connection breaks (then a new one).
        while !ctx.stopped() {
            n += 1;
            if !w.round(n) {
                break;
            }
        }
    }
}

impl Rw<'_> {
    /// A reply the interface rules out.
    pub fn wrong(&self, key: &str, what: String) {
        eprintln!("{}: wrong reply on {key}: {what}", self.name);
        self.ctx.history.push(Event::Wrong {
            worker: self.name.to_owned(),
            key: key.to_owned(),
            what,
        });
    }

    pub fn call(&mut self, cmd: &redis::Cmd) -> RedisResult<Value> {
        self.node.call(cmd, REPLY)
    }

    /// One acquisition of a fresh owner, and its holding if granted; false when the
    /// connection broke.
    fn round(&mut self, n: u64) -> bool {
        let (ctx, name) = (self.ctx, self.name);
        if ctx.rng.chance(5) {
            if let Some((key, what)) = probe(&mut self.node, &ctx.rng, &ctx.keys) {
                self.wrong(&key, what);
            }
        }
        let (key, owner) = (ctx.rng.pick(RW_KEYS).to_string(), format!("{name}:{n}"));
        let mode = if ctx.rng.chance(30) {
            Mode::Write
        } else {
            Mode::Read
        };
        let wait = ctx.rng.millis(0, 2000);
        // Believed from before the acquisition to after the release (`unbelieve`).
        ctx.history.believe(&key, &owner, true);
        let sent = Instant::now();
        let (got, sound) = if self.tickets && ctx.rng.chance(30) {
            self.by_ticket(&key, &owner, mode, wait)
        } else {
            self.by_wait(&key, &owner, mode, wait)
        };
        match got {
            Got::Token(_) => {}
            // Believed until a grant made as the connection broke would have ended.
            Got::Unknown => self.unbelieve_after_a_lease(&key, &owner),
            Got::Busy | Got::Failed => ctx.history.believe(&key, &owner, false),
        }
        match got {
            Got::Token(token) => {
                ctx.history.acquired(name, true);
                let mut h = Holding {
                    key,
                    owner,
                    token: token.unsigned_abs(),
                    reads: u32::from(mode == Mode::Read),
                    writes: u32::from(mode == Mode::Write),
                    deadline: sent + LEASE - MARGIN,
                    unsure: false,
                };
                let released = self.hold(&mut h);
                self.unbelieve(&h, released);
                released && sound && !self.node.dead
            }
            Got::Busy => sound && !self.node.dead,
            Got::Failed | Got::Unknown => {
                ctx.history.acquired(name, false);
                std::thread::sleep(Duration::from_millis(50));
                sound && !self.node.dead
            }
        }
    }

    /// `RWLOCK.ACQUIRE ... WAIT` on the node: what it brought, and whether the connection
    /// is sound (one reply; a demoted master's `READONLY` asks for the master again).
    fn by_wait(&mut self, key: &str, owner: &str, mode: Mode, wait: Duration) -> (Got, bool) {
        let mut event = Wait {
            worker: self.name.to_owned(),
            key: key.to_owned(),
            replies: 0,
            conn_error: false,
        };
        let mut cmd = redis::cmd("RWLOCK.ACQUIRE");
        cmd.arg(key).arg(owner).arg(mode_arg(mode));
        cmd.arg("LEASE").arg(lease_ms());
        cmd.arg("WAIT").arg(wait.as_millis() as u64);
        let reply = self.node.wait(&cmd, wait, &mut event);
        let sound = !event.conn_error && event.replies == 1;
        self.ctx.history.push(Event::Wait(event));
        match reply {
            Some(Ok(Value::Int(token))) => (Got::Token(token), sound),
            Some(Ok(_)) => (Got::Busy, sound),
            Some(Err(e)) if e.code() == Some("READONLY") => (Got::Failed, false),
            Some(Err(_)) => (Got::Failed, sound),
            None => (Got::Unknown, sound),
        }
    }

    /// `RWLOCK.WAIT` on the receiver, its ticket followed (and cancelled now and then) as
    /// the ticket workers do.
    fn by_ticket(&mut self, key: &str, owner: &str, mode: Mode, wait: Duration) -> (Got, bool) {
        if self.receiver.is_none() {
            self.receiver = Receiver::open(self.node.port);
        }
        let Some(r) = self.receiver.as_mut() else {
            return (Got::Failed, true);
        };
        let (lease, wait_ms) = (lease_ms().to_string(), wait.as_millis().to_string());
        let args = ["LEASE", &lease, "WAIT", &wait_ms];
        let command = [&["RWLOCK.WAIT", key, owner, mode_arg(mode)][..], &args].concat();
        match ask(self.ctx, r, &command, wait, self.name) {
            End::Granted(token) => {
                super::rw_tally::tally(super::rw_tally::TICKET_GRANT);
                (Got::Token(token), true)
            }
            End::Not => (Got::Failed, true),
            End::Broken => {
                self.receiver = None;
                (Got::Unknown, true)
            }
        }
    }

    /// Holds `h` through its sections, then releases it; false when the connection broke.
    fn hold(&mut self, h: &mut Holding) -> bool {
        let rng = &self.ctx.rng;
        if rng.chance(15) && !self.reenter(h) {
            return false;
        }
        if h.writes == 0 && rng.chance(10) && !self.upgrade(h) {
            return false;
        }
        self.section(h);
        if h.writes > 0 && rng.chance(30) {
            if !self.downgrade(h) {
                return false;
            }
            if h.writes == 0 && h.reads > 0 {
                self.section(h);
            }
        }
        if self.ctx.ignore_loss && rng.chance(10) {
            // The unsafe switch: a holding forgotten, never released (a leaked hold).
            return true;
        }
        self.release(h)
    }

    /// Writes begin (a reader checks the fence), works, writes end: as the raw workers,
    /// with renewals, fenced writes, and the section's mode.
    fn section(&mut self, h: &mut Holding) {
        let ctx = self.ctx;
        let read = h.writes == 0;
        let (owner, key) = (h.owner.clone(), h.key.clone());
        let stamp = |token| Stamp {
            key: &key,
            owner: &owner,
            token,
            fenced: true,
        };
        let Some(begin) = ctx.resource.stamp_sync(self.res, &stamp(h.token), read) else {
            return;
        };
        self.work(h);
        let end = if ctx.ignore_loss || !h.lost() {
            ctx.resource.stamp_sync(self.res, &stamp(h.token), read)
        } else {
            None
        };
        let section = Section {
            worker: self.name.to_owned(),
            key: h.key.clone(),
            owner: h.owner.clone(),
            token: h.token,
            fenced: true,
            lease_ms: lease_ms(),
            begin,
            end,
            believed: ctx.ignore_loss || !h.lost(),
            mode: if read { Mode::Read } else { Mode::Write },
        };
        ctx.history.push(Event::Section(section));
    }

    /// Works for a while: a fenced write now and then, and renewals now and then (never
    /// with the unsafe switch, which holds past its lease).
    fn work(&mut self, h: &mut Holding) {
        let rng = &self.ctx.rng;
        let until = Instant::now() + self.ctx.work();
        if rng.chance(40) {
            self.fenced(h);
        }
        let renews = !self.ctx.ignore_loss && rng.chance(50);
        loop {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            std::thread::sleep(left.min(RENEW_EVERY));
            if renews && !h.lost() && Instant::now() < until {
                self.renew(h);
            }
        }
    }
}
