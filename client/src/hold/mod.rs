//! Keeping what is held: the registry of a client's holdings and the releases in flight,
//! the watchdog that renews them (one `LOCK.RENEW` pipeline per node), and what the
//! servers announce of holdings they ended (`heard.rs`). May use `net/`
//! and `pure/`.

pub(crate) mod heard;
pub(crate) mod registry;
pub(crate) mod releasing;
pub(crate) mod rounds;
pub(crate) mod watchdog;
