//! The two sides compared, and plain `HSET`+`DEL` as the server's limit for two writes.
//!
//! The baseline is Redisson's `RLock` as documented: `tryLockInner`, `unlockInner` and
//! `renewExpiration` as Lua scripts run with `EVALSHA`.

use redis::{Cmd, Value};

/// The lease every bench lock is taken with, in ms.
pub const LEASE_MS: u64 = 30_000;

/// Redisson's `RLock` scripts, shared with the tests (`tests/support/redisson/`).
const TRY_LOCK: &str = include_str!("../../tests/support/redisson/try_lock.lua");

const UNLOCK: &str = include_str!("../../tests/support/redisson/unlock.lua");

const RENEW: &str = include_str!("../../tests/support/redisson/renew.lua");

/// The SHA1s of the baseline's scripts, loaded on the server.
#[derive(Debug, Clone)]
pub struct Scripts {
    try_lock: String,
    unlock: String,
    renew: String,
}

impl Scripts {
    pub fn load(con: &mut redis::Connection) -> redis::RedisResult<Scripts> {
        let mut load = |body: &str| redis::cmd("SCRIPT").arg("LOAD").arg(body).query(con);
        Ok(Scripts {
            try_lock: load(TRY_LOCK)?,
            unlock: load(UNLOCK)?,
            renew: load(RENEW)?,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// Redisson's algorithm: Lua scripts, pub/sub waiting.
    Lua,
    /// The module: `LOCK.*`, server-side waiting.
    Rlock,
    /// `HSET` + `DEL`: two plain writes, no lock logic.
    Plain,
    /// Two calls of an empty module command (`NOOP.KEYED key`, `bench/floor/noop.c`): what
    /// any module command costs before it does anything.
    Noop,
    /// `NOOP.HOLD` + `NOOP.FREE` (`bench/floor/noop.c`): the module API calls of the pair's
    /// contract and nothing else, the least a module keeping it can cost.
    Bare,
}

impl Side {
    pub fn name(self) -> &'static str {
        match self {
            Side::Lua => "lua",
            Side::Rlock => "rlock",
            Side::Plain => "plain",
            Side::Noop => "noop",
            Side::Bare => "bare",
        }
    }

    pub fn parse(name: &str) -> Option<Side> {
        [Side::Lua, Side::Rlock, Side::Plain, Side::Noop, Side::Bare]
            .into_iter()
            .find(|s| s.name() == name)
    }

    /// The commands whose `INFO commandstats` time is this side's server time.
    pub fn top_level_commands(self) -> &'static [&'static str] {
        match self {
            Side::Lua => &["evalsha"],
            Side::Rlock => &["lock.acquire", "lock.release", "lock.renew"],
            Side::Plain => &["hset", "del"],
            Side::Noop => &["noop.keyed"],
            Side::Bare => &["noop.hold", "noop.free"],
        }
    }

    /// Acquire without waiting.
    pub fn acquire(self, s: &Scripts, key: &str, owner: &str, lease_ms: u64) -> Cmd {
        match self {
            Side::Lua => evalsha(&s.try_lock, &[key], &[&lease_ms.to_string(), owner]),
            Side::Rlock => lock_cmd(
                "LOCK.ACQUIRE",
                key,
                owner,
                &["LEASE", &lease_ms.to_string()],
            ),
            Side::Plain => lock_cmd("HSET", key, owner, &["1"]),
            Side::Noop => noop(key),
            Side::Bare => lock_cmd("NOOP.HOLD", key, owner, &["LEASE", &lease_ms.to_string()]),
        }
    }

    /// Whether `reply` to [`Side::acquire`] means the lock was taken.
    pub fn acquired(self, reply: &Value) -> bool {
        match self {
            Side::Lua => *reply == Value::Nil,
            Side::Rlock | Side::Plain | Side::Noop | Side::Bare => matches!(reply, Value::Int(_)),
        }
    }

    pub fn release(self, s: &Scripts, key: &str, owner: &str) -> Cmd {
        match self {
            Side::Lua => {
                let ch = channel(key);
                evalsha(&s.unlock, &[key, &ch], &["0", &LEASE_MS.to_string(), owner])
            }
            Side::Rlock => lock_cmd("LOCK.RELEASE", key, owner, &[]),
            Side::Plain => {
                let mut cmd = redis::cmd("DEL");
                cmd.arg(key);
                cmd
            }
            Side::Noop => noop(key),
            Side::Bare => lock_cmd("NOOP.FREE", key, owner, &[]),
        }
    }

    /// Whether `reply` to [`Side::release`] means the lock was freed.
    pub fn released(self, reply: &Value) -> bool {
        match self {
            Side::Lua | Side::Plain | Side::Noop => *reply == Value::Int(1),
            Side::Rlock | Side::Bare => *reply == Value::Int(0),
        }
    }

    /// Renews a held lock; the reply is 1 when it was renewed.
    pub fn renew(self, s: &Scripts, key: &str, owner: &str, lease_ms: u64) -> Cmd {
        match self {
            Side::Lua => evalsha(&s.renew, &[key], &[&lease_ms.to_string(), owner]),
            _ => lock_cmd("LOCK.RENEW", key, owner, &["LEASE", &lease_ms.to_string()]),
        }
    }
}

/// `LOCK.ACQUIRE key owner LEASE <lease> WAIT 0`: wait in the server's queue.
pub fn acquire_waiting(key: &str, owner: &str, lease_ms: u64) -> Cmd {
    lock_cmd(
        "LOCK.ACQUIRE",
        key,
        owner,
        &["LEASE", &lease_ms.to_string(), "WAIT", "0"],
    )
}

/// Redisson's release channel for `key`.
pub fn channel(key: &str) -> String {
    format!("redisson_lock__channel:{{{key}}}")
}

fn evalsha(sha: &str, keys: &[&str], args: &[&str]) -> Cmd {
    let mut cmd = redis::cmd("EVALSHA");
    cmd.arg(sha).arg(keys.len()).arg(keys).arg(args);
    cmd
}

fn noop(key: &str) -> Cmd {
    let mut cmd = redis::cmd("NOOP.KEYED");
    cmd.arg(key);
    cmd
}

fn lock_cmd(name: &str, key: &str, owner: &str, rest: &[&str]) -> Cmd {
    let mut cmd = redis::cmd(name);
    cmd.arg(key).arg(owner).arg(rest);
    cmd
}
