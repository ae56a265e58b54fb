//! The outcomes of one wait connection's tickets (`LOCK.WAIT`), by wait id: who awaits which
//! one, and what to do with the outcomes nobody awaits. Pure bookkeeping, no I/O: the
//! connection's dispatcher (`tickets.rs`) routes each grant message through it, and each wait
//! (`ticket.rs`) claims its own.
//!
//! Races it settles, each under the one lock of the mailbox:
//!
//! - **A message before its claim.** The server answers `LOCK.WAIT` with the wait id, and a
//!   grant can follow on the connection at once; the dispatcher may route it before the
//!   caller, which learns the id from the reply, claims it. Such an outcome is kept until
//!   it is claimed ([`Mailbox::claim`] returns it at once).
//! - **A cancel against a message.** A wait that is given up leaves the map first
//!   ([`Mailbox::forsake`]): if it was still there, no outcome reached it, and its id is
//!   remembered as cancelled with its key and owner, so that a grant that comes for it
//!   anyway is handed back for release ([`Mailbox::route`]). If it was not there, the
//!   outcome is already in the wait's oneshot, and the wait reads it from there.
//! - **A lost connection.** Every wait it carries gets [`Outcome::Lost`] at once, and so
//!   does every later claim without an outcome: the server drops a closed connection's
//!   tickets.
//!
//! Nothing is kept without bound. A wait is in the map until its outcome or its cancel; a
//! cancelled one until its outcome, the cancel's answer, or the connection's loss. An
//! outcome nobody claimed is kept for a claim to come, [`MAX_UNCLAIMED`] grants and as many
//! other outcomes at most, the oldest of its kind dropped first, so that a flood of a
//! stranger's timed-out or refused outcomes never pushes out a grant: a wait's claim follows its `LOCK.WAIT` reply within the
//! response timeout, so only a wait whose reply was lost (its connection is given up then,
//! and the acquisition checks the lock and adopts such a grant) or a stranger's `TO` leaves
//! one unclaimed. A grant so dropped is not released here: a grant message carries no key
//! nor owner, and the hold is its acquisition's to adopt.

use std::collections::{BTreeMap, HashMap};

use redis::{RedisError, Value};
use tokio::sync::oneshot;

use crate::pure::kind::Kind;

/// How one ticket ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The lock is the waiter's owner's, with this token.
    Granted(u64),
    /// The wait's `WAIT` ran out.
    TimedOut,
    /// The server refused the wait (the error line, without its `-`): queue again elsewhere.
    Refused(String),
    /// The connection that would carry the outcome is gone.
    Lost(Loss),
}

/// Why a wait connection was given up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Loss {
    /// It closed (the server restarted, `CLIENT KILL`, a network error).
    Broken,
    /// It stopped answering its liveness probe.
    Unresponsive,
}

/// A claim on a wait id.
pub(crate) enum Claim {
    /// The outcome, when it comes.
    Waiting(oneshot::Receiver<Outcome>),
    /// It came already.
    Ended(Outcome),
}

/// A grant that came for a cancelled wait: its lock is to be released.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Orphan {
    pub(crate) key: String,
    pub(crate) owner: String,
    /// What the wait asked for (the release is of that kind).
    pub(crate) kind: Kind,
    pub(crate) token: u64,
}

/// How many outcomes nobody claimed a mailbox keeps (see the module docs).
pub(crate) const MAX_UNCLAIMED: usize = 1024;

/// The tickets of one wait connection.
#[derive(Default)]
pub(crate) struct Mailbox {
    /// By wait id: where its outcome goes, its key and owner.
    waits: HashMap<u64, (oneshot::Sender<Outcome>, String, String, Kind)>,
    /// Grants nobody claimed yet, by wait id; ids grow, so the first is the oldest.
    early_grants: BTreeMap<u64, Outcome>,
    /// Every other outcome nobody claimed yet, likewise.
    early_others: BTreeMap<u64, Outcome>,
    cancelled: HashMap<u64, (String, String, Kind)>,
    lost: Option<Loss>,
}

impl Mailbox {
    /// Claims the outcome of wait `id`, a wait for `key` by `owner` (for a hold of `kind`).
    pub(crate) fn claim(&mut self, id: u64, key: &str, owner: &str, kind: Kind) -> Claim {
        if let Some(outcome) = self
            .early_grants
            .remove(&id)
            .or_else(|| self.early_others.remove(&id))
        {
            return Claim::Ended(outcome);
        }
        if let Some(loss) = self.lost {
            return Claim::Ended(Outcome::Lost(loss));
        }
        let (sender, receiver) = oneshot::channel();
        let wait = (sender, key.to_owned(), owner.to_owned(), kind);
        self.waits.insert(id, wait);
        Claim::Waiting(receiver)
    }

    /// Routes the outcome of wait `id`; a grant for a cancelled wait comes back to release.
    pub(crate) fn route(&mut self, id: u64, outcome: Outcome) -> Option<Orphan> {
        if let Some((waiter, ..)) = self.waits.remove(&id) {
            // The receiver lives until its wait left the map (see `forsake`): this send
            // fails only if a wait was dropped without leaving it, which nothing does.
            if let Err(Outcome::Granted(token)) = waiter.send(outcome) {
                tracing::warn!(id, token, "a grant for a wait that went away unannounced");
            }
            return None;
        }
        if let Some((key, owner, kind)) = self.cancelled.remove(&id) {
            return match outcome {
                Outcome::Granted(token) => Some(Orphan {
                    key,
                    owner,
                    kind,
                    token,
                }),
                _ => None,
            };
        }
        let early = match outcome {
            Outcome::Granted(_) => &mut self.early_grants,
            _ => &mut self.early_others,
        };
        early.insert(id, outcome);
        if early.len() > MAX_UNCLAIMED {
            if let Some((id, outcome)) = early.pop_first() {
                tracing::warn!(
                    id,
                    ?outcome,
                    "dropped the outcome of a wait this client does not know"
                );
            }
        }
        None
    }

    /// Takes wait `id` out of the map, remembering it as cancelled (for `key` by `owner`)
    /// if no outcome reached it yet; true if so. False: its outcome is in its oneshot.
    pub(crate) fn forsake(&mut self, id: u64, key: &str, owner: &str) -> bool {
        let Some((_, _, _, kind)) = self.waits.remove(&id) else {
            return false;
        };
        if self.lost.is_none() {
            self.cancelled
                .insert(id, (key.to_owned(), owner.to_owned(), kind));
        }
        true
    }

    /// Forgets a cancelled wait whose cancel the server answered (no outcome will come).
    pub(crate) fn settled(&mut self, id: u64) {
        self.cancelled.remove(&id);
    }

    /// Whether waits or cancels are pending on the connection (it is then probed).
    pub(crate) fn carries_waits(&self) -> bool {
        !self.waits.is_empty() || !self.cancelled.is_empty()
    }

    /// Whether the connection was given up.
    #[cfg(test)]
    pub(crate) fn lost(&self) -> Option<Loss> {
        self.lost
    }

    /// Gives the connection up: every wait it carries ends with `loss`, now and later.
    ///
    /// [`Loss::Broken`]: the server has dropped the connection's tickets and nothing more
    /// comes (`channel.rs` kills it and reads it to its end first). [`Loss::Unresponsive`]:
    /// the server did not answer, and a grant it made may still come; the waits are
    /// remembered as cancelled, so that such a grant is handed back for release.
    pub(crate) fn fail(&mut self, loss: Loss) {
        self.lost.get_or_insert(loss);
        for (id, (waiter, key, owner, kind)) in self.waits.drain() {
            drop(waiter.send(Outcome::Lost(loss)));
            if loss == Loss::Unresponsive {
                self.cancelled.insert(id, (key, owner, kind));
            }
        }
        if loss == Loss::Broken {
            self.cancelled.clear();
        }
        // Unclaimed outcomes stay for the claims still to come.
    }

    /// Whether the connection was given up.
    pub(crate) fn is_lost(&self) -> bool {
        self.lost.is_some()
    }
}

/// Parses a grant message's payload, `<wait id> <outcome>`: a token, `0` (timed out) or
/// `-<error line>`. `None` for anything else.
pub(crate) fn parse(payload: &[u8]) -> Option<(u64, Outcome)> {
    let text = std::str::from_utf8(payload).ok()?;
    let (id, outcome) = text.split_once(' ')?;
    let id = id.parse().ok()?;
    let outcome = match outcome.strip_prefix('-') {
        Some(line) => Outcome::Refused(line.to_owned()),
        None => match outcome.parse().ok()? {
            0 => Outcome::TimedOut,
            token => Outcome::Granted(token),
        },
    };
    Some((id, outcome))
}

/// The `[tag, number]` reply of `LOCK.WAIT`.
pub(crate) fn read_reply(reply: &Value) -> Option<(&str, u64)> {
    let Value::Array(items) = reply else {
        return None;
    };
    let tag = match items.first()? {
        Value::SimpleString(tag) => tag.as_str(),
        Value::BulkString(tag) => std::str::from_utf8(tag).ok()?,
        _ => return None,
    };
    let number = match items.get(1)? {
        Value::Int(n) => u64::try_from(*n).ok()?,
        Value::BulkString(n) => std::str::from_utf8(n).ok()?.parse().ok()?,
        _ => return None,
    };
    Some((tag, number))
}

/// Whether `err` says that the wait connection is not subscribed to its channel.
pub(crate) fn unsubscribed(err: &RedisError) -> bool {
    let detail = err.detail().unwrap_or_default();
    detail.starts_with("subscribe to __rlock__:")
}

/// Whether `err` says that the receiver named by `TO` is gone (`ERR no client <id>`).
pub(crate) fn no_receiver(err: &RedisError) -> bool {
    let detail = err.detail().unwrap_or_default();
    err.code() == Some("ERR") && detail.starts_with("no client ")
}

/// The error a grant message's `-<error line>` stands for.
pub(crate) fn server_error(line: &str) -> RedisError {
    let text = format!("-{line}\r\n");
    match redis::parse_redis_value(text.as_bytes()) {
        Ok(Value::ServerError(err)) => err.into(),
        _ => RedisError::from((
            redis::ErrorKind::Parse,
            "unreadable refusal",
            line.to_owned(),
        )),
    }
}

#[cfg(test)]
#[path = "mailbox_tests.rs"]
mod tests;
