//! The lock state machine: what a command does to a lock, with no Redis types in it.
//!
//! A lock is a hash in Redisson's layout: one field named after the owner whose value is
//! the reentry count, plus the module's `@token` field. [`Holding::from_fields`] reads that
//! layout, and [`acquire`] / [`release`] decide what a command does; the module's `store/`
//! applies it.

use crate::args::strict_i64;
pub use crate::layout::TOKEN_FIELD;

/// The current holding of a lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holding {
    pub owner: Vec<u8>,
    /// Reentry count, ≥ 1.
    pub count: i64,
    /// Fencing token; 0 for a lock written by a script-based client.
    pub token: i64,
}

/// The hash does not have the shape of a lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotALock;

impl Holding {
    /// Reads a lock from the fields of its hash: exactly one owner field (a name not
    /// starting with `@`) whose value is a positive integer, and at most a `@token` field
    /// holding a non-negative integer besides.
    pub fn from_fields<F, V>(fields: &[(F, V)]) -> Result<Holding, NotALock>
    where
        F: AsRef<[u8]>,
        V: AsRef<[u8]>,
    {
        let mut owner = None;
        let mut token = None;
        for (field, value) in fields {
            let (field, value) = (field.as_ref(), value.as_ref());
            if field == TOKEN_FIELD {
                let t = strict_i64(value).filter(|t| *t >= 0).ok_or(NotALock)?;
                if token.replace(t).is_some() {
                    return Err(NotALock);
                }
            } else if field.first() == Some(&b'@') {
                return Err(NotALock);
            } else {
                let count = strict_i64(value).filter(|c| *c > 0).ok_or(NotALock)?;
                if owner.replace((field, count)).is_some() {
                    return Err(NotALock);
                }
            }
        }
        let (owner, count) = owner.ok_or(NotALock)?;
        Ok(Holding {
            owner: owner.to_vec(),
            count,
            token: token.unwrap_or(0),
        })
    }

    pub fn is_held_by(&self, owner: &[u8]) -> bool {
        self.owner == owner
    }
}

/// What `LOCK.ACQUIRE` does to a lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AcquireStep {
    /// The lock is free: a fresh holding with count 1 and a new token.
    Fresh,
    /// The owner holds it already: count becomes `count`, the token stays.
    Reenter { count: i64, token: i64 },
    /// Someone else holds it.
    Contended,
    /// The owner holds it so many times that the count would overflow.
    CountOverflow,
}

pub fn acquire(current: Option<&Holding>, owner: &[u8]) -> AcquireStep {
    match current {
        None => AcquireStep::Fresh,
        Some(h) if h.is_held_by(owner) => match h.count.checked_add(1) {
            Some(count) => AcquireStep::Reenter {
                count,
                token: h.token,
            },
            None => AcquireStep::CountOverflow,
        },
        Some(_) => AcquireStep::Contended,
    }
}

/// What `LOCK.RELEASE` does to a lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReleaseStep {
    /// Holds remain: the count becomes this (≥ 1), the lease is unchanged.
    Remaining(i64),
    /// The last hold is gone: hand the lock to a waiter or delete it.
    Freed,
    /// The caller does not hold the lock.
    NotHeld,
}

pub fn release(current: Option<&Holding>, owner: &[u8]) -> ReleaseStep {
    match current {
        Some(h) if h.is_held_by(owner) => release_held(h.count),
        _ => ReleaseStep::NotHeld,
    }
}

/// The release by the holder of `count` holds: one fewer, or the lock freed.
pub fn release_held(count: i64) -> ReleaseStep {
    if count > 1 {
        ReleaseStep::Remaining(count - 1)
    } else {
        ReleaseStep::Freed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(owner: &str, count: i64, token: i64) -> Holding {
        Holding {
            owner: owner.as_bytes().to_vec(),
            count,
            token,
        }
    }

    #[test]
    fn redisson_layout_reads_as_a_lock_with_token_zero() {
        let h = Holding::from_fields(&[("uuid:1", "2")]).unwrap();
        assert_eq!(h, held("uuid:1", 2, 0));
    }

    #[test]
    fn token_field_is_read_in_any_position() {
        let h = Holding::from_fields(&[("@token", "7"), ("a", "1")]).unwrap();
        assert_eq!(h, held("a", 1, 7));
    }

    #[test]
    fn shapes_that_are_not_locks_are_refused() {
        let bad: &[&[(&str, &str)]] = &[
            &[],
            &[("@token", "3")],
            &[("a", "1"), ("b", "1")],
            &[("a", "0")],
            &[("a", "-1")],
            &[("a", "x")],
            &[("a", "01")],
            &[("a", "1"), ("@token", "-1")],
            &[("a", "1"), ("@token", "t")],
            &[("a", "1"), ("@other", "1")],
        ];
        for fields in bad {
            assert_eq!(Holding::from_fields(fields), Err(NotALock), "{fields:?}");
        }
    }

    #[test]
    fn acquire_of_free_lock_is_fresh() {
        assert_eq!(acquire(None, b"a"), AcquireStep::Fresh);
    }

    #[test]
    fn reentry_by_same_owner_increments_count_and_keeps_token() {
        let h = held("a", 2, 9);
        assert_eq!(
            acquire(Some(&h), b"a"),
            AcquireStep::Reenter { count: 3, token: 9 }
        );
    }

    #[test]
    fn acquire_by_stranger_is_contended() {
        assert_eq!(
            acquire(Some(&held("a", 1, 1)), b"b"),
            AcquireStep::Contended
        );
    }

    #[test]
    fn reentry_count_cannot_overflow() {
        let h = held("a", i64::MAX, 1);
        assert_eq!(acquire(Some(&h), b"a"), AcquireStep::CountOverflow);
    }

    #[test]
    fn release_counts_down_then_frees() {
        assert_eq!(
            release(Some(&held("a", 2, 1)), b"a"),
            ReleaseStep::Remaining(1)
        );
        assert_eq!(release(Some(&held("a", 1, 1)), b"a"), ReleaseStep::Freed);
    }

    #[test]
    fn release_by_stranger_is_refused() {
        assert_eq!(release(Some(&held("a", 1, 1)), b"b"), ReleaseStep::NotHeld);
        assert_eq!(release(None, b"b"), ReleaseStep::NotHeld);
    }
}
