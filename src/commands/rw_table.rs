//! The read-write lock's commands (`RWLOCK.*`), declared like the plain lock's: flags,
//! arity, key access, docs and body. Tickets (`LOCK.CANCEL`, `LOCK.GRANTS`) are shared.

use crate::commands::dispatch::call;
use crate::commands::{
    rw_acquire, rw_apply, rw_forcerelease, rw_info, rw_release, rw_renew, rw_wait, AT, FENCE, KEY,
    LEASE, TICKET_WAIT, TO, TOKEN, WAIT,
};
use crate::host::spec::{ArgDoc, ArgKind, CommandSpec, KeyAccess};

pub const RW_COMMANDS: [CommandSpec; 7] = [
    CommandSpec {
        name: c"rwlock.acquire",
        flags: c"write deny-oom blocking",
        arity: -4,
        keys: KeyAccess::Write,
        categories: c"hash",
        summary: c"Acquires or reenters a read or write hold of a read-write lock; optionally waits in its FIFO queue. Returns the fencing token, or nil.",
        args: &[KEY, RW_OWNER, RW_MODE, LEASE, WAIT],
        call: call!("RWLOCK.ACQUIRE", rw_acquire),
    },
    CommandSpec {
        name: c"rwlock.wait",
        flags: c"write deny-oom",
        arity: -4,
        keys: KeyAccess::Write,
        categories: c"hash",
        summary: c"Acquires or reenters a read or write hold, or queues a ticket whose outcome comes as LOCK.WAIT's. Returns [held, token] or [queued, wait id].",
        args: &[KEY, RW_OWNER, RW_MODE, LEASE, TICKET_WAIT, TO],
        call: call!("RWLOCK.WAIT", rw_wait),
    },
    CommandSpec {
        name: c"rwlock.release",
        flags: c"write fast",
        arity: -4,
        keys: KeyAccess::Write,
        categories: c"hash",
        summary: c"Releases one read or write hold; a holder's last hold ends its holding and the queue is served. Returns the holds of that mode left.",
        args: &[KEY, RW_OWNER, RW_MODE, FENCE],
        call: call!("RWLOCK.RELEASE", rw_release),
    },
    CommandSpec {
        name: c"rwlock.renew",
        flags: c"write fast",
        arity: -3,
        keys: KeyAccess::Write,
        categories: c"hash",
        summary: c"Resets the lease of owner's holding of a read-write lock. Returns 1, or 0 if owner holds nothing.",
        args: &[KEY, RW_OWNER, LEASE, FENCE],
        call: call!("RWLOCK.RENEW", rw_renew),
    },
    CommandSpec {
        name: c"rwlock.info",
        flags: c"readonly fast",
        arity: 2,
        keys: KeyAccess::Read,
        categories: c"hash",
        summary: c"Returns the mode, the holders (owner, reads, writes, ttl, token), the waiters and the queue of a read-write lock, or nil.",
        args: &[KEY],
        call: call!("RWLOCK.INFO", rw_info),
    },
    CommandSpec {
        name: c"rwlock.forcerelease",
        flags: c"write fast",
        arity: 2,
        keys: KeyAccess::Write,
        categories: c"hash dangerous",
        summary: c"Removes a read-write lock whoever holds it, then serves its queue. Returns 1 or 0.",
        args: &[KEY],
        call: call!("RWLOCK.FORCERELEASE", rw_forcerelease),
    },
    CommandSpec {
        name: c"rwlock.apply",
        flags: c"write fast",
        arity: 7,
        keys: KeyAccess::Write,
        categories: c"hash dangerous",
        summary: c"How a master replicates a change of one holder of a read-write lock; runs only from the replication stream or an AOF.",
        args: &[KEY, RW_OWNER, READS, WRITES, TOKEN, AT],
        call: call!("RWLOCK.APPLY", rw_apply),
    },
];

const RW_OWNER: ArgDoc = ArgDoc {
    name: c"owner",
    kind: ArgKind::String,
    token: None,
    optional: false,
    summary: c"The holder's id, 1 to 256 bytes, not starting with '@' nor ending with ':write'.",
};
const RW_MODE: ArgDoc = ArgDoc {
    name: c"mode",
    kind: ArgKind::String,
    token: None,
    optional: false,
    summary: c"READ (shared) or WRITE (exclusive).",
};
const READS: ArgDoc = ArgDoc {
    name: c"reads",
    kind: ArgKind::Integer,
    token: None,
    optional: false,
    summary: c"The owner's read holds.",
};
const WRITES: ArgDoc = ArgDoc {
    name: c"writes",
    kind: ArgKind::Integer,
    token: None,
    optional: false,
    summary: c"The owner's write holds.",
};
