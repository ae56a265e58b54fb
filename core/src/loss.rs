//! What is announced when a listened holding ends (`LOCK.LISTEN`): the owner prefix and
//! its channel, what a holding holds, why it ended, and the message.

/// The channel a listener subscribes to is this and its owner prefix.
pub const LOSS_PREFIX: &str = "__rlock_lost__:";

/// The part of an owner id that names its client: up to, not including, its last `:`; the
/// whole id if it has none.
pub fn prefix_of(owner: &[u8]) -> &[u8] {
    match owner.iter().rposition(|b| *b == b':') {
        Some(at) => &owner[..at],
        None => owner,
    }
}

/// The loss channel of owners with `prefix`.
pub fn channel(prefix: &[u8]) -> Vec<u8> {
    [LOSS_PREFIX.as_bytes(), prefix].concat()
}

/// What a holding holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Held {
    Lock,
    Read,
    Write,
    Permits,
}

impl Held {
    pub fn name(self) -> &'static str {
        match self {
            Held::Lock => "lock",
            Held::Read => "read",
            Held::Write => "write",
            Held::Permits => "permits",
        }
    }
}

/// Why a holding ended without its holder asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    ForceRelease,
    Deleted,
    Renamed,
    Moved,
    Overwritten,
    Restored,
    Flushed,
    Swapped,
    Evicted,
    Expired,
}

impl Cause {
    pub fn name(self) -> &'static str {
        match self {
            Cause::ForceRelease => "forcerelease",
            Cause::Deleted => "deleted",
            Cause::Renamed => "renamed",
            Cause::Moved => "moved",
            Cause::Overwritten => "overwritten",
            Cause::Restored => "restored",
            Cause::Flushed => "flushed",
            Cause::Swapped => "swapped",
            Cause::Evicted => "evicted",
            Cause::Expired => "expired",
        }
    }

    /// The cause of a keyspace event that took the key (and its value) away, if it is one.
    pub fn of_removal(event: &[u8]) -> Option<Cause> {
        Some(match event {
            b"del" => Cause::Deleted,
            b"expired" => Cause::Expired,
            b"evicted" => Cause::Evicted,
            b"rename_from" => Cause::Renamed,
            b"move_from" => Cause::Moved,
            _ => return None,
        })
    }

    /// The cause of a keyspace event that wrote another value over the key, if it is one.
    pub fn of_overwrite(event: &[u8]) -> Option<Cause> {
        Some(match event {
            b"restore" => Cause::Restored,
            b"set" | b"rename_to" | b"copy_to" => Cause::Overwritten,
            _ => return None,
        })
    }
}

/// A listened holding as the module last saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Watch {
    pub owner: Vec<u8>,
    pub held: Held,
    pub token: i64,
    /// Reentry count, read or write holds, or permits.
    pub count: i64,
}

/// A listened holding that ended, to be announced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loss {
    pub key: Vec<u8>,
    pub watch: Watch,
    pub cause: Cause,
}

impl Loss {
    /// The channel it is published on.
    pub fn channel(&self) -> Vec<u8> {
        channel(prefix_of(&self.watch.owner))
    }

    /// `<cause> <kind> <token> <key length> <key> <owner>`.
    pub fn message(&self) -> Vec<u8> {
        let head = format!(
            "{} {} {} {} ",
            self.cause.name(),
            self.watch.held.name(),
            self.watch.token,
            self.key.len()
        );
        [head.as_bytes(), &self.key, b" ", &self.watch.owner].concat()
    }
}

/// What a reread found of a listened holding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// Held with this token and count.
    Holds { token: i64, count: i64 },
    /// Not held (any more).
    Gone,
}
