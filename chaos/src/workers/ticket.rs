//! Ticket workers (`LOCK.WAIT`): many waits' outcomes pushed over one RESP3 connection, as a
//! client in any language can use them. Each round queues a ticket, and now and then cancels
//! it (`LOCK.CANCEL`) at a random moment, racing its grant. Every ticket must end exactly
//! once: one pushed outcome, or a cancel answered 0 and no outcome; a `PING` after the end
//! brings any second outcome to light. A grant whose cancel came too late is released.

use std::io::Write as _;
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use redis::{Parser, PushKind, Value};

use super::raw::{resource_conn, section, Target};
use super::{Ctx, Draft, LEASE};
use crate::history::{Event, Wait};

/// How long past its `WAIT` an outcome may take before it counts as lost (past any fault).
const OUTCOME_SLACK: Duration = Duration::from_secs(30);
/// The worker's own safety margin on its lease.
const MARGIN: Duration = Duration::from_millis(50);

/// A RESP3 connection subscribed to its ticket channel.
pub(super) struct Receiver {
    stream: TcpStream,
    parser: Parser,
    /// Outcomes pushed while a reply was read: (wait id, outcome).
    early: Vec<(i64, String)>,
}

impl Receiver {
    pub(super) fn open(port: u16) -> Option<Receiver> {
        let stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
        stream.set_nodelay(true).ok()?;
        let mut r = Receiver {
            stream,
            parser: Parser::new(),
            early: Vec::new(),
        };
        r.call(&["HELLO", "3"], Duration::from_secs(2))?;
        let Value::Int(id) = r.call(&["CLIENT", "ID"], Duration::from_secs(2))? else {
            return None;
        };
        r.send(&["SUBSCRIBE", &format!("__rlock__:{id}")])?;
        match r.frame(Duration::from_secs(2)) {
            Ok(Some(Value::Push {
                kind: PushKind::Subscribe,
                ..
            })) => Some(r),
            _ => None,
        }
    }

    fn send(&mut self, args: &[&str]) -> Option<()> {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            out.extend_from_slice(format!("${}\r\n{a}\r\n", a.len()).as_bytes());
        }
        self.stream.write_all(&out).ok()
    }

    /// The next frame within `limit`: `Ok(None)` when none came in time, `Err` when the
    /// connection broke.
    fn frame(&mut self, limit: Duration) -> Result<Option<Value>, ()> {
        let limit = limit.max(Duration::from_millis(1));
        self.stream.set_read_timeout(Some(limit)).map_err(drop)?;
        match self.parser.parse_value(&mut self.stream) {
            Ok(frame) => Ok(Some(frame)),
            Err(e) if e.is_timeout() => Ok(None),
            Err(_) => Err(()),
        }
    }

    /// The next reply that is not an outcome (outcomes read on the way are kept); `None`
    /// when the connection broke or no reply came in time.
    fn reply(&mut self, limit: Duration) -> Option<Value> {
        loop {
            let frame = self.frame(limit).ok()??;
            match outcome_of(&frame) {
                Some(outcome) => self.early.push(outcome),
                None => return Some(frame),
            }
        }
    }

    fn call(&mut self, args: &[&str], limit: Duration) -> Option<Value> {
        self.send(args)?;
        self.reply(limit)
    }

    /// The outcome of the wait `id`, if it comes within `limit`; `Err` when the connection
    /// broke.
    fn outcome(&mut self, id: i64, limit: Duration) -> Result<Option<String>, ()> {
        if let Some(at) = self.early.iter().position(|(w, _)| *w == id) {
            return Ok(Some(self.early.remove(at).1));
        }
        let deadline = Instant::now() + limit;
        loop {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                return Ok(None);
            };
            let Some(frame) = self.frame(left)? else {
                return Ok(None);
            };
            match outcome_of(&frame) {
                Some((w, outcome)) if w == id => return Ok(Some(outcome)),
                Some(other) => self.early.push(other),
                // A reply nobody asked for: the connection is out of step.
                None => return Err(()),
            }
        }
    }

    /// Outcomes of `id` that came after its end: brought in by a `PING`'s reply.
    fn late_outcomes(&mut self, id: i64) -> Option<usize> {
        self.call(&["PING"], Duration::from_secs(10))?;
        let late = self.early.iter().filter(|(w, _)| *w == id).count();
        self.early.retain(|(w, _)| *w != id);
        Some(late)
    }
}

/// A pushed outcome: a message `<wait id> <outcome>`.
fn outcome_of(frame: &Value) -> Option<(i64, String)> {
    let Value::Push {
        kind: PushKind::Message,
        data,
    } = frame
    else {
        return None;
    };
    let Some(Value::BulkString(payload)) = data.get(1) else {
        return None;
    };
    let payload = String::from_utf8_lossy(payload);
    let (id, outcome) = payload.split_once(' ')?;
    Some((id.parse().ok()?, outcome.to_owned()))
}

/// One worker thread until the run stops.
pub fn run(ctx: Arc<Ctx>, target: Target, name: String) {
    let Some(mut res) = resource_conn(&ctx) else {
        return;
    };
    while !ctx.stopped() {
        let Some(mut r) = target().and_then(Receiver::open) else {
            std::thread::sleep(Duration::from_millis(100));
            continue;
        };
        while !ctx.stopped() && round(&ctx, &mut r, &mut res, &name) {}
    }
}

/// How one ticket ended.
pub(super) enum End {
    Granted(i64),
    Not,
    Broken,
}

/// One ticket, and a section if it was granted; false when the connection is broken.
fn round(ctx: &Ctx, r: &mut Receiver, res: &mut redis::Connection, name: &str) -> bool {
    let (key, owner) = (ctx.key(), format!("ticket:{name}"));
    let wait = ctx.rng.millis(0, 2000);
    let sent = Instant::now();
    let lease = LEASE.as_millis().to_string();
    let wait_ms = wait.as_millis().to_string();
    let command = ["LOCK.WAIT", &key, &owner, "LEASE", &lease, "WAIT", &wait_ms];
    match ask(ctx, r, &command, wait, name) {
        End::Granted(token) => {
            ctx.history.acquired(name, true);
            let draft = Draft {
                worker: name.to_owned(),
                key: key.clone(),
                owner: owner.clone(),
                token: token.unsigned_abs(),
                fenced: true,
                lease_ms: LEASE.as_millis() as u64,
            };
            section(ctx, res, draft, sent + LEASE - MARGIN);
            release(r, &key, &owner, token)
        }
        End::Not => {
            ctx.history.acquired(name, false);
            true
        }
        End::Broken => false,
    }
}

/// Sends a wait (`LOCK.WAIT`, `RWLOCK.WAIT` or `LATCH.WAIT key ...`, of `wait`) on `r` and follows its
/// ticket to its end; a queued ticket's replies are recorded as a [`Wait`] of `name`.
pub(super) fn ask(
    ctx: &Ctx,
    r: &mut Receiver,
    command: &[&str],
    wait: Duration,
    name: &str,
) -> End {
    let key = command[1];
    let mut event = Wait {
        worker: name.to_owned(),
        key: key.to_owned(),
        replies: 0,
        conn_error: false,
    };
    match r.call(command, Duration::from_secs(10)) {
        Some(Value::Array(answer)) => match (answer.first(), answer.get(1)) {
            // `held` and a token, or a latch's `done` and 1 (open at once).
            (Some(tag), Some(Value::Int(n))) if is(tag, "held") || is(tag, "done") => {
                End::Granted(*n)
            }
            (Some(tag), Some(Value::Int(id))) if is(tag, "queued") => {
                let end = follow(ctx, r, (key, *id), wait, &mut event);
                if !event.conn_error {
                    match r.late_outcomes(*id) {
                        Some(late) => event.replies += u8::try_from(late).unwrap_or(u8::MAX),
                        None => event.conn_error = true,
                    }
                }
                ctx.history.push(Event::Wait(event));
                end
            }
            _ => End::Not,
        },
        Some(_) => End::Not,
        None => End::Broken,
    }
}

/// Waits for the outcome of the ticket `id` on `key`, cancelling it now and then (racing
/// its grant); counts its ends in `event`.
fn follow(
    ctx: &Ctx,
    r: &mut Receiver,
    (key, id): (&str, i64),
    wait: Duration,
    event: &mut Wait,
) -> End {
    let broken = |event: &mut Wait| {
        event.conn_error = true;
        End::Broken
    };
    if ctx.rng.chance(4) {
        let before = ctx.rng.millis(0, wait.as_millis().max(1) as u64);
        match r.outcome(id, before) {
            Ok(Some(outcome)) => return ended(event, &outcome),
            Ok(None) => {}
            Err(()) => return broken(event),
        }
        let cancel = ["LOCK.CANCEL", key, &id.to_string()];
        match r.call(&cancel, Duration::from_secs(10)) {
            // Out of the queue: no outcome may come (`late_outcomes` checks).
            Some(Value::Int(0)) => {
                event.replies += 1;
                return End::Not;
            }
            // Too late (the outcome is here or on its way), or refused: it still ends once.
            Some(_) => {}
            None => return broken(event),
        }
    }
    match r.outcome(id, wait + OUTCOME_SLACK) {
        Ok(Some(outcome)) => ended(event, &outcome),
        // Lost: no outcome at all (counted by the checker).
        Ok(None) => End::Not,
        Err(()) => broken(event),
    }
}

/// A ticket's outcome: a token, 0 (its `WAIT` ran out), or `-error`.
fn ended(event: &mut Wait, outcome: &str) -> End {
    event.replies += 1;
    match outcome.parse::<i64>() {
        Ok(token) if token > 0 => End::Granted(token),
        _ => End::Not,
    }
}

fn release(r: &mut Receiver, key: &str, owner: &str, token: i64) -> bool {
    let command = ["LOCK.RELEASE", key, owner, "TOKEN", &token.to_string()];
    r.call(&command, Duration::from_secs(10)).is_some()
}

fn is(tag: &Value, text: &str) -> bool {
    match tag {
        Value::SimpleString(s) => s == text,
        Value::BulkString(b) => b == text.as_bytes(),
        _ => false,
    }
}
