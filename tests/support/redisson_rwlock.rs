//! Redisson's `RReadWriteLock` protocol, written from its documented behaviour: the read
//! lock's and the write lock's `tryLockInner`, `unlockInner` and the read lock's
//! `renewExpiration`, as Lua scripts, and the names they use. The read-write tests
//! (`tests/rwlock_redisson.rs`) and the benchmark (`bench/`) share this file.
//!
//! The lock is a hash: `mode` (`read` or `write`), `<id>` → the read holds of a holder,
//! `<id>:write` → the write holds of a holder. Each read hold has a side key
//! `{lock}:<id>:rwlock_timeout:<n>` with its own lease; the hash lives as long as the
//! longest of them. The last holder out deletes the hash and publishes on
//! `redisson_rwlock:{lock}`: `0` from a read unlock (wakes one waiter of each client),
//! `1` from a write unlock (wakes them all). A write unlock that leaves the holder's read
//! holds turns the lock into a read lock and publishes nothing.

#![allow(dead_code)]

/// The read lock's `tryLockInner`. KEYS[1] = lock, KEYS[2] = the holder's timeout prefix
/// ([`timeout_prefix`]); ARGV[1] = lease ms, ARGV[2] = id, ARGV[3] = `<id>:write`.
/// Nil when acquired, else the lock's PTTL.
pub const READ_LOCK: &str = r"
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
    redis.call('hset', KEYS[1], 'mode', 'read')
    redis.call('hset', KEYS[1], ARGV[2], 1)
    redis.call('set', KEYS[2] .. ':1', 1)
    redis.call('pexpire', KEYS[2] .. ':1', ARGV[1])
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end
-- Readers join readers; a writer may take read holds beside its write holds.
if mode == 'read' or (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1) then
    local n = redis.call('hincrby', KEYS[1], ARGV[2], 1)
    local side = KEYS[2] .. ':' .. n
    redis.call('set', side, 1)
    redis.call('pexpire', side, ARGV[1])
    local left = redis.call('pttl', KEYS[1])
    redis.call('pexpire', KEYS[1], math.max(left, tonumber(ARGV[1])))
    return nil
end
return redis.call('pttl', KEYS[1])
";

/// The read lock's `unlockInner`. KEYS[1] = lock, KEYS[2] = channel ([`channel`]),
/// KEYS[3] = the holder's timeout prefix, KEYS[4] = the key prefix ([`key_prefix`]);
/// ARGV[1] = message (`0`), ARGV[2] = id. Nil when the id holds no read hold, 0 when the
/// lock is still held, 1 when it was freed (and the message published).
pub const READ_UNLOCK: &str = r"
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
    redis.call('publish', KEYS[2], ARGV[1])
    return 1
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
    return nil
end
local n = redis.call('hincrby', KEYS[1], ARGV[2], -1)
if n == 0 then
    redis.call('hdel', KEYS[1], ARGV[2])
end
redis.call('del', KEYS[3] .. ':' .. (n + 1))
if redis.call('hlen', KEYS[1]) > 1 then
    -- Other holds remain: the hash lives as long as the longest read hold left.
    local longest = -3
    for _, field in ipairs(redis.call('hkeys', KEYS[1])) do
        local count = tonumber(redis.call('hget', KEYS[1], field))
        if type(count) == 'number' then
            for i = count, 1, -1 do
                local side = KEYS[4] .. ':' .. field .. ':rwlock_timeout:' .. i
                longest = math.max(longest, redis.call('pttl', side))
            end
        end
    end
    if longest > 0 then
        redis.call('pexpire', KEYS[1], longest)
        return 0
    end
    if mode == 'write' then
        return 0
    end
end
redis.call('del', KEYS[1])
redis.call('publish', KEYS[2], ARGV[1])
return 1
";

/// The read lock's `renewExpiration` (the write lock falls back to it when the id has no
/// write hold). KEYS[1] = lock, KEYS[2] = the key prefix; ARGV[1] = lease ms, ARGV[2] = id.
/// 1 when renewed, 0 when the id holds no read hold.
pub const READ_RENEW: &str = r"
if redis.call('hget', KEYS[1], ARGV[2]) == false then
    return 0
end
redis.call('pexpire', KEYS[1], ARGV[1])
if redis.call('hlen', KEYS[1]) > 1 then
    for _, field in ipairs(redis.call('hkeys', KEYS[1])) do
        local count = tonumber(redis.call('hget', KEYS[1], field))
        if type(count) == 'number' then
            for i = count, 1, -1 do
                redis.call('pexpire', KEYS[2] .. ':' .. field .. ':rwlock_timeout:' .. i, ARGV[1])
            end
        end
    end
end
return 1
";

/// The write lock's `tryLockInner`. KEYS[1] = lock; ARGV[1] = lease ms,
/// ARGV[2] = `<id>:write`. Nil when acquired, else the lock's PTTL.
pub const WRITE_LOCK: &str = r"
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
    redis.call('hset', KEYS[1], 'mode', 'write')
    redis.call('hset', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end
if mode == 'write' and redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], redis.call('pttl', KEYS[1]) + tonumber(ARGV[1]))
    return nil
end
return redis.call('pttl', KEYS[1])
";

/// The write lock's `unlockInner`. KEYS[1] = lock, KEYS[2] = channel; ARGV[1] = message
/// (`1`), ARGV[2] = lease ms, ARGV[3] = `<id>:write`. Nil when the id holds no write hold,
/// 0 when write holds remain, 1 when its last write hold went (the lock freed and the
/// message published, or left to the id's read holds).
pub const WRITE_UNLOCK: &str = r"
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
    redis.call('publish', KEYS[2], ARGV[1])
    return 1
end
if mode ~= 'write' or redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
    return nil
end
local n = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if n > 0 then
    redis.call('pexpire', KEYS[1], ARGV[2])
    return 0
end
redis.call('hdel', KEYS[1], ARGV[3])
if redis.call('hlen', KEYS[1]) == 1 then
    redis.call('del', KEYS[1])
    redis.call('publish', KEYS[2], ARGV[1])
else
    redis.call('hset', KEYS[1], 'mode', 'read')
end
return 1
";

/// The message a read unlock publishes (Redisson's `UNLOCK_MESSAGE`).
pub const READ_UNLOCK_MESSAGE: &str = "0";
/// The message a write unlock publishes (Redisson's `READ_UNLOCK_MESSAGE`: wakes every
/// waiter).
pub const WRITE_UNLOCK_MESSAGE: &str = "1";

/// Redisson's `{lock}` form of a name: the name itself when it has a `{`, else in braces.
pub fn key_prefix(lock: &str) -> String {
    if lock.contains('{') {
        lock.to_owned()
    } else {
        format!("{{{lock}}}")
    }
}

/// The channel both halves of the lock publish on: `redisson_rwlock:{lock}`.
pub fn channel(lock: &str) -> String {
    format!("redisson_rwlock:{}", key_prefix(lock))
}

/// The prefix of a holder's read-hold side keys: `{lock}:<id>:rwlock_timeout`.
pub fn timeout_prefix(lock: &str, id: &str) -> String {
    format!("{}:{id}:rwlock_timeout", key_prefix(lock))
}

/// The hash field of a holder's write holds.
pub fn write_field(id: &str) -> String {
    format!("{id}:write")
}

/// One script call: the script, its keys and its arguments.
#[derive(Debug, Clone)]
pub struct Call {
    pub script: &'static str,
    pub keys: Vec<String>,
    pub args: Vec<String>,
}

impl Call {
    /// `EVAL script numkeys key... arg...`.
    pub fn eval(&self) -> redis::Cmd {
        let mut cmd = redis::cmd("EVAL");
        cmd.arg(self.script);
        self.rest(cmd)
    }

    /// `EVALSHA sha numkeys key... arg...`, `sha` being the script's SHA1 (`SCRIPT LOAD`).
    pub fn evalsha(&self, sha: &str) -> redis::Cmd {
        let mut cmd = redis::cmd("EVALSHA");
        cmd.arg(sha);
        self.rest(cmd)
    }

    fn rest(&self, mut cmd: redis::Cmd) -> redis::Cmd {
        cmd.arg(self.keys.len()).arg(&self.keys).arg(&self.args);
        cmd
    }
}

/// One Redisson client id (`<client uuid>:<thread id>`) on one lock, with its lease.
#[derive(Debug, Clone)]
pub struct Holder {
    pub lock: String,
    pub id: String,
    pub lease_ms: u64,
}

impl Holder {
    pub fn new(lock: &str, id: &str, lease_ms: u64) -> Holder {
        Holder {
            lock: lock.to_owned(),
            id: id.to_owned(),
            lease_ms,
        }
    }

    /// `tryLockInner` of the read lock, or of the write lock when `write`.
    pub fn lock(&self, write: bool) -> Call {
        let (lease, field) = (self.lease_ms.to_string(), write_field(&self.id));
        if write {
            return call(WRITE_LOCK, [&self.lock], [lease, field]);
        }
        let prefix = timeout_prefix(&self.lock, &self.id);
        call(
            READ_LOCK,
            [&self.lock, &prefix],
            [lease, self.id.clone(), field],
        )
    }

    /// `unlockInner` of the read lock, or of the write lock when `write`.
    pub fn unlock(&self, write: bool) -> Call {
        let channel = channel(&self.lock);
        if write {
            let args = [
                WRITE_UNLOCK_MESSAGE.to_owned(),
                self.lease_ms.to_string(),
                write_field(&self.id),
            ];
            return call(WRITE_UNLOCK, [&self.lock, &channel], args);
        }
        let (prefix, keys) = (timeout_prefix(&self.lock, &self.id), key_prefix(&self.lock));
        let args = [READ_UNLOCK_MESSAGE.to_owned(), self.id.clone()];
        call(READ_UNLOCK, [&self.lock, &channel, &prefix, &keys], args)
    }

    /// `renewExpiration` of the read lock.
    pub fn renew(&self) -> Call {
        let keys = key_prefix(&self.lock);
        call(
            READ_RENEW,
            [&self.lock, &keys],
            [self.lease_ms.to_string(), self.id.clone()],
        )
    }
}

fn call<const K: usize, const A: usize>(
    script: &'static str,
    keys: [&String; K],
    args: [String; A],
) -> Call {
    Call {
        script,
        keys: keys.into_iter().cloned().collect(),
        args: args.into(),
    }
}
