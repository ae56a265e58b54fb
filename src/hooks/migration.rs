//! Atomic slot migration (Valkey 9, `CLUSTER MIGRATESLOTS`): the server event that tells
//! each side where a migration stands, and what the module does then.
//!
//! While slots migrate, the source keeps serving them: its grants, releases and renewals
//! replicate to the target in the migration's stream (`LOCK.APPLY`, `RWLOCK.APPLY`,
//! `SEM.APPLY`, `DEL`, `PEXPIREAT`, ...), which the target replays from its slot import
//! client (`node::from_replication`). At the switch the source pauses writes (its timers
//! hold back, as in any write pause), the target takes the slots over, and then:
//! - on the target (import completed), the token counter learns the token of every key of
//!   the slots, as it learns a restored key's, and jumps ahead as on a promotion (tokens of
//!   locks released on the source left no key behind) — before any client reaches the slots;
//! - on the source (export completed), every wait queued on a key of the slots is answered
//!   with the redirect to the slots' new owner (`MOVED`, or `TRYAGAIN` while the source
//!   cannot name it): the source never grants them. Its copies of the keys are then deleted
//!   by the server.
//!
//! A migration that fails or is cancelled (`CLUSTER CANCELSLOTMIGRATIONS`) leaves the source
//! as it was, serving its locks and queues; the target drops the keys it had imported, which
//! taught it nothing.

use std::ffi::{c_char, c_int, c_void};

use redis_module::{logging, raw};

use crate::handoff::expiry;
use crate::host::ffi::api;
use crate::host::{config, gate, guard, node, valkey};
use crate::store;
use crate::store::slot_keys;
use crate::waits::{finish, queues};
use rlock_core::cluster::{self, Route};
use rlock_core::error::LockError;
use rlock_core::token::{self, TOKENS};

/// `VALKEYMODULE_EVENT_ATOMIC_SLOT_MIGRATION` (valkeymodule.h, Valkey 9.0).
const ATOMIC_SLOT_MIGRATION: u64 = 19;
/// Its subevents: the target's import, the source's export.
const IMPORT_COMPLETED: u64 = 4;
const EXPORT_COMPLETED: u64 = 5;

/// `ValkeyModuleSlotRange`: first and last slot, both included.
#[repr(C)]
struct SlotRange {
    start: c_int,
    end: c_int,
}

/// `ValkeyModuleAtomicSlotMigrationInfo` (version 1), the event's data.
#[repr(C)]
struct MigrationInfo {
    version: u64,
    job_name: [c_char; 41],
    slot_ranges: *const SlotRange,
    num_slot_ranges: u32,
}

/// Subscribes to the atomic slot migration event, on Valkey 9 or later only (on Redis the
/// event's number may name another event, or none). Valkey 9.1's check of supported
/// subevents does not know this event: the subscription's answer is what tells. Should the
/// server refuse it, the module takes back its declaration, so that `CLUSTER MIGRATESLOTS`
/// is refused as before rather than run unwatched.
pub fn subscribe(ctx: *mut raw::RedisModuleCtx) -> Result<(), LockError> {
    if !valkey::atomic_migration() {
        return Ok(());
    }
    let event = raw::RedisModuleEvent {
        id: ATOMIC_SLOT_MIGRATION,
        dataver: 1,
    };
    let subscribe = api!(RedisModule_SubscribeToServerEvent);
    let status = unsafe { subscribe(ctx, event, Some(on_migration)) };
    if status != raw::REDISMODULE_OK as c_int {
        valkey::without_atomic_migration();
        store::signal_writes_explicitly(ctx);
        logging::log_warning(
            "rlock: the server refused the atomic slot migration event: CLUSTER MIGRATESLOTS stays refused",
        );
    }
    Ok(())
}

unsafe extern "C" fn on_migration(
    ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    subevent: u64,
    data: *mut c_void,
) {
    guard::callback("atomic slot migration", || match subevent {
        IMPORT_COMPLETED => imported(ctx, &ranges(data)),
        EXPORT_COMPLETED => {
            exported(ctx, &ranges(data));
            Ok(())
        }
        _ => Ok(()),
    });
}

/// The slot ranges of the event's data; every slot when it has none the module can read.
fn ranges(data: *mut c_void) -> Vec<(u16, u16)> {
    let all = vec![(0, 16383)];
    if data.is_null() {
        return all;
    }
    // For this event Valkey passes a ValkeyModuleAtomicSlotMigrationInfo.
    let info = unsafe { &*data.cast::<MigrationInfo>() };
    if info.version < 1 || info.slot_ranges.is_null() {
        return all;
    }
    let len = usize::try_from(info.num_slot_ranges).unwrap_or(0);
    // `num_slot_ranges` ranges, owned by the server for the callback's duration.
    let listed = unsafe { std::slice::from_raw_parts(info.slot_ranges, len) };
    let slot = |s: c_int| u16::try_from(s.clamp(0, 16383)).unwrap_or(0);
    listed
        .iter()
        .map(|r| (slot(r.start), slot(r.end)))
        .collect()
}

fn in_ranges(ranges: &[(u16, u16)], key: &[u8]) -> bool {
    let slot = cluster::key_slot(key);
    ranges
        .iter()
        .any(|&(first, last)| (first..=last).contains(&slot))
}

/// The target owns the slots: the counter learns their tokens before anything is granted.
fn imported(ctx: *mut raw::RedisModuleCtx, ranges: &[(u16, u16)]) -> Result<(), LockError> {
    slot_keys::learn_tokens(ctx, ranges)?;
    TOKENS.jump(token::now_us(), config::token_gap());
    Ok(())
}

/// The source gave the slots away: their waits go where the slots went.
fn exported(ctx: *mut raw::RedisModuleCtx, ranges: &[(u16, u16)]) {
    if !queues::any() {
        return;
    }
    for (db, key) in queues::queued_keys(None) {
        if !in_ranges(ranges, &key) {
            continue;
        }
        let slot = cluster::key_slot(&key);
        let redirect = gate::served_elsewhere(ctx, &key)
            .or_else(|| Route::Unknown { slot }.redirect())
            .unwrap_or_default();
        if finish::refuse_queue(ctx, db, &key, &redirect) {
            // Past a slice: a check at once sends the rest after them.
            expiry::arm(ctx, db, &key, node::now_ms());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_in_the_ranges_of_its_slot() {
        // "lock:a" hashes to slot 6035 (CLUSTER KEYSLOT).
        assert!(in_ranges(&[(6035, 6035)], b"lock:a"));
        assert!(in_ranges(&[(0, 10), (6000, 7000)], b"lock:a"));
        assert!(!in_ranges(&[(0, 6034), (6036, 16383)], b"lock:a"));
    }

    #[test]
    fn missing_data_means_every_slot() {
        assert_eq!(ranges(std::ptr::null_mut()), vec![(0, 16383)]);
    }
}
