//! Locks changing hands: the one door of every fresh holding, which asks the gate, and a
//! holding's end, handing the lock to the first waiter or freeing it (`door.rs`); script
//! clients' turns (`script_turns.rs`); taking a
//! lock for a command: serve the queue first, take it free, or reenter (`take.rs`); a
//! script-based client's read-write holders ended with the key's TTL (`rw_lease.rs`); lease
//! timers and checks (`expiry.rs`), a read-write lock's or a semaphore's check (`family_checks.rs`); the waits of a key evicted by `maxmemory` (`evicted.rs`); the heartbeat (`heartbeat.rs`); a blocked client's wait
//! (`blocked_wait.rs`) and a ticket's life (`ticket_wait.rs`).
//!
//! May use: `waits/`, `store/`, `host/`, `rlock_core`.

pub mod blocked_wait;
pub mod door;
pub mod evicted;
pub mod expiry;
pub mod family_checks;
pub mod heartbeat;
pub mod latch_serve;
pub mod losses;
pub mod rw_lease;
pub mod rw_serve;
pub mod rw_take;
pub mod script_turns;
pub mod sem_serve;
pub mod sem_take;
pub mod take;
pub mod ticket_wait;
