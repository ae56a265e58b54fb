//! The arithmetic of locks over several servers: majorities, the time a quorum of holdings
//! surely lasts, the token a quorum gives, the pause after a round that found too few
//! servers. Pure, no Redis in it.

use std::time::Duration;

/// The least number of `n` servers that is a majority.
pub(crate) fn majority(n: usize) -> usize {
    n / 2 + 1
}

/// Why `n` servers cannot carry a RedLock, if they cannot: an even number splits into two
/// halves neither of which is a majority more often than an odd one, and fewer than 3 leave
/// no failure to tolerate.
pub(crate) fn unfit_server_count(n: usize) -> Option<String> {
    if n < 3 {
        return Some(format!("a RedLock needs at least 3 servers, got {n}"));
    }
    n.is_multiple_of(2)
        .then(|| format!("a RedLock needs an odd number of servers, got {n}"))
}

/// The latest time until which at least `quorum` of the holdings whose safe deadlines are
/// `deadlines` all last: the `quorum`-th latest deadline. `None` if there are fewer.
pub(crate) fn quorum_deadline<T: Ord + Copy>(deadlines: &[T], quorum: usize) -> Option<T> {
    if quorum == 0 || deadlines.len() < quorum {
        return None;
    }
    let mut sorted = deadlines.to_vec();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    sorted.get(quorum - 1).copied()
}

/// The fencing token of a holding made of several servers' holdings: the largest of their
/// tokens. It is higher than a former holding's whenever the server that gave the former
/// holding's token also granted the new one (its tokens only grow); see the README.
pub(crate) fn quorum_token(tokens: &[u64]) -> u64 {
    tokens.iter().copied().max().unwrap_or(0)
}

/// How many losses among `held` holdings leave fewer than `quorum` of them.
pub(crate) fn losses_to_fall_below(held: usize, quorum: usize) -> usize {
    (held + 1).saturating_sub(quorum).max(1)
}

/// The pause before another try after `failures` in a row: 50 ms, doubling, at most 1 s.
/// A RedLock pauses so after rounds that found fewer than a majority of servers answering
/// (contention is waited for on the servers), an acquisition before it queues again after
/// `READONLY` or `TRYAGAIN`.
pub(crate) fn pause_after(failures: u32) -> Duration {
    let doubled = 50u64.saturating_mul(1 << failures.min(5));
    Duration::from_millis(doubled.min(1_000))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn majority_is_more_than_half() {
        assert_eq!(majority(1), 1);
        assert_eq!(majority(3), 2);
        assert_eq!(majority(4), 3);
        assert_eq!(majority(5), 3);
    }

    #[test]
    fn redlock_needs_an_odd_count_of_at_least_three() {
        assert!(unfit_server_count(1).is_some());
        assert!(unfit_server_count(2).is_some());
        assert!(unfit_server_count(4).unwrap().contains("odd"));
        assert_eq!(unfit_server_count(3), None);
        assert_eq!(unfit_server_count(5), None);
    }

    #[test]
    fn quorum_deadline_is_the_quorum_th_latest() {
        assert_eq!(quorum_deadline(&[5, 9, 7], 2), Some(7));
        assert_eq!(quorum_deadline(&[5, 9, 7], 3), Some(5));
        assert_eq!(quorum_deadline(&[5, 9, 7], 1), Some(9));
        assert_eq!(quorum_deadline(&[5], 2), None);
        assert_eq!(quorum_deadline::<u8>(&[], 0), None);
    }

    #[test]
    fn token_is_the_largest() {
        assert_eq!(quorum_token(&[3, 11, 7]), 11);
        assert_eq!(quorum_token(&[]), 0);
    }

    #[test]
    fn losses_that_break_a_quorum() {
        // 3 held of a 2-quorum: the second loss breaks it; 2 held: the first.
        assert_eq!(losses_to_fall_below(3, 2), 2);
        assert_eq!(losses_to_fall_below(2, 2), 1);
        assert_eq!(losses_to_fall_below(5, 3), 3);
        // Every member must hold (a MultiLock): any loss breaks it.
        assert_eq!(losses_to_fall_below(4, 4), 1);
    }

    #[test]
    fn pause_doubles_up_to_a_second() {
        assert_eq!(pause_after(0), Duration::from_millis(50));
        assert_eq!(pause_after(1), Duration::from_millis(100));
        assert_eq!(pause_after(4), Duration::from_millis(800));
        assert_eq!(pause_after(5), Duration::from_secs(1));
        assert_eq!(pause_after(u32::MAX), Duration::from_secs(1));
    }
}
