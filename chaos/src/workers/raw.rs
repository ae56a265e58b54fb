//! Raw `LOCK.*` workers, as redis-cli users send them: `LOCK.ACQUIRE ... LEASE ... WAIT`
//! on a plain connection, `LOCK.RELEASE ... TOKEN`. Each wait must get exactly one reply:
//! after it, a `PING` must be answered `PONG`, not by a second reply.

use std::sync::Arc;
use std::time::{Duration, Instant};

use redis::Value;

/// What one `LOCK.ACQUIRE` brought.
enum Outcome {
    Granted(u64),
    Busy,
    Failed,
}

use super::{Ctx, Draft, LEASE};
use crate::history::{Event, Wait};
use crate::resource::Stamp;

/// How long past its `WAIT` a reply may take before it counts as lost (past any fault).
const REPLY_SLACK: Duration = Duration::from_secs(30);
/// The raw client's own safety margin on its lease.
const MARGIN: Duration = Duration::from_millis(50);

/// Which port to reach the lock server on now (the master's, in a Sentinel deployment).
pub type Target = Arc<dyn Fn() -> Option<u16> + Send + Sync>;

fn open(port: u16) -> Option<redis::Connection> {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}/")).ok()?;
    client
        .get_connection_with_timeout(Duration::from_secs(1))
        .ok()
}

/// A connection to the resource, retried until the run stops.
pub fn resource_conn(ctx: &Ctx) -> Option<redis::Connection> {
    while !ctx.stopped() {
        if let Some(conn) = open(ctx.resource.port) {
            return Some(conn);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    None
}

/// Writes begin, works, writes end, as the async workers do.
pub fn section(ctx: &Ctx, res: &mut redis::Connection, draft: Draft, deadline: Instant) {
    let lost = || Instant::now() >= deadline;
    let s = Stamp {
        key: &draft.key,
        owner: &draft.owner,
        token: draft.token,
        fenced: draft.fenced,
    };
    let Some(begin) = ctx.resource.write_sync(res, &s) else {
        return;
    };
    std::thread::sleep(ctx.work());
    let end = if ctx.ignore_loss || !lost() {
        ctx.resource.write_sync(res, &s)
    } else {
        None
    };
    let believed = ctx.ignore_loss || !lost();
    ctx.history
        .push(Event::Section(draft.finish(begin, end, believed)));
}

/// One worker thread until the run stops.
pub fn run(ctx: Arc<Ctx>, target: Target, name: String) {
    let Some(mut res) = resource_conn(&ctx) else {
        return;
    };
    while !ctx.stopped() {
        let Some(mut conn) = target().and_then(open) else {
            std::thread::sleep(Duration::from_millis(100));
            continue;
        };
        while !ctx.stopped() && round(&ctx, &mut conn, &mut res, &name) {}
    }
}

/// One acquisition, and a section if it was granted; false when the connection is broken.
fn round(ctx: &Ctx, conn: &mut redis::Connection, res: &mut redis::Connection, name: &str) -> bool {
    let (key, owner) = (ctx.key(), format!("raw:{name}"));
    let wait = ctx.rng.millis(0, 2000);
    let sent = Instant::now();
    let (reply, wait_event) = acquire(conn, &key, &owner, wait, name);
    let sound = !wait_event.conn_error && wait_event.replies == 1;
    ctx.history.push(Event::Wait(wait_event));
    match reply {
        Outcome::Granted(token) => {
            ctx.history.acquired(name, true);
            let draft = Draft {
                worker: name.to_owned(),
                key: key.clone(),
                owner: owner.clone(),
                token,
                fenced: true,
                lease_ms: LEASE.as_millis() as u64,
            };
            section(ctx, res, draft, sent + LEASE - MARGIN);
            let mut release = redis::cmd("LOCK.RELEASE");
            release.arg(&key).arg(&owner).arg("TOKEN").arg(token);
            let released = release.exec(conn);
            sound && !released.is_err_and(|e| e.is_io_error() || e.is_timeout())
        }
        Outcome::Failed => {
            ctx.history.acquired(name, false);
            std::thread::sleep(Duration::from_millis(50));
            sound
        }
        Outcome::Busy => sound,
    }
}

/// Sends one `LOCK.ACQUIRE ... WAIT` and counts its replies: the reply, then a `PING`
/// that must come back `PONG`.
fn acquire(
    conn: &mut redis::Connection,
    key: &str,
    owner: &str,
    wait: Duration,
    name: &str,
) -> (Outcome, Wait) {
    let mut event = Wait {
        worker: name.to_owned(),
        key: key.to_owned(),
        replies: 0,
        conn_error: false,
    };
    let _ = conn.set_read_timeout(Some(wait + REPLY_SLACK));
    let mut cmd = redis::cmd("LOCK.ACQUIRE");
    cmd.arg(key)
        .arg(owner)
        .arg("LEASE")
        .arg(LEASE.as_millis() as u64);
    cmd.arg("WAIT").arg(wait.as_millis() as u64);
    let outcome = match cmd.query::<Value>(conn) {
        Ok(Value::Int(token)) => Outcome::Granted(token as u64),
        Ok(_) => Outcome::Busy,
        Err(e) if e.is_timeout() => return (Outcome::Failed, event),
        Err(e) if e.is_io_error() || e.is_connection_dropped() => {
            event.conn_error = true;
            return (Outcome::Failed, event);
        }
        Err(_) => Outcome::Failed,
    };
    event.replies = 1;
    let _ = conn.set_read_timeout(Some(Duration::from_secs(10)));
    match redis::cmd("PING").query::<Value>(conn) {
        Ok(Value::SimpleString(s)) if s == "PONG" => {}
        Ok(second) => {
            eprintln!("{name}: LOCK.ACQUIRE {key} got a second reply: {second:?}");
            event.replies = 2;
        }
        Err(e) if e.is_io_error() || e.is_timeout() || e.is_connection_dropped() => {
            event.conn_error = true
        }
        // The server refused the PING itself (LOADING after a restart, ...).
        Err(e) => eprintln!("{name}: PING after LOCK.ACQUIRE {key}: {e}"),
    }
    (outcome, event)
}
