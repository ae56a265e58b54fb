//! One acquisition at a time per `(key, owner)`: the turn.
//!
//! A grant whose reply was lost (a cancelled wait, a timeout) is found by counting: the
//! holds the server counts for the owner beyond those the client knows of. The count is
//! only exact while no other acquisition of the same owner on the same key is in flight,
//! since that one's grant is counted by the server before its guard exists. So the
//! acquisitions of one owner on one key take turns, from their first command until their
//! guard exists (or their grant was released), and a recovery never mistakes another
//! acquisition's fresh hold for its own.
//!
//! Waiting for a turn counts against the acquisition's wait limit. When that limit has
//! passed and the turn's holder is queued on the server (the lock is busy), the lock is
//! busy for this acquisition too: it gives up at once. Otherwise (the holder is reentering,
//! or checking after an error) it waits up to a grace more.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::{watch, OwnedMutexGuard};
use tokio::time::{sleep_until, Instant};

use crate::pure::pair::Id;

/// The turn of one `(key, owner)`, shared by the acquisitions that want it.
struct Slot {
    turn: Arc<tokio::sync::Mutex<()>>,
    /// Whether the turn's holder is queued on the server.
    queued: watch::Sender<bool>,
}

/// The turns of one client.
#[derive(Default)]
pub(crate) struct Turns {
    slots: Mutex<HashMap<(String, String), Arc<Slot>>>,
}

/// An acquisition's turn on `(key, owner)`, until dropped (or, not yet held, its place
/// among those that want it).
pub(crate) struct Turn {
    turns: Arc<Turns>,
    id: (String, String),
    slot: Arc<Slot>,
    held: Option<OwnedMutexGuard<()>>,
}

impl Turns {
    fn slots(&self) -> MutexGuard<'_, HashMap<(String, String), Arc<Slot>>> {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits for the turn on `(key, owner)`, until `deadline` (`None`: without limit) as
    /// the module docs say; `None` if the lock stayed busy.
    pub(crate) async fn take(
        self: &Arc<Self>,
        key: &str,
        owner: &str,
        deadline: Option<Instant>,
        grace: Duration,
    ) -> Option<Turn> {
        let id = (key.to_owned(), owner.to_owned());
        let slot = self
            .slots()
            .entry(id.clone())
            .or_insert_with(new_slot)
            .clone();
        // Not held yet; dropped (this future dropped, or the lock busy), it forgets the entry.
        let mut turn = Turn {
            turns: self.clone(),
            id,
            slot,
            held: None,
        };
        let slot = &turn.slot;
        let busy = async {
            let Some(deadline) = deadline else {
                return std::future::pending().await;
            };
            sleep_until(deadline).await;
            let mut queued = slot.queued.subscribe();
            tokio::select! {
                _ = queued.wait_for(|queued| *queued) => {}
                () = sleep_until(deadline + grace) => {}
            }
        };
        let held = tokio::select! {
            biased;
            held = slot.turn.clone().lock_owned() => held,
            () = busy => return None,
        };
        turn.held = Some(held);
        Some(turn)
    }

    /// Drops `slot`, and its entry when no acquisition wants it any more.
    fn forget(&self, id: &(String, String), slot: &Arc<Slot>) {
        let mut slots = self.slots();
        // One count in the map, one in `slot`: nobody else waits for or holds the turn.
        if Arc::strong_count(slot) == 2 {
            slots.remove(&(id.0.as_str(), id.1.as_str()) as &dyn Id);
        }
    }
}

fn new_slot() -> Arc<Slot> {
    Arc::new(Slot {
        turn: Arc::new(tokio::sync::Mutex::new(())),
        queued: watch::Sender::new(false),
    })
}

impl Turn {
    /// Says whether the acquisition is queued on the server (see the module docs).
    pub(crate) fn set_queued(&self, queued: bool) {
        self.slot.queued.send_replace(queued);
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        if let Some(held) = self.held.take() {
            self.set_queued(false);
            drop(held);
        }
        self.turns.forget(&self.id, &self.slot);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GRACE: Duration = Duration::from_secs(5);

    #[tokio::test]
    async fn a_turn_is_one_at_a_time_and_its_entry_goes_with_the_last() {
        let turns = Arc::new(Turns::default());
        let first = turns.take("k", "o", None, GRACE).await.unwrap();
        let other_owner = turns.take("k", "p", Some(Instant::now()), GRACE).await;
        assert!(other_owner.is_some(), "another owner has a turn of its own");
        drop(other_owner);
        // Busy behind a queued holder: no turn once the deadline passed.
        first.set_queued(true);
        assert!(turns
            .take("k", "o", Some(Instant::now()), GRACE)
            .await
            .is_none());
        // A wanter that goes away leaves nothing behind.
        let wanting = turns.take("k", "o", None, GRACE);
        assert!(tokio::time::timeout(Duration::from_millis(10), wanting)
            .await
            .is_err());
        drop(first);
        assert!(turns.slots().is_empty(), "an entry outlived every turn");
        let again = turns.take("k", "o", Some(Instant::now()), GRACE).await;
        assert!(again.is_some(), "free again");
    }
}
