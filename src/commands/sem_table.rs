//! The semaphore's commands (`SEM.*`), declared like the plain lock's: flags, arity, key
//! access, docs and body. Tickets (`LOCK.CANCEL`, `LOCK.GRANTS`) are shared.

use crate::commands::dispatch::call;
use crate::commands::{
    sem_acquire, sem_apply, sem_forcerelease, sem_info, sem_permits, sem_release, sem_renew,
    sem_wait, AT, FENCE, KEY, LEASE, OWNER, TICKET_WAIT, TO, TOKEN, WAIT,
};
use crate::host::spec::{ArgDoc, ArgKind, CommandSpec, KeyAccess};

pub const SEM_COMMANDS: [CommandSpec; 8] = [
    CommandSpec {
        name: c"sem.permits",
        flags: c"write deny-oom fast",
        arity: -3,
        keys: KeyAccess::Write,
        categories: c"hash",
        summary: c"Sets the total permits of a semaphore (or adds to it), creating it; a raised total serves its queue. Returns the total.",
        args: &[KEY, ADD, TOTAL],
        call: call!("SEM.PERMITS", sem_permits),
    },
    CommandSpec {
        name: c"sem.acquire",
        flags: c"write deny-oom blocking",
        arity: -4,
        keys: KeyAccess::Write,
        categories: c"hash",
        summary: c"Takes permits of a semaphore (a holder adds to its holding); optionally waits in its FIFO queue. Returns the fencing token, or nil.",
        args: &[KEY, OWNER, PERMITS, LEASE, WAIT],
        call: call!("SEM.ACQUIRE", sem_acquire),
    },
    CommandSpec {
        name: c"sem.wait",
        flags: c"write deny-oom",
        arity: -4,
        keys: KeyAccess::Write,
        categories: c"hash",
        summary: c"Takes permits, or queues a ticket whose outcome comes as LOCK.WAIT's. Returns [held, token] or [queued, wait id].",
        args: &[KEY, OWNER, PERMITS, LEASE, TICKET_WAIT, TO],
        call: call!("SEM.WAIT", sem_wait),
    },
    CommandSpec {
        name: c"sem.release",
        flags: c"write fast",
        arity: -3,
        keys: KeyAccess::Write,
        categories: c"hash",
        summary: c"Gives back some or all of owner's permits; the queue is served. Returns the permits owner still holds.",
        args: &[KEY, OWNER, SOME_PERMITS, FENCE],
        call: call!("SEM.RELEASE", sem_release),
    },
    CommandSpec {
        name: c"sem.renew",
        flags: c"write fast",
        arity: -3,
        keys: KeyAccess::Write,
        categories: c"hash",
        summary: c"Resets the lease of owner's permits. Returns 1, or 0 if owner holds none.",
        args: &[KEY, OWNER, LEASE, FENCE],
        call: call!("SEM.RENEW", sem_renew),
    },
    CommandSpec {
        name: c"sem.info",
        flags: c"readonly fast",
        arity: 2,
        keys: KeyAccess::Read,
        categories: c"hash",
        summary: c"Returns the total, the available permits, the holders (owner, permits, ttl, token), the waiters and the queue of a semaphore, or nil.",
        args: &[KEY],
        call: call!("SEM.INFO", sem_info),
    },
    CommandSpec {
        name: c"sem.forcerelease",
        flags: c"write fast",
        arity: 2,
        keys: KeyAccess::Write,
        categories: c"hash dangerous",
        summary: c"Ends every holding of a semaphore (its total stays), then serves its queue. Returns 1, or 0 if nobody held.",
        args: &[KEY],
        call: call!("SEM.FORCERELEASE", sem_forcerelease),
    },
    CommandSpec {
        name: c"sem.apply",
        flags: c"write fast",
        arity: 6,
        keys: KeyAccess::Write,
        categories: c"hash dangerous",
        summary: c"How a master replicates a change of one holder of a semaphore; runs only from the replication stream or an AOF.",
        args: &[KEY, OWNER, HELD, TOKEN, AT],
        call: call!("SEM.APPLY", sem_apply),
    },
];

const TOTAL: ArgDoc = ArgDoc {
    name: c"permits",
    kind: ArgKind::Integer,
    token: None,
    optional: false,
    summary: c"The total permits, 0 to 2147483647; after ADD, the permits to add (-2147483647 to 2147483647).",
};
const ADD: ArgDoc = ArgDoc {
    name: c"add",
    kind: ArgKind::PureToken,
    token: Some(c"ADD"),
    optional: true,
    summary:
        c"Adds the permits to the total (a negative number takes some away) instead of setting it.",
};
const PERMITS: ArgDoc = ArgDoc {
    name: c"permits",
    kind: ArgKind::Integer,
    token: None,
    optional: false,
    summary: c"How many permits, 1 to 2147483647 (at most the total).",
};
const SOME_PERMITS: ArgDoc = ArgDoc {
    name: c"permits",
    kind: ArgKind::Integer,
    token: None,
    optional: true,
    summary: c"How many permits to give back (none: all that owner holds).",
};
const HELD: ArgDoc = ArgDoc {
    name: c"permits",
    kind: ArgKind::Integer,
    token: None,
    optional: false,
    summary: c"The permits the owner holds (0: none).",
};
