//! Tickets: waits that are not blocked clients (`LOCK.WAIT`, docs/design/waiting.md). A
//! ticket sits in its lock's queue (the registry of `queues.rs`) beside blocked clients, in
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
//! aligned addresses, even), so both kinds share the registry and its take-once rule. The
//! tables of tickets, receivers and mailboxes are `receivers.rs`; here is the node's one
//! copy of them, and what they say to Redis.

use std::cell::RefCell;
use std::io::Write;

use redis_module::raw;

use crate::host::ffi::{self, api, OwnedString};
use crate::waits::blocked;
use crate::waits::queues::{self, Bc, Waiter};
use rlock_core::error::LockError;
use rlock_core::receivers::{may_cancel, Caller, Mail, Parked, Receivers, Rights, Ticket};
use rlock_core::registry::{Db, Grant};
use rlock_core::reply::{error_line, Outcome};

pub use rlock_core::receivers::Delivery;

thread_local! {
    static TABLES: RefCell<Receivers> = RefCell::new(Receivers::default());
}

fn with<R>(f: impl FnOnce(&mut Receivers) -> R) -> R {
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
    with(Receivers::next_id)
}

/// The calling connection's id and ACL user name.
pub struct Me {
    pub id: u64,
    pub user: Option<Vec<u8>>,
}

/// Who runs the command of `ctx`.
pub fn me(ctx: *mut raw::RedisModuleCtx) -> Result<Me, LockError> {
    let client_id = api!(RedisModule_GetClientId);
    let id = unsafe { client_id(ctx) };
    Ok(Me {
        id,
        user: ffi::current_user(ctx),
    })
}

/// Records a queued ticket of `receiver`, queued by `sender`.
pub fn add(id: u64, receiver: u64, delivery: Delivery, sender: &Me) {
    with(|t| {
        let user = sender.user.as_deref().map(|name| t.user(name));
        let rights = Rights {
            sender: sender.id,
            user,
        };
        let ticket = Ticket {
            receiver,
            delivery,
            rights,
        };
        t.add(id, ticket);
    });
}

/// Whether `receiver`'s subscription was checked already; `mark` records that it was.
pub fn subscribed(receiver: u64, mark: bool) -> bool {
    with(|t| t.subscribed(receiver, mark))
}

/// Whether the queued entry `client` (wait `id`) can be told its outcome: a blocked client
/// always; a ticket while its receiver is connected and, for a push, was last known on its
/// channel. An unreachable ticket is taken out without a grant (one would reach nobody).
pub fn reachable(client: usize, id: u64) -> bool {
    if !is_ticket(client) {
        return true;
    }
    with(|t| match t.ticket(id) {
        None => false,
        Some(ticket) => ticket.delivery == Delivery::Pull || t.is_subscribed(ticket.receiver),
    })
}

/// The ticket `id` left its queue: forget it.
pub fn forget(id: u64) -> Option<Ticket> {
    with(|t| t.forget(id))
}

/// Whether `caller` may cancel the queued ticket `id` (`Some(tell)`: yes, and whether its
/// receiver is to hear of it).
pub fn may_cancel_queued(id: u64, caller: &Me) -> Option<bool> {
    with(|t| {
        let ticket = t.ticket(id)?;
        may_cancel(&ticket.rights, ticket.receiver, &caller_of(caller))
    })
}

fn caller_of(me: &Me) -> Caller<'_> {
    Caller {
        id: me.id,
        user: me.user.as_deref(),
    }
}

/// Sends a ticket taken out of its queue its outcome; false when a push reached nobody
/// (a grant is then undelivered: the caller passes the lock on).
pub fn deliver(
    ctx: *mut raw::RedisModuleCtx,
    waiter: &Waiter,
    outcome: Outcome,
    grant: Option<Grant>,
) -> Result<bool, LockError> {
    let Some(ticket) = forget(waiter.id) else {
        // Its receiver is gone (its tickets are being taken out): a grant reaches nobody.
        return Ok(grant.is_none());
    };
    match ticket.delivery {
        Delivery::Push => {
            let reached = publish(ctx, ticket.receiver, waiter.id, &outcome)?;
            if !reached {
                // It left its channel: its next push ticket checks again.
                with(|t| t.unsubscribed(ticket.receiver));
            }
            Ok(reached)
        }
        Delivery::Pull => {
            let mail = Mail {
                wait: waiter.id,
                outcome,
                grant,
                rights: ticket.rights,
            };
            post(ctx, ticket.receiver, mail)?;
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
    let _ = write!(text, "{}{receiver}", rlock_core::channel::GRANTS_PREFIX);
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

/// Puts an ended wait in `receiver`'s mailbox, or hands it to its parked `LOCK.GRANTS`
/// (whose `BLOCK` timer is stopped).
fn post(ctx: *mut raw::RedisModuleCtx, receiver: u64, mail: Mail) -> Result<(), LockError> {
    match with(|t| t.post(receiver, mail)) {
        Some(parked) => {
            blocked::stop_deadline(ctx, parked.timer);
            wake(receiver, parked.bc as Bc, usize::MAX)
        }
        None => Ok(()),
    }
}

/// Unblocks a parked `LOCK.GRANTS` with up to `count` mails; the grants among them are
/// kept under its handle until its reply is sent (`queues::record_batch`).
pub fn wake(receiver: u64, bc: Bc, count: usize) -> Result<(), LockError> {
    let mails = take_mail(receiver, count);
    let batch = mails.iter().map(|m| (m.wait, m.outcome.clone())).collect();
    let grants = mails.into_iter().filter_map(|m| m.grant).collect();
    queues::record_batch(bc, grants);
    blocked::unblock(bc, Outcome::Batch(batch))
}

/// Takes up to `count` mails of `receiver`, oldest first.
pub fn take_mail(receiver: u64, count: usize) -> Vec<Mail> {
    with(|t| t.take_mail(receiver, count))
}

/// Parks `bc`, a `LOCK.GRANTS` of `receiver` on its empty mailbox, as `parking`, with the
/// timer of its `BLOCK` limit.
pub fn park(receiver: u64, bc: Bc, parking: u64, timer: Option<u64>) {
    let parked = Parked {
        bc: bc as usize,
        parking,
        timer,
    };
    with(|t| t.park(receiver, parked));
}

/// Unparks the `LOCK.GRANTS` parked as `parking` if it still is (its `BLOCK` ran out);
/// its handle.
pub fn unpark(receiver: u64, parking: u64) -> Option<Bc> {
    with(|t| t.unpark(receiver, parking)).map(|p| p.bc as Bc)
}

/// Forgets `bc` wherever it is parked, and stops its timer: Redis ended that
/// `LOCK.GRANTS` itself (its client left, or a demotion unblocked every blocked client),
/// so nothing may unblock it again.
pub fn forget_parked(ctx: *mut raw::RedisModuleCtx, bc: Bc) {
    if let Some(parked) = with(|t| t.forget_parked(bc as usize)) {
        blocked::stop_deadline(ctx, parked.timer);
    }
}

/// `LOCK.CANCEL` of the wait `id` on lock `key` of `db` whose grant is unread in a
/// mailbox: its token, the caller's now. A caller other than its sender and receiver
/// leaves a refusal in its place, so that the receiver hears of it.
pub fn cancel_mailed(id: u64, db: i32, key: &[u8], caller: &Me) -> Result<Option<i64>, LockError> {
    with(|t| {
        let Some((receiver, mail)) = t.mail_mut(id) else {
            return Ok(None);
        };
        let Some(token) = mail
            .grant
            .as_ref()
            .filter(|g| g.db == db && g.key == key)
            .map(|g| g.token)
        else {
            return Ok(None);
        };
        let tell = may_cancel(&mail.rights, receiver, &caller_of(caller));
        match tell.ok_or(LockError::NotYourWait(id))? {
            true => {
                mail.grant = None;
                mail.outcome = Outcome::Refused(LockError::Cancelled.to_string());
            }
            false => drop(t.take_mailed(id)),
        }
        Ok(Some(token))
    })
}

/// The connection `receiver` closed: its tables go, and the timer of its parked
/// `LOCK.GRANTS` is stopped. Returns the grants of its mailbox, to be revoked, and its
/// tickets (registry entry, wait id), still queued: unreachable from now on, they are
/// taken out with [`take_out`], a slice at a time.
pub fn receiver_gone(
    ctx: *mut raw::RedisModuleCtx,
    receiver: u64,
) -> (Vec<Grant>, Vec<(usize, u64)>) {
    let left = with(|t| t.receiver_gone(receiver));
    blocked::stop_deadline(ctx, left.timer);
    let waits = left
        .tickets
        .iter()
        .map(|id| (client_of(*id), *id))
        .collect();
    (left.grants, waits)
}

/// Takes these tickets (registry entry, wait id) out of their queues, if still there, and
/// stops their deadline timers; returns the queues to serve again.
pub fn take_out(ctx: *mut raw::RedisModuleCtx, waits: &[(usize, u64)]) -> Vec<(Db, Vec<u8>)> {
    let taken = queues::take_entries(waits);
    for timer in taken.timers {
        blocked::stop_deadline(ctx, Some(timer));
    }
    taken.reopened
}

/// Whether any connection receives tickets (the fast path of every disconnection).
pub fn any_receiver() -> bool {
    with(|t| t.any_receiver())
}

/// Outcomes in mailboxes, not read yet: they count toward `rlock.max-waiters`.
pub fn unread() -> usize {
    with(|t| t.unread())
}

/// (queued tickets, unread outcomes, an estimate of the bytes of these tables).
pub fn gauges() -> (usize, usize, usize) {
    with(|t| (t.queued(), t.unread(), t.bytes()))
}

/// Whether the connection `id` runs as the caller's ACL user (the caller itself always
/// does). A server that cannot tell says no.
pub fn same_user(ctx: *mut raw::RedisModuleCtx, me: &Me, id: u64) -> bool {
    id == me.id || (me.user.is_some() && ffi::user_of(ctx, id) == me.user)
}
