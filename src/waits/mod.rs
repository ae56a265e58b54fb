//! Blocked clients and tickets: the node's waiter queues (`queues.rs`, keyed by
//! blocked-client handle or ticket), blocking a client and unblocking it with its reply
//! (`blocked.rs`), tickets and their receivers (`tickets.rs`), who receives a ticket's
//! outcome (`receiver.rs`), and how a wait ends, whatever its kind (`finish.rs`).
//!
//! May use: `host/`, `rlock_core`. Not `store/`: a wait knows no lock hash.

pub mod blocked;
pub mod finish;
pub mod queues;
pub mod receiver;
pub mod tickets;
