use super::*;
use crate::pure::holding::margin_for;

impl Registry {
    /// Marks lost every holding whose safe deadline has passed by `now`; returns those it
    /// marked. (Live code needs no sweep: a holding is marked when it is looked at.)
    fn expire(&mut self, now: Instant) -> Vec<Arc<Holding>> {
        let live = self.entries.values();
        let expired: Vec<_> = live
            .filter(|e| e.current.lost_reason().is_none() && e.current.deadline() <= now)
            .map(|e| e.current.clone())
            .collect();
        expired
            .into_iter()
            .filter(|h| h.mark_lost(LossReason::Expired))
            .collect()
    }

    /// How many live guards hold `(key, owner)` with `token`.
    fn holds(&self, key: &str, owner: &str, token: u64) -> usize {
        self.get(key, owner)
            .filter(|e| e.current.token == token)
            .map_or(0, |e| e.holds)
    }
}

const LEASE: Duration = Duration::from_millis(300);
/// The part of `LEASE` counted on by a registry without a margin of its own: 1% is drift.
const SAFE: Duration = Duration::from_millis(297);

fn grant(owner: &str, token: u64, watchdog: bool, at: Instant) -> Grant<'_> {
    Grant {
        key: "k",
        owner,
        kind: Kind::Lock,
        token,
        lease: LEASE,
        watchdog,
        at,
    }
}

#[test]
fn reentry_with_same_token_shares_the_holding_and_counts_holds() {
    let mut reg = Registry::default();
    let t0 = Instant::now();
    let a = reg.register(&grant("o", 7, true, t0));
    let b = reg.register(&grant("o", 7, true, t0));
    assert!(Arc::ptr_eq(&a, &b));
    assert_eq!(reg.len(), 1);
    assert!(
        reg.unregister(&a, Kind::Lock, true),
        "first release must reach the server"
    );
    assert_eq!(reg.len(), 1, "one hold remains");
    assert!(reg.unregister(&b, Kind::Lock, true));
    assert_eq!(reg.len(), 0);
}

#[test]
fn new_token_for_same_owner_marks_the_old_holding_lost() {
    let mut reg = Registry::default();
    let t0 = Instant::now();
    let old = reg.register(&grant("o", 7, true, t0));
    let new = reg.register(&grant("o", 9, true, t0));
    assert_eq!(old.lost_reason(), Some(LossReason::NotHeld));
    assert_eq!(new.lost_reason(), None);
    assert!(
        !reg.unregister(&old, Kind::Lock, true),
        "a stale guard must not release the new holding"
    );
    assert!(reg.unregister(&new, Kind::Lock, true));
    assert_eq!(reg.len(), 0);
}

#[test]
fn reentry_into_a_lost_holding_gets_a_fresh_generation_but_still_counts_old_holds() {
    let mut reg = Registry::default();
    let t0 = Instant::now();
    let old = reg.register(&grant("o", 7, true, t0));
    reg.mark_lost(&old, LossReason::Expired);
    let new = reg.register(&grant("o", 7, true, t0));
    assert!(!Arc::ptr_eq(&old, &new));
    assert_eq!(new.lost_reason(), None);
    assert!(
        reg.unregister(&old, Kind::Lock, true),
        "same token: the server counts this hold"
    );
    assert_eq!(reg.len(), 1);
    assert!(reg.unregister(&new, Kind::Lock, true));
    assert_eq!(reg.len(), 0);
}

#[test]
fn only_watched_holdings_are_renewed_every_third_of_a_lease() {
    let mut reg = Registry::default();
    let t0 = Instant::now();
    reg.register(&grant("watched", 1, true, t0));
    reg.register(&grant("fixed", 2, false, t0));
    let period = reg.period().expect("one watched holding");
    assert_eq!(period, Duration::from_millis(100));
    assert_eq!(reg.next_wakeup(), Some(t0 + period));
    let due = reg.due(t0 + period, period);
    assert_eq!(due.len(), 1);
    assert_eq!(due[0].holding.owner, "watched");
}

#[test]
fn renewal_moves_the_deadline_and_the_next_renewal() {
    let mut reg = Registry::default();
    let t0 = Instant::now();
    reg.register(&grant("o", 1, true, t0));
    let t1 = t0 + Duration::from_millis(100);
    let due = reg.due(t1, Duration::from_millis(100));
    reg.attempted(&due[0], t1);
    reg.renewed(&due[0], t1);
    assert_eq!(reg.next_wakeup(), Some(t1 + Duration::from_millis(100)));
    assert!(
        reg.expire(t0 + SAFE).is_empty(),
        "renewed past the first lease"
    );
    let lost = reg.expire(t1 + SAFE);
    assert_eq!(lost.len(), 1);
    assert_eq!(lost[0].lost_reason(), Some(LossReason::Expired));
}

#[test]
fn failed_rounds_let_the_lease_run_out() {
    let mut reg = Registry::default();
    let t0 = Instant::now();
    let h = reg.register(&grant("o", 1, true, t0));
    for step in 1..=2u32 {
        let at = t0 + Duration::from_millis(100) * step;
        for r in reg.due(at, Duration::from_millis(100)) {
            reg.attempted(&r, at);
        }
        assert!(reg.expire(at).is_empty());
    }
    assert_eq!(reg.expire(t0 + SAFE).len(), 1);
    assert_eq!(h.lost_reason(), Some(LossReason::Expired));
    assert_eq!(reg.period(), None, "lost holdings are not renewed");
    assert_eq!(reg.next_wakeup(), None);
}

#[test]
fn explicit_lease_holding_expires_at_its_deadline_without_renewal() {
    let mut reg = Registry::default();
    let t0 = Instant::now();
    let h = reg.register(&grant("o", 1, false, t0));
    assert_eq!(reg.period(), None);
    assert_eq!(reg.next_wakeup(), Some(t0 + SAFE));
    assert!(reg.expire(t0 + SAFE - Duration::from_millis(1)).is_empty());
    assert_eq!(reg.expire(t0 + SAFE).len(), 1);
    assert!(h.lost_reason().is_some());
}

#[test]
fn mark_lost_reports_only_the_first_loss() {
    let mut reg = Registry::default();
    let h = reg.register(&grant("o", 1, true, Instant::now()));
    assert!(reg.mark_lost(&h, LossReason::NotHeld));
    assert!(!reg.mark_lost(&h, LossReason::Expired));
    assert_eq!(h.lost_reason(), Some(LossReason::NotHeld));
}

#[test]
fn holds_counts_live_guards_of_the_same_token_only() {
    let mut reg = Registry::default();
    let t0 = Instant::now();
    reg.register(&grant("o", 7, true, t0));
    reg.register(&grant("o", 7, false, t0));
    assert_eq!(reg.holds("k", "o", 7), 2);
    assert_eq!(reg.holds("k", "o", 8), 0);
    assert_eq!(reg.holds("k", "other", 7), 0);
}

#[test]
fn the_safe_deadline_keeps_the_margin_and_drift_but_at_most_half_the_lease() {
    let ms = Duration::from_millis;
    assert_eq!(margin_for(ms(900), ms(20)), ms(29));
    assert_eq!(margin_for(ms(30_000), ms(20)), ms(320));
    assert_eq!(margin_for(ms(30), ms(20)), ms(15), "at most half the lease");
    let mut reg = Registry::new(ms(20));
    let t0 = Instant::now();
    let h = reg.register(&grant("o", 1, true, t0));
    assert_eq!(h.deadline(), t0 + ms(300 - 23));
}

#[test]
fn a_holding_is_lost_by_the_clock_alone_and_a_late_renewal_does_not_revive_it() {
    let mut reg = Registry::default();
    let past = Instant::now() - LEASE * 2;
    let h = reg.register(&grant("o", 1, true, past));
    assert_eq!(
        h.lost_reason(),
        Some(LossReason::Expired),
        "no watchdog needed"
    );
    let due = Renewal {
        holding: h.clone(),
        lease: LEASE,
    };
    reg.renewed(&due, Instant::now());
    assert_eq!(h.lost_reason(), Some(LossReason::Expired));
    assert!(h.deadline() < Instant::now());
}

#[test]
fn a_renewal_answered_after_a_later_one_does_not_move_the_deadline_back_past_it() {
    let mut reg = Registry::default();
    let t0 = Instant::now();
    let h = reg.register(&grant("o", 1, true, t0));
    let r = Renewal {
        holding: h.clone(),
        lease: LEASE,
    };
    let later = t0 + Duration::from_millis(50);
    reg.renewed(&r, later);
    assert_eq!(h.deadline(), later + SAFE);
    reg.renewed(&r, t0 + Duration::from_millis(10));
    assert_eq!(h.deadline(), later + SAFE, "the later send still counts");
}

#[test]
fn no_release_follows_a_holding_the_server_refused() {
    let mut reg = Registry::default();
    let t0 = Instant::now();
    let a = reg.register(&grant("o", 7, true, t0));
    let b = reg.register(&grant("o", 7, true, t0));
    reg.mark_lost(&a, LossReason::NotHeld);
    assert!(!reg.unregister(&a, Kind::Lock, true));
    assert!(
        !reg.unregister(&b, Kind::Lock, true),
        "the same holding: refused too"
    );
    assert_eq!(reg.len(), 0);
}

#[test]
fn drain_forgets_every_hold_and_keeps_those_that_may_be_held() {
    let mut reg = Registry::default();
    let t0 = Instant::now();
    reg.register(&grant("kept", 1, true, t0));
    reg.register(&grant("kept", 1, true, t0));
    let gone = reg.register(&grant("gone", 2, true, t0));
    reg.mark_lost(&gone, LossReason::NotHeld);
    let drained = reg.drain();
    assert_eq!(drained.len(), 1);
    assert_eq!((drained[0].0.owner.as_str(), drained[0].1), ("kept", 2));
    assert_eq!(reg.len(), 0);
    assert_eq!(reg.losses(), 1);
}

fn short_reentry(at: Instant) -> Grant<'static> {
    Grant {
        lease: Duration::from_millis(30),
        ..grant("o", 7, false, at)
    }
}

#[test]
fn a_shorter_lease_sent_after_the_last_answer_counts_alone_and_a_renewal_ends_it() {
    let mut reg = Registry::default();
    let outer = reg.register(&grant("o", 7, true, Instant::now()));
    let t1 = Instant::now();
    reg.register(&short_reentry(t1));
    let short = Duration::from_millis(30);
    assert_eq!(outer.deadline(), safe_deadline(t1, short, Duration::ZERO));
    // The watchdog renews it soon, with the watched lease, which alone counts then.
    assert!(reg.next_wakeup().unwrap() <= t1 + short);
    let t2 = Instant::now();
    let due = reg.due(t2, Duration::from_secs(1));
    assert_eq!(due.len(), 1);
    reg.renewed(&due[0], t2);
    assert_eq!(outer.deadline(), t2 + SAFE);
    assert!(outer.lost_reason().is_none());
}

#[test]
fn requests_that_crossed_count_the_shorter_lease() {
    let mut reg = Registry::default();
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_millis(2));
    let outer = reg.register(&grant("o", 7, true, t0 + Duration::from_millis(1)));
    // Sent before the grant's answer came: either may have been applied last.
    reg.register(&short_reentry(t0));
    let short = Duration::from_millis(30);
    let at = t0 + Duration::from_millis(1);
    assert_eq!(outer.deadline(), safe_deadline(at, short, Duration::ZERO));
}

#[test]
fn a_release_in_flight_is_leaving_only_once_no_guard_holds_its_holding() {
    let mut reg = Registry::default();
    let t0 = Instant::now();
    let outer = reg.register(&grant("o", 7, true, t0));
    let inner = reg.register(&grant("o", 7, true, t0));
    assert!(reg.unregister(&inner, Kind::Lock, true));
    assert!(!reg.leaving("k", "o"), "the outer guard still holds it");
    assert!(reg.unregister(&outer, Kind::Lock, true));
    assert!(
        reg.leaving("k", "o"),
        "no guard holds it: both holds are leaving"
    );
    assert!(!reg.leaving("k", "p"), "another owner's");
    reg.released(&inner, Kind::Lock);
    assert!(reg.leaving("k", "o"));
    reg.released(&outer, Kind::Lock);
    assert!(!reg.leaving("k", "o"), "delivered");
}
