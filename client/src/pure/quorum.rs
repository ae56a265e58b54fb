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

/// The pause before another try after `failures` in a row: 50 ms, doubling, at most 1 s.
/// A RedLock pauses so after rounds that found fewer than a majority of servers answering
/// (contention is waited for on the servers), an acquisition before it queues again after
/// `READONLY` or `TRYAGAIN`.
pub(crate) fn pause_after(failures: u32) -> Duration {
    let doubled = 50u64.saturating_mul(1 << failures.min(5));
    Duration::from_millis(doubled.min(1_000))
}

/// How a server answered one acquisition of a RedLock attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer {
    /// No answer yet, within the per-server try limit.
    Trying,
    /// Granted.
    Granted,
    /// Busy (the wait ended without a grant).
    Busy,
    /// An error, or no answer within the per-server try limit.
    Failed,
}

/// What the answers of a RedLock's first step (every server at once, waiting nowhere) decide.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// A majority granted, the gate among them.
    Win,
    /// No majority now: queue on the gate, the server at `gate` in the canonical order (the
    /// servers before it failed or are suspected down).
    Queue { gate: usize },
    /// Fewer than a majority of servers can answer; how many did.
    Unreachable(usize),
    /// Wait for more answers.
    Pending,
}

/// Judges the first step's `answers` (canonical order). The gate is the first server that
/// answered, or is still trying and not suspected down (`suspect`: it failed its last try).
/// Winning needs the gate: a gate with a queue is never free, so a newcomer cannot overtake
/// the contenders queued there.
pub(crate) fn judge(answers: &[Answer], suspect: &[bool], quorum: usize) -> Verdict {
    let count = |a: Answer| answers.iter().filter(|x| **x == a).count();
    let (granted, busy, trying) = (
        count(Answer::Granted),
        count(Answer::Busy),
        count(Answer::Trying),
    );
    if granted + busy + trying < quorum {
        return Verdict::Unreachable(granted + busy);
    }
    let gate = answers.iter().zip(suspect).position(|(a, s)| match a {
        Answer::Granted | Answer::Busy => true,
        Answer::Trying => !s,
        Answer::Failed => false,
    });
    let Some(gate) = gate else {
        return Verdict::Pending;
    };
    match answers[gate] {
        Answer::Granted if granted >= quorum => Verdict::Win,
        Answer::Granted if granted + trying >= quorum => Verdict::Pending,
        Answer::Trying => Verdict::Pending,
        _ => Verdict::Queue { gate },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Answer::{Busy, Failed, Granted, Trying};

    #[test]
    fn a_majority_with_the_gate_wins_at_once() {
        let none = [false; 3];
        assert_eq!(judge(&[Granted, Granted, Trying], &none, 2), Verdict::Win);
        assert_eq!(judge(&[Granted, Trying, Granted], &none, 2), Verdict::Win);
    }

    #[test]
    fn a_majority_without_the_gate_queues_on_it() {
        // A contender queued on the first server keeps it busy: the newcomer queues too.
        let none = [false; 3];
        assert_eq!(
            judge(&[Busy, Granted, Granted], &none, 2),
            Verdict::Queue { gate: 0 }
        );
        assert_eq!(
            judge(&[Trying, Granted, Granted], &none, 2),
            Verdict::Pending
        );
    }

    #[test]
    fn a_failed_or_suspected_gate_is_skipped() {
        let none = [false; 3];
        assert_eq!(judge(&[Failed, Granted, Granted], &none, 2), Verdict::Win);
        let first_down = [true, false, false];
        assert_eq!(
            judge(&[Trying, Granted, Granted], &first_down, 2),
            Verdict::Win
        );
        assert_eq!(
            judge(&[Trying, Busy, Granted], &first_down, 2),
            Verdict::Queue { gate: 1 }
        );
        // A suspect that answers is the gate again.
        assert_eq!(
            judge(&[Busy, Granted, Granted], &first_down, 2),
            Verdict::Queue { gate: 0 }
        );
    }

    #[test]
    fn too_few_answering_servers_are_unreachable() {
        let none = [false; 3];
        assert_eq!(
            judge(&[Failed, Failed, Granted], &none, 2),
            Verdict::Unreachable(1)
        );
        assert_eq!(
            judge(&[Failed, Failed, Trying], &none, 2),
            Verdict::Unreachable(0)
        );
        assert_eq!(judge(&[Failed, Trying, Trying], &none, 2), Verdict::Pending);
    }

    #[test]
    fn a_granted_gate_without_a_possible_majority_queues() {
        let none = [false; 5];
        let answers = [Granted, Busy, Busy, Busy, Trying];
        assert_eq!(judge(&answers, &none, 3), Verdict::Queue { gate: 0 });
    }

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
    fn pause_doubles_up_to_a_second() {
        assert_eq!(pause_after(0), Duration::from_millis(50));
        assert_eq!(pause_after(1), Duration::from_millis(100));
        assert_eq!(pause_after(4), Duration::from_millis(800));
        assert_eq!(pause_after(5), Duration::from_secs(1));
        assert_eq!(pause_after(u32::MAX), Duration::from_secs(1));
    }
}
