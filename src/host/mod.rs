//! The module API, the lowest layer of the module: module API pointers and strings
//! (`ffi.rs`), the API checked at load (`apis.rs`), panic containment at every entry point
//! (`guard.rs`), clock, database, context flags and timer bounds (`node.rs`), what Redis is
//! told of each command (`spec.rs`) and the table handed to it (`declare.rs`), the
//! `rlock.*` configs (`config.rs`) and their registration (`config_hooks.rs`), the facts the
//! gate decides on (`gate.rs`), the command `LOCK.FENCED` runs (`call.rs`), and what only
//! Valkey 9 has: atomic slot migration (`valkey.rs`).
//!
//! May use: `rlock_core` and `redis_module` only.

pub mod apis;
pub mod call;
pub mod config;
pub mod config_hooks;
pub mod declare;
pub mod ffi;
pub mod gate;
pub mod guard;
pub mod node;
pub mod spec;
pub mod valkey;
