//! Tickets: waits that are not blocked clients (`LOCK.WAIT`, docs/design/waiting.md). A
//! ticket sits in its lock's queue (the registry of `waiters.rs`) beside blocked clients, in
//! one FIFO; its outcome goes to a *receiver* connection:
//!
//! - **push**: a message `<wait id> <outcome>` on the receiver's channel
//!   `__rlock__:<client id>`, published in the command or timer that ended the wait. A grant
//!   is delivered when the message is written to a subscriber; none (the receiver left its
//!   channel) means undelivered, and the caller passes the lock on at once;
//! - **pull**: the receiver's mailbox, read with `LOCK.GRANTS`; a `LOCK.GRANTS` parked on an
//!   empty mailbox is unblocked with it.
//!
//! A ticket's registry entry is `client_of(id)`, an odd number (blocked clients' handles are
//! aligned addresses, even), so both kinds share the registry and its take-once rule. Here
//! are only the tables of tickets and receivers: who receives a wait, each receiver's
//! tickets (dropped when its connection closes), mailbox and parked `LOCK.GRANTS`.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io::Write;
use std::mem::size_of;

use redis_module::raw;

use crate::blocked;
use crate::error::LockError;
use crate::ffi::{api, OwnedString};
use crate::idhash::{IdMap, IdSet};
use crate::registry::Grant;
use crate::reply::{error_line, Outcome};
use crate::waiters::{self, Bc, Waiter};

/// How a ticket's outcome travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    Push,
    Pull,
}

/// An ended wait waiting in a mailbox; a grant keeps what revoking it needs.
pub struct Mail {
    pub wait: u64,
    pub outcome: Outcome,
    pub grant: Option<Grant>,
}

#[derive(Default)]
struct Receiver {
    /// Its queued tickets.
    tickets: IdSet<u64>,
    /// Push: its subscription to its channel was checked.
    subscribed: bool,
    mailbox: VecDeque<Mail>,
    /// A `LOCK.GRANTS` blocked on the empty mailbox: its handle and parking number.
    parked: Option<(usize, u64)>,
}

impl Receiver {
    fn idle(&self) -> bool {
        self.tickets.is_empty() && self.mailbox.is_empty() && self.parked.is_none()
    }
}

#[derive(Default)]
struct Tables {
    /// Each queued ticket's receiver and delivery.
    tickets: IdMap<u64, (u64, Delivery)>,
    receivers: IdMap<u64, Receiver>,
    next_id: u64,
}

thread_local! {
    static TABLES: RefCell<Tables> = RefCell::new(Tables::default());
}

fn with<R>(f: impl FnOnce(&mut Tables) -> R) -> R {
    TABLES.with(|t| f(&mut t.borrow_mut()))
}

/// The registry entry of the ticket `id`.
pub fn client_of(id: u64) -> usize {
    (usize::try_from(id).unwrap_or(usize::MAX) << 1) | 1
}

/// Whether a registry entry is a ticket (not a blocked client's handle).
pub fn is_ticket(client: usize) -> bool {
    client & 1 == 1
}

/// A fresh wait id: unique for the server process's life.
pub fn next_id() -> u64 {
    with(|t| {
        t.next_id += 1;
        t.next_id
    })
}

/// Records a queued ticket of `receiver`.
pub fn add(id: u64, receiver: u64, delivery: Delivery) {
    with(|t| {
        t.tickets.insert(id, (receiver, delivery));
        t.receivers.entry(receiver).or_default().tickets.insert(id);
    });
}

/// Whether `receiver`'s subscription was checked already; `mark` records that it was.
pub fn subscribed(receiver: u64, mark: bool) -> bool {
    with(|t| {
        let entry = t.receivers.entry(receiver).or_default();
        entry.subscribed |= mark;
        entry.subscribed
    })
}

/// The ticket `id` left its queue: forget it; its receiver and delivery.
pub fn forget(id: u64) -> Option<(u64, Delivery)> {
    with(|t| {
        let (receiver, delivery) = t.tickets.remove(&id)?;
        if t.tickets.is_empty() {
            // Give the memory of a burst of tickets back once they are all gone.
            t.tickets = IdMap::default();
        }
        if let Some(r) = t.receivers.get_mut(&receiver) {
            r.tickets.remove(&id);
        }
        Some((receiver, delivery))
    })
}

/// Sends a ticket taken out of its queue its outcome; false when a push reached nobody
/// (a grant is then undelivered: the caller passes the lock on).
pub fn deliver(
    ctx: *mut raw::RedisModuleCtx,
    waiter: &Waiter,
    outcome: Outcome,
    grant: Option<Grant>,
) -> Result<bool, LockError> {
    let Some((receiver, delivery)) = forget(waiter.id) else {
        return Ok(true);
    };
    match delivery {
        Delivery::Push => publish(ctx, receiver, waiter.id, &outcome),
        Delivery::Pull => {
            let mail = Mail {
                wait: waiter.id,
                outcome,
                grant,
            };
            post(receiver, mail)?;
            Ok(true)
        }
    }
}

fn publish(
    ctx: *mut raw::RedisModuleCtx,
    receiver: u64,
    wait: u64,
    outcome: &Outcome,
) -> Result<bool, LockError> {
    let publish = api!(RedisModule_PublishMessage);
    let mut text = Vec::with_capacity(48);
    let _ = write!(text, "{}{receiver}", crate::channel::GRANTS_PREFIX);
    let channel = OwnedString::new(ctx, &text)?;
    text.clear();
    let _ = match outcome {
        Outcome::Granted(token) => write!(text, "{wait} {token}"),
        Outcome::Refused(why) => write!(text, "{wait} -{}", error_line(why).to_string_lossy()),
        Outcome::TimedOut | Outcome::Batch(_) => write!(text, "{wait} 0"),
    };
    let message = OwnedString::new(ctx, &text)?;
    Ok(unsafe { publish(ctx, channel.0, message.0) } > 0)
}

/// Puts an ended wait in `receiver`'s mailbox, or hands it to its parked `LOCK.GRANTS`.
fn post(receiver: u64, mail: Mail) -> Result<(), LockError> {
    let parked = with(|t| {
        let r = t.receivers.entry(receiver).or_default();
        r.mailbox.push_back(mail);
        r.parked.take()
    });
    match parked {
        Some((bc, _)) => wake(receiver, bc as Bc, usize::MAX),
        None => Ok(()),
    }
}

/// Unblocks a parked `LOCK.GRANTS` with up to `count` mails; the grants among them are
/// kept under its handle until its reply is sent (`waiters::record_batch`).
pub fn wake(receiver: u64, bc: Bc, count: usize) -> Result<(), LockError> {
    let mails = take_mail(receiver, count);
    let batch = mails.iter().map(|m| (m.wait, m.outcome.clone())).collect();
    let grants = mails.into_iter().filter_map(|m| m.grant).collect();
    waiters::record_batch(bc, grants);
    blocked::unblock(bc, Outcome::Batch(batch))
}

/// Takes up to `count` mails of `receiver`, oldest first.
pub fn take_mail(receiver: u64, count: usize) -> Vec<Mail> {
    with(|t| {
        let Some(r) = t.receivers.get_mut(&receiver) else {
            return Vec::new();
        };
        let n = count.min(r.mailbox.len());
        let mails = r.mailbox.drain(..n).collect();
        if r.idle() && !r.subscribed {
            t.receivers.remove(&receiver);
        }
        mails
    })
}

/// Parks `bc`, a `LOCK.GRANTS` of `receiver` on its empty mailbox; its parking number.
pub fn park(receiver: u64, bc: Bc) -> u64 {
    let parking = next_id();
    with(|t| t.receivers.entry(receiver).or_default().parked = Some((bc as usize, parking)));
    parking
}

/// Unparks the `LOCK.GRANTS` parked as `parking` if it still is (its `BLOCK` ran out);
/// its handle.
pub fn unpark(receiver: u64, parking: u64) -> Option<Bc> {
    with(|t| {
        let r = t.receivers.get_mut(&receiver)?;
        let (bc, number) = r.parked?;
        if number != parking {
            return None;
        }
        r.parked = None;
        Some(bc as Bc)
    })
}

/// Forgets `bc` wherever it is parked: Redis ended that `LOCK.GRANTS` itself (its client
/// left, or a demotion unblocked every blocked client), so nothing may unblock it again.
pub fn forget_parked(bc: Bc) {
    with(|t| {
        for r in t.receivers.values_mut() {
            if r.parked.is_some_and(|(parked, _)| parked == bc as usize) {
                r.parked = None;
            }
        }
    });
}

/// Takes the grant of the wait `id` on lock `key` of `db` out of any mailbox, if it is there.
pub fn take_mailed_grant(id: u64, db: i32, key: &[u8]) -> Option<Grant> {
    with(|t| {
        t.receivers.values_mut().find_map(|r| {
            let at = r.mailbox.iter().position(|m| {
                m.wait == id && m.grant.as_ref().is_some_and(|g| g.db == db && g.key == key)
            })?;
            r.mailbox.remove(at)?.grant
        })
    })
}

/// The connection `receiver` closed: its tickets leave their queues (returned, for their
/// deadline timers) and the grants of its mailbox are returned to be revoked.
pub fn receiver_gone(receiver: u64) -> (Vec<Waiter>, Vec<Grant>) {
    let Some(r) = with(|t| t.receivers.remove(&receiver)) else {
        return (Vec::new(), Vec::new());
    };
    with(|t| {
        for id in &r.tickets {
            t.tickets.remove(id);
        }
        if t.tickets.is_empty() {
            t.tickets = IdMap::default();
        }
    });
    let tickets = r
        .tickets
        .iter()
        .filter_map(|id| waiters::take_entry(client_of(*id), Some(*id)))
        .collect();
    let grants = r.mailbox.into_iter().filter_map(|m| m.grant).collect();
    (tickets, grants)
}

/// Whether any connection receives tickets (the fast path of every disconnection).
pub fn any_receiver() -> bool {
    with(|t| !t.receivers.is_empty())
}

/// (queued tickets, an estimate of the bytes of these tables): each hash table's buckets
/// (a power of two, 8/7 of its capacity and more) with a control byte each, and the
/// mailboxes' capacities.
pub fn gauges() -> (usize, usize) {
    let buckets = |capacity: usize| match capacity {
        0 => 0,
        c => (c * 8 / 7).next_power_of_two(),
    };
    with(|t| {
        let receivers = t.receivers.values();
        let own = |r: &Receiver| {
            buckets(r.tickets.capacity()) * (size_of::<u64>() + 1)
                + r.mailbox.capacity() * size_of::<Mail>()
        };
        let bytes = buckets(t.tickets.capacity()) * (size_of::<(u64, (u64, Delivery))>() + 1)
            + buckets(t.receivers.capacity()) * (size_of::<(u64, Receiver)>() + 1)
            + receivers.map(own).sum::<usize>();
        (t.tickets.len(), bytes)
    })
}
