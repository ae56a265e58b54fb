//! `COMMAND DOCS` for each command (summary, since, complexity, arity, arguments), so that
//! `redis-cli` shows hints. Uses `RedisModule_SetCommandInfo`, which Redis 7.0 added; on an
//! older server the commands work without docs.

use std::ffi::{c_int, CStr};
use std::mem::{size_of, zeroed};
use std::ptr;

use redis_module::{raw, Context};

use crate::error::LockError;
use crate::store::api;

const SINCE: &CStr = c"0.1.0";

struct Arg {
    name: &'static CStr,
    kind: raw::RedisModuleCommandArgType,
    token: Option<&'static CStr>,
    optional: bool,
    summary: &'static CStr,
}

const KEY: Arg = Arg {
    name: c"key",
    kind: raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_KEY,
    token: None,
    optional: false,
    summary: c"The lock's name.",
};
const OWNER: Arg = Arg {
    name: c"owner",
    kind: raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_STRING,
    token: None,
    optional: false,
    summary: c"The holder's id, 1 to 256 bytes, not starting with '@'.",
};
const LEASE: Arg = Arg {
    name: c"ms",
    kind: raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_INTEGER,
    token: Some(c"LEASE"),
    optional: true,
    summary: c"Lease in milliseconds (default: rlock.default-lease).",
};
const WAIT: Arg = Arg {
    name: c"timeout",
    kind: raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_INTEGER,
    token: Some(c"WAIT"),
    optional: true,
    summary: c"Block up to this many milliseconds for the lock (0: no limit).",
};

const FENCE: Arg = Arg {
    name: c"token",
    kind: raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_INTEGER,
    token: Some(c"TOKEN"),
    optional: true,
    summary: c"Act only on the holding with this fencing token.",
};

const HOLDS: Arg = Arg {
    name: c"holds",
    kind: raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_INTEGER,
    token: None,
    optional: false,
    summary: c"The reentry count.",
};
const TOKEN: Arg = Arg {
    name: c"token",
    kind: raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_INTEGER,
    token: None,
    optional: false,
    summary: c"The fencing token (0: none).",
};
const AT: Arg = Arg {
    name: c"unix-time-milliseconds",
    kind: raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_UNIX_TIME,
    token: None,
    optional: false,
    summary: c"When the lease ends.",
};

struct Doc {
    command: &'static CStr,
    summary: &'static CStr,
    arity: c_int,
    args: &'static [Arg],
}

const DOCS: [Doc; 6] = [
    Doc {
        command: c"lock.acquire",
        summary: c"Acquires or reenters a lock; optionally waits in a FIFO queue. Returns the fencing token, or nil.",
        arity: -3,
        args: &[KEY, OWNER, LEASE, WAIT],
    },
    Doc {
        command: c"lock.release",
        summary: c"Releases one hold of a lock; at zero hands it to the next waiter or frees it. Returns the holds remaining.",
        arity: -3,
        args: &[KEY, OWNER, FENCE],
    },
    Doc {
        command: c"lock.renew",
        summary: c"Resets the lease of a lock held by owner. Returns 1, or 0 if owner does not hold it.",
        arity: -3,
        args: &[KEY, OWNER, LEASE, FENCE],
    },
    Doc {
        command: c"lock.info",
        summary: c"Returns the owner, holds, ttl, token and waiters of a lock, or nil.",
        arity: 2,
        args: &[KEY],
    },
    Doc {
        command: c"lock.forcerelease",
        summary: c"Removes a lock whoever holds it, then hands it off or publishes the release. Returns 1 or 0.",
        arity: 2,
        args: &[KEY],
    },
    Doc {
        command: c"lock.apply",
        summary: c"How a master replicates a new or reentered holding; runs only from the replication stream or an AOF.",
        arity: 6,
        args: &[KEY, OWNER, HOLDS, TOKEN, AT],
    },
];

/// Registers the docs of every command. Skipped on servers without the API.
pub fn register(ctx: &Context) -> Result<(), LockError> {
    if unsafe { raw::RedisModule_SetCommandInfo }.is_none() {
        return Ok(());
    }
    DOCS.iter().try_for_each(|doc| register_one(ctx, doc))
}

fn register_one(ctx: &Context, doc: &Doc) -> Result<(), LockError> {
    let get_command = api!(RedisModule_GetCommand);
    let set_info = api!(RedisModule_SetCommandInfo);
    let command = unsafe { get_command(ctx.ctx, doc.command.as_ptr()) };
    if command.is_null() {
        return Err(LockError::MissingApi("RedisModule_GetCommand"));
    }
    // Redis copies everything it is given; the arrays end with a zeroed entry.
    let mut args: Vec<raw::RedisModuleCommandArg> = doc.args.iter().map(to_raw).collect();
    args.push(unsafe { zeroed() });
    let version = raw::RedisModuleCommandInfoVersion {
        version: 1,
        sizeof_historyentry: size_of::<raw::RedisModuleCommandHistoryEntry>(),
        sizeof_keyspec: size_of::<raw::RedisModuleCommandKeySpec>(),
        sizeof_arg: size_of::<raw::RedisModuleCommandArg>(),
    };
    let info = raw::RedisModuleCommandInfo {
        version: &version,
        summary: doc.summary.as_ptr(),
        complexity: c"O(1)".as_ptr(),
        since: SINCE.as_ptr(),
        history: ptr::null_mut(),
        tips: ptr::null(),
        arity: doc.arity,
        key_specs: ptr::null_mut(),
        args: args.as_mut_ptr(),
    };
    if unsafe { set_info(command, &info) } != raw::REDISMODULE_OK as c_int {
        return Err(LockError::MissingApi("RedisModule_SetCommandInfo"));
    }
    Ok(())
}

fn to_raw(arg: &Arg) -> raw::RedisModuleCommandArg {
    // Fields not set here (deprecated_since, subargs, display_text) stay null.
    let mut out: raw::RedisModuleCommandArg = unsafe { zeroed() };
    out.name = arg.name.as_ptr();
    out.type_ = arg.kind;
    out.key_spec_index = if arg.kind == KEY.kind { 0 } else { -1 };
    out.token = arg.token.map_or(ptr::null(), CStr::as_ptr);
    out.summary = arg.summary.as_ptr();
    out.since = SINCE.as_ptr();
    out.flags = if arg.optional {
        raw::REDISMODULE_CMD_ARG_OPTIONAL as c_int
    } else {
        0
    };
    out
}
