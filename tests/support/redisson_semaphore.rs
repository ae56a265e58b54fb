//! Redisson's `RPermitExpirableSemaphore` protocol, written from its behaviour: its
//! `tryAcquire` and `tryRelease` for one permit, as Lua scripts, and the names they use.
//! The test `tests/semaphore_redisson.rs` and the benchmark (`bench/`, scenario 12) share
//! this file.
//!
//! The semaphore is a string, the permits available. Each permit taken is a member of the
//! sorted set `{sem}:timeout` whose score is the Unix ms, on the client's clock, at which
//! its lease ends ([`NO_LEASE`] for none). Nothing on the server takes an ended lease back:
//! the next acquire script that runs reclaims the members whose score is at or before the
//! `now` its caller sent (adding them to the count and publishing the count on
//! `redisson_sc:{sem}`; one per permit asked). A release publishes the count after it too;
//! each message wakes up to that many waiting threads in each client process.

#![allow(dead_code)]

/// The score of a permit taken without a lease.
pub const NO_LEASE: u64 = 922_337_203_685_477;

/// `tryAcquire` of one permit. KEYS[1] = semaphore, KEYS[2] = [`timeout_name`],
/// KEYS[3] = [`channel`]; ARGV[1] = permits (1), ARGV[2] = lease end (Unix ms, or
/// [`NO_LEASE`]), ARGV[3] = now (Unix ms), ARGV[4] = [`NO_LEASE`], ARGV[5] = `publish`,
/// ARGV[6] = the permit's id. `OK` when taken; else `:<ms>`, the earliest lease end,
/// when a taken permit has a lease; else nil.
pub const TRY_ACQUIRE: &str = r"
local ended = redis.call('zrangebyscore', KEYS[2], 0, ARGV[3], 'limit', 0, ARGV[1])
if #ended > 0 then
    redis.call('zrem', KEYS[2], unpack(ended))
    local count = redis.call('incrby', KEYS[1], #ended)
    if tonumber(count) > 0 then
        redis.call(ARGV[5], KEYS[3], count)
    end
end
local available = redis.call('get', KEYS[1])
if available ~= false and tonumber(available) >= tonumber(ARGV[1]) then
    redis.call('decrby', KEYS[1], ARGV[1])
    for i = 6, #ARGV do
        redis.call('zadd', KEYS[2], ARGV[2], ARGV[i])
    end
    local ttl = redis.call('pttl', KEYS[1])
    if ttl > 0 then
        redis.call('pexpire', KEYS[2], ttl)
    end
    return 'OK'
end
local first = redis.call('zrange', KEYS[2], 0, 0, 'WITHSCORES')
if first[1] ~= nil and first[2] ~= ARGV[4] then
    return ':' .. tostring(first[2])
end
return nil
";

/// `tryRelease` of one permit. KEYS[1] = semaphore, KEYS[2] = [`channel`],
/// KEYS[3] = [`timeout_name`]; ARGV[1] = the permit's id, ARGV[2] = 1, ARGV[3] = now
/// (Unix ms), ARGV[4] = `publish`. 1 when given back within its lease; 0 when it was not
/// held (or its lease had ended; it is given back all the same).
pub const TRY_RELEASE: &str = r"
local lease_end = redis.call('zscore', KEYS[3], ARGV[1])
if tonumber(redis.call('zrem', KEYS[3], ARGV[1])) ~= 1 then
    return 0
end
local count = redis.call('incrby', KEYS[1], ARGV[2])
redis.call(ARGV[4], KEYS[2], count)
if tonumber(lease_end) <= tonumber(ARGV[3]) then
    return 0
end
return 1
";

/// The sorted set of taken permits: `{sem}:timeout` (`sem:timeout` when `sem` has a
/// hash tag already).
pub fn timeout_name(sem: &str) -> String {
    if sem.contains('{') {
        format!("{sem}:timeout")
    } else {
        format!("{{{sem}}}:timeout")
    }
}

/// The channel of wake-ups: `redisson_sc:{sem}`.
pub fn channel(sem: &str) -> String {
    if sem.contains('{') {
        format!("redisson_sc:{sem}")
    } else {
        format!("redisson_sc:{{{sem}}}")
    }
}

/// One `tryAcquire` call for one permit `id` of `sem`, with a lease ending at `lease_end`.
pub fn acquire(sha: &str, sem: &str, id: &str, lease_end: u64, now: u64) -> redis::Cmd {
    let mut cmd = redis::cmd("EVALSHA");
    cmd.arg(sha).arg(3).arg(sem).arg(timeout_name(sem));
    cmd.arg(channel(sem)).arg(1).arg(lease_end).arg(now);
    cmd.arg(NO_LEASE).arg("publish").arg(id);
    cmd
}

/// One `tryRelease` call for the permit `id` of `sem`.
pub fn release(sha: &str, sem: &str, id: &str, now: u64) -> redis::Cmd {
    let mut cmd = redis::cmd("EVALSHA");
    cmd.arg(sha).arg(3).arg(sem).arg(channel(sem));
    cmd.arg(timeout_name(sem))
        .arg(id)
        .arg(1)
        .arg(now)
        .arg("publish");
    cmd
}
