//! Unit tests of `receivers.rs`.

use super::*;

fn rights(sender: u64, user: Option<&str>) -> Rights {
    Rights {
        sender,
        user: user.map(|u| Rc::from(u.as_bytes())),
    }
}

fn ticket(receiver: u64) -> Ticket {
    Ticket {
        receiver,
        delivery: Delivery::Pull,
        rights: rights(1, Some("app")),
    }
}

fn mail(wait: u64) -> Mail {
    Mail {
        wait,
        outcome: Outcome::TimedOut,
        grant: None,
        rights: rights(1, Some("app")),
    }
}

fn waits(mails: &[Mail]) -> Vec<u64> {
    mails.iter().map(|m| m.wait).collect()
}

#[test]
fn the_sender_and_the_receiver_cancel_silently_the_user_loudly_others_not() {
    let r = rights(1, Some("app"));
    let caller = |id, user| Caller { id, user };
    assert_eq!(
        may_cancel(&r, 2, &caller(1, Some(&b"other"[..]))),
        Some(false)
    );
    assert_eq!(may_cancel(&r, 2, &caller(2, None)), Some(false));
    assert_eq!(may_cancel(&r, 2, &caller(3, Some(&b"app"[..]))), Some(true));
    assert_eq!(may_cancel(&r, 2, &caller(3, Some(&b"other"[..]))), None);
    assert_eq!(may_cancel(&r, 2, &caller(3, None)), None);
    assert_eq!(may_cancel(&rights(1, None), 2, &caller(3, None)), None);
}

#[test]
fn mails_are_read_oldest_first_and_counted_until_read() {
    let mut t = Receivers::default();
    for wait in [5, 3, 9] {
        assert_eq!(t.post(7, mail(wait)), None);
    }
    assert_eq!(t.unread(), 3);
    assert_eq!(waits(&t.take_mail(7, 2)), [5, 3]);
    assert_eq!(t.unread(), 1);
    assert_eq!(waits(&t.take_mail(7, usize::MAX)), [9]);
    assert_eq!((t.unread(), t.any_receiver()), (0, false));
}

#[test]
fn a_mail_is_taken_out_of_the_middle_by_its_wait_id() {
    let mut t = Receivers::default();
    for wait in 1..=3 {
        t.post(7, mail(wait));
    }
    assert_eq!(t.mail_mut(2).map(|(r, m)| (r, m.wait)), Some((7, 2)));
    assert_eq!(t.take_mailed(2).map(|m| m.wait), Some(2));
    assert!(t.take_mailed(2).is_none(), "taken once");
    assert_eq!(waits(&t.take_mail(7, usize::MAX)), [1, 3]);
}

#[test]
fn a_post_wakes_the_parked_call_once() {
    let mut t = Receivers::default();
    let parked = Parked {
        bc: 64,
        parking: 1,
        timer: Some(99),
    };
    t.park(7, parked);
    assert_eq!(t.post(7, mail(1)), Some(parked));
    assert_eq!(t.post(7, mail(2)), None);
    assert_eq!(t.forget_parked(64), None, "it is parked no more");
    assert_eq!(t.unpark(7, 1), None);
}

#[test]
fn a_parked_call_is_found_by_its_handle() {
    let mut t = Receivers::default();
    let parked = |bc, parking| Parked {
        bc,
        parking,
        timer: None,
    };
    t.park(7, parked(64, 1));
    t.park(8, parked(128, 2));
    assert_eq!(t.forget_parked(128), Some(parked(128, 2)));
    assert_eq!(t.unpark(7, 3), None, "another parking");
    assert_eq!(t.unpark(7, 1), Some(parked(64, 1)));
}

#[test]
fn a_closed_receiver_leaves_its_tickets_grants_and_timer() {
    let mut t = Receivers::default();
    t.add(1, ticket(7));
    t.add(2, ticket(7));
    t.add(3, ticket(8));
    let grant = Grant {
        db: 0,
        key: b"k".to_vec(),
        owner: b"o".to_vec(),
        token: 42,
        kind: Default::default(),
    };
    t.post(
        7,
        Mail {
            grant: Some(grant.clone()),
            ..mail(4)
        },
    );
    t.post(7, mail(5));
    let left = t.receiver_gone(7);
    let mut tickets = left.tickets;
    tickets.sort_unstable();
    assert_eq!(tickets, [1, 2]);
    assert_eq!(left.grants, [grant]);
    assert_eq!((t.queued(), t.unread()), (1, 0));
    assert!(t.ticket(3).is_some() && t.ticket(1).is_none());
    assert!(t.take_mailed(5).is_none());
}

#[test]
fn a_user_name_is_kept_once() {
    let mut t = Receivers::default();
    let a = t.user(b"app");
    let b = t.user(b"app");
    assert!(Rc::ptr_eq(&a, &b));
    assert!(!Rc::ptr_eq(&a, &t.user(b"other")));
}
