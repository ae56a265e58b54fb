use super::*;

const NOW: i64 = 1_000_000;

/// A master with nothing against a grant.
fn open() -> Facts {
    Facts {
        now: NOW,
        loading: false,
        master: true,
        paused: false,
        wait_until: None,
        redirect: None,
        stalled_until: None,
        delay_until: None,
        scripts_until: None,
        over_memory: false,
        replicas_ok: true,
    }
}

fn with(change: impl FnOnce(&mut Facts)) -> Facts {
    let mut facts = open();
    change(&mut facts);
    facts
}

#[test]
fn every_rule_as_a_table() {
    let moved = "MOVED 1 127.0.0.1:7001".to_owned();
    #[rustfmt::skip]
    let table: Vec<(&str, Facts, Verdict)> = vec![
        ("nothing against", open(), Verdict::Go),
        ("loading", with(|f| f.loading = true), Verdict::Later(NOW + PAUSED_RETRY_MS)),
        ("waiter's WAIT ran out", with(|f| f.wait_until = Some(NOW)), Verdict::Expired),
        ("waiter still waiting", with(|f| f.wait_until = Some(NOW + 1)), Verdict::Go),
        ("a replica", with(|f| f.master = false), Verdict::Refuse(DEMOTED.to_owned())),
        ("writes paused", with(|f| f.paused = true), Verdict::Later(NOW + PAUSED_RETRY_MS)),
        ("key served elsewhere", with(|f| f.redirect = Some(moved.clone())), Verdict::Refuse(moved.clone())),
        ("after a stall", with(|f| f.stalled_until = Some(NOW + 500)), Verdict::Later(NOW + 500)),
        ("stall hold-back over", with(|f| f.stalled_until = Some(NOW)), Verdict::Go),
        ("failover delay", with(|f| f.delay_until = Some(NOW + 700)), Verdict::Later(NOW + 700)),
        ("failover delay over", with(|f| f.delay_until = Some(NOW - 1)), Verdict::Go),
        ("script clients' turn", with(|f| f.scripts_until = Some(NOW + 80)), Verdict::Later(NOW + 80)),
        ("script clients' turn over", with(|f| f.scripts_until = Some(NOW)), Verdict::Go),
        ("at or over maxmemory", with(|f| f.over_memory = true), Verdict::Later(NOW + MEMORY_RETRY_MS)),
        ("too few replicas", with(|f| f.replicas_ok = false), Verdict::Later(NOW + REPLICAS_RETRY_MS)),
    ];
    for (case, facts, expected) in table {
        assert_eq!(decide(&facts), expected, "{case}");
    }
}

#[test]
fn the_later_hold_back_wins() {
    let both = with(|f| {
        f.stalled_until = Some(NOW + 2000);
        f.delay_until = Some(NOW + 300);
    });
    assert_eq!(decide(&both), Verdict::Later(NOW + 2000));
    let both = with(|f| {
        f.stalled_until = Some(NOW + 100);
        f.delay_until = Some(NOW + 300);
    });
    assert_eq!(decide(&both), Verdict::Later(NOW + 300));
    let turn = with(|f| {
        f.delay_until = Some(NOW + 300);
        f.scripts_until = Some(NOW + 400);
    });
    assert_eq!(decide(&turn), Verdict::Later(NOW + 400));
}

#[test]
fn an_expired_waiter_gets_nil_whatever_else_holds_back() {
    let everything = with(|f| {
        f.wait_until = Some(NOW - 5);
        f.paused = true;
        f.delay_until = Some(NOW + 1000);
        f.over_memory = true;
        f.replicas_ok = false;
    });
    assert_eq!(decide(&everything), Verdict::Expired);
}

#[test]
fn a_replica_refuses_before_asking_anything_else() {
    let replica = with(|f| {
        f.master = false;
        f.paused = true;
        f.stalled_until = Some(NOW + 1000);
        f.replicas_ok = false;
    });
    assert_eq!(decide(&replica), Verdict::Refuse(DEMOTED.to_owned()));
}

#[test]
fn a_hold_back_comes_before_memory_and_replicas() {
    let held = with(|f| {
        f.delay_until = Some(NOW + 50);
        f.over_memory = true;
        f.replicas_ok = false;
    });
    assert_eq!(decide(&held), Verdict::Later(NOW + 50));
}
