//! Locks on several servers: `MultiLock` (several locks, all or none) and `RedLock` (one
//! name on a majority of independent servers), with the election by which a RedLock's
//! contenders reach a majority and the tasks that keep its members. Built on the public
//! API (`Client`, `Lock`, `Guard`); may use every folder below it.

pub(crate) mod attempt;
pub(crate) mod election;
pub(crate) mod keeper;
pub(crate) mod majority;
pub(crate) mod members;
pub(crate) mod multi;
pub(crate) mod redlock;
pub(crate) mod redlock_guard;
pub(crate) mod signal;
