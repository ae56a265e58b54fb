//! What Redis is told about a command: name, flags, arity, keys and docs. The table of
//! every command (`commands/mod.rs`) is made of these; `declare.rs` hands it to Redis.

use std::ffi::{c_int, CStr};

use redis_module::raw;

/// The C function Redis calls for a command.
pub type CommandFn = unsafe extern "C" fn(
    *mut raw::RedisModuleCtx,
    *mut *mut raw::RedisModuleString,
    c_int,
) -> c_int;

/// How a command uses its one key (argument 1), if it has one, for ACL key permissions and
/// key specs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyAccess {
    /// Reads the lock.
    Read,
    /// Reads, creates, updates or deletes the lock.
    Write,
    /// Reads the lock; the keys of the command it runs come from its `getkeys-api`
    /// callback (`LOCK.FENCED`).
    Fenced,
    /// No key (`LOCK.GRANTS`).
    None,
}

/// The type of a documented argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgKind {
    Key,
    String,
    Integer,
    UnixTime,
    /// Strings, any number of them (the arguments of a command run inside another).
    Strings,
    /// A keyword alone (its `token`), with no value after it.
    PureToken,
}

/// One argument in `COMMAND DOCS`.
pub struct ArgDoc {
    pub name: &'static CStr,
    pub kind: ArgKind,
    /// The keyword that introduces an option (`LEASE`).
    pub token: Option<&'static CStr>,
    pub optional: bool,
    pub summary: &'static CStr,
}

/// A command: everything registration, `COMMAND INFO` and `COMMAND DOCS` need.
pub struct CommandSpec {
    /// As registered (lower case).
    pub name: &'static CStr,
    pub flags: &'static CStr,
    /// Redis's arity: the exact count of arguments with the name, or minus the minimum.
    pub arity: c_int,
    pub keys: KeyAccess,
    /// ACL categories beyond those its flags imply (set on Redis 7.2+, where the API is).
    pub categories: &'static CStr,
    pub summary: &'static CStr,
    pub args: &'static [ArgDoc],
    pub call: CommandFn,
}
