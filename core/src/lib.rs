//! rlock-core: what a lock is, without Redis. No Redis types and no allocator of its own;
//! the module (`rlock`, the root crate) runs these rules on the server. `cargo test -p
//! rlock-core` tests them alone, with no server.
//!
//! Modules, top first (each uses only those below it; `tests/layering.rs` at the
//! workspace root checks it):
//! - `fence` (`LOCK.FENCED`'s rules), `semglance` (a semaphore decided from a few fields).
//! - `semaphore` (the semaphore's state machine), `rwglance` (a read-write lock decided
//!   from a few fields).
//! - `parse` (each command's arguments), `lock` (the state machine: what a command does
//!   to a lock), `receivers` (the tables of tickets: who receives each, who may cancel it,
//!   mailboxes, parked `LOCK.GRANTS`), `watch` (the holdings whose end is announced to
//!   their holder, `LOCK.LISTEN`).
//! - `args` (argument parsing), `registry` (FIFO queues of waits ordered by arrival, exactly
//!   one end per wait, grants, pending checks), `cluster` (key slots, `CLUSTER NODES`).
//! - `error` (every error text), below it `fence_error` (`LOCK.FENCED`'s texts).
//! - `echo` (how an error line echoes client bytes), `layout` (the fixed fields of each
//!   hash layout, and the owner names they reserve), `loss` (what announces the end of a
//!   listened holding), `token` (fencing tokens), `channel`
//!   (channel names), `counters` (`INFO rlock`'s counters), `idhash`, `reply` (replies as
//!   plain values), `stall` (the stall clock), `verdict` (the gate's rules as a table).
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod args;
pub mod channel;
pub mod cluster;
pub mod counters;
pub mod echo;
pub mod error;
pub mod fence;
pub mod fence_error;
pub mod idhash;
pub mod kind;
pub mod layout;
pub mod lock;
pub mod loss;
pub mod parse;
pub mod receivers;
pub mod registry;
pub mod reply;
pub mod rwglance;
pub mod rwlock;
pub mod semaphore;
pub mod semglance;
pub mod stall;
pub mod token;
pub mod verdict;
pub mod watch;
