//! The `rlock` section of `INFO` (SPEC.md §7): the counters of `counters.rs` and gauges.
//! Redis prefixes each field with the module name, so `acquired` shows as `rlock_acquired`.
//!
//! In a crash report only the counters are written: they are plain atomics, while the
//! gauges borrow the waiter registry and call into Redis, which a crash may have left
//! half-way.

use std::ffi::c_int;

use redis_module::raw;

use crate::handoff::losses;
use crate::host::{gate, guard, node};
use crate::waits::{queues, tickets};
use rlock_core::counters;
use rlock_core::stall::STALLS;
use rlock_core::token::{self, TOKENS};

/// Registers the `rlock` section of `INFO`.
pub fn register(ctx: *mut raw::RedisModuleCtx) {
    raw::register_info_function(ctx, Some(add_info));
}

extern "C" fn add_info(ctx: *mut raw::RedisModuleInfoCtx, for_crash_report: c_int) {
    guard::entry("INFO rlock", (), || {
        raw::add_info_section(ctx, None);
        for (name, counter) in counters::ALL {
            raw::add_info_field_long_long(ctx, name, counter.get());
        }
        if for_crash_report == 0 {
            for (name, value) in gauges() {
                raw::add_info_field_long_long(ctx, name, value);
            }
        }
    });
}

/// What the server spends on one blocked client, an estimate from measurement: Redis 7.0's
/// `RM_BlockClient` takes two temporary clients, each with a 16 KiB reply buffer (used_memory
/// grew by 29 KB per waiter on Redis 7.0.15 and by 27 KB on Valkey 8.1, the clients'
/// connections aside).
const BLOCKED_CLIENT_BYTES: usize = 28 * 1024;

fn gauges() -> [(&'static str, i64); 9] {
    let (queued, queues, bytes) = queues::gauges();
    let (tickets, unread, ticket_bytes) = tickets::gauges();
    // A ticket is no blocked client: it costs its registry entry and its tables alone.
    let memory = queued
        .saturating_sub(tickets)
        .saturating_mul(BLOCKED_CLIENT_BYTES)
        .saturating_add(bytes)
        .saturating_add(ticket_bytes);
    [
        ("waiters", to_i64(queued)),
        ("locks_with_waiters", to_i64(queues)),
        ("waiters_memory", to_i64(memory)),
        ("next_token", TOKENS.peek(token::now_us())),
        ("failover_delay_remaining", failover_delay_remaining()),
        ("unread_outcomes", to_i64(unread)),
        ("timers", counters::TIMERS.get()),
        ("stalls", STALLS.count()),
        ("listened_holdings", to_i64(losses::gauges().0)),
    ]
}

/// Milliseconds left of the failover delay (0: none).
fn failover_delay_remaining() -> i64 {
    let now = node::now_ms();
    gate::fenced_until(now).map_or(0, |until| until - now)
}

fn to_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
