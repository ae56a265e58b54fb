//! Latch workers: each round a coordinator sets a count of 3 on a fresh key
//! (`LATCH.SET`), then 3 counters each send one `LATCH.COUNTDOWN` after a random pause,
//! while 2 waiters wait with `LATCH.AWAIT ... WAIT` (raw commands, following a cluster's
//! redirections) or, 3 times in 10 outside a cluster, with a `LATCH.WAIT` ticket followed
//! (and now and then cancelled) as the ticket workers do. The count-downs' sends and the
//! waits' ends are recorded ([`Latch`]; a ticket only when it opened: its 0 may be a
//! cancel); the checker judges them. The unsafe switch counts an `AWAIT` that timed out as
//! released.

use std::sync::Arc;
use std::time::Duration;

use redis::Value;

use super::raw::Target;
use super::rw_conn::Node;
use super::sem_tally::{tally, OPENED, TICKET_OPENED, TIMED_OUT};
use super::ticket::{ask, End, Receiver};
use super::Ctx;
use crate::history::{now_us, Event, Wait};
use crate::history_sem::Latch;

/// The count each round sets, and so the counters it starts.
const COUNT: u64 = 3;
const WAITERS: usize = 2;
const REPLY: Duration = Duration::from_secs(10);

/// One coordinator thread (and its rounds' threads) until the run stops.
pub fn run(ctx: Arc<Ctx>, target: Target, name: String, tickets: bool) {
    let mut n = 0u64;
    while !ctx.stopped() {
        n += 1;
        let key = format!("latch:{{{name}}}:{n}");
        if !set(&ctx, &target, &key) {
            std::thread::sleep(Duration::from_millis(100));
            continue;
        }
        std::thread::scope(|s| {
            for _ in 0..COUNT {
                s.spawn(|| count_down(&ctx, &target, &key));
            }
            for i in 0..WAITERS {
                let worker = format!("{name}w{i}");
                let (ctx, target, key) = (&ctx, &target, &key);
                if tickets && ctx.rng.chance(30) {
                    s.spawn(move || ticket(ctx, target, key, &worker));
                } else {
                    s.spawn(move || wait(ctx, target, key, &worker));
                }
            }
        });
    }
}

/// `LATCH.SET key 3` on the fresh key: whether it answered 1.
fn set(ctx: &Ctx, target: &Target, key: &str) -> bool {
    let Some(mut node) = target().and_then(Node::open) else {
        return false;
    };
    let reply = node.call(redis::cmd("LATCH.SET").arg(key).arg(COUNT), REPLY);
    if !matches!(reply, Ok(Value::Int(1))) {
        return false;
    }
    let (key, count) = (key.to_owned(), COUNT);
    ctx.history.push(Event::Latch(Latch::Set { key, count }));
    true
}

/// One `LATCH.COUNTDOWN` after a random pause, recorded before it is sent (never again).
fn count_down(ctx: &Ctx, target: &Target, key: &str) {
    std::thread::sleep(ctx.rng.millis(0, 1500));
    let Some(mut node) = target().and_then(Node::open) else {
        return;
    };
    let (key, sent_us) = (key.to_owned(), now_us());
    let cmd = redis::cmd("LATCH.COUNTDOWN").arg(&key).to_owned();
    ctx.history.push(Event::Latch(Latch::Down { key, sent_us }));
    let _ = node.call(&cmd, REPLY);
}

/// `LATCH.AWAIT key WAIT ms`, its reply recorded (1: released, 0: timed out).
fn wait(ctx: &Ctx, target: &Target, key: &str, worker: &str) {
    let Some(mut node) = target().and_then(Node::open) else {
        return;
    };
    let wait = ctx.rng.millis(200, 3000);
    let wait_ms = wait.as_millis() as u64;
    let mut cmd = redis::cmd("LATCH.AWAIT");
    cmd.arg(key).arg("WAIT").arg(wait_ms);
    let mut event = Wait {
        worker: worker.to_owned(),
        key: key.to_owned(),
        replies: 0,
        conn_error: false,
    };
    let sent_us = now_us();
    let reply = node.wait(&cmd, wait, &mut event);
    let got_us = now_us();
    ctx.history.push(Event::Wait(event));
    let released = match reply {
        Some(Ok(Value::Int(1))) => {
            tally(OPENED);
            true
        }
        Some(Ok(Value::Int(0))) => {
            tally(TIMED_OUT);
            // The unsafe switch: a timeout counted as a release.
            ctx.ignore_loss
        }
        _ => return,
    };
    record(ctx, (key, worker), (sent_us, got_us), wait_ms, released);
}

/// `LATCH.WAIT key WAIT ms` on a receiver of its own: recorded when it opened (at once,
/// or pushed 1).
fn ticket(ctx: &Ctx, target: &Target, key: &str, worker: &str) {
    let Some(mut r) = target().and_then(Receiver::open) else {
        return;
    };
    let wait = ctx.rng.millis(200, 3000);
    let wait_ms = wait.as_millis() as u64;
    let command = ["LATCH.WAIT", key, "WAIT", &wait_ms.to_string()];
    let sent_us = now_us();
    if let End::Granted(1) = ask(ctx, &mut r, &command, wait, worker) {
        tally(TICKET_OPENED);
        record(ctx, (key, worker), (sent_us, now_us()), wait_ms, true);
    }
}

/// A wait's end: sent at `sent_us`, its reply (and the `PING` after it) back at `got_us`.
fn record(
    ctx: &Ctx,
    (key, worker): (&str, &str),
    (sent_us, got_us): (u64, u64),
    wait_ms: u64,
    released: bool,
) {
    ctx.history.push(Event::Latch(Latch::Wait {
        worker: worker.to_owned(),
        key: key.to_owned(),
        sent_us,
        got_us,
        wait_ms,
        released,
    }));
}
