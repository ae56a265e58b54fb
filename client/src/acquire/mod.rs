//! Acquiring a lock and holding it: the cancellation-safe acquisition, its waits (a ticket,
//! or a blocking wait on a connection of its own), its recovery after an error, the replicas'
//! acknowledgement, and the `Guard` it returns, with its scope. May use `core/`, `hold/`, `net/` and
//! `pure/`.

pub(crate) mod cancel_safe;
pub(crate) mod detach;
pub(crate) mod guard;
pub(crate) mod latch_wait;
pub(crate) mod recover;
pub(crate) mod replicas;
pub(crate) mod scoped;
pub(crate) mod ticket;
pub(crate) mod wait;
