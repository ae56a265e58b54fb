//! Unit tests of a queue's lines per family (`lanes.rs`, `taking.rs`).

use super::super::tests::waiter;
use super::super::*;
use crate::kind::RwMode;

const LOCK: Family = Family::Lock;

fn waiter_of(client: usize, kind: Kind) -> Waiter<usize> {
    let mut w = waiter(client, client as u64);
    w.kind = kind;
    w
}

#[test]
fn each_family_has_its_own_line_and_the_first_to_come_heads() {
    let mut r = Registry::default();
    let kinds = [
        Kind::Rw(RwMode::Write),
        Kind::Latch,
        Kind::Lock,
        Kind::Latch,
        Kind::Permits(2),
        Kind::Rw(RwMode::Read),
    ];
    for (c, kind) in kinds.into_iter().enumerate() {
        r.enqueue(0, b"k", waiter_of(c, kind));
    }
    assert_eq!(
        r.heads(0, b"k"),
        [Family::Rw, Family::Latch, Family::Lock, Family::Sem]
    );
    assert_eq!(r.first(0, b"k", Family::Lock).map(|w| w.client), Some(2));
    assert_eq!(r.lane_len(0, b"k", Family::Rw), 2);
    let order: Vec<Kind> = r.peek(0, b"k", 10).into_iter().map(|(_, k)| k).collect();
    assert_eq!(order, kinds);
    assert_eq!(r.peek(0, b"k", 3).len(), 3);
}

#[test]
fn taking_a_family_leaves_every_other_wait_queued() {
    let mut r = Registry::default();
    let kinds = [
        Kind::Lock,
        Kind::Latch,
        Kind::Rw(RwMode::Write),
        Kind::Latch,
    ];
    for (c, kind) in kinds.into_iter().enumerate() {
        r.enqueue(0, b"k", waiter_of(c, kind));
    }
    let latches: Vec<usize> = r
        .take_lane(0, b"k", Family::Latch, usize::MAX)
        .into_iter()
        .map(|w| w.client)
        .collect();
    assert_eq!(latches, [1, 3]);
    r.enqueue(0, b"k", waiter_of(5, Kind::Latch));
    r.enqueue(0, b"k", waiter_of(6, Kind::Latch));
    let first = r.take_lane(0, b"k", Family::Latch, 1);
    assert_eq!(first.iter().map(|w| w.client).collect::<Vec<_>>(), [5]);
    assert_eq!(r.take_lane(0, b"k", Family::Latch, 1)[0].client, 6);
    assert_eq!((r.waiting(), r.queue_len(0, b"k")), (2, 2));
    assert_eq!(r.take(1, None), None);
    assert_eq!(r.pop_first(0, b"k", Family::Latch), None);
    assert_eq!(r.pop_first(0, b"k", LOCK).map(|w| w.client), Some(0));
    assert_eq!(r.take(2, Some(2)).map(|w| w.client), Some(2));
    assert_eq!((r.waiting(), r.queues(), r.memory()), (0, 0, 0));
}

#[test]
fn many_waits_of_several_families_leave_at_once() {
    let mut r = Registry::default();
    for c in 0..40 {
        let kind = [
            Kind::Lock,
            Kind::Latch,
            Kind::Permits(1),
            Kind::Rw(RwMode::Read),
        ][c % 4];
        r.enqueue(0, b"k", waiter_of(c, kind));
    }
    let waits: Vec<(usize, u64)> = (0..40)
        .filter(|c| c % 3 == 0)
        .map(|c| (c, c as u64))
        .collect();
    r.take_many(&waits);
    let left: Vec<usize> = r
        .take_queue(0, b"k")
        .into_iter()
        .map(|w| w.client)
        .collect();
    let want: Vec<usize> = (0..40).filter(|c| c % 3 != 0).collect();
    assert_eq!(left, want);
    assert_eq!((r.waiting(), r.queues(), r.memory()), (0, 0, 0));
}

#[test]
fn the_first_waits_of_every_family_leave_in_their_order_of_arrival() {
    let mut r = Registry::default();
    let kinds = [
        Kind::Latch,
        Kind::Lock,
        Kind::Rw(RwMode::Read),
        Kind::Lock,
        Kind::Latch,
    ];
    for (c, kind) in kinds.into_iter().enumerate() {
        r.enqueue(0, b"k", waiter_of(c, kind));
    }
    let first: Vec<usize> = r
        .take_first(0, b"k", 3)
        .into_iter()
        .map(|w| w.client)
        .collect();
    assert_eq!(first, [0, 1, 2]);
    let rest: Vec<usize> = r
        .take_first(0, b"k", 9)
        .into_iter()
        .map(|w| w.client)
        .collect();
    assert_eq!(rest, [3, 4]);
    assert_eq!((r.waiting(), r.queues(), r.memory()), (0, 0, 0));
}
