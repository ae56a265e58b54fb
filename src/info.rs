//! `INFO rlock`: counters and gauges (SPEC.md §7). Redis prefixes each field with the
//! module name, so `acquired` shows as `rlock_acquired`.

use std::ffi::c_int;
use std::sync::atomic::{AtomicI64, Ordering};

use redis_module::raw;

use crate::{token, waiters, TOKENS};

/// A monotonic event counter.
pub struct Counter(AtomicI64);

impl Counter {
    const fn new() -> Self {
        Counter(AtomicI64::new(0))
    }

    pub fn bump(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    pub fn get(&self) -> i64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Fresh holdings granted by `LOCK.ACQUIRE` itself.
pub static ACQUIRED: Counter = Counter::new();
/// Acquisitions by the holder that only raised the count.
pub static REENTERED: Counter = Counter::new();
/// Successful `LOCK.RELEASE` calls.
pub static RELEASED: Counter = Counter::new();
/// `LOCK.RENEW` calls that answered 1.
pub static RENEWED: Counter = Counter::new();
/// Locks handed directly to a queued waiter, whatever freed them.
pub static HANDOFFS: Counter = Counter::new();
/// Handoffs caused by a lease running out.
pub static EXPIRY_HANDOFFS: Counter = Counter::new();
/// Waiters whose `WAIT` ran out.
pub static WAIT_TIMEOUTS: Counter = Counter::new();
/// `NOTHELD` errors sent.
pub static NOT_HELD_ERRORS: Counter = Counter::new();

/// Registers the `rlock` section of `INFO`.
pub fn register(ctx: *mut raw::RedisModuleCtx) {
    raw::register_info_function(ctx, Some(add_info));
}

extern "C" fn add_info(ctx: *mut raw::RedisModuleInfoCtx, _for_crash_report: c_int) {
    let counters: [(&str, &Counter); 8] = [
        ("acquired", &ACQUIRED),
        ("reentered", &REENTERED),
        ("released", &RELEASED),
        ("renewed", &RENEWED),
        ("handoffs", &HANDOFFS),
        ("expiry_handoffs", &EXPIRY_HANDOFFS),
        ("wait_timeouts", &WAIT_TIMEOUTS),
        ("not_held_errors", &NOT_HELD_ERRORS),
    ];
    let (queued, queues) = waiters::gauges();
    let gauges = [
        ("waiters", to_i64(queued)),
        ("locks_with_waiters", to_i64(queues)),
        ("next_token", TOKENS.peek(token::now_us())),
    ];
    let fields = counters
        .iter()
        .map(|(name, c)| (*name, c.get()))
        .chain(gauges);
    raw::add_info_section(ctx, None);
    for (name, value) in fields {
        raw::add_info_field_long_long(ctx, name, value);
    }
}

fn to_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
