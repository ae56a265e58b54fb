//! The releases a client has sent and not yet seen answered. Until the answer, the server
//! may still count their holds, so a check for a grant whose reply was lost counts them as
//! known (see `wait.rs`): a hold being released is never taken for a lost grant. Pure
//! bookkeeping, no Redis in it.

use std::collections::HashMap;

/// The tokens of the releases in flight, by key, then owner (one entry per release).
#[derive(Debug, Default)]
pub(crate) struct Releasing {
    sent: HashMap<String, Vec<(String, u64)>>,
}

impl Releasing {
    /// One release of `(key, owner, token)` is about to be sent.
    pub(crate) fn add(&mut self, key: &str, owner: &str, token: u64) {
        let sent = self.sent.entry(key.to_owned()).or_default();
        sent.push((owner.to_owned(), token));
    }

    /// One release of `(key, owner, token)` was answered (or will not be sent).
    pub(crate) fn done(&mut self, key: &str, owner: &str, token: u64) {
        let Some(sent) = self.sent.get_mut(key) else {
            return;
        };
        if let Some(at) = sent.iter().position(|(o, t)| o == owner && *t == token) {
            sent.swap_remove(at);
        }
        if sent.is_empty() {
            self.sent.remove(key);
        }
    }

    /// Forgets `owner`'s releases of `key` with another token than `token`, the owner's
    /// new holding: the server ended the holding they were for, and counts none of them.
    pub(crate) fn holding_changed(&mut self, key: &str, owner: &str, token: u64) {
        if let Some(sent) = self.sent.get_mut(key) {
            sent.retain(|(o, t)| o != owner || *t == token);
            if sent.is_empty() {
                self.sent.remove(key);
            }
        }
    }

    /// The tokens of `owner`'s releases of `key` in flight, one per release.
    pub(crate) fn tokens<'a>(
        &'a self,
        key: &str,
        owner: &'a str,
    ) -> impl Iterator<Item = u64> + 'a {
        let sent = self.sent.get(key).map_or(&[][..], Vec::as_slice);
        sent.iter()
            .filter(move |(o, _)| o == owner)
            .map(|(_, t)| *t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Releasing {
        fn count(&self, key: &str, owner: &str, token: u64) -> usize {
            self.tokens(key, owner).filter(|t| *t == token).count()
        }
    }

    #[test]
    fn releases_are_counted_until_answered() {
        let mut r = Releasing::default();
        r.add("k", "o", 7);
        r.add("k", "o", 7);
        r.add("k", "p", 7);
        assert_eq!(r.count("k", "o", 7), 2);
        assert_eq!(r.tokens("k", "o").collect::<Vec<_>>(), [7, 7]);
        r.done("k", "o", 7);
        assert_eq!(r.count("k", "o", 7), 1);
        r.done("k", "o", 7);
        r.done("k", "p", 7);
        assert_eq!(r.count("k", "o", 7), 0);
        assert!(r.sent.is_empty(), "nothing is kept once answered");
    }

    #[test]
    fn a_new_holding_forgets_the_releases_of_older_ones() {
        let mut r = Releasing::default();
        r.add("k", "o", 7);
        r.add("k", "p", 7);
        r.holding_changed("k", "o", 9);
        assert_eq!(r.count("k", "o", 7), 0);
        assert_eq!(r.count("k", "p", 7), 1, "another owner's are kept");
        r.holding_changed("k", "p", 9);
        assert!(r.sent.is_empty());
    }

    #[test]
    fn an_unknown_answer_changes_nothing() {
        let mut r = Releasing::default();
        r.add("k", "o", 7);
        r.done("k", "o", 8);
        r.done("x", "o", 7);
        assert_eq!(r.count("k", "o", 7), 1);
    }
}
