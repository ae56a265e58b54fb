//! The token counter's rules as properties, on random histories of issues, learned tokens
//! and jumps: a token issued never repeats and never goes back, and is greater than every
//! token the counter learned before it. The documented preconditions hold in every
//! history: the clock given is the wall clock, so it may stall or step back but a token
//! learned is bounded by `ahead_bound` past it; `observe_issued` gets only counters the
//! module wrote.

use proptest::prelude::*;
use rlock_core::token::{ahead_bound, TokenClock};

const GAP: i64 = 1_000_000;

#[derive(Debug, Clone)]
enum Step {
    /// The wall clock moves by this many µs (back, too).
    Clock(i64),
    Issue,
    /// A token seen in the data, this far from the clock.
    Observe(i64),
    Jump,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (-2_000_000i64..5_000_000).prop_map(Step::Clock),
        4 => Just(Step::Issue),
        2 => (-5_000_000i64..5_000_000).prop_map(Step::Observe),
        1 => Just(Step::Jump),
    ]
}

proptest! {
    #[test]
    fn issued_tokens_never_repeat_nor_go_back(
        start in 0i64..1_000_000_000_000_000,
        steps in proptest::collection::vec(step(), 0..100),
    ) {
        let clock = TokenClock::new();
        let mut now = start;
        let mut highest_issued = None::<i64>;
        let mut highest_known = 0;
        for step in steps {
            match step {
                Step::Clock(by) => now = (now + by).max(0),
                Step::Issue => {
                    let token = clock.issue(now).unwrap();
                    prop_assert!(token > highest_known, "{token} not past {highest_known}");
                    prop_assert!(highest_issued.is_none_or(|h| token > h));
                    prop_assert!(token >= now, "a token is at least the clock");
                    highest_issued = Some(token);
                    highest_known = token;
                }
                Step::Observe(off) => {
                    let seen = now.saturating_add(off);
                    let learned = clock.observe(seen, now, GAP);
                    let bounded = seen <= now.saturating_add(ahead_bound(GAP));
                    prop_assert_eq!(learned, bounded || seen <= highest_known);
                    if learned {
                        highest_known = highest_known.max(seen);
                    }
                }
                Step::Jump => {
                    clock.jump(now, GAP);
                    highest_known = highest_known.max(now + GAP);
                }
            }
            prop_assert_eq!(clock.last(), highest_known, "the counter never goes back");
        }
    }

    #[test]
    fn an_exhausted_counter_refuses_instead_of_repeating(seen in 0i64..=i64::MAX) {
        let clock = TokenClock::new();
        clock.observe_issued(seen);
        match clock.issue(0) {
            Ok(token) => prop_assert!(token > seen),
            Err(_) => prop_assert_eq!(seen, i64::MAX),
        }
    }
}
