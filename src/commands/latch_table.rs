//! The countdown latch's commands (`LATCH.*`), declared like the locks': flags, arity, key
//! access, docs and body. Tickets (`LOCK.CANCEL`, `LOCK.GRANTS`) are shared.

use crate::commands::dispatch::call;
use crate::commands::{
    latch_await, latch_count, latch_countdown, latch_set, latch_wait, TICKET_WAIT, TO,
};
use crate::host::spec::{ArgDoc, ArgKind, CommandSpec, KeyAccess};

pub const LATCH_COMMANDS: [CommandSpec; 5] = [
    CommandSpec {
        name: c"latch.set",
        flags: c"write deny-oom",
        arity: 3,
        keys: KeyAccess::Write,
        categories: c"string",
        summary: c"Sets a countdown latch's count if it has none (as Redisson's trySetCount). Returns 1, or 0 if it had one.",
        args: &[LATCH_KEY, COUNT],
        call: call!("LATCH.SET", latch_set),
    },
    CommandSpec {
        name: c"latch.countdown",
        flags: c"write",
        arity: 2,
        keys: KeyAccess::Write,
        categories: c"string",
        summary: c"Takes one off a countdown latch's count; at zero deletes it, publishes 0 and releases every wait. Returns the count after.",
        args: &[LATCH_KEY],
        call: call!("LATCH.COUNTDOWN", latch_countdown),
    },
    CommandSpec {
        name: c"latch.count",
        flags: c"readonly fast",
        arity: 2,
        keys: KeyAccess::Read,
        categories: c"string",
        summary: c"Returns a countdown latch's count, 0 when it has none.",
        args: &[LATCH_KEY],
        call: call!("LATCH.COUNT", latch_count),
    },
    CommandSpec {
        name: c"latch.await",
        flags: c"write deny-oom blocking",
        arity: -2,
        keys: KeyAccess::Write,
        categories: c"string",
        summary: c"Returns 1 once a countdown latch is at zero or has no count, blocking until then; 0 when WAIT runs out.",
        args: &[LATCH_KEY, AWAIT_WAIT],
        call: call!("LATCH.AWAIT", latch_await),
    },
    CommandSpec {
        name: c"latch.wait",
        flags: c"write deny-oom",
        arity: -2,
        keys: KeyAccess::Write,
        categories: c"string",
        summary: c"Returns [done, 1] when a countdown latch is at zero or has no count, else queues a ticket whose outcome (1, or 0 when WAIT runs out) comes as LOCK.WAIT's: [queued, wait id].",
        args: &[LATCH_KEY, TICKET_WAIT, TO],
        call: call!("LATCH.WAIT", latch_wait),
    },
];

const LATCH_KEY: ArgDoc = ArgDoc {
    name: c"key",
    kind: ArgKind::Key,
    token: None,
    optional: false,
    summary: c"The latch's name: a string holding its count.",
};
const COUNT: ArgDoc = ArgDoc {
    name: c"count",
    kind: ArgKind::Integer,
    token: None,
    optional: false,
    summary: c"The count, at least 1.",
};
const AWAIT_WAIT: ArgDoc = ArgDoc {
    name: c"timeout",
    kind: ArgKind::Integer,
    token: Some(c"WAIT"),
    optional: true,
    summary: c"Block up to this many milliseconds (0 or none: no limit).",
};
