use super::*;

fn waiting(claim: Claim) -> oneshot::Receiver<Outcome> {
    match claim {
        Claim::Waiting(receiver) => receiver,
        Claim::Ended(outcome) => panic!("ended already: {outcome:?}"),
    }
}

#[test]
fn payloads_parse_to_outcomes() {
    assert_eq!(parse(b"7 42"), Some((7, Outcome::Granted(42))));
    assert_eq!(parse(b"7 0"), Some((7, Outcome::TimedOut)));
    let refused = Outcome::Refused("READONLY You can't write against a read only replica.".into());
    let line = b"9 -READONLY You can't write against a read only replica.";
    assert_eq!(parse(line), Some((9, refused)));
    for bad in [&b"7"[..], b"x 1", b"7 x", b"", b"7  1", b"\xff 1"] {
        assert_eq!(parse(bad), None, "{bad:?}");
    }
}

#[test]
fn an_outcome_before_its_claim_is_kept_until_claimed() {
    let mut mailbox = Mailbox::default();
    assert_eq!(mailbox.route(3, Outcome::Granted(11)), None);
    match mailbox.claim(3, "k", "o", Kind::Lock) {
        Claim::Ended(outcome) => assert_eq!(outcome, Outcome::Granted(11)),
        Claim::Waiting(_) => panic!("the early outcome was not kept"),
    }
    assert!(!mailbox.carries_waits());
}

#[test]
fn a_claimed_wait_gets_its_outcome() {
    let mut mailbox = Mailbox::default();
    let mut receiver = waiting(mailbox.claim(5, "k", "o", Kind::Lock));
    assert!(mailbox.carries_waits());
    assert_eq!(mailbox.route(5, Outcome::TimedOut), None);
    assert_eq!(receiver.try_recv(), Ok(Outcome::TimedOut));
    assert!(
        !mailbox.forsake(5, "k", "o"),
        "delivered: nothing to cancel"
    );
}

#[test]
fn a_grant_for_a_cancelled_wait_comes_back_for_release() {
    let mut mailbox = Mailbox::default();
    let _receiver = waiting(mailbox.claim(8, "k", "o", Kind::Write));
    assert!(mailbox.forsake(8, "k", "o"));
    assert!(mailbox.carries_waits(), "the cancel is pending");
    let orphan = mailbox.route(8, Outcome::Granted(99));
    let expected = Orphan {
        key: "k".into(),
        owner: "o".into(),
        kind: Kind::Write,
        token: 99,
    };
    assert_eq!(orphan, Some(expected));
    assert!(!mailbox.carries_waits());
    // A cancel the server answered leaves nothing behind either.
    let _receiver = waiting(mailbox.claim(9, "k", "o", Kind::Lock));
    assert!(mailbox.forsake(9, "k", "o"));
    mailbox.settled(9);
    assert!(!mailbox.carries_waits());
}

#[test]
fn a_lost_connection_ends_every_wait_now_and_later() {
    let mut mailbox = Mailbox::default();
    let mut first = waiting(mailbox.claim(1, "k", "o", Kind::Lock));
    let mut second = waiting(mailbox.claim(2, "k", "o", Kind::Lock));
    mailbox.fail(Loss::Broken);
    mailbox.fail(Loss::Unresponsive);
    assert_eq!(first.try_recv(), Ok(Outcome::Lost(Loss::Broken)));
    assert_eq!(second.try_recv(), Ok(Outcome::Lost(Loss::Broken)));
    match mailbox.claim(3, "k", "o", Kind::Lock) {
        Claim::Ended(outcome) => assert_eq!(outcome, Outcome::Lost(Loss::Broken)),
        Claim::Waiting(_) => panic!("a claim on a lost connection waits"),
    }
    assert_eq!(mailbox.lost(), Some(Loss::Broken));
}

#[test]
fn outcomes_nobody_claims_are_kept_up_to_a_bound_the_oldest_dropped_first() {
    let mut mailbox = Mailbox::default();
    let many = MAX_UNCLAIMED as u64 * 3;
    for id in 1..=many {
        assert_eq!(mailbox.route(id, Outcome::Granted(id + 1_000)), None);
    }
    assert_eq!(mailbox.early_grants.len(), MAX_UNCLAIMED);
    let newest = many - MAX_UNCLAIMED as u64 + 1;
    assert_eq!(mailbox.early_grants.keys().next(), Some(&newest));
    match mailbox.claim(many, "k", "o", Kind::Lock) {
        Claim::Ended(outcome) => assert_eq!(outcome, Outcome::Granted(many + 1_000)),
        Claim::Waiting(_) => panic!("a recent outcome was dropped"),
    }
    assert!(
        matches!(mailbox.claim(1, "k", "o", Kind::Lock), Claim::Waiting(_)),
        "the oldest was kept"
    );
}

#[test]
fn a_flood_of_other_outcomes_never_drops_a_grant_that_came_before_its_claim() {
    // A stranger's `LOCK.WAIT ... WAIT 1 TO <this connection>`, many times over, mails
    // timed-out outcomes here; a grant of this client's that came before its claim must
    // still reach it, or its lock stays held with nobody to release it.
    let mut mailbox = Mailbox::default();
    assert_eq!(mailbox.route(7, Outcome::Granted(70)), None);
    for id in 8..8 + MAX_UNCLAIMED as u64 * 3 {
        let outcome = match id % 3 {
            0 => Outcome::TimedOut,
            _ => Outcome::Refused("CANCELLED the wait was cancelled by LOCK.CANCEL".into()),
        };
        assert_eq!(mailbox.route(id, outcome), None);
    }
    assert!(mailbox.early_others.len() <= MAX_UNCLAIMED);
    match mailbox.claim(7, "k", "o", Kind::Lock) {
        Claim::Ended(outcome) => assert_eq!(outcome, Outcome::Granted(70)),
        Claim::Waiting(_) => panic!("the flood dropped the grant"),
    }
}

#[test]
fn an_outcome_that_came_before_a_loss_still_reaches_its_claim() {
    let mut mailbox = Mailbox::default();
    assert_eq!(mailbox.route(4, Outcome::Granted(40)), None);
    mailbox.fail(Loss::Broken);
    match mailbox.claim(4, "k", "o", Kind::Lock) {
        Claim::Ended(outcome) => assert_eq!(outcome, Outcome::Granted(40)),
        Claim::Waiting(_) => panic!("a claim on a lost connection waits"),
    }
}

#[test]
fn a_receiver_gone_is_told_from_other_refusals() {
    assert!(no_receiver(&server_error("ERR no client 12")));
    for other in ["ERR TO must be followed by a client id", "ERR no such key"] {
        assert!(!no_receiver(&server_error(other)), "{other}");
    }
}

#[test]
fn waits_given_up_for_no_answer_have_a_late_grant_handed_back() {
    let mut mailbox = Mailbox::default();
    let mut receiver = waiting(mailbox.claim(6, "k", "o", Kind::Lock));
    mailbox.fail(Loss::Unresponsive);
    assert_eq!(receiver.try_recv(), Ok(Outcome::Lost(Loss::Unresponsive)));
    let orphan = Orphan {
        key: "k".into(),
        owner: "o".into(),
        kind: Kind::Lock,
        token: 60,
    };
    assert_eq!(mailbox.route(6, Outcome::Granted(60)), Some(orphan));
    // A closed connection sends nothing more: nothing is kept for it.
    let mut closed = Mailbox::default();
    let _waiting = waiting(closed.claim(7, "k", "o", Kind::Lock));
    closed.fail(Loss::Broken);
    assert!(!closed.carries_waits());
}
