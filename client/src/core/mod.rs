//! What every handle of one client shares (`Core`): its ids, the router, the wait
//! connections, the watchdog, the runtime, the options; and how a client closes. Guards,
//! acquisitions and the public `Client` reach the parts below only through it. May use
//! `hold/`, `net/` and `pure/`.

pub(crate) mod deliver;
pub(crate) mod holds;
pub(crate) mod send;
pub(crate) mod shared;
