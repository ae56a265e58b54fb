//! The pure pieces: errors, options, the commands the client sends, replies read into
//! values, a holding's deadline and loss, majorities, and the bookkeeping of turns,
//! threads and scopes. No connection and no server in here; they use only each other.

pub(crate) mod commands;
pub(crate) mod config;
pub(crate) mod ended;
pub(crate) mod error;
pub(crate) mod holding;
pub(crate) mod info;
pub(crate) mod kind;
pub(crate) mod loss;
pub(crate) mod naming;
pub(crate) mod options;
pub(crate) mod pair;
pub(crate) mod per_thread;
pub(crate) mod quorum;
pub(crate) mod refusal;
pub(crate) mod reply;
pub(crate) mod rw_info;
pub(crate) mod scope;
pub(crate) mod sem_info;
pub(crate) mod slots;
pub(crate) mod turns;
