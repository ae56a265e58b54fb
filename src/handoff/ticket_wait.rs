//! A ticket's life beyond its tables (`tickets.rs`): queueing it (`LOCK.WAIT`), its `WAIT`
//! deadline, `LOCK.GRANTS` parked on an empty mailbox, `LOCK.CANCEL`, and the closing of
//! a receiver's connection.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::ffi::c_void;

use redis_module::raw;

use crate::handoff::{blocked_wait, expiry};
use crate::host::{guard, node};
use crate::store::LockKey;
use crate::waits::blocked::{self, Deadline};
use crate::waits::finish;
use crate::waits::queues::{self, Bc, Waiter};
use crate::waits::receiver::To;
use crate::waits::tickets::{self, client_of, Me};
use rlock_core::counters;
use rlock_core::error::LockError;
use rlock_core::registry::{Db, SLICE};
use rlock_core::reply::Outcome;
use rlock_core::rwlock::Kind;

/// Who queues a ticket, and where its outcome goes.
pub struct Route<'a> {
    pub sender: &'a Me,
    pub to: To,
}

/// Queues a ticket of `owner` at the end of the queue of `key`: it waits at most
/// `wait_ms` (0: no limit) for a lease of `lease_ms`. Returns its wait id.
pub fn queue(
    ctx: *mut raw::RedisModuleCtx,
    (db, key): (Db, &LockKey),
    (owner, kind): (&[u8], Kind),
    (lease_ms, wait_ms): (i64, i64),
    held_back: Option<i64>,
    route: Route<'_>,
) -> Result<u64, LockError> {
    blocked_wait::admit(db, key.name())?;
    let id = tickets::next_id();
    let client = client_of(id);
    let deadline_timer = blocked::arm_deadline(ctx, id, client, wait_ms, ticket_expired)?;
    let now = node::now_ms();
    let waiter = Waiter {
        id,
        client,
        owner: owner.into(),
        lease_ms,
        deadline_timer,
        wait_until: (wait_ms > 0).then(|| now.saturating_add(wait_ms)),
        kind,
    };
    queues::enqueue(db, key.name(), waiter);
    tickets::add(id, route.to.receiver, route.to.delivery, route.sender);
    blocked_wait::watch(ctx, db, key, now, held_back);
    Ok(id)
}

extern "C" fn ticket_expired(ctx: *mut raw::RedisModuleCtx, data: *mut c_void) {
    // The timer hands back the box made in `arm_deadline`; it is ours to free.
    let deadline = unsafe { Box::from_raw(data.cast::<Deadline>()) };
    node::timer_fired();
    guard::callback("ticket deadline", || {
        // Still queued: nobody handed it the lock, so its WAIT ran out.
        let location = queues::location_of(deadline.client);
        if let Some(mut waiter) = queues::take_entry(deadline.client, Some(deadline.id)) {
            waiter.deadline_timer = None; // it fired: its id may be another timer's now
            finish::end(ctx, &waiter, Outcome::TimedOut);
            counters::WAIT_TIMEOUTS.bump();
            if let Some((db, key)) = location {
                blocked_wait::wait_left(ctx, (db, &key), waiter.kind);
            }
        }
        Ok(())
    });
}

/// `LOCK.CANCEL`: takes the ticket `id` of `key` out of its queue (`Some(0)`), or its grant
/// out of a mailbox (`Some(token)`: the caller holds the lock now); `None` if neither. Only
/// its sender, its receiver, or a connection of its ACL user may; the receiver hears of a
/// cancel by the last (a refusal, `CANCELLED`). O(log n) in the waits of the lock.
pub fn cancel(
    ctx: *mut raw::RedisModuleCtx,
    (db, key): (Db, &[u8]),
    id: u64,
    caller: &Me,
) -> Result<Option<i64>, LockError> {
    let client = client_of(id);
    if !queues::waits_on(client, db, key) {
        return tickets::cancel_mailed(id, db, key, caller);
    }
    let tell = tickets::may_cancel_queued(id, caller).ok_or(LockError::NotYourWait(id))?;
    let Some(waiter) = queues::take_entry(client, Some(id)) else {
        return Ok(None);
    };
    blocked_wait::wait_left(ctx, (db, key), waiter.kind);
    if tell {
        finish::end(
            ctx,
            &waiter,
            Outcome::Refused(LockError::Cancelled.to_string()),
        );
    } else {
        blocked::stop_deadline(ctx, waiter.deadline_timer);
        tickets::forget(id);
    }
    Ok(Some(0))
}

thread_local! {
    /// Tickets of receivers that closed, not taken out of their queues yet (registry
    /// entry, wait id), and whether a timer takes the next slice of them.
    static ORPHANS: RefCell<(VecDeque<(usize, u64)>, bool)> = RefCell::default();
}

/// The connection `receiver` closed: its tickets leave their queues, a slice now and the
/// rest in later passes (unreachable meanwhile, they are never granted); those that may
/// have kept others out get a check. The grants in its mailbox are taken back and passed on.
pub fn receiver_gone(ctx: *mut raw::RedisModuleCtx, receiver: u64) {
    let (grants, waits) = tickets::receiver_gone(ctx, receiver);
    if !waits.is_empty() {
        ORPHANS.with(|o| o.borrow_mut().0.extend(waits));
        take_orphans(ctx);
    }
    for grant in grants {
        guard::callback("revoking a mailed grant", || {
            blocked_wait::schedule_revoke(ctx, grant, 0)
        });
    }
}

/// Takes a slice of the closed receivers' tickets out; arms a timer for the next slice.
fn take_orphans(ctx: *mut raw::RedisModuleCtx) {
    let slice: Vec<(usize, u64)> = ORPHANS.with(|o| {
        let queue = &mut o.borrow_mut().0;
        let n = queue.len().min(SLICE);
        queue.drain(..n).collect()
    });
    let now = node::now_ms();
    for (db, key) in tickets::take_out(ctx, &slice) {
        expiry::arm(ctx, db, &key, now);
    }
    let arm = ORPHANS.with(|o| {
        let (queue, armed) = &mut *o.borrow_mut();
        let arm = !queue.is_empty() && !*armed;
        *armed |= arm;
        arm
    });
    if arm && node::create_timer(ctx, 0, orphans_due, std::ptr::null_mut()).is_none() {
        ORPHANS.with(|o| o.borrow_mut().1 = false);
    }
}

extern "C" fn orphans_due(ctx: *mut raw::RedisModuleCtx, _data: *mut c_void) {
    node::timer_fired();
    guard::callback("closed receivers' tickets", || {
        ORPHANS.with(|o| o.borrow_mut().1 = false);
        take_orphans(ctx);
        Ok(())
    });
}

/// `LOCK.GRANTS ... BLOCK ms`: parks the caller on its empty mailbox for up to `block_ms`
/// (0: no limit).
pub fn park(ctx: *mut raw::RedisModuleCtx, receiver: u64, block_ms: i64) -> Result<(), LockError> {
    let blocked = blocked::block(ctx, grants_left)?;
    let parking = tickets::next_id();
    // The timer (BLOCK > 0) is stopped when the call is woken or its client leaves.
    let receiver_key = usize::try_from(receiver).unwrap_or(usize::MAX);
    let timer = blocked::arm_deadline(ctx, parking, receiver_key, block_ms, park_expired)?;
    tickets::park(receiver, blocked.bc, parking, timer);
    Ok(())
}

extern "C" fn park_expired(_ctx: *mut raw::RedisModuleCtx, data: *mut c_void) {
    // The timer hands back the box made by `arm_deadline` in `park`.
    let limit = unsafe { Box::from_raw(data.cast::<Deadline>()) };
    node::timer_fired();
    guard::callback("grants deadline", || {
        let receiver = limit.client as u64;
        if let Some(bc) = tickets::unpark(receiver, limit.id) {
            queues::record_batch(bc, Vec::new());
            blocked::unblock(bc, Outcome::TimedOut)?;
        }
        Ok(())
    });
}

/// A `LOCK.GRANTS` client left while parked, or after it was woken but before its reply
/// (then the grants it was woken with are taken back), or Redis unblocked it (a demotion
/// ends every blocked call): its handle is forgotten before Redis frees it.
unsafe extern "C" fn grants_left(ctx: *mut raw::RedisModuleCtx, bc: Bc) {
    guard::callback("grants client disconnected", || {
        tickets::forget_parked(ctx, bc);
        match queues::take_batch(bc) {
            Some(grants) => {
                for grant in grants {
                    blocked_wait::schedule_revoke(ctx, grant, 0)?;
                }
                Ok(())
            }
            // Still parked (its receiver entry is gone with its connection).
            None => blocked::release_handle(bc),
        }
    });
}
