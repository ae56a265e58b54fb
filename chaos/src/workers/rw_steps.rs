//! A read-write worker's steps while it holds: a reentry, an upgrade that must be refused,
//! fenced writes, renewals, the downgrade, and the releases. Each reply is checked against
//! the interface while the holding's lease still ran when it came (the server answered
//! before the lease the worker counts from its send could end); a later reply proves
//! nothing, and the worker follows what the server says.

use std::time::{Duration, Instant};

use redis::{RedisError, RedisResult, Value};

use super::rw::{Holding, Rw, MARGIN};
use super::rw_conn::{broken, lease_ms, mode_arg};
use super::rw_tally::{
    tally, DOWNGRADE, FENCED_REFUSED, FENCED_WRITE, REENTRY, RENEWAL, UPGRADE_REFUSED,
};
use super::LEASE;
use crate::history::{now_us, Event, Mode};

/// How long past the latest end of its lease a hold whose release went unanswered may stay
/// (the server's timer and its samples' own delay).
const HOLD_SLACK: Duration = Duration::from_millis(150);

/// An error the interface gives for a refusal (not a passing state of the server, such as
/// `TRYAGAIN`, `LOADING`, `READONLY` or `OOM`).
fn refusal(e: &RedisError) -> bool {
    matches!(e.code(), Some("NOTHELD" | "FENCED" | "WRONGTYPE" | "ERR"))
}

fn holds(h: &mut Holding, mode: Mode) -> &mut u32 {
    if mode == Mode::Write {
        &mut h.writes
    } else {
        &mut h.reads
    }
}

impl Rw<'_> {
    /// Ends the worker's belief in `h`: now when every release was answered (`released`:
    /// and the connection held), else when its lease has surely ended, when the holds end
    /// anyway. That is a lease from now: `h.deadline` is the lease's earliest end, counted
    /// from the send of the command that set it, and a wait or a renewal may have set it
    /// up to the moment its reply came.
    pub fn unbelieve(&self, h: &Holding, released: bool) {
        if released && !h.unsure {
            return self.ctx.history.believe(&h.key, &h.owner, false);
        }
        self.unbelieve_after_a_lease(&h.key, &h.owner);
    }

    /// Ends the belief in `owner`'s holds of `key` when a lease set by now has surely ended.
    pub fn unbelieve_after_a_lease(&self, key: &str, owner: &str) {
        self.ctx.history.push(Event::Belief {
            t_us: now_us() + (LEASE + HOLD_SLACK).as_micros() as u64,
            key: key.to_owned(),
            owner: owner.to_owned(),
            begin: false,
        });
    }

    /// `RWLOCK.ACQUIRE key owner MODE LEASE ms`, without `WAIT`: the reply, when it was sent.
    fn acquire_now(&mut self, h: &Holding, mode: Mode) -> (RedisResult<Value>, Instant) {
        let mut cmd = redis::cmd("RWLOCK.ACQUIRE");
        cmd.arg(&h.key).arg(&h.owner).arg(mode_arg(mode));
        cmd.arg("LEASE").arg(lease_ms());
        let sent = Instant::now();
        (self.call(&cmd), sent)
    }

    /// Takes a hold of `mode` that `reply` granted: the holding's token must stay (a token
    /// that changed after the lease ran out is a fresh holding: the old holds are gone).
    fn granted(&mut self, h: &mut Holding, mode: Mode, token: i64, sent: Instant, what: &str) {
        let in_time = !h.lost();
        if token.unsigned_abs() != h.token {
            if in_time {
                let told = format!("{what} gave token {token}, not {}", h.token);
                self.wrong(&h.key, format!("{}: {told}", h.owner));
            } else {
                (h.reads, h.writes) = (0, 0);
            }
            h.token = token.unsigned_abs();
        }
        *holds(h, mode) += 1;
        h.deadline = sent + LEASE - MARGIN;
    }

    /// Asks again the mode it holds: a reentry, granted at once, keeping the token.
    pub fn reenter(&mut self, h: &mut Holding) -> bool {
        let mode = if h.writes > 0 {
            Mode::Write
        } else {
            Mode::Read
        };
        let (reply, sent) = self.acquire_now(h, mode);
        match reply {
            Ok(Value::Int(token)) => {
                tally(REENTRY);
                self.granted(h, mode, token, sent, "a reentry");
            }
            Ok(other) if !h.lost() => {
                let what = format!("{}: a reentry got {other:?}", h.owner);
                self.wrong(&h.key, what);
            }
            Err(e) if broken(&e) => return false,
            _ => {}
        }
        true
    }

    /// A reader asks `WRITE`: an upgrade, refused at once with an error naming it.
    pub fn upgrade(&mut self, h: &mut Holding) -> bool {
        let (reply, _) = self.acquire_now(h, Mode::Write);
        let in_time = !h.lost();
        let what = match reply {
            Err(e) if broken(&e) => return false,
            Err(e) if in_time && e.code() == Some("ERR") && !e.to_string().contains("upgrade") => {
                format!("an upgrade was refused without naming it: {e}")
            }
            Err(e) => {
                if e.to_string().contains("upgrade") {
                    tally(UPGRADE_REFUSED);
                }
                return true;
            }
            Ok(Value::Int(token)) => {
                // Granted: an upgrade, or a fresh holding after the lease ran out.
                let mut cmd = redis::cmd("RWLOCK.RELEASE");
                cmd.arg(&h.key)
                    .arg(&h.owner)
                    .arg("WRITE")
                    .arg("TOKEN")
                    .arg(token);
                if let Err(e) = self.call(&cmd) {
                    h.unsure = true;
                    return !broken(&e);
                }
                if !in_time {
                    return true;
                }
                format!("a reader's WRITE was granted (token {token})")
            }
            Ok(_) if !in_time => return true,
            Ok(other) => format!("a reader's WRITE got {other:?}, not the upgrade error"),
        };
        self.wrong(&h.key, format!("{}: {what}", h.owner));
        true
    }

    /// `LOCK.FENCED ... INCR <key>:n`: a writer's runs while it holds, a reader's never.
    pub fn fenced(&mut self, h: &Holding) {
        let mut cmd = redis::cmd("LOCK.FENCED");
        cmd.arg(&h.key).arg(&h.owner).arg(h.token);
        cmd.arg("INCR").arg(format!("{}:n", h.key));
        let reply = self.call(&cmd);
        let (in_time, writer) = (!h.lost(), h.writes > 0);
        let what = match reply {
            Ok(_) if !writer => "a reader's fenced write was accepted".to_owned(),
            Err(e) if in_time && writer && refusal(&e) => {
                format!("a writer's fenced write was refused: {e}")
            }
            Err(e) if in_time && !writer && refusal(&e) && e.code() != Some("NOTHELD") => {
                format!("a reader's fenced write was refused, but not with NOTHELD: {e}")
            }
            Ok(_) => return tally(FENCED_WRITE),
            Err(e) if e.code() == Some("NOTHELD") && !writer => return tally(FENCED_REFUSED),
            _ => return,
        };
        self.wrong(&h.key, format!("{}: {what}", h.owner));
    }

    /// `RWLOCK.RENEW ... TOKEN`: 1 while the holding is there, its lease reset.
    pub fn renew(&mut self, h: &mut Holding) {
        let mut cmd = redis::cmd("RWLOCK.RENEW");
        cmd.arg(&h.key).arg(&h.owner).arg("LEASE").arg(lease_ms());
        cmd.arg("TOKEN").arg(h.token);
        let sent = Instant::now();
        match self.call(&cmd) {
            Ok(Value::Int(1)) => {
                tally(RENEWAL);
                h.deadline = sent + LEASE - MARGIN;
            }
            Ok(other) if !h.lost() => {
                let what = format!("{}: a renewal got {other:?}", h.owner);
                self.wrong(&h.key, what);
            }
            _ => {}
        }
    }

    /// A writer takes a read hold (at once, keeping the token) and releases its write
    /// holds: it holds reads only from then on.
    pub fn downgrade(&mut self, h: &mut Holding) -> bool {
        let (reply, sent) = self.acquire_now(h, Mode::Read);
        match reply {
            Ok(Value::Int(token)) => self.granted(h, Mode::Read, token, sent, "a writer's READ"),
            Ok(other) => {
                if !h.lost() {
                    let what = format!("{}: a writer's READ got {other:?}", h.owner);
                    self.wrong(&h.key, what);
                }
                return true;
            }
            Err(e) => return !broken(&e),
        }
        tally(DOWNGRADE);
        self.release_mode(h, Mode::Write)
    }

    /// Releases every hold: writes, then reads.
    pub fn release(&mut self, h: &mut Holding) -> bool {
        self.release_mode(h, Mode::Write) && self.release_mode(h, Mode::Read)
    }

    /// Releases the holds of `mode` one by one: each reply counts those left.
    fn release_mode(&mut self, h: &mut Holding, mode: Mode) -> bool {
        while *holds(h, mode) > 0 {
            *holds(h, mode) -= 1;
            let left = i64::from(*holds(h, mode));
            let mut cmd = redis::cmd("RWLOCK.RELEASE");
            cmd.arg(&h.key).arg(&h.owner).arg(mode_arg(mode));
            cmd.arg("TOKEN").arg(h.token);
            let reply = self.call(&cmd);
            h.unsure |= !matches!(reply, Ok(Value::Int(_)));
            let what = match reply {
                Ok(Value::Int(n)) if n == left => continue,
                Err(e) if broken(&e) => return false,
                _ if h.lost() => continue,
                Err(e) if !refusal(&e) => continue,
                Err(e) => format!("a release of {} was refused: {e}", mode_arg(mode)),
                Ok(other) => format!("a release of {} got {other:?}, not {left}", mode_arg(mode)),
            };
            self.wrong(&h.key, format!("{}: {what}", h.owner));
        }
        true
    }
}
