//! Every command in one table: name, flags, arity, key access, docs and body. Registration,
//! `COMMAND INFO`, key specs and `COMMAND DOCS` all come from [`COMMANDS`].
//!
//! One file per command: its synopsis and a thin `run` (parse, with the command's parser
//! in `rlock_core::parse`, then the layers below, then the reply); `dispatch.rs` is how
//! Redis calls one.
//!
//! May use: `handoff/`, `waits/`, `store/`, `host/`, `rlock_core`. Not `hooks/`, and no
//! command file uses another: what two commands share lives in `handoff/`.

pub mod acquire;
pub mod apply;
pub mod cancel;
mod dispatch;
pub mod fenced;
pub mod forcerelease;
pub mod grants;
pub mod info;
pub mod latch_await;
pub mod latch_count;
pub mod latch_countdown;
pub mod latch_set;
mod latch_table;
pub mod latch_wait;
pub mod listen;
pub mod raise;
pub mod release;
pub mod renew;
pub mod rw_acquire;
pub mod rw_apply;
pub mod rw_forcerelease;
pub mod rw_info;
pub mod rw_release;
pub mod rw_renew;
mod rw_table;
pub mod rw_wait;
pub mod sem_acquire;
pub mod sem_apply;
pub mod sem_forcerelease;
pub mod sem_info;
pub mod sem_permits;
pub mod sem_release;
pub mod sem_renew;
mod sem_table;
pub mod sem_wait;
pub mod wait;

pub use latch_table::LATCH_COMMANDS;
pub use rw_table::RW_COMMANDS;
pub use sem_table::SEM_COMMANDS;

use crate::commands::dispatch::call;
use crate::host::spec::{ArgDoc, ArgKind, CommandSpec, KeyAccess};

/// Every command. All but `LOCK.GRANTS` and `LOCK.LISTEN` take the lock's key at position 1; `LOCK.FENCED`
/// also the keys of the command it runs, which its `getkeys-api` callback reports.
pub const COMMANDS: [CommandSpec; 12] = [
    CommandSpec {
        name: c"lock.acquire",
        flags: c"write deny-oom blocking",
        arity: -3,
        keys: KeyAccess::Write,
        categories: c"hash",
        summary: c"Acquires or reenters a lock; optionally waits in a FIFO queue. Returns the fencing token, or nil.",
        args: &[KEY, OWNER, LEASE, WAIT],
        call: call!("LOCK.ACQUIRE", acquire),
    },
    CommandSpec {
        name: c"lock.release",
        flags: c"write fast",
        arity: -3,
        keys: KeyAccess::Write,
        categories: c"hash",
        summary: c"Releases one hold of a lock; at zero hands it to the next waiter or frees it. Returns the holds remaining.",
        args: &[KEY, OWNER, FENCE],
        call: call!("LOCK.RELEASE", release),
    },
    CommandSpec {
        name: c"lock.renew",
        flags: c"write fast",
        arity: -3,
        keys: KeyAccess::Write,
        categories: c"hash",
        summary: c"Resets the lease of a lock held by owner. Returns 1, or 0 if owner does not hold it.",
        args: &[KEY, OWNER, LEASE, FENCE],
        call: call!("LOCK.RENEW", renew),
    },
    CommandSpec {
        name: c"lock.info",
        flags: c"readonly fast",
        arity: 2,
        keys: KeyAccess::Read,
        categories: c"hash",
        summary: c"Returns the owner, holds, ttl, token and waiters of a lock, or nil.",
        args: &[KEY],
        call: call!("LOCK.INFO", info),
    },
    CommandSpec {
        name: c"lock.forcerelease",
        flags: c"write fast",
        arity: 2,
        keys: KeyAccess::Write,
        categories: c"hash dangerous",
        summary: c"Removes a lock whoever holds it, then hands it off or publishes the release. Returns 1 or 0.",
        args: &[KEY],
        call: call!("LOCK.FORCERELEASE", forcerelease),
    },
    CommandSpec {
        name: c"lock.apply",
        flags: c"write fast",
        arity: 6,
        keys: KeyAccess::Write,
        categories: c"hash dangerous",
        summary: c"How a master replicates a new or reentered holding; runs only from the replication stream or an AOF.",
        args: &[KEY, OWNER, HOLDS, TOKEN, AT],
        call: call!("LOCK.APPLY", apply),
    },
    CommandSpec {
        name: c"lock.fenced",
        flags: c"write getkeys-api",
        arity: -5,
        keys: KeyAccess::Fenced,
        categories: c"hash",
        summary: c"Runs a command only while owner holds the lock with the holding of token, atomically. Returns the command's reply.",
        args: &[KEY, OWNER, HOLDING, COMMAND, ARG],
        call: fenced::call,
    },
    CommandSpec {
        name: c"lock.raise",
        flags: c"write fast",
        arity: 5,
        keys: KeyAccess::Read,
        categories: c"hash",
        summary: c"Raises this node's token counter to at least floor, for the holder of the lock. Returns the counter, or nil if not held.",
        args: &[KEY, OWNER, TOKEN, FLOOR],
        call: call!("LOCK.RAISE", raise),
    },
    CommandSpec {
        name: c"lock.wait",
        flags: c"write deny-oom",
        arity: -3,
        keys: KeyAccess::Write,
        categories: c"hash",
        summary: c"Acquires or reenters a lock, or queues a ticket in its FIFO whose outcome is pushed to this connection (or to TO's mailbox). Returns [held, token] or [queued, wait id].",
        args: &[KEY, OWNER, LEASE, TICKET_WAIT, TO],
        call: call!("LOCK.WAIT", wait),
    },
    CommandSpec {
        name: c"lock.grants",
        flags: c"deny-script",
        arity: -1,
        keys: KeyAccess::None,
        categories: c"",
        summary: c"Returns the ended waits of this connection's mailbox as [wait id, outcome, ...]; optionally blocks for one.",
        args: &[BLOCK, COUNT],
        call: call!("LOCK.GRANTS", grants),
    },
    CommandSpec {
        name: c"lock.cancel",
        flags: c"fast",
        arity: 3,
        keys: KeyAccess::Read,
        categories: c"hash",
        summary: c"Ends a ticket: 0 if it was still queued, the token if its grant was still in a mailbox (the caller holds the lock), else nil.",
        args: &[KEY, WAIT_ID],
        call: call!("LOCK.CANCEL", cancel),
    },
    CommandSpec {
        name: c"lock.listen",
        flags: c"fast",
        arity: 2,
        keys: KeyAccess::None,
        categories: c"",
        summary: c"This connection listens for the ends of holdings of owners with this prefix that their holder did not ask for. Returns the channel to subscribe to.",
        args: &[PREFIX],
        call: call!("LOCK.LISTEN", listen),
    },
];

pub(super) const PREFIX: ArgDoc = ArgDoc {
    name: c"prefix",
    kind: ArgKind::String,
    token: None,
    optional: false,
    summary: c"An owner id up to its last ':' (1 to 256 bytes).",
};

pub(super) const TICKET_WAIT: ArgDoc = ArgDoc {
    name: c"timeout",
    kind: ArgKind::Integer,
    token: Some(c"WAIT"),
    optional: true,
    summary: c"Wait up to this many milliseconds for the lock (0 or none: no limit).",
};
pub(super) const TO: ArgDoc = ArgDoc {
    name: c"client-id",
    kind: ArgKind::Integer,
    token: Some(c"TO"),
    optional: true,
    summary:
        c"Send the outcome to this connection's mailbox (LOCK.GRANTS) instead of pushing it here.",
};
const BLOCK: ArgDoc = ArgDoc {
    name: c"ms",
    kind: ArgKind::Integer,
    token: Some(c"BLOCK"),
    optional: true,
    summary: c"Block up to this many milliseconds when the mailbox is empty (0: no limit).",
};
const COUNT: ArgDoc = ArgDoc {
    name: c"count",
    kind: ArgKind::Integer,
    token: Some(c"COUNT"),
    optional: true,
    summary: c"Return at most this many outcomes.",
};
const WAIT_ID: ArgDoc = ArgDoc {
    name: c"wait-id",
    kind: ArgKind::Integer,
    token: None,
    optional: false,
    summary: c"The wait id LOCK.WAIT answered.",
};

pub(super) const KEY: ArgDoc = ArgDoc {
    name: c"key",
    kind: ArgKind::Key,
    token: None,
    optional: false,
    summary: c"The lock's name.",
};
pub(super) const OWNER: ArgDoc = ArgDoc {
    name: c"owner",
    kind: ArgKind::String,
    token: None,
    optional: false,
    summary: c"The holder's id, 1 to 256 bytes, not starting with '@'.",
};
pub(super) const LEASE: ArgDoc = ArgDoc {
    name: c"ms",
    kind: ArgKind::Integer,
    token: Some(c"LEASE"),
    optional: true,
    summary: c"Lease in milliseconds (default: rlock.default-lease).",
};
pub(super) const WAIT: ArgDoc = ArgDoc {
    name: c"timeout",
    kind: ArgKind::Integer,
    token: Some(c"WAIT"),
    optional: true,
    summary: c"Block up to this many milliseconds for the lock (0: no limit).",
};
pub(super) const FENCE: ArgDoc = ArgDoc {
    name: c"token",
    kind: ArgKind::Integer,
    token: Some(c"TOKEN"),
    optional: true,
    summary: c"Act only on the holding with this fencing token.",
};
pub(super) const HOLDS: ArgDoc = ArgDoc {
    name: c"holds",
    kind: ArgKind::Integer,
    token: None,
    optional: false,
    summary: c"The reentry count.",
};
pub(super) const TOKEN: ArgDoc = ArgDoc {
    name: c"token",
    kind: ArgKind::Integer,
    token: None,
    optional: false,
    summary: c"The fencing token (0: none).",
};
const HOLDING: ArgDoc = ArgDoc {
    name: c"token",
    kind: ArgKind::Integer,
    token: None,
    optional: false,
    summary: c"The fencing token of the caller's holding.",
};
const COMMAND: ArgDoc = ArgDoc {
    name: c"command",
    kind: ArgKind::String,
    token: None,
    optional: false,
    summary: c"The command to run; its keys must be in the lock's slot.",
};
const ARG: ArgDoc = ArgDoc {
    name: c"arg",
    kind: ArgKind::Strings,
    token: None,
    optional: true,
    summary: c"The command's arguments.",
};
const FLOOR: ArgDoc = ArgDoc {
    name: c"floor",
    kind: ArgKind::Integer,
    token: None,
    optional: false,
    summary: c"The least value the node's token counter must reach.",
};
pub(super) const AT: ArgDoc = ArgDoc {
    name: c"unix-time-milliseconds",
    kind: ArgKind::UnixTime,
    token: None,
    optional: false,
    summary: c"When the lease ends.",
};
