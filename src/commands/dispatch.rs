//! How Redis calls a command: [`dispatch`] hands the command's body the arguments as Redis
//! passed them (no copies, no allocation), contains any panic, and sends the reply.

use std::ffi::c_int;
use std::slice;

use redis_module::raw;

use crate::handoff::losses;
use crate::host::guard;
use crate::store::Name;
use crate::waits::queues;
use rlock_core::error::LockError;
use rlock_core::registry::Db;
use rlock_core::reply::{error_line, Reply};
use rlock_core::rwlock::Kind;
use rlock_core::watch::{Cause, Held};

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

    /// The strings Redis passed, command name first.
    pub fn strings(&self) -> &'a [*mut raw::RedisModuleString] {
        self.strings
    }

    /// The key (argv[1]); arity is checked by each parser first.
    pub fn key(&self) -> Result<*mut raw::RedisModuleString, LockError> {
        match self.strings.get(1) {
            Some(key) => Ok(*key),
            None => Err(LockError::WrongArity),
        }
    }

    /// Argument `i` as a name that writes and replication can reuse.
    pub fn name(&self, i: usize) -> Result<Name<'a>, LockError> {
        match (self.bytes.get(i), self.strings.get(i)) {
            (Some(bytes), Some(raw)) => Ok(Name { bytes, raw: *raw }),
            _ => Err(LockError::WrongArity),
        }
    }
}

/// The C function of a command whose body is `$module::run`.
macro_rules! call {
    ($label:literal, $module:ident) => {{
        unsafe extern "C" fn call(
            ctx: *mut redis_module::raw::RedisModuleCtx,
            argv: *mut *mut redis_module::raw::RedisModuleString,
            argc: std::ffi::c_int,
        ) -> std::ffi::c_int {
            // Redis passes argc live strings in argv.
            let ok = redis_module::raw::REDISMODULE_OK as std::ffi::c_int;
            $crate::host::guard::entry($label, ok, || unsafe {
                $crate::commands::dispatch::dispatch(ctx, argv, argc, $label, $module::run)
            })
        }
        call
    }};
}
pub(crate) use call;

/// Replies `[tag, n]` (`LOCK.WAIT`'s and `RWLOCK.WAIT`'s reply).
pub fn reply_pair(
    ctx: *mut raw::RedisModuleCtx,
    tag: &std::ffi::CStr,
    n: i64,
) -> Result<Reply, LockError> {
    let (array, simple, integer) = (
        crate::host::ffi::api!(RedisModule_ReplyWithArray),
        crate::host::ffi::api!(RedisModule_ReplyWithSimpleString),
        crate::host::ffi::api!(RedisModule_ReplyWithLongLong),
    );
    unsafe {
        array(ctx, 2);
        simple(ctx, tag.as_ptr());
        integer(ctx, n);
    }
    Ok(Reply::Sent)
}

/// Writes a reply piece by piece: a map (a flat array in RESP2), arrays, bulk strings and
/// integers, for the commands that describe a lock (`RWLOCK.INFO`, `SEM.INFO`).
pub struct Out {
    ctx: *mut raw::RedisModuleCtx,
    map: unsafe extern "C" fn(*mut raw::RedisModuleCtx, std::ffi::c_long) -> c_int,
    array: unsafe extern "C" fn(*mut raw::RedisModuleCtx, std::ffi::c_long) -> c_int,
    buffer: unsafe extern "C" fn(*mut raw::RedisModuleCtx, *const std::ffi::c_char, usize) -> c_int,
    integer: unsafe extern "C" fn(*mut raw::RedisModuleCtx, std::ffi::c_longlong) -> c_int,
}

impl Out {
    pub fn new(ctx: *mut raw::RedisModuleCtx) -> Result<Out, LockError> {
        Ok(Out {
            ctx,
            map: crate::host::ffi::api!(RedisModule_ReplyWithMap),
            array: crate::host::ffi::api!(RedisModule_ReplyWithArray),
            buffer: crate::host::ffi::api!(RedisModule_ReplyWithStringBuffer),
            integer: crate::host::ffi::api!(RedisModule_ReplyWithLongLong),
        })
    }

    /// A map of `n` fields.
    pub fn map(&self, n: usize) {
        unsafe { (self.map)(self.ctx, count(n)) };
    }

    /// An array of `n` elements.
    pub fn array(&self, n: usize) {
        unsafe { (self.array)(self.ctx, count(n)) };
    }

    pub fn bulk(&self, bytes: &[u8]) {
        unsafe { (self.buffer)(self.ctx, bytes.as_ptr().cast(), bytes.len()) };
    }

    pub fn int(&self, n: i64) {
        unsafe { (self.integer)(self.ctx, n) };
    }

    /// The last two fields of an INFO reply on `key` of `db`: `waiters`, how many waits are
    /// queued, and `queue`, the first [`QUEUE_SHOWN`] as `[owner, what]`, `what` written by
    /// `what` from the wait's kind.
    pub fn waits(&self, (db, key): (Db, &[u8]), what: impl Fn(&Out, Kind)) {
        let waiting = queues::queue_len(db, key);
        let queue = queues::peek(db, key, QUEUE_SHOWN);
        self.bulk(b"waiters");
        self.int(i64::try_from(waiting).unwrap_or(i64::MAX));
        self.bulk(b"queue");
        self.array(queue.len());
        for (owner, kind) in &queue {
            self.array(2);
            self.bulk(owner);
            what(self, *kind);
        }
    }
}

/// Most queued waits an INFO reply lists.
pub const QUEUE_SHOWN: usize = 100;

fn count(n: usize) -> std::ffi::c_long {
    std::ffi::c_long::try_from(n).unwrap_or(std::ffi::c_long::MAX)
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
    // Up to INLINE_ARGS on the stack; more in a Vec.
    let mut inline: [&[u8]; INLINE_ARGS] = [&[]; INLINE_ARGS];
    let spilled: Vec<&[u8]>;
    let bytes: &[&[u8]] = if strings.len() <= INLINE_ARGS {
        for (b, s) in inline.iter_mut().zip(strings.iter().enumerate()) {
            *b = bytes_of(s);
        }
        &inline[..strings.len()]
    } else {
        spilled = strings.iter().enumerate().map(bytes_of).collect();
        &spilled
    };
    let args = Args { strings, bytes };
    let outcome = guard::command(name, || run(ctx, &args));
    if let Some(follow) = losses::active().then(|| follow(name)).flatten() {
        guard::callback("listened holdings", || after(ctx, follow, &args, &outcome));
    }
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

/// What the table of listened holdings does after a command (a plain lock's acquisition
/// and release keep it themselves, in the door and the release).
#[derive(Clone, Copy)]
enum Follow {
    /// Announce the holdings of the key that a force release ended.
    ForceRelease,
    /// Track the caller's holding of a plain lock again.
    Renew,
    /// Announce the holdings of others whose lease ended, and track the caller's.
    SettleAndTrack(&'static [Held]),
    /// Announce the holdings of others whose lease ended; the caller's own release is silent.
    Release,
}

/// What [`after`] does after command `name`, if anything.
fn follow(name: &str) -> Option<Follow> {
    Some(match name {
        "LOCK.FORCERELEASE" | "RWLOCK.FORCERELEASE" | "SEM.FORCERELEASE" => Follow::ForceRelease,
        "LOCK.RENEW" => Follow::Renew,
        "RWLOCK.ACQUIRE" | "RWLOCK.WAIT" | "RWLOCK.RENEW" => {
            Follow::SettleAndTrack(&[Held::Read, Held::Write])
        }
        "SEM.ACQUIRE" | "SEM.WAIT" | "SEM.RENEW" => Follow::SettleAndTrack(&[Held::Permits]),
        "RWLOCK.RELEASE" | "SEM.RELEASE" => Follow::Release,
        _ => return None,
    })
}

/// After a command that may have made, changed or ended listened holdings (`LOCK.LISTEN`):
/// the table follows the caller's own holding; the holdings of others that ended (a force
/// release, a lease that ended) are announced.
fn after(
    ctx: *mut raw::RedisModuleCtx,
    follow: Follow,
    args: &Args<'_>,
    outcome: &Result<Reply, LockError>,
) -> Result<(), LockError> {
    let (Ok(_), Some(key)) = (outcome, args.strings().get(1)) else {
        return Ok(());
    };
    let key = redis_module::RedisString::string_as_slice(*key);
    let owner = args.bytes().get(2).copied();
    match (follow, owner) {
        (Follow::ForceRelease, _) => losses::settle(ctx, key, (Cause::ForceRelease, None))?,
        (Follow::Renew, Some(owner)) => losses::track(ctx, key, owner, &[Held::Lock])?,
        (Follow::SettleAndTrack(held), Some(owner)) => {
            losses::settle_and_track(ctx, key, Cause::Expired, (Some(owner), held))?;
        }
        (Follow::Release, Some(owner)) => {
            losses::settle(ctx, key, (Cause::Expired, Some(owner)))?;
        }
        _ => {}
    }
    Ok(())
}
