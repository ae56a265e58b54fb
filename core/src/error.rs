//! Every error reply the module sends, spelled in one place.
//!
//! Handlers never format an error message themselves: they return a [`LockError`], whose
//! `Display` is the exact reply text (without the leading `-`) that SPEC.md prescribes.
//! Key names and owner ids are echoed with [`printable`], so that no byte a client sends
//! can break the RESP framing of an error line, and at most [`MAX_ECHO`] bytes of them
//! (then `...`), so that a 1 MB key name does not make a 1 MB error line.

use std::fmt;

pub use crate::echo::{clip, printable, MAX_ECHO};
pub use crate::fence_error::{FenceError, Refusal};
use crate::layout;

/// Which numeric option an error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opt {
    Lease,
    Wait,
    Token,
}

impl fmt::Display for Opt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Opt::Lease => "LEASE",
            Opt::Wait => "WAIT",
            Opt::Token => "TOKEN",
        })
    }
}

/// Why an owner id is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OwnerProblem {
    Empty,
    TooLong,
    Reserved,
    /// A read-write lock's owner ending in `:write` (Redisson's writer field suffix).
    WriteSuffix,
    /// A fixed field of a layout (`mode`, `permits`): see [`crate::layout`].
    LayoutField,
}

/// An error reply of an rlock command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockError {
    /// The command was called with the wrong number of arguments.
    WrongArity,
    /// `LEASE`/`WAIT` given without a value.
    MissingValue(Opt),
    /// `LEASE`/`WAIT` value is not a decimal integer.
    NotAnInteger(Opt),
    /// `LEASE` is zero or negative.
    LeaseNotPositive,
    /// `WAIT` is negative.
    WaitNegative,
    /// `TOKEN` is negative.
    TokenNegative,
    /// now + value does not fit in a 64-bit millisecond timestamp.
    TooLarge(Opt),
    /// The same option appears twice.
    Duplicate(Opt),
    /// An option this command does not know.
    UnknownOption {
        given: Vec<u8>,
        expected: &'static str,
    },
    /// The owner id breaks the rules of SPEC.md §1.
    InvalidOwner(OwnerProblem),
    /// The key holds a value that is not a hash.
    WrongType,
    /// The key is a hash, but not in the lock layout.
    NotALock,
    /// The key is a hash, but not in the read-write lock layout.
    NotARwLock,
    /// The key of a `LATCH.*` command holds something else than a count (an integer string).
    NotALatch,
    /// A read-write lock's owner holding read holds only asks for a write hold.
    Upgrade(Vec<u8>),
    /// The mode argument of an `RWLOCK.*` command is not `READ` or `WRITE`.
    BadMode(Vec<u8>),
    /// `LOCK.FENCED` on a read-write lock by an owner without write holds.
    NotHeldForWrite { key: Vec<u8>, owner: Vec<u8> },
    /// `LOCK.RELEASE` by someone who does not hold the lock.
    NotHeld { key: Vec<u8>, owner: Vec<u8> },
    /// The reentry count would overflow a 64-bit integer.
    CountOverflow,
    /// `LOCK.APPLY` sent by a client rather than a master or an AOF.
    ApplyFromClient,
    /// `LOCK.APPLY` with values no master would send.
    BadApply,
    /// `RWLOCK.APPLY` sent by a client rather than a master or an AOF.
    RwApplyFromClient,
    /// `RWLOCK.APPLY` with values no master would send.
    BadRwApply,
    /// The key is a hash, but not in the semaphore layout.
    NotASemaphore,
    /// A semaphore acquisition asks for more permits than the semaphore has in all.
    TooManyPermits { asked: i64, total: i64 },
    /// `SEM.APPLY` sent by a client rather than a master or an AOF.
    SemApplyFromClient,
    /// `SEM.APPLY` with values no master would send.
    BadSemApply,
    /// `LOCK.RAISE` with a token or floor that is not a non-negative integer.
    BadRaise,
    /// The token counter is at its maximum: no fresh holding can be granted.
    TokensExhausted,
    /// `rlock.max-waiters` clients wait on this node already.
    TooManyWaiters(i64),
    /// `rlock.max-waiters-per-key` clients wait for this lock already.
    TooManyWaitersForKey(i64),
    /// A client's lock write on a replica (a writable one: a read-only one is refused by
    /// Redis itself).
    ReplicaWrite,
    /// A client's lock write while writes are paused (inside `MULTI` or a script).
    WritesPaused,
    /// A renewal or reentry during the hold-back after a stall of the node: so many ms left.
    Stalled(i64),
    /// A reentry during the failover delay of a promoted node: so many ms left.
    FailoverDelay(i64),
    /// The waiters of a lock that `maxmemory` evicted are sent away.
    Evicted,
    /// The server does not export a module API function this command needs.
    MissingApi(&'static str),
    /// A bug: a handler panicked and the panic was caught.
    Internal(&'static str),
    /// `LOCK.FENCED` did not run its inner command: see [`FenceError`].
    Fence(FenceError),
    /// An argument of the ticket commands that is not what it must be.
    BadArg {
        name: &'static str,
        expected: &'static str,
    },
    /// A ticket command (`LOCK.WAIT`, `RWLOCK.WAIT`, `SEM.WAIT`, `LATCH.WAIT`, named) without
    /// `TO` (a push to the caller) on a RESP2 connection.
    WaitNeedsResp3(&'static str),
    /// A ticket command (named) without `TO` where a push cannot go (a cluster, a script).
    WaitNeedsTo(&'static str, &'static str),
    /// A ticket command (named) without `TO` by a connection not subscribed to its channel.
    NotSubscribed(&'static str, u64),
    /// `LOCK.WAIT ... TO id` naming no connection.
    NoClient(u64),
    /// `LOCK.WAIT ... TO id` naming a connection of another ACL user.
    ToOtherUser(u64),
    /// `LOCK.CANCEL` of a wait by a connection that is neither its sender, nor its
    /// receiver, nor of its ACL user.
    NotYourWait(u64),
    /// A ticket's outcome: another connection of its user cancelled it.
    Cancelled,
    /// `LOCK.GRANTS` inside a script or a function (it would read the script's mailbox).
    GrantsInScript,
}

impl fmt::Display for LockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LockError::WrongArity => f.write_str("ERR wrong number of arguments"),
            LockError::MissingValue(Opt::Token) => f.write_str("ERR TOKEN needs a value"),
            LockError::MissingValue(opt) => write!(f, "ERR {opt} needs a value in milliseconds"),
            LockError::NotAnInteger(opt) => {
                write!(f, "ERR {opt} is not an integer or out of range")
            }
            LockError::LeaseNotPositive => f.write_str("ERR LEASE must be a positive integer"),
            LockError::WaitNegative => f.write_str("ERR WAIT must not be negative"),
            LockError::TokenNegative => f.write_str("ERR TOKEN must not be negative"),
            LockError::TooLarge(opt) => write!(f, "ERR {opt} is too large"),
            LockError::Duplicate(opt) => write!(f, "ERR {opt} is given more than once"),
            LockError::UnknownOption { given, expected } => write!(
                f,
                "ERR unknown option '{}', expected {expected}",
                printable(given)
            ),
            LockError::InvalidOwner(problem) => f.write_str(match problem {
                OwnerProblem::Empty => "ERR invalid owner: must not be empty",
                OwnerProblem::TooLong => "ERR invalid owner: longer than 256 bytes",
                OwnerProblem::Reserved => "ERR invalid owner: must not start with '@'",
                OwnerProblem::WriteSuffix => "ERR invalid owner: must not end with ':write'",
                OwnerProblem::LayoutField => return reserved_names(f),
            }),
            LockError::WrongType => {
                f.write_str("WRONGTYPE Operation against a key holding the wrong kind of value")
            }
            LockError::NotALock => f.write_str("WRONGTYPE key is not a lock"),
            LockError::NotARwLock => f.write_str("WRONGTYPE key is not a read-write lock"),
            LockError::NotALatch => f.write_str("WRONGTYPE key is not a latch"),
            LockError::Upgrade(owner) => write!(
                f,
                "ERR rlock: '{}' holds only read holds of this lock; release them before asking for a write hold (an upgrade deadlocks as soon as two readers try it)",
                printable(owner)
            ),
            LockError::BadMode(given) => write!(
                f,
                "ERR unknown mode '{}', expected READ or WRITE",
                printable(given)
            ),
            LockError::NotHeldForWrite { key, owner } => write!(
                f,
                "NOTHELD lock '{}' is not held for writing by '{}'",
                printable(key),
                printable(owner)
            ),
            LockError::NotHeld { key, owner } => write!(
                f,
                "NOTHELD lock '{}' is not held by '{}'",
                printable(key),
                printable(owner)
            ),
            LockError::CountOverflow => f.write_str("ERR reentry count would overflow"),
            LockError::ApplyFromClient => f.write_str(
                "ERR LOCK.APPLY only replays a master's writes (replication stream or AOF)",
            ),
            LockError::BadApply => f.write_str(
                "ERR LOCK.APPLY needs key owner holds token unix-ms: holds > 0, token >= 0",
            ),
            LockError::RwApplyFromClient => f.write_str(
                "ERR RWLOCK.APPLY only replays a master's writes (replication stream or AOF)",
            ),
            LockError::BadRwApply => f.write_str(
                "ERR RWLOCK.APPLY needs key owner reads writes token unix-ms: reads, writes and token >= 0",
            ),
            LockError::NotASemaphore => f.write_str("WRONGTYPE key is not a semaphore"),
            LockError::TooManyPermits { asked, total } => write!(
                f,
                "ERR rlock: asks for {asked} permits; the semaphore has {total}"
            ),
            LockError::SemApplyFromClient => f.write_str(
                "ERR SEM.APPLY only replays a master's writes (replication stream or AOF)",
            ),
            LockError::BadSemApply => f.write_str(
                "ERR SEM.APPLY needs key owner permits token unix-ms: permits and token >= 0",
            ),
            LockError::BadRaise => f.write_str(
                "ERR LOCK.RAISE needs key owner token floor: token and floor non-negative integers",
            ),
            LockError::TokensExhausted => f.write_str(
                "ERR fencing tokens are exhausted on this node: the counter is at its maximum",
            ),
            LockError::TooManyWaiters(max) => write!(
                f,
                "ERR too many waiters: rlock.max-waiters ({max}) clients wait on this node"
            ),
            LockError::TooManyWaitersForKey(max) => write!(
                f,
                "ERR too many waiters for this lock: rlock.max-waiters-per-key ({max}) clients wait for it"
            ),
            LockError::ReplicaWrite => f.write_str(
                "READONLY rlock: this node is a replica; lock commands that write run on its master",
            ),
            LockError::WritesPaused => f.write_str(
                "TRYAGAIN rlock: writes are paused on this node (CLIENT PAUSE or FAILOVER); try again",
            ),
            LockError::Stalled(ms) => write!(
                f,
                "TRYAGAIN rlock: this node stalled; it grants and renews nothing for {ms} ms, until it knows its replicas again"
            ),
            LockError::FailoverDelay(ms) => write!(
                f,
                "TRYAGAIN rlock: this node was promoted less than rlock.failover-delay ago; it reenters no holding for {ms} ms (its copy may be one the old master ended)"
            ),
            LockError::Evicted => f.write_str(
                "OOM rlock: the lock was evicted (maxmemory) while the client waited; it is not handed on",
            ),
            LockError::MissingApi(name) => {
                write!(f, "ERR this Redis server lacks the module API {name}")
            }
            LockError::Internal(command) => {
                write!(f, "ERR internal error in {command}, see the server log")
            }
            LockError::Fence(e) => e.fmt(f),
            LockError::BadArg { name, expected } => write!(f, "ERR {name} must be {expected}"),
            LockError::WaitNeedsResp3(command) => {
                write!(f, "ERR {command} without TO needs RESP3 (HELLO 3)")
            }
            LockError::WaitNeedsTo(command, place) => write!(
                f,
                "ERR {command} {place} needs TO <client id> (outcomes read with LOCK.GRANTS)"
            ),
            LockError::NotSubscribed(command, id) => write!(
                f,
                "ERR subscribe to __rlock__:{id} first ({command} without TO pushes outcomes there)"
            ),
            LockError::NoClient(id) => write!(f, "ERR no client {id}"),
            LockError::ToOtherUser(id) => write!(
                f,
                "ERR TO names connection {id} of another ACL user: outcomes go only to connections of the caller's user"
            ),
            LockError::NotYourWait(id) => write!(
                f,
                "ERR LOCK.CANCEL: wait {id} is not yours: only the connection that queued it, its receiver, or a connection of the same ACL user may cancel it"
            ),
            LockError::Cancelled => f.write_str("CANCELLED the wait was cancelled by LOCK.CANCEL"),
            LockError::GrantsInScript => f.write_str(
                "ERR LOCK.GRANTS cannot run inside a script or a function: it reads the calling connection's mailbox",
            ),
        }
    }
}

/// `ERR invalid owner: must not be 'mode' or 'permits'`, from the layouts' one list.
fn reserved_names(f: &mut fmt::Formatter<'_>) -> fmt::Result {
    f.write_str("ERR invalid owner: must not be ")?;
    for (i, name) in layout::reserved_names().enumerate() {
        let joint = if i == 0 { "" } else { " or " };
        write!(f, "{joint}'{}'", printable(name))?;
    }
    Ok(())
}

impl std::error::Error for LockError {}

#[cfg(test)]
#[path = "error_tests.rs"]
mod tests;
