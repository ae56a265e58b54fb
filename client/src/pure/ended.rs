//! Why the server ended a holding its holder did not give back ([`EndCause`]), and the
//! announcement the server publishes when it does ([`Ended`]): one pub/sub message
//! `<cause> <kind> <token> <keylen> <key> <owner>` on the channel `__rlock_lost__:<prefix>`
//! that `LOCK.LISTEN <prefix>` names, where `<key>` is exactly `<keylen>` bytes (spaces
//! included) and `<owner>` is the rest.

use std::fmt;

/// What ended a holding on the server, as the server announced it: part of
/// [`LossReason::Ended`](crate::LossReason::Ended).
///
/// The client listens for these announcements on one connection per server, so a guard
/// learns of such an end as soon as the message arrives, rather than at its next renewal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EndCause {
    /// An administrator released it: `LOCK.FORCERELEASE`, `RWLOCK.FORCERELEASE` or
    /// `SEM.FORCERELEASE`.
    ForceReleased,
    /// Its key was deleted (`DEL`, `UNLINK`).
    Deleted,
    /// Its key was renamed away (`RENAME`, `RENAMENX`).
    Renamed,
    /// Its key was moved to another database (`MOVE`).
    Moved,
    /// Another value was written over its key (`SET`, a `RENAME` onto it, `COPY ... REPLACE`).
    Overwritten,
    /// `RESTORE ... REPLACE` put an older value in its place, one without this holding or
    /// with fewer of its holds or permits.
    Restored,
    /// Its database was emptied (`FLUSHDB`, `FLUSHALL`).
    Flushed,
    /// Its database was swapped with another (`SWAPDB`).
    Swapped,
    /// The server evicted its key to stay under `maxmemory`.
    Evicted,
    /// Its lease ran out on the server before a renewal came (announced when the server
    /// ends it: its key expires, or the lock is handed on to a waiter).
    Expired,
}

impl EndCause {
    /// The cause named `word` in an announcement.
    pub(crate) fn from_word(word: &str) -> Option<EndCause> {
        Some(match word {
            "forcerelease" => EndCause::ForceReleased,
            "deleted" => EndCause::Deleted,
            "renamed" => EndCause::Renamed,
            "moved" => EndCause::Moved,
            "overwritten" => EndCause::Overwritten,
            "restored" => EndCause::Restored,
            "flushed" => EndCause::Flushed,
            "swapped" => EndCause::Swapped,
            "evicted" => EndCause::Evicted,
            "expired" => EndCause::Expired,
            _ => return None,
        })
    }
}

impl fmt::Display for EndCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EndCause::ForceReleased => "it was force-released",
            EndCause::Deleted => "its key was deleted",
            EndCause::Renamed => "its key was renamed",
            EndCause::Moved => "its key was moved to another database",
            EndCause::Overwritten => "its key was overwritten",
            EndCause::Restored => "its key was restored to an older value",
            EndCause::Flushed => "its database was flushed",
            EndCause::Swapped => "its database was swapped",
            EndCause::Evicted => "its key was evicted",
            EndCause::Expired => "its lease ran out on the server",
        })
    }
}

/// Which family a holding the server announced belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EndedKind {
    Lock,
    Read,
    Write,
    Permits,
}

/// One announcement: a holding the server ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ended {
    pub(crate) cause: EndCause,
    pub(crate) kind: EndedKind,
    pub(crate) token: u64,
    pub(crate) key: String,
    pub(crate) owner: String,
}

impl Ended {
    /// Reads one message; `None` if it is not an announcement.
    pub(crate) fn parse(payload: &[u8]) -> Option<Ended> {
        let (cause, rest) = word(payload)?;
        let (kind, rest) = word(rest)?;
        let (token, rest) = word(rest)?;
        let (keylen, rest) = word(rest)?;
        let keylen: usize = std::str::from_utf8(keylen).ok()?.parse().ok()?;
        let key = rest.get(..keylen)?;
        let owner = rest.get(keylen..)?.strip_prefix(b" ")?;
        Some(Ended {
            cause: EndCause::from_word(std::str::from_utf8(cause).ok()?)?,
            kind: match kind {
                b"lock" => EndedKind::Lock,
                b"read" => EndedKind::Read,
                b"write" => EndedKind::Write,
                b"permits" => EndedKind::Permits,
                _ => return None,
            },
            token: std::str::from_utf8(token).ok()?.parse().ok()?,
            key: String::from_utf8(key.to_vec()).ok()?,
            owner: String::from_utf8(owner.to_vec()).ok()?,
        })
    }
}

/// The prefix of an owner id that `LOCK.LISTEN` names: up to its last `:`, or all of it.
pub(crate) fn owner_prefix(owner: &str) -> &str {
    owner.rsplit_once(':').map_or(owner, |(prefix, _)| prefix)
}

/// The first word of `text` and what follows its one space.
fn word(text: &[u8]) -> Option<(&[u8], &[u8])> {
    let space = text.iter().position(|&b| b == b' ')?;
    Some((&text[..space], &text[space + 1..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_announcement_is_read_with_spaces_in_its_key() {
        let read = Ended::parse(b"forcerelease write 17 7 a b c d ab:cd:3").expect("read");
        assert_eq!(read.cause, EndCause::ForceReleased);
        assert_eq!(read.kind, EndedKind::Write);
        assert_eq!((read.token, read.key.as_str()), (17, "a b c d"));
        assert_eq!(read.owner, "ab:cd:3");
        let plain = Ended::parse(b"expired permits 3 1 k o").expect("read");
        assert_eq!(
            (plain.cause, plain.kind),
            (EndCause::Expired, EndedKind::Permits)
        );
        assert_eq!((plain.key.as_str(), plain.owner.as_str()), ("k", "o"));
    }

    #[test]
    fn anything_else_is_not_an_announcement() {
        for bad in [
            &b""[..],
            b"expired lock 3 1 k",
            b"expired lock 3 9 k o",
            b"melted lock 3 1 k o",
            b"expired latch 3 1 k o",
            b"expired lock x 1 k o",
            b"expired lock 3 1 kXo",
        ] {
            assert_eq!(Ended::parse(bad), None, "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn every_message_the_server_writes_is_read_back() {
        use rlock_core::loss::{Cause, Held, Loss, Watch};
        let causes = [
            Cause::ForceRelease,
            Cause::Deleted,
            Cause::Renamed,
            Cause::Moved,
            Cause::Overwritten,
            Cause::Restored,
            Cause::Flushed,
            Cause::Swapped,
            Cause::Evicted,
            Cause::Expired,
        ];
        for cause in causes {
            for held in [Held::Lock, Held::Read, Held::Write, Held::Permits] {
                let watch = Watch {
                    owner: b"app 1:7".to_vec(),
                    held,
                    token: 42,
                    count: 1,
                };
                let key = b"lock: a".to_vec();
                let loss = Loss { key, watch, cause };
                let read = Ended::parse(&loss.message()).expect("read");
                assert_eq!(owner_prefix(&read.owner).as_bytes(), b"app 1");
                assert_eq!((read.token, read.key.as_str()), (42, "lock: a"));
                assert_eq!(format!("{:?}", read.kind).to_lowercase(), held.name());
            }
        }
        assert_eq!(causes.len(), 10, "every cause the server names");
    }

    #[test]
    fn an_owner_prefix_ends_before_the_last_colon() {
        assert_eq!(owner_prefix("a:b:c"), "a:b");
        assert_eq!(owner_prefix("uuid:t7"), "uuid");
        assert_eq!(owner_prefix("plain"), "plain");
    }
}
