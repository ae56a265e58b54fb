//! The releases a client has sent and not yet seen answered. Until the answer, the server
//! may still count their holds, so a check for a grant whose reply was lost counts them as
//! known (see `wait.rs`): a hold being released is never taken for a lost grant. Each entry
//! stays until its release is answered or its holding has surely ended (the release is
//! sent again meanwhile, see `deliver.rs`), and there are at most [`MAX_RELEASING`] of them.
//! Pure bookkeeping, no Redis in it.

use std::collections::HashMap;

use crate::pure::kind::Units;

/// How many releases in flight are remembered at most; past it the oldest is forgotten.
pub(crate) const MAX_RELEASING: usize = 65_536;

/// One release in flight: its owner, token, what it gives back, and its arrival.
#[derive(Debug)]
struct Sent {
    owner: String,
    token: u64,
    units: Units,
    seq: u64,
}

/// The tokens of the releases in flight, by key, then owner (one entry per release).
#[derive(Debug, Default)]
pub(crate) struct Releasing {
    sent: HashMap<String, Vec<Sent>>,
    len: usize,
    seq: u64,
}

impl Releasing {
    /// One release of `(key, owner, token)`, giving back `units`, is about to be sent.
    pub(crate) fn add(&mut self, key: &str, owner: &str, token: u64, units: Units) {
        self.seq += 1;
        let sent = Sent {
            owner: owner.to_owned(),
            token,
            units,
            seq: self.seq,
        };
        self.sent.entry(key.to_owned()).or_default().push(sent);
        self.len += 1;
        if self.len > MAX_RELEASING {
            self.forget_oldest();
        }
    }

    fn forget_oldest(&mut self) {
        let oldest = self
            .sent
            .iter()
            .flat_map(|(key, sent)| sent.iter().enumerate().map(move |(at, s)| (s.seq, key, at)));
        if let Some((_, key, at)) = oldest.min().map(|(seq, key, at)| (seq, key.clone(), at)) {
            self.remove(&key, |_, i| i == at);
        }
    }

    /// Removes the first entry of `key` that `pick` chooses (by entry and position).
    fn remove(&mut self, key: &str, pick: impl Fn(&Sent, usize) -> bool) {
        let Some(sent) = self.sent.get_mut(key) else {
            return;
        };
        if let Some(at) = sent.iter().enumerate().position(|(i, s)| pick(s, i)) {
            sent.swap_remove(at);
            self.len -= 1;
        }
        if sent.is_empty() {
            self.sent.remove(key);
        }
    }

    /// One release of `(key, owner, token)` giving back `units` was answered, will not be
    /// sent, or its holding has surely ended.
    pub(crate) fn done(&mut self, key: &str, owner: &str, token: u64, units: Units) {
        self.remove(key, |s, _| {
            s.owner == owner && s.token == token && s.units == units
        });
    }

    /// Forgets `owner`'s releases of `key` with another token than `token`, the owner's
    /// new holding: the server ended the holding they were for, and counts none of them.
    pub(crate) fn holding_changed(&mut self, key: &str, owner: &str, token: u64) {
        if let Some(sent) = self.sent.get_mut(key) {
            let before = sent.len();
            sent.retain(|s| s.owner != owner || s.token == token);
            self.len -= before - sent.len();
            if sent.is_empty() {
                self.sent.remove(key);
            }
        }
    }

    /// `owner`'s releases of `key` in flight: the token and what each gives back.
    pub(crate) fn units<'a>(
        &'a self,
        key: &str,
        owner: &'a str,
    ) -> impl Iterator<Item = (u64, Units)> + 'a {
        let sent = self.sent.get(key).map_or(&[][..], Vec::as_slice);
        sent.iter()
            .filter(move |s| s.owner == owner)
            .map(|s| (s.token, s.units))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONE: Units = [1, 0];

    impl Releasing {
        fn count(&self, key: &str, owner: &str, token: u64) -> usize {
            self.units(key, owner).filter(|(t, _)| *t == token).count()
        }
    }

    #[test]
    fn releases_are_counted_until_answered() {
        let mut r = Releasing::default();
        r.add("k", "o", 7, ONE);
        r.add("k", "o", 7, [3, 0]);
        r.add("k", "p", 7, ONE);
        assert_eq!(r.count("k", "o", 7), 2);
        assert_eq!(
            r.units("k", "o").collect::<Vec<_>>(),
            [(7, ONE), (7, [3, 0])]
        );
        r.done("k", "o", 7, [3, 0]);
        assert_eq!(r.units("k", "o").collect::<Vec<_>>(), [(7, ONE)]);
        r.done("k", "o", 7, ONE);
        r.done("k", "p", 7, ONE);
        assert_eq!(r.count("k", "o", 7), 0);
        assert!(
            r.sent.is_empty() && r.len == 0,
            "nothing is kept once answered"
        );
    }

    #[test]
    fn a_new_holding_forgets_the_releases_of_older_ones() {
        let mut r = Releasing::default();
        r.add("k", "o", 7, ONE);
        r.add("k", "p", 7, ONE);
        r.holding_changed("k", "o", 9);
        assert_eq!(r.count("k", "o", 7), 0);
        assert_eq!(r.count("k", "p", 7), 1, "another owner's are kept");
        r.holding_changed("k", "p", 9);
        assert!(r.sent.is_empty() && r.len == 0);
    }

    #[test]
    fn an_unknown_answer_changes_nothing() {
        let mut r = Releasing::default();
        r.add("k", "o", 7, ONE);
        r.done("k", "o", 8, ONE);
        r.done("x", "o", 7, ONE);
        r.done("k", "o", 7, [0, 1]);
        assert_eq!(r.count("k", "o", 7), 1);
    }

    #[test]
    fn the_table_is_bounded_and_forgets_the_oldest_first() {
        let mut r = Releasing::default();
        for n in 0..=MAX_RELEASING as u64 {
            r.add(&format!("k{}", n % 7), &format!("t{n}"), n, ONE);
        }
        assert_eq!(r.len, MAX_RELEASING);
        assert_eq!(r.count("k0", "t0", 0), 0, "the oldest went");
        assert_eq!(r.count("k1", "t1", 1), 1);
    }
}
