//! A small seeded generator (SplitMix64): the same seed gives the same faults and choices.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// SplitMix64, shared between threads (each draw advances one atomic state).
#[derive(Debug)]
pub struct Rng {
    state: AtomicU64,
}

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng {
            state: AtomicU64::new(seed ^ 0x9E37_79B9_7F4A_7C15),
        }
    }

    pub fn next(&self) -> u64 {
        let s = self
            .state
            .fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed);
        let mut z = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `lo..hi` (`lo` when the range is empty).
    pub fn range(&self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        lo + self.next() % (hi - lo)
    }

    /// A duration of `lo..hi` milliseconds.
    pub fn millis(&self, lo: u64, hi: u64) -> Duration {
        Duration::from_millis(self.range(lo, hi))
    }

    /// True with probability `percent` / 100.
    pub fn chance(&self, percent: u64) -> bool {
        self.range(0, 100) < percent
    }

    /// One of `items` (panics on an empty slice: callers pass fixed lists).
    pub fn pick<'a, T>(&self, items: &'a [T]) -> &'a T {
        &items[self.range(0, items.len() as u64) as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_draws() {
        let (a, b) = (Rng::new(7), Rng::new(7));
        let draws: Vec<u64> = (0..5).map(|_| a.next()).collect();
        assert_eq!(draws, (0..5).map(|_| b.next()).collect::<Vec<_>>());
        assert!((0..100).all(|_| a.range(3, 9) < 9));
    }
}
