//! The read-write lock's rules as properties, on random histories of acquisitions and
//! releases by a few owners (with a queue of waits served in order, as the module serves
//! it): a write holding never shares the lock with another owner's holding; a reader never
//! gets in ahead of a queued writer; counts never go negative; every owner's holding keeps
//! its token until it ends; the hash written for the state reads back as the same state;
//! and whatever a glance at a few fields decides is what the whole hash decides.

use std::collections::VecDeque;

use proptest::prelude::*;
use rlock_core::rwglance::{self, Glance, Quick};
use rlock_core::rwlock::{
    self, meta_value, RwHolder, RwMode, RwRelease, RwState, RwStep, HOLDER_PREFIX, WRITE_SUFFIX,
};

#[derive(Debug, Clone)]
enum Step {
    /// An owner asks for a mode; it waits in the queue if it cannot have it now.
    Acquire(u8, bool),
    /// An owner releases one hold of a mode.
    Release(u8, bool),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (0u8..5, any::<bool>()).prop_map(|(o, w)| Step::Acquire(o, w)),
        2 => (0u8..5, any::<bool>()).prop_map(|(o, w)| Step::Release(o, w)),
    ]
}

fn mode(write: bool) -> RwMode {
    if write {
        RwMode::Write
    } else {
        RwMode::Read
    }
}

/// What the module does with a step that is granted: the holder after it.
fn apply(state: &mut RwState, owner: &[u8], step: RwStep, mode: RwMode, token: &mut i64) {
    match step {
        RwStep::Fresh => {
            *token += 1;
            state.put(RwHolder {
                owner: owner.to_vec(),
                reads: i64::from(mode == RwMode::Read),
                writes: i64::from(mode == RwMode::Write),
                token: *token,
                deadline_ms: Some(1),
            });
        }
        RwStep::Reenter {
            reads,
            writes,
            token,
        } => {
            let before = state.holder(owner).map(|h| h.token);
            assert_eq!(before, Some(token), "a reentry keeps the token");
            state.put(RwHolder {
                owner: owner.to_vec(),
                reads,
                writes,
                token,
                deadline_ms: Some(1),
            });
        }
        _ => {}
    }
}

/// The queue's head is served while it fits, as `rw_serve.rs` serves it.
fn serve(state: &mut RwState, queue: &mut VecDeque<(Vec<u8>, RwMode)>, token: &mut i64) {
    while let Some((owner, mode)) = queue.front().cloned() {
        match rwlock::acquire(state, &owner, mode, false) {
            RwStep::Contended => break,
            step => apply(state, &owner, step, mode, token),
        }
        queue.pop_front();
    }
}

/// The hash the module would hold for `state`.
fn fields(state: &RwState) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut f = vec![(b"mode".to_vec(), b"write".to_vec())];
    for h in &state.holders {
        if h.reads > 0 {
            f.push((h.owner.clone(), h.reads.to_string().into_bytes()));
        }
        if h.writes > 0 {
            let name = [&h.owner[..], WRITE_SUFFIX].concat();
            f.push((name, h.writes.to_string().into_bytes()));
        }
        let meta = meta_value(h.token, h.deadline_ms.unwrap_or(0));
        f.push(([HOLDER_PREFIX, &h.owner[..]].concat(), meta));
    }
    f
}

fn check(state: &RwState, queue: &VecDeque<(Vec<u8>, RwMode)>) -> Result<(), TestCaseError> {
    let writers = state.holders.iter().filter(|h| h.writes > 0).count();
    prop_assert!(writers <= 1, "two writers: {state:?}");
    if writers == 1 {
        prop_assert_eq!(
            state.holders.len(),
            1,
            "a writer shares the lock: {:?}",
            state
        );
    }
    for h in &state.holders {
        prop_assert!(
            h.reads >= 0 && h.writes >= 0 && h.reads + h.writes > 0,
            "{h:?}"
        );
    }
    if let Some((_, RwMode::Write)) = queue.front() {
        prop_assert!(
            !state.holders.is_empty(),
            "a queued writer waits on a free lock"
        );
    }
    glance_agrees(state)?;
    let read = RwState::from_fields(&fields(state)).expect("the written hash reads back");
    let mut a = read.holders.clone();
    let mut b = state.holders.clone();
    a.sort_by(|x, y| x.owner.cmp(&y.owner));
    b.sort_by(|x, y| x.owner.cmp(&y.owner));
    prop_assert_eq!(a, b);
    Ok(())
}

/// A glance at `state` for `owner`, as the module's few field lookups see it.
fn glance_of(state: &RwState, owner: &[u8]) -> Glance {
    let writer = state.writer();
    Glance {
        fields: if state.holders.is_empty() {
            0
        } else {
            fields(state).len() + 1
        },
        marked: !state.holders.is_empty(),
        writer: writer.map(|w| w.owner.clone()),
        writer_deadline: writer.and_then(|w| w.deadline_ms),
        mine: state.holder(owner).cloned(),
    }
}

fn glance_agrees(state: &RwState) -> Result<(), TestCaseError> {
    for o in 0..5u8 {
        let owner = [b'a' + o];
        let g = glance_of(state, &owner);
        for (write, queued) in [(false, false), (false, true), (true, false), (true, true)] {
            let m = mode(write);
            if let Quick::Decided(step) = rwglance::acquire(&g, &owner, m, queued, 0) {
                prop_assert_eq!(step, rwlock::acquire(state, &owner, m, queued));
            }
            if let Quick::Decided(step) = rwglance::release(&g, &owner, m, None, 0) {
                prop_assert_eq!(step, rwlock::release(state, &owner, m, None));
            }
        }
    }
    Ok(())
}

proptest! {
    #[test]
    fn writers_are_alone_and_queued_writers_are_not_overtaken(
        steps in proptest::collection::vec(step(), 0..120),
    ) {
        let mut state = RwState::default();
        let mut queue: VecDeque<(Vec<u8>, RwMode)> = VecDeque::new();
        let mut token = 0;
        for s in steps {
            match s {
                Step::Acquire(o, w) => {
                    let owner = vec![b'a' + o];
                    if queue.iter().any(|(q, _)| *q == owner) {
                        continue;
                    }
                    let m = mode(w);
                    let queued_writer = queue.iter().any(|(_, m)| *m == RwMode::Write);
                    match rwlock::acquire(&state, &owner, m, !queue.is_empty()) {
                        RwStep::Contended => queue.push_back((owner, m)),
                        RwStep::Fresh => {
                            prop_assert!(!(m == RwMode::Read && queued_writer), "a reader overtook a queued writer");
                            apply(&mut state, &[b'a' + o], RwStep::Fresh, m, &mut token);
                        }
                        step => apply(&mut state, &owner, step, m, &mut token),
                    }
                }
                Step::Release(o, w) => {
                    let owner = [b'a' + o];
                    match rwlock::release(&state, &owner, mode(w), None) {
                        RwRelease::Gone => state.remove(&owner),
                        RwRelease::Remaining { reads, writes, .. } => {
                            let mut h = state.holder(&owner).cloned().expect("a holder");
                            (h.reads, h.writes) = (reads, writes);
                            state.put(h);
                        }
                        RwRelease::NotHeld => {}
                    }
                    serve(&mut state, &mut queue, &mut token);
                }
            }
            check(&state, &queue)?;
        }
    }
}
