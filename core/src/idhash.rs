//! A hasher for the ids the server makes itself (wait ids, client ids, blocked-client
//! handles): one multiplication, where the standard SipHash costs a few hundred
//! instructions per lookup. Only for keys no client chooses: lock names stay on SipHash,
//! whose keyed hashing is what keeps a client from crafting colliding keys.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// Multiplies by the 64-bit golden ratio (Fibonacci hashing): consecutive ids spread over
/// the whole table, as hashbrown's top bits need.
#[derive(Default, Clone, Copy)]
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

/// A map keyed by server-made ids.
pub type IdMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;
/// A set of server-made ids.
pub type IdSet<K> = HashSet<K, BuildHasherDefault<IdHasher>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consecutive_ids_differ_in_their_top_bits() {
        let top = |n: u64| {
            let mut h = IdHasher::default();
            h.write_u64(n);
            h.finish() >> 57
        };
        let tops: HashSet<u64> = (1..=64).map(top).collect();
        assert!(tops.len() > 32, "{} distinct of 64", tops.len());
    }

    #[test]
    fn maps_work_as_maps() {
        let mut m: IdMap<u64, u64> = IdMap::default();
        for i in 0..10_000 {
            m.insert(i, i * 2);
        }
        assert!((0..10_000).all(|i| m.get(&i) == Some(&(i * 2))));
    }
}
