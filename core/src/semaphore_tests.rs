use super::*;
use crate::error::LockError;

fn holder(owner: &str, permits: i64, token: i64) -> SemHolder {
    SemHolder {
        owner: owner.as_bytes().to_vec(),
        permits,
        token,
        deadline_ms: 1000,
    }
}

fn sem(total: i64, holders: &[(&str, i64)]) -> SemState {
    SemState {
        total,
        holders: holders
            .iter()
            .enumerate()
            .map(|(i, (o, p))| holder(o, *p, i as i64 + 1))
            .collect(),
    }
}

#[test]
fn the_hash_reads_back_with_its_total_and_holders() {
    let fields: Vec<(&[u8], &[u8])> = vec![
        (b"permits", b"5"),
        (b"@used", b"3"),
        (b"a", b"2"),
        (b"@h:a", b"7 1000"),
        (b"b", b"1"),
        (b"@h:b", b"8 2000"),
    ];
    let state = SemState::from_fields(&fields).unwrap();
    assert_eq!(state.total, 5);
    assert_eq!(state.used(), 3);
    assert_eq!(state.available(), 2);
    assert_eq!(state.holder(b"b").unwrap().token, 8);
    assert_eq!(state.next_deadline(), Some(1000));
    assert_eq!(state.lapsed(1500), vec![b"a".to_vec()]);
}

#[test]
fn other_hashes_are_not_semaphores() {
    let bad: [Vec<(&[u8], &[u8])>; 5] = [
        vec![(b"a", b"1")],
        vec![(b"permits", b"-1")],
        vec![(b"permits", b"2147483648")],
        vec![(b"permits", b"2"), (b"a", b"1")],
        vec![(b"permits", b"2"), (b"mode", b"write"), (b"@w", b"")],
    ];
    for fields in bad {
        assert_eq!(
            SemState::from_fields(&fields),
            Err(NotASemaphore),
            "{fields:?}"
        );
    }
}

#[test]
fn permits_are_shared_until_exhausted() {
    let state = sem(3, &[("a", 2)]);
    assert_eq!(acquire(&state, b"b", 1, false), SemStep::Fresh);
    assert_eq!(acquire(&state, b"b", 2, false), SemStep::Contended);
    assert_eq!(
        acquire(&sem(3, &[("a", 2), ("b", 1)]), b"c", 1, false),
        SemStep::Contended
    );
}

#[test]
fn a_holder_adds_permits_with_its_token() {
    let state = sem(5, &[("a", 2)]);
    let step = acquire(&state, b"a", 3, false);
    assert_eq!(
        step,
        SemStep::Reenter {
            permits: 5,
            token: 1
        }
    );
    assert_eq!(acquire(&state, b"a", 4, false), SemStep::Contended);
}

#[test]
fn nobody_passes_a_queued_wait() {
    let state = sem(5, &[]);
    assert_eq!(acquire(&state, b"b", 1, true), SemStep::Contended);
    assert_eq!(
        acquire(&sem(5, &[("a", 1)]), b"a", 1, true),
        SemStep::Contended
    );
}

#[test]
fn more_than_the_total_is_refused_at_once() {
    assert_eq!(
        acquire(&sem(2, &[]), b"a", 3, false),
        SemStep::TooMany { total: 2 }
    );
    assert_eq!(
        acquire(&SemState::default(), b"a", 1, true),
        SemStep::TooMany { total: 0 }
    );
}

#[test]
fn a_lowered_total_grants_nothing_until_enough_are_back() {
    let state = sem(1, &[("a", 3)]);
    assert_eq!(state.available(), -2);
    assert_eq!(acquire(&state, b"b", 1, false), SemStep::Contended);
}

#[test]
fn holders_are_capped() {
    let mut state = sem(MAX_PERMITS, &[]);
    for i in 0..MAX_HOLDERS {
        state.put(holder(&i.to_string(), 1, 1));
    }
    assert_eq!(acquire(&state, b"x", 1, false), SemStep::Contended);
    assert!(matches!(
        acquire(&state, b"7", 1, false),
        SemStep::Reenter { .. }
    ));
}

#[test]
fn release_gives_back_some_or_all() {
    let state = sem(5, &[("a", 3)]);
    assert_eq!(
        release(&state, b"a", Some(1), None),
        SemRelease::Remaining(2)
    );
    assert_eq!(release(&state, b"a", Some(3), None), SemRelease::Gone);
    assert_eq!(release(&state, b"a", None, Some(1)), SemRelease::Gone);
    assert_eq!(release(&state, b"a", Some(4), None), SemRelease::NotHeld);
    assert_eq!(release(&state, b"a", None, Some(2)), SemRelease::NotHeld);
    assert_eq!(release(&state, b"b", None, None), SemRelease::NotHeld);
}

#[test]
fn semaphore_errors_say_what_happened() {
    let text = |e: LockError| e.to_string();
    assert_eq!(
        text(LockError::NotASemaphore),
        "WRONGTYPE key is not a semaphore"
    );
    assert_eq!(
        text(LockError::TooManyPermits { asked: 3, total: 2 }),
        "ERR rlock: asks for 3 permits; the semaphore has 2"
    );
    assert_eq!(
        text(LockError::SemApplyFromClient),
        "ERR SEM.APPLY only replays a master's writes (replication stream or AOF)"
    );
    assert_eq!(
        text(LockError::BadSemApply),
        "ERR SEM.APPLY needs key owner permits token unix-ms: permits and token >= 0"
    );
}
