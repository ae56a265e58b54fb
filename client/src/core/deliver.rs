//! A release delivered, or its holding ended by itself: never left behind.
//!
//! A `LOCK.RELEASE` (`RWLOCK.RELEASE`, `SEM.RELEASE`) that fails for its connection or its
//! route is sent again on a fresh connection, after a short pause that grows, until it is
//! answered or the holding's lease has surely ended. Sending it again is safe:
//!
//! - after an answer that says the command did not run (a redirection given up, `TRYAGAIN`,
//!   `CLUSTERDOWN`, `LOADING`, `READONLY`, a refused connection), at once;
//! - after a failure that leaves it unknown (a broken connection, no reply in time), only
//!   once a check (`LOCK.INFO`, under the turn of the key and owner, see `turns.rs`) shows
//!   the server still counting the hold: a release that ran is not sent twice. The token
//!   keeps it from touching a newer holding either way.
//!
//! Every release goes this way: a guard's (`release()`, `Drop`), `close()`'s, and the
//! giving back of a grant no guard holds (one that crossed a cancellation, or whose reply
//! was lost). A guard's caller and `close()` hear the first answer, or the failure once the
//! client's `retries` resends failed too; a grant given back, the first answer (its caller
//! may hold the turn a resend's check needs). The release goes on in the background after
//! that. The releases in flight stay known (`releasing.rs`) until it ends, so a check for
//! a lost grant never mistakes the hold for one, and the owner's next acquisition of the
//! key waits for it rather than reenter the hold on its way out (`cancel_safe.rs`).

use std::sync::Arc;
use std::time::Duration;

use redis::{RedisError, RedisResult};
use tokio::sync::oneshot;
use tokio::time::{sleep, Instant};

use crate::core::shared::Core;
use crate::hold::registry::Holding;
use crate::pure::error::timed_out;
use crate::pure::kind::Kind;

/// The first pause before a release is sent again; each next one doubles, up to [`LAST`].
const FIRST: Duration = Duration::from_millis(20);
const LAST: Duration = Duration::from_secs(1);

/// What to do after a release's outcome.
enum Step {
    /// The outcome is final: tell it.
    Done(RedisResult<u64>),
    /// Send it again (after the pause), keeping this failure to tell if it is the last.
    Again(RedisError),
}

/// Whether `err` says the release was surely not run: the node answered without running it,
/// or no connection carried it.
fn not_run(err: &RedisError) -> bool {
    let code = err.code();
    err.redirect_node().is_some()
        || err.is_connection_refusal()
        || matches!(
            code,
            Some("TRYAGAIN" | "CLUSTERDOWN" | "LOADING" | "READONLY" | "MASTERDOWN")
        )
}

/// Whether `err` may leave the release undelivered (it may or may not have run).
fn unknown(err: &RedisError) -> bool {
    err.is_io_error() || err.is_timeout() || err.is_unrecoverable_error()
}

/// The step after `answer`: an answer or a refusal is final, a failure is tried again.
fn step(answer: RedisResult<u64>) -> Step {
    match answer {
        Err(err) if not_run(&err) || unknown(&err) => Step::Again(err),
        outcome => Step::Done(outcome),
    }
}

impl Core {
    /// Delivers the release of one hold of `kind` of `holding`, known as in flight (see
    /// `releasing.rs`), in the background (see the module docs). Answers its first answer,
    /// or its last failure once `patience` resends failed too.
    pub(crate) async fn deliver_release(
        self: &Arc<Core>,
        holding: &Arc<Holding>,
        kind: Kind,
        patience: usize,
    ) -> RedisResult<u64> {
        let (tell, told) = oneshot::channel();
        let job = self.clone().deliver(holding.clone(), kind, tell, patience);
        drop(self.spawn(job));
        told.await
            .unwrap_or_else(|_| Err(timed_out("the release ended without an answer")))
    }

    /// Gives back a hold of `kind` that `owner` was granted on `key` with `token` and that
    /// no guard holds (a grant that crossed a cancellation, or whose reply was lost), its
    /// lease ending `lease` from now at the latest: delivered as a guard's release is, known
    /// as in flight until it ends. Answers its first answer: the caller may hold the turn
    /// that a resend's check needs.
    pub(crate) async fn give_back_grant(
        self: &Arc<Core>,
        (kind, key, owner): (Kind, &str, &str),
        token: u64,
        lease: Duration,
    ) -> RedisResult<u64> {
        let losses = Arc::default(); // never lost: it is only released
        let holding = Holding::new((key, owner, kind), token, Instant::now() + lease, &losses);
        self.sending(&holding, kind);
        self.deliver_release(&holding, kind, 0).await
    }

    /// Delivers the release of one hold of `kind` of `holding` (see the module docs);
    /// `tell` gets the first answer, or the last failure once `patience` resends failed.
    async fn deliver(
        self: Arc<Core>,
        holding: Arc<Holding>,
        kind: Kind,
        tell: oneshot::Sender<RedisResult<u64>>,
        patience: usize,
    ) {
        let mut tell = Some(tell);
        let (mut pause, mut resends) = (FIRST, 0);
        let mut answer = self.send_release(&holding, kind).await;
        loop {
            let failure = match step(answer) {
                Step::Done(outcome) => {
                    tell.take().map(|t| t.send(outcome));
                    break;
                }
                Step::Again(err) => err,
            };
            if self.options().releases_once() {
                tell.take().map(|t| t.send(Err(failure.clone())));
                tracing::warn!(key = %holding.key, %failure, "a failed release is not sent again (unsafe_release_once)");
                break;
            }
            let end = self.surely_ended(&holding);
            if resends >= patience || Instant::now() + pause >= end {
                if let Some(t) = tell.take() {
                    drop(t.send(Err(failure.clone())));
                }
            }
            if Instant::now() + pause >= end {
                tracing::warn!(key = %holding.key, owner = %holding.owner, %failure, "a release was not delivered before its lease ended");
                break;
            }
            tracing::debug!(key = %holding.key, %failure, ?pause, "a release failed for its connection; sending it again");
            sleep(pause).await;
            (pause, resends) = ((pause * 2).min(LAST), resends + 1);
            answer = Err(failure);
            if self.may_resend(&holding, kind, &mut answer).await {
                answer = self.send_release(&holding, kind).await;
            }
        }
        self.released(&holding, kind);
    }

    async fn send_release(&self, holding: &Holding, kind: Kind) -> RedisResult<u64> {
        self.release(kind, &holding.key, &holding.owner, holding.token)
            .await
    }

    /// Whether the release whose last outcome is `answer` (a failure) may be sent again:
    /// if it surely did not run, yes; else the server's count decides (under the owner's
    /// turn), and `answer` becomes what remains if it ran.
    async fn may_resend(&self, h: &Holding, kind: Kind, answer: &mut RedisResult<u64>) -> bool {
        if matches!(answer, Err(err) if not_run(err)) {
            return true;
        }
        let soon = Instant::now() + self.options().response_timeout_duration();
        let Some(turn) = self.take_turn(&h.key, &h.owner, Some(soon)).await else {
            return false;
        };
        let known = self.known(&h.key, &h.owner);
        let counted = self.counted(kind, &h.key, &h.owner).await;
        drop(turn);
        let column = kind.column();
        let mine = known.iter().filter(|(token, _)| *token == h.token);
        let known: u64 = mine.map(|(_, units)| units[column]).sum();
        match counted {
            Ok(Some((token, units))) if token == h.token => {
                if units[column] >= known {
                    return true;
                }
                *answer = Ok(units[column]);
                false
            }
            // The holding is gone: released, or its lease ended.
            Ok(_) => {
                *answer = Ok(0);
                false
            }
            Err(err) => {
                tracing::debug!(key = %h.key, %err, "could not check a release's holding");
                false
            }
        }
    }

    /// When the server has surely ended `holding`'s lease if nothing renews it: its safe
    /// deadline, plus the margin it keeps, a reply's time and the clocks' drift.
    fn surely_ended(&self, holding: &Holding) -> Instant {
        let deadline = holding.deadline();
        let left = deadline.saturating_duration_since(Instant::now());
        let options = self.options();
        let slack = options.response_timeout_duration() + options.margin_duration();
        deadline + slack + left / 50 + Duration::from_secs(1)
    }
}
