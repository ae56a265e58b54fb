//! Unit tests of `registry.rs`.

use super::*;
use crate::kind::RwMode;

const LOCK: Family = Family::Lock;

pub(super) fn waiter(client: usize, id: u64) -> Waiter<usize> {
    Waiter {
        id,
        client,
        owner: format!("owner-{client}").into_bytes().into(),
        lease_ms: 1000,
        deadline_timer: None,
        wait_until: None,
        kind: Default::default(),
    }
}

fn grant(token: i64) -> Grant {
    Grant {
        db: 0,
        key: b"k".to_vec(),
        owner: b"o".to_vec(),
        token,
        kind: Default::default(),
    }
}

#[test]
fn waiters_are_served_in_the_order_they_came() {
    let mut r = Registry::default();
    for c in 1..=3 {
        r.enqueue(0, b"k", waiter(c, c as u64));
    }
    let served: Vec<usize> = std::iter::from_fn(|| r.pop_first(0, b"k", LOCK))
        .map(|w| w.client)
        .collect();
    assert_eq!(served, [1, 2, 3]);
    assert_eq!((r.waiting(), r.queues(), r.memory()), (0, 0, 0));
}

#[test]
fn memory_follows_the_waiters_in_and_out() {
    let mut r = Registry::default();
    r.enqueue(0, b"k", waiter(1, 1));
    let one = r.memory();
    assert!(one > b"owner-1".len() + 1, "{one}");
    r.enqueue(0, &[b'x'; 1000], waiter(2, 2));
    assert!(r.memory() >= one + 1000);
    assert!(r.take(2, None).is_some());
    assert_eq!(r.memory(), one);
    r.take_all();
    assert_eq!(r.memory(), 0);
}

#[test]
fn queues_of_other_keys_and_dbs_are_separate() {
    let mut r = Registry::default();
    r.enqueue(0, b"a", waiter(1, 1));
    r.enqueue(0, b"b", waiter(2, 2));
    r.enqueue(1, b"a", waiter(3, 3));
    assert_eq!(r.pop_first(0, b"a", LOCK).map(|w| w.client), Some(1));
    assert_eq!(r.pop_first(0, b"a", LOCK), None);
    assert_eq!((r.queue_len(0, b"b"), r.queue_len(1, b"a")), (1, 1));
    assert_eq!(r.queued_keys(Some(1)), [(1, b"a".to_vec())]);
    assert_eq!(r.queued_keys(None).len(), 2);
}

#[test]
fn a_waiter_leaves_exactly_once_whoever_takes_it() {
    let mut r = Registry::default();
    r.enqueue(0, b"k", waiter(1, 10));
    // A handoff took it: its WAIT deadline and its disconnection find nothing.
    assert!(r.pop_first(0, b"k", LOCK).is_some());
    assert_eq!(r.take(1, Some(10)), None);
    assert_eq!(r.take(1, None), None);
    // Its deadline took it: a handoff finds nobody.
    r.enqueue(0, b"k", waiter(1, 11));
    assert!(r.take(1, Some(11)).is_some());
    assert_eq!(r.pop_first(0, b"k", LOCK), None);
}

#[test]
fn a_stale_deadline_does_not_take_a_newer_wait_of_the_same_client() {
    let mut r = Registry::default();
    r.enqueue(0, b"k", waiter(1, 20));
    assert_eq!(r.take(1, Some(19)), None);
    assert_eq!(r.queue_len(0, b"k"), 1);
}

#[test]
fn taking_from_the_middle_keeps_the_order_of_the_rest() {
    let mut r = Registry::default();
    for c in 1..=3 {
        r.enqueue(0, b"k", waiter(c, c as u64));
    }
    assert!(r.take(2, None).is_some());
    assert_eq!(r.pop_first(0, b"k", LOCK).map(|w| w.client), Some(1));
    assert_eq!(r.pop_first(0, b"k", LOCK).map(|w| w.client), Some(3));
}

#[test]
fn a_grant_is_taken_once_by_its_reply_or_its_revocation() {
    let mut r: Registry<usize> = Registry::default();
    r.record_grant(7, grant(42));
    assert_eq!(r.take_grant(7), Some(grant(42)));
    // The client disconnects after its reply: nothing to revoke.
    assert_eq!(r.take_grant(7), None);
}

#[test]
fn take_all_empties_every_queue_in_order() {
    let mut r = Registry::default();
    r.enqueue(0, b"a", waiter(1, 1));
    r.enqueue(0, b"a", waiter(2, 2));
    r.enqueue(3, b"b", waiter(3, 3));
    let mut all: Vec<usize> = r.take_all().iter().map(|w| w.client).collect();
    all.sort_unstable();
    assert_eq!(all, [1, 2, 3]);
    assert_eq!((r.waiting(), r.queues()), (0, 0));
    assert_eq!(r.take(1, None), None);
}

#[test]
fn only_the_earliest_check_is_kept() {
    let mut r = Registry::default();
    assert!(!r.claim_check(0, b"k", 100), "nobody waits: no check");
    r.enqueue(0, b"k", waiter(1, 1));
    assert!(r.claim_check(0, b"k", 100));
    assert!(!r.claim_check(0, b"k", 150), "a later check is covered");
    assert!(r.claim_check(0, b"k", 50), "an earlier one is needed");
    r.check_ran(0, b"k", 60, 0);
    assert!(r.claim_check(0, b"k", 100), "the pending time has passed");
}

#[test]
fn a_replaced_check_hands_back_its_timer_and_a_fired_one_is_forgotten() {
    let mut r = Registry::default();
    r.enqueue(0, b"k", waiter(1, 1));
    assert!(r.claim_check(0, b"k", 100));
    assert_eq!(r.replace_check_timer(0, b"k", 7), None);
    assert!(r.claim_check(0, b"k", 50), "an earlier one is needed");
    assert_eq!(
        r.replace_check_timer(0, b"k", 8),
        Some(7),
        "timer 7 is stopped"
    );
    r.check_ran(0, b"k", 50, 8);
    assert!(r.claim_check(0, b"k", 90));
    assert_eq!(r.replace_check_timer(0, b"k", 9), None, "timer 8 has fired");
    assert_eq!(
        r.replace_check_timer(1, b"k", 9),
        None,
        "nobody waits there"
    );
}

#[test]
fn a_lock_name_is_kept_once_for_all_its_waiters() {
    let mut r = Registry::default();
    let key = [b'x'; 1000];
    r.enqueue(0, &key, waiter(1, 1));
    let one = r.memory();
    r.enqueue(0, &key, waiter(2, 2));
    let second = r.memory() - one;
    assert!(
        second < 500,
        "a second waiter cost {second} bytes: the key was copied"
    );
    assert_eq!(r.pop_first(0, &key, LOCK).map(|w| w.client), Some(1));
    assert_eq!(r.take(2, None).map(|w| w.client), Some(2));
    assert_eq!(r.memory(), 0);
    assert_eq!(r.queued_keys(None), Vec::<(Db, Vec<u8>)>::new());
}

#[test]
fn many_waits_leave_at_once_and_the_rest_keep_their_order() {
    let mut r = Registry::default();
    for c in 1..=9 {
        let mut w = waiter(c, c as u64);
        w.deadline_timer = (c % 2 == 0).then_some(100 + c as u64);
        r.enqueue(0, if c <= 6 { b"a" } else { b"b" }, w);
    }
    // Wait 5's id is not 50: that entry is another wait, and stays.
    let mut timers = r
        .take_many(&[(8, 8), (2, 2), (3, 3), (5, 50), (7, 7), (42, 42)])
        .timers;
    timers.sort_unstable();
    assert_eq!(timers, [102, 108]);
    let served: Vec<usize> = std::iter::from_fn(|| r.pop_first(0, b"a", LOCK))
        .map(|w| w.client)
        .collect();
    assert_eq!(served, [1, 4, 5, 6]);
    assert_eq!(r.take(9, Some(9)).map(|w| w.client), Some(9));
    assert_eq!((r.waiting(), r.queues(), r.memory()), (0, 0, 0));
}

#[test]
fn queues_that_lose_a_wait_holding_others_back_are_named_to_be_served_again() {
    let mut r = Registry::default();
    let kinds = [
        (b"rw", Kind::Rw(RwMode::Write)),
        (b"rw", Kind::Rw(RwMode::Read)),
        (b"se", Kind::Permits(3)),
        (b"se", Kind::Permits(1)),
        (b"lk", Kind::Lock),
        (b"lk", Kind::Lock),
        (b"lo", Kind::Permits(2)),
        (b"rw", Kind::Rw(RwMode::Read)),
    ];
    for (c, (key, kind)) in kinds.into_iter().enumerate() {
        let mut w = waiter(c, c as u64);
        w.kind = kind;
        r.enqueue(0, key, w);
    }
    // The first waits of rw, se and lk; the only wait of lo (its queue is gone).
    let mut taken = r.take_many(&[(0, 0), (2, 2), (4, 4), (6, 6)]);
    taken.reopened.sort();
    assert_eq!(taken.reopened, [(0, b"rw".to_vec()), (0, b"se".to_vec())]);
    // A read wait leaves a queue that still has waits; the last waits of se and lk leave.
    assert_eq!(r.take_many(&[(1, 1)]).reopened, []);
    assert_eq!(r.take_many(&[(3, 3), (5, 5)]).reopened, []);
}

#[test]
fn a_few_waits_leave_by_lookup_and_most_by_a_scan() {
    for (queued, taken) in [(40, 3), (40, 39)] {
        let mut r = Registry::default();
        for c in 1..=queued {
            r.enqueue(0, b"k", waiter(c, c as u64));
        }
        let mut waits: Vec<(usize, u64)> = (1..=taken).map(|c| (c, c as u64)).collect();
        // Not that wait of entry 40: it stays.
        waits.push((40, 41));
        r.take_many(&waits);
        assert_eq!(r.waiting(), queued - taken);
        assert_eq!(r.location(40), Some((0, &b"k"[..])));
        assert_eq!(r.first(0, b"k", LOCK).map(|w| w.client), Some(taken + 1));
        assert_eq!(r.take(1, None), None, "gone from the index too");
    }
}

#[test]
fn taking_from_the_middle_of_a_long_queue_is_by_number() {
    let mut r = Registry::default();
    for c in 1..=1000 {
        r.enqueue(0, b"k", waiter(c, c as u64));
    }
    for c in (2..=1000).step_by(2) {
        assert!(r.take(c, Some(c as u64)).is_some());
    }
    assert_eq!(r.queue_len(0, b"k"), 500);
    assert_eq!(r.pop_first(0, b"k", LOCK).map(|w| w.client), Some(1));
    assert_eq!(r.pop_first(0, b"k", LOCK).map(|w| w.client), Some(3));
}

#[test]
fn a_queue_that_empties_hands_back_its_pending_timer_until_it_fires() {
    let mut r = Registry::default();
    r.enqueue(0, b"k", waiter(1, 1));
    assert!(r.claim_check(0, b"k", 100));
    assert_eq!(r.replace_check_timer(0, b"k", 7), None);
    assert!(r.take(1, None).is_some());
    assert_eq!(r.take_stale_timers(), [7]);
    assert_eq!(r.take_stale_timers(), Vec::<u64>::new());
    // A timer that fires before it is stopped is not handed back.
    r.enqueue(0, b"k", waiter(2, 2));
    assert!(r.claim_check(0, b"k", 100));
    r.replace_check_timer(0, b"k", 8);
    assert!(r.pop_first(0, b"k", LOCK).is_some());
    r.check_ran(0, b"k", 100, 8);
    assert_eq!(r.take_stale_timers(), Vec::<u64>::new());
}

#[test]
fn whom_a_lock_was_handed_to_lasts_as_long_as_its_queue() {
    let mut r: Registry<usize> = Registry::default();
    r.handed_to(0, b"k", b"nobody-waits"[..].into());
    assert_eq!(r.last_handed(0, b"k"), None, "no queue, nothing kept");
    r.enqueue(0, b"k", waiter(1, 1));
    r.enqueue(0, b"k", waiter(2, 2));
    r.handed_to(0, b"k", b"owner-0"[..].into());
    assert_eq!(r.last_handed(0, b"k"), Some(&b"owner-0"[..]));
    assert_eq!(r.last_handed(1, b"k"), None);
    assert_eq!(r.last_handed(0, b"other"), None);
    r.pop_first(0, b"k", LOCK);
    r.handed_to(0, b"k", b"owner-1"[..].into());
    assert_eq!(r.last_handed(0, b"k"), Some(&b"owner-1"[..]));
    r.pop_first(0, b"k", LOCK);
    assert_eq!(r.last_handed(0, b"k"), None, "the queue emptied");
}
