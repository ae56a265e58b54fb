use super::*;

fn holder(owner: &str, reads: i64, writes: i64, token: i64) -> RwHolder {
    RwHolder {
        owner: owner.as_bytes().to_vec(),
        reads,
        writes,
        token,
        deadline_ms: Some(1000 + token),
    }
}

fn state(holders: Vec<RwHolder>) -> RwState {
    RwState { holders }
}

#[test]
fn the_layout_reads_as_holders_with_tokens_and_leases() {
    let s = RwState::from_fields(&[
        ("mode", "write"),
        ("a", "2"),
        ("@h:a", "7 1500"),
        ("b:write", "1"),
        ("b", "3"),
        ("@h:b", "9 2500"),
    ])
    .unwrap();
    assert_eq!(s.holders.len(), 2);
    let a = s.holder(b"a").unwrap();
    assert_eq!(
        (a.reads, a.writes, a.token, a.deadline_ms),
        (2, 0, 7, Some(1500))
    );
    let b = s.holder(b"b").unwrap();
    assert_eq!(
        (b.reads, b.writes, b.token, b.deadline_ms),
        (3, 1, 9, Some(2500))
    );
    assert_eq!(s.writer().map(|h| &h.owner[..]), Some(&b"b"[..]));
    assert_eq!(s.next_deadline(), Some(1500));
}

#[test]
fn a_redisson_holder_has_token_zero_and_no_lease_of_its_own() {
    let s = RwState::from_fields(&[("mode", "read"), ("uuid:1", "1")]).unwrap();
    let h = s.holder(b"uuid:1").unwrap();
    assert_eq!((h.token, h.deadline_ms, h.native()), (0, None, false));
}

#[test]
fn shapes_that_are_not_read_write_locks_are_refused() {
    let bad: &[&[(&str, &str)]] = &[
        &[("a", "1")],
        &[("mode", "other"), ("a", "1")],
        &[("mode", "write"), ("a", "0")],
        &[("mode", "write"), ("a", "x")],
        &[("mode", "write"), ("@token", "1")],
        &[("mode", "write"), ("@h:a", "1 2")],
        &[("mode", "write"), ("a", "1"), ("@h:a", "x 2")],
        &[("mode", "write"), ("a", "1"), ("@h:a", "-1 2")],
        &[("mode", "write"), ("a", "1"), ("@h:a", "12")],
    ];
    for fields in bad {
        assert_eq!(RwState::from_fields(fields), Err(NotARwLock), "{fields:?}");
    }
}

#[test]
fn readers_share_and_a_writer_excludes() {
    let readers = state(vec![holder("a", 1, 0, 1)]);
    assert_eq!(acquire(&readers, b"b", RwMode::Read, false), RwStep::Fresh);
    assert_eq!(
        acquire(&readers, b"b", RwMode::Write, false),
        RwStep::Contended
    );
    let writer = state(vec![holder("w", 0, 1, 2)]);
    assert_eq!(
        acquire(&writer, b"b", RwMode::Read, false),
        RwStep::Contended
    );
    assert_eq!(
        acquire(&writer, b"b", RwMode::Write, false),
        RwStep::Contended
    );
    assert_eq!(
        acquire(&RwState::default(), b"b", RwMode::Write, false),
        RwStep::Fresh
    );
}

#[test]
fn a_queued_wait_stops_newcomers_but_not_reentry() {
    let readers = state(vec![holder("a", 1, 0, 1)]);
    assert_eq!(
        acquire(&readers, b"b", RwMode::Read, true),
        RwStep::Contended
    );
    assert_eq!(
        acquire(&readers, b"a", RwMode::Read, true),
        RwStep::Reenter {
            reads: 2,
            writes: 0,
            token: 1
        }
    );
}

#[test]
fn the_writer_may_read_and_a_reader_may_not_upgrade() {
    let writer = state(vec![holder("w", 0, 1, 2)]);
    assert_eq!(
        acquire(&writer, b"w", RwMode::Read, false),
        RwStep::Reenter {
            reads: 1,
            writes: 1,
            token: 2
        }
    );
    assert_eq!(
        acquire(&writer, b"w", RwMode::Write, false),
        RwStep::Reenter {
            reads: 0,
            writes: 2,
            token: 2
        }
    );
    let reader = state(vec![holder("r", 2, 0, 3)]);
    assert_eq!(
        acquire(&reader, b"r", RwMode::Write, false),
        RwStep::Upgrade
    );
}

#[test]
fn counts_cannot_overflow() {
    let s = state(vec![holder("a", i64::MAX, 0, 1)]);
    assert_eq!(
        acquire(&s, b"a", RwMode::Read, false),
        RwStep::CountOverflow
    );
}

#[test]
fn a_script_clients_holder_is_never_joined() {
    let s = RwState::from_fields(&[("mode", "read"), ("uuid:1", "1")]).unwrap();
    assert_eq!(acquire(&s, b"me", RwMode::Read, false), RwStep::Contended);
}

#[test]
fn readers_beyond_the_limit_wait() {
    let many = (0..MAX_HOLDERS as i64)
        .map(|i| holder(&format!("r{i}"), 1, 0, i + 1))
        .collect();
    let s = state(many);
    assert_eq!(acquire(&s, b"new", RwMode::Read, false), RwStep::Contended);
    assert!(matches!(
        acquire(&s, b"r1", RwMode::Read, false),
        RwStep::Reenter { .. }
    ));
}

#[test]
fn release_counts_down_by_mode_and_downgrades() {
    let s = state(vec![holder("w", 1, 2, 5)]);
    assert_eq!(
        release(&s, b"w", RwMode::Write, None),
        RwRelease::Remaining {
            reads: 1,
            writes: 1,
            left: 1
        }
    );
    let one_each = state(vec![holder("w", 1, 1, 5)]);
    assert_eq!(
        release(&one_each, b"w", RwMode::Write, None),
        RwRelease::Remaining {
            reads: 1,
            writes: 0,
            left: 0
        }
    );
    let last = state(vec![holder("r", 1, 0, 5)]);
    assert_eq!(release(&last, b"r", RwMode::Read, None), RwRelease::Gone);
    assert_eq!(
        release(&last, b"r", RwMode::Write, None),
        RwRelease::NotHeld
    );
    assert_eq!(release(&last, b"x", RwMode::Read, None), RwRelease::NotHeld);
    assert_eq!(
        release(&last, b"r", RwMode::Read, Some(4)),
        RwRelease::NotHeld
    );
    assert_eq!(release(&last, b"r", RwMode::Read, Some(5)), RwRelease::Gone);
}

#[test]
fn lapsed_holders_are_named() {
    let s = state(vec![holder("a", 1, 0, 1), holder("b", 1, 0, 500)]);
    assert_eq!(s.lapsed(1001), vec![b"a".to_vec()]);
    assert!(s.lapsed(1000).is_empty());
}

#[test]
fn meta_values_round_trip() {
    assert_eq!(
        parse_meta(&meta_value(12, 1_790_000_000_000)),
        Some((12, 1_790_000_000_000))
    );
    assert_eq!(parse_meta(b"1"), None);
}
