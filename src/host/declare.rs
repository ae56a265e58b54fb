//! Hands the command table to Redis: each command is created with its flags and key
//! positions, then given its key spec and `COMMAND DOCS` (summary, since, complexity,
//! arity, arguments) through `RedisModule_SetCommandInfo`, which Redis 7.0 added, and, on
//! Redis 7.2+ (where `RedisModule_SetCommandACLCategories` exists), its ACL categories:
//! `@hash` for every command (a lock is a hash), `@dangerous` for `LOCK.FORCERELEASE` and
//! `LOCK.APPLY`.

use std::ffi::{c_int, CStr};
use std::mem::{size_of, zeroed};
use std::ptr;

use redis_module::raw;

use crate::host::ffi::api;
use crate::host::spec::{ArgDoc, ArgKind, CommandSpec, KeyAccess};
use rlock_core::error::LockError;

const SINCE: &CStr = c"0.1.0";

/// Creates every command of `table`, then sets its info where the server can.
pub fn register(ctx: *mut raw::RedisModuleCtx, table: &[CommandSpec]) -> Result<(), LockError> {
    let create = api!(RedisModule_CreateCommand);
    for spec in table {
        let key = c_int::from(spec.keys != KeyAccess::None);
        let created = unsafe {
            create(
                ctx,
                spec.name.as_ptr(),
                Some(spec.call),
                spec.flags.as_ptr(),
                key,
                key,
                key,
            )
        };
        if created != raw::REDISMODULE_OK as c_int {
            return Err(LockError::MissingApi("RedisModule_CreateCommand"));
        }
    }
    table.iter().try_for_each(|spec| set_info(ctx, spec))?;
    // Redis 7.2+: the categories of the table, on top of those the flags imply.
    if let Some(set_categories) = unsafe { raw::RedisModule_SetCommandACLCategories } {
        let get_command = api!(RedisModule_GetCommand);
        for spec in table {
            let command = unsafe { get_command(ctx, spec.name.as_ptr()) };
            let set = !command.is_null()
                && unsafe { set_categories(command, spec.categories.as_ptr()) }
                    == raw::REDISMODULE_OK as c_int;
            if !set {
                return Err(LockError::MissingApi("RedisModule_SetCommandACLCategories"));
            }
        }
    }
    Ok(())
}

fn set_info(ctx: *mut raw::RedisModuleCtx, spec: &CommandSpec) -> Result<(), LockError> {
    let get_command = api!(RedisModule_GetCommand);
    let set_info = api!(RedisModule_SetCommandInfo);
    let command = unsafe { get_command(ctx, spec.name.as_ptr()) };
    if command.is_null() {
        return Err(LockError::MissingApi("RedisModule_GetCommand"));
    }
    // Redis copies everything it is given; the arrays end with a zeroed entry.
    let mut args: Vec<raw::RedisModuleCommandArg> = spec.args.iter().map(arg).collect();
    args.push(unsafe { zeroed() });
    let mut key_specs = key_specs(spec.keys);
    let version = raw::RedisModuleCommandInfoVersion {
        version: 1,
        sizeof_historyentry: size_of::<raw::RedisModuleCommandHistoryEntry>(),
        sizeof_keyspec: size_of::<raw::RedisModuleCommandKeySpec>(),
        sizeof_arg: size_of::<raw::RedisModuleCommandArg>(),
    };
    let info = raw::RedisModuleCommandInfo {
        version: &version,
        summary: spec.summary.as_ptr(),
        complexity: c"O(1)".as_ptr(),
        since: SINCE.as_ptr(),
        history: ptr::null_mut(),
        tips: ptr::null(),
        arity: spec.arity,
        key_specs: key_specs.as_mut_ptr(),
        args: args.as_mut_ptr(),
    };
    if unsafe { set_info(command, &info) } != raw::REDISMODULE_OK as c_int {
        return Err(LockError::MissingApi("RedisModule_SetCommandInfo"));
    }
    Ok(())
}

/// The key specs of a command, ending with a zeroed one: its key (argument 1), and for
/// `LOCK.FENCED` the keys of the command it runs, which no spec can find (Redis then asks
/// its `getkeys-api` callback).
fn key_specs(access: KeyAccess) -> Vec<raw::RedisModuleCommandKeySpec> {
    if access == KeyAccess::None {
        return vec![unsafe { zeroed() }];
    }
    let mut specs = vec![key_spec(access)];
    if access == KeyAccess::Fenced {
        let mut inner: raw::RedisModuleCommandKeySpec = unsafe { zeroed() };
        let flags = raw::REDISMODULE_CMD_KEY_RW
            | raw::REDISMODULE_CMD_KEY_INCOMPLETE
            | raw::REDISMODULE_CMD_KEY_VARIABLE_FLAGS;
        inner.flags = u64::from(flags);
        inner.notes = c"the keys of the command it runs, reported by its getkeys callback".as_ptr();
        inner.begin_search_type =
            raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_UNKNOWN;
        inner.find_keys_type = raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_UNKNOWN;
        specs.push(inner);
    }
    specs.push(unsafe { zeroed() });
    specs
}

/// The key spec of a command's one key: argument 1, read-only or read-write.
fn key_spec(access: KeyAccess) -> raw::RedisModuleCommandKeySpec {
    let flags = match access {
        KeyAccess::Read | KeyAccess::Fenced | KeyAccess::None => {
            raw::REDISMODULE_CMD_KEY_RO | raw::REDISMODULE_CMD_KEY_ACCESS
        }
        // Redis takes one of INSERT, UPDATE and DELETE; a lock command may do any of them
        // to its key, and UPDATE is what HSET declares.
        KeyAccess::Write => {
            raw::REDISMODULE_CMD_KEY_RW
                | raw::REDISMODULE_CMD_KEY_ACCESS
                | raw::REDISMODULE_CMD_KEY_UPDATE
        }
    };
    let mut spec: raw::RedisModuleCommandKeySpec = unsafe { zeroed() };
    spec.flags = u64::from(flags);
    spec.begin_search_type = raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_INDEX;
    spec.bs.index.pos = 1;
    spec.find_keys_type = raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_RANGE;
    // One key: the last key is the first (offset 0), step 1, no limit.
    spec.fk.range.lastkey = 0;
    spec.fk.range.keystep = 1;
    spec.fk.range.limit = 0;
    spec
}

fn arg(doc: &ArgDoc) -> raw::RedisModuleCommandArg {
    // Fields not set here (deprecated_since, subargs, display_text) stay null.
    let mut out: raw::RedisModuleCommandArg = unsafe { zeroed() };
    out.name = doc.name.as_ptr();
    out.type_ = match doc.kind {
        ArgKind::Key => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_KEY,
        ArgKind::String | ArgKind::Strings => {
            raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_STRING
        }
        ArgKind::Integer => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_INTEGER,
        ArgKind::UnixTime => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_UNIX_TIME,
        ArgKind::PureToken => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_PURE_TOKEN,
    };
    out.key_spec_index = if doc.kind == ArgKind::Key { 0 } else { -1 };
    out.token = doc.token.map_or(ptr::null(), CStr::as_ptr);
    out.summary = doc.summary.as_ptr();
    out.since = SINCE.as_ptr();
    let optional = if doc.optional {
        raw::REDISMODULE_CMD_ARG_OPTIONAL
    } else {
        0
    };
    let multiple = if doc.kind == ArgKind::Strings {
        raw::REDISMODULE_CMD_ARG_MULTIPLE
    } else {
        0
    };
    out.flags = (optional | multiple) as c_int;
    out
}
