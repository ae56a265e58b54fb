//! The `rlock` section of `INFO` (SPEC.md §7): the counters of `counters.rs` and gauges.
//! Redis prefixes each field with the module name, so `acquired` shows as `rlock_acquired`.

use std::ffi::c_int;

use redis_module::raw;

use crate::counters;
use crate::token::{self, TOKENS};
use crate::{gate, node, waiters};

/// Registers the `rlock` section of `INFO`.
pub fn register(ctx: *mut raw::RedisModuleCtx) {
    raw::register_info_function(ctx, Some(add_info));
}

extern "C" fn add_info(ctx: *mut raw::RedisModuleInfoCtx, _for_crash_report: c_int) {
    let (queued, queues) = waiters::gauges();
    let gauges = [
        ("waiters", to_i64(queued)),
        ("locks_with_waiters", to_i64(queues)),
        ("next_token", TOKENS.peek(token::now_us())),
        ("failover_delay_remaining", failover_delay_remaining()),
    ];
    let fields = counters::ALL
        .iter()
        .map(|(name, c)| (*name, c.get()))
        .chain(gauges);
    raw::add_info_section(ctx, None);
    for (name, value) in fields {
        raw::add_info_field_long_long(ctx, name, value);
    }
}

/// Milliseconds left of the failover delay (0: none).
fn failover_delay_remaining() -> i64 {
    let now = node::now_ms();
    gate::fenced_until(now).map_or(0, |until| until - now)
}

fn to_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
