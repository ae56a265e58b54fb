//! Keeping what is held: the registry of a client's holdings and the releases in flight,
//! and the watchdog that renews them (one `LOCK.RENEW` pipeline per node). May use `net/`
//! and `pure/`.

pub(crate) mod registry;
pub(crate) mod releasing;
pub(crate) mod rounds;
pub(crate) mod watchdog;
