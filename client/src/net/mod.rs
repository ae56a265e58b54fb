//! The connections to the servers: a node's shared connection, the nodes of a Redis Cluster
//! or the master the Sentinels name, the router that sends each command to its node
//! (following `MOVED`, `ASK` and failovers), and the wait connections that carry tickets'
//! outcomes (pushed or pulled) or blocking waits, and the listening connections that hear
//! of holdings the server ended. May use `pure/` only.

pub(crate) mod channel;
pub(crate) mod connect;
pub(crate) mod identity;
pub(crate) mod listener;
pub(crate) mod mailbox;
pub(crate) mod node;
pub(crate) mod pool;
pub(crate) mod pull;
pub(crate) mod push;
pub(crate) mod route;
pub(crate) mod router;
pub(crate) mod sentinel;
pub(crate) mod tickets;
pub(crate) mod topology;
