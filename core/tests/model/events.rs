//! What else happens to the key and its waits: time passes to the next lease end, plain
//! Redis commands replace or delete the key, a latch counts down, a semaphore gets its
//! total, a wait is cancelled (or its `WAIT` runs out), a client closes.

use rlock_core::rwlock::parse_meta;

use super::state::{Key, Reply, State};
use super::step::Step;

/// The next time something's lease ends: the key's time to live, a holder's `@h:` lease,
/// a lease a client was told of.
pub fn next_deadline(st: &State) -> Option<i64> {
    let mut deadlines: Vec<i64> = st.held.iter().map(|h| h.until).collect();
    deadlines.extend(st.store.expires_at);
    if let Key::Hash(fields) = &st.store.key {
        let metas = fields.iter().filter(|(name, _)| name.starts_with(b"@h:"));
        deadlines.extend(metas.filter_map(|(_, v)| parse_meta(v)).map(|(_, d)| d));
    }
    deadlines.into_iter().filter(|d| *d > st.now).min()
}

impl Step<'_> {
    /// The clock reaches the next lease end: Redis expires the key if its time is up, and
    /// the holdings whose lease ended are over for their clients.
    pub fn tick(&mut self) {
        let Some(at) = next_deadline(&self.st) else {
            return;
        };
        self.st.now = at;
        if self.st.store.expires_at.is_some_and(|e| e <= at) {
            self.st.store.delete();
        }
        self.st.held.retain(|h| h.until > at);
    }

    /// `DEL`.
    pub fn del(&mut self) {
        self.st.store.delete();
        self.key_replaced();
    }

    /// `SET key value`, over whatever the key was: a latch's count, or another type.
    pub fn set(&mut self, value: &[u8]) {
        self.st.store.delete();
        self.st.store.key = Key::Str(value.to_vec());
        self.key_replaced();
    }

    /// `commands/latch_countdown.rs`: one off the count (deleted at zero), then the
    /// latch's waits go.
    pub fn countdown(&mut self) {
        match self.st.store.read_latch() {
            Ok(Some(count)) if count > 1 => {
                self.st.store.key = Key::Str((count - 1).to_string().into_bytes())
            }
            Ok(Some(_)) => self.st.store.delete(),
            Ok(None) => {}
            Err(_) => return,
        }
        self.release_latch();
    }

    /// `commands/sem_permits.rs`: `SEM.PERMITS key 2`.
    pub fn sem_permits(&mut self) {
        if self.live_sem().is_err() {
            return;
        }
        self.st.store.set_sem_total(2);
        self.st.total = Some(2);
    }

    /// `LOCK.CANCEL`, or the wait's `WAIT` running out: it leaves with nil.
    pub fn cancel(&mut self, client: usize) {
        if let Some(w) = self.st.pending(client).and_then(|w| self.q.take(w)) {
            self.end(w.client, Reply::Nil, w.kind.family());
        }
    }

    /// The client's connection closes: its waits leave.
    pub fn close(&mut self, client: usize) {
        while let Some(w) = self.st.pending(client).and_then(|w| self.q.take(w)) {
            self.end(w.client, Reply::Closed, w.kind.family());
        }
    }
}
