//! One file per command: its synopsis, an args struct with a pure `parse`, and a thin
//! `run` (parse → state machine → store → reply).
//!
//! Redis calls each command through [`dispatch`], which hands `run` the arguments as
//! Redis passed them (no copies, no allocation), contains any panic, and sends the reply.

pub mod acquire;
pub mod apply;
pub mod forcerelease;
pub mod info;
pub mod release;
pub mod renew;

use std::ffi::{c_int, CStr, CString};
use std::slice;

use redis_module::raw;

use crate::error::LockError;
pub use crate::store::Replicate;
use crate::store::{api, LockKey, Name};
use crate::{guard, publish, waiters};

/// What a command answers when it does not send its reply itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    Integer(i64),
    Nil,
    Ok,
    /// Already sent, or the client is blocked and gets it later.
    Sent,
}

/// The arguments of one call, command name first: the strings Redis passed and their
/// bytes, both valid for the whole call. The bytes of the command name and of the key are
/// left empty: parsers only count them, and the key is read through its string
/// ([`LockKey::name`]).
pub struct Args<'a> {
    strings: &'a [*mut raw::RedisModuleString],
    bytes: &'a [&'a [u8]],
}

impl<'a> Args<'a> {
    pub fn bytes(&self) -> &[&'a [u8]] {
        self.bytes
    }

    /// The key (argv[1]); arity is checked by each parser first.
    pub fn key(&self) -> Result<*mut raw::RedisModuleString, LockError> {
        self.strings.get(1).copied().ok_or(LockError::WrongArity)
    }

    /// Argument `i` as a name that writes and replication can reuse.
    pub fn name(&self, i: usize) -> Result<Name<'a>, LockError> {
        match (self.bytes.get(i), self.strings.get(i)) {
            (Some(bytes), Some(raw)) => Ok(Name { bytes, raw: *raw }),
            _ => Err(LockError::WrongArity),
        }
    }
}

/// A command's body.
pub type Run = fn(*mut raw::RedisModuleCtx, &Args<'_>) -> Result<Reply, LockError>;

/// Arguments up to this many are viewed without allocating.
const INLINE_ARGS: usize = 8;

/// Calls `run` on Redis's `argv` and replies with its outcome.
///
/// # Safety
/// `argv` must hold `argc` live strings, as Redis passes to a command function.
pub(crate) unsafe fn dispatch(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
    name: &'static str,
    run: Run,
) -> c_int {
    let strings: &[*mut raw::RedisModuleString] = match usize::try_from(argc) {
        Ok(n) if !argv.is_null() => unsafe { slice::from_raw_parts(argv, n) },
        _ => &[],
    };
    let bytes_of = |(i, s): (usize, &*mut raw::RedisModuleString)| match i {
        0 | 1 => &[][..],
        _ => redis_module::RedisString::string_as_slice(*s),
    };
    let outcome = if strings.len() <= INLINE_ARGS {
        let mut bytes: [&[u8]; INLINE_ARGS] = [&[]; INLINE_ARGS];
        for (b, s) in bytes.iter_mut().zip(strings.iter().enumerate()) {
            *b = bytes_of(s);
        }
        let args = Args {
            strings,
            bytes: &bytes[..strings.len()],
        };
        guard::command(name, || run(ctx, &args))
    } else {
        let bytes: Vec<&[u8]> = strings.iter().enumerate().map(bytes_of).collect();
        let args = Args {
            strings,
            bytes: &bytes,
        };
        guard::command(name, || run(ctx, &args))
    };
    reply(ctx, outcome);
    raw::REDISMODULE_OK as c_int
}

fn reply(ctx: *mut raw::RedisModuleCtx, outcome: Result<Reply, LockError>) {
    let sent = match outcome {
        Ok(Reply::Integer(n)) => unsafe { raw::RedisModule_ReplyWithLongLong.map(|f| f(ctx, n)) },
        Ok(Reply::Nil) => unsafe { raw::RedisModule_ReplyWithNull.map(|f| f(ctx)) },
        Ok(Reply::Ok) => unsafe {
            raw::RedisModule_ReplyWithSimpleString.map(|f| f(ctx, c"OK".as_ptr()))
        },
        Ok(Reply::Sent) => Some(0),
        Err(LockError::WrongArity) => unsafe { raw::RedisModule_WrongArity.map(|f| f(ctx)) },
        Err(e) => {
            let text = error_line(&e.to_string());
            unsafe { raw::RedisModule_ReplyWithError.map(|f| f(ctx, text.as_ptr())) }
        }
    };
    debug_assert!(
        sent.is_some(),
        "reply functions are part of every module API"
    );
}

/// An error text as one RESP error line: no NUL, CR or LF (error texts escape the bytes
/// they echo, so this only guards against a mistake).
fn error_line(text: &str) -> CString {
    let clean: Vec<u8> = text
        .bytes()
        .filter(|b| !matches!(b, b'\0' | b'\r' | b'\n'))
        .collect();
    CString::new(clean).unwrap_or_default()
}

/// A command as Redis registers it.
pub struct Command {
    pub name: &'static CStr,
    pub flags: &'static CStr,
    pub call: unsafe extern "C" fn(
        *mut raw::RedisModuleCtx,
        *mut *mut raw::RedisModuleString,
        c_int,
    ) -> c_int,
}

/// A [`Command`] whose function dispatches to `$module::run`.
macro_rules! command {
    ($name:literal, $label:literal, $module:ident, $flags:literal) => {{
        unsafe extern "C" fn call(
            ctx: *mut raw::RedisModuleCtx,
            argv: *mut *mut raw::RedisModuleString,
            argc: c_int,
        ) -> c_int {
            // Redis passes argc live strings in argv.
            unsafe { dispatch(ctx, argv, argc, $label, $module::run) }
        }
        Command {
            name: $name,
            flags: $flags,
            call,
        }
    }};
}

/// Every command, with its flags; all take the key at position 1 (key spec 1,1,1).
pub const COMMANDS: [Command; 6] = [
    command!(
        c"lock.acquire",
        "LOCK.ACQUIRE",
        acquire,
        c"write deny-oom blocking"
    ),
    command!(c"lock.release", "LOCK.RELEASE", release, c"write fast"),
    command!(c"lock.renew", "LOCK.RENEW", renew, c"write fast"),
    command!(c"lock.info", "LOCK.INFO", info, c"readonly fast"),
    command!(
        c"lock.forcerelease",
        "LOCK.FORCERELEASE",
        forcerelease,
        c"write fast"
    ),
    command!(c"lock.apply", "LOCK.APPLY", apply, c"write fast"),
];

/// Registers every command.
pub(crate) fn register(ctx: *mut raw::RedisModuleCtx) -> Result<(), LockError> {
    let create = api!(RedisModule_CreateCommand);
    for command in &COMMANDS {
        let created = unsafe {
            create(
                ctx,
                command.name.as_ptr(),
                Some(command.call),
                command.flags.as_ptr(),
                1,
                1,
                1,
            )
        };
        if created != raw::REDISMODULE_OK as c_int {
            return Err(LockError::MissingApi("RedisModule_CreateCommand"));
        }
    }
    Ok(())
}

/// A lock's last hold is gone (the key still holds it): hand it to the first waiter, or
/// delete it and publish the release message.
pub(crate) fn free(
    ctx: *mut raw::RedisModuleCtx,
    key: &LockKey,
    replicate: Replicate,
) -> Result<(), LockError> {
    // A release replayed from the master deletes, as it did there; a (writable) replica's
    // own waiters are not its master's.
    let handed = if waiters::any() && !from_replication(ctx) {
        waiters::hand_off(waiters::selected_db(ctx), key, true)?
    } else {
        None
    };
    if handed.is_none() {
        key.delete(replicate)?;
        publish::release_message(ctx, key.name())?;
    }
    Ok(())
}

/// Whether the command comes from the master or an AOF being loaded.
pub(crate) fn from_replication(ctx: *mut raw::RedisModuleCtx) -> bool {
    let flags = unsafe { raw::RedisModule_GetContextFlags.map_or(0, |f| f(ctx)) } as u32;
    flags & (raw::REDISMODULE_CTX_FLAGS_REPLICATED | raw::REDISMODULE_CTX_FLAGS_LOADING) != 0
}
