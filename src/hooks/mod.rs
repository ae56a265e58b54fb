//! What Redis calls outside the module's commands: keyspace events, `FLUSHDB`, `SWAPDB`,
//! role changes, the end of loading and closed connections (`events.rs`), Valkey 9's
//! atomic slot migration (`migration.rs`), and the `INFO rlock` section (`info_section.rs`).
//!
//! May use: `handoff/`, `waits/`, `store/`, `host/`, `rlock_core`. Not `commands/`.

pub mod events;
pub mod info_section;
pub mod migration;
