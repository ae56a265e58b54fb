//! The semaphore's rules as properties, on random histories of acquisitions, releases,
//! lapsed leases and changes of the total by a few owners (with a queue of waits served in
//! order, as the module serves it): the permits held never exceed the total counting
//! every holder (unless the total was lowered under them, and then nothing more is
//! granted); nobody is granted past the first queued wait; the hash written for the state
//! reads back as the same state; and whatever a glance at a few fields decides is what the
//! whole hash decides.

use std::collections::VecDeque;

use proptest::prelude::*;
use rlock_core::semaphore::{
    self, meta_value, SemHolder, SemRelease, SemState, SemStep, HOLDER_PREFIX, NEXT_FIELD,
    TOTAL_FIELD, USED_FIELD,
};
use rlock_core::semglance::{self, Quick, SemGlance};

#[derive(Debug, Clone)]
enum Step {
    /// An owner asks for permits; it waits in the queue if it cannot have them now.
    Acquire(u8, i64),
    /// An owner gives back some permits (or all).
    Release(u8, Option<i64>),
    /// An owner's lease ends.
    Lapse(u8),
    /// The operator sets the total.
    Total(i64),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0u8..6, 1i64..5).prop_map(|(o, n)| Step::Acquire(o, n)),
        3 => (0u8..6, proptest::option::of(1i64..4)).prop_map(|(o, n)| Step::Release(o, n)),
        1 => (0u8..6).prop_map(Step::Lapse),
        1 => (0i64..8).prop_map(Step::Total),
    ]
}

/// What the module does with a granted step: the holder after it.
fn grant(state: &mut SemState, owner: &[u8], step: SemStep, permits: i64, token: &mut i64) {
    let holder = match step {
        SemStep::Fresh => {
            *token += 1;
            SemHolder {
                owner: owner.to_vec(),
                permits,
                token: *token,
                deadline_ms: 100,
            }
        }
        SemStep::Reenter { permits, token } => {
            let before = state.holder(owner).map(|h| h.token);
            assert_eq!(before, Some(token), "adding permits keeps the token");
            SemHolder {
                owner: owner.to_vec(),
                permits,
                token,
                deadline_ms: 100,
            }
        }
        _ => return,
    };
    state.put(holder);
}

/// Serves the queue from its head as long as its first wait can be granted.
fn serve(state: &mut SemState, queue: &mut VecDeque<(Vec<u8>, i64)>, token: &mut i64) {
    while let Some((owner, permits)) = queue.front().cloned() {
        match semaphore::acquire(state, &owner, permits, false) {
            SemStep::Contended => break,
            step => grant(state, &owner, step, permits, token),
        }
        queue.pop_front();
    }
}

/// The permits held, counted here over every holder.
fn held(state: &SemState) -> i64 {
    let mut sum = 0;
    for h in &state.holders {
        sum += h.permits;
    }
    sum
}

fn fields(state: &SemState) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = vec![
        (TOTAL_FIELD.to_vec(), state.total.to_string().into_bytes()),
        (USED_FIELD.to_vec(), state.used().to_string().into_bytes()),
    ];
    if let Some(next) = state.next_deadline() {
        out.push((NEXT_FIELD.to_vec(), next.to_string().into_bytes()));
    }
    for h in &state.holders {
        out.push((h.owner.clone(), h.permits.to_string().into_bytes()));
        let meta = [HOLDER_PREFIX, &h.owner].concat();
        out.push((meta, meta_value(h.token, h.deadline_ms)));
    }
    out
}

fn glance(state: &SemState, owner: &[u8]) -> SemGlance {
    SemGlance {
        fields: 2 + 2 * state.holders.len() + usize::from(!state.holders.is_empty()),
        total: Some(state.total),
        used: state.used(),
        next: state.next_deadline(),
        mine: state.holder(owner).cloned(),
    }
}

/// The glance decides as the whole hash does, when it decides.
fn glance_agrees(state: &SemState, owner: &[u8], permits: i64, queued: bool) {
    let whole = semaphore::acquire(state, owner, permits, queued);
    if let Quick::Decided(step) =
        semglance::acquire(&glance(state, owner), owner, permits, queued, 0)
    {
        assert_eq!(step, whole, "the glance and the hash disagree");
    }
}

fn run(steps: Vec<Step>) {
    let mut state = SemState {
        total: 4,
        holders: Vec::new(),
    };
    let mut queue: VecDeque<(Vec<u8>, i64)> = VecDeque::new();
    let mut token = 0;
    for step in steps {
        let used_before = held(&state);
        match step {
            Step::Acquire(o, n) => {
                let owner = [b'o', o];
                if queue.iter().any(|(q, _)| q[..] == owner[..]) {
                    continue;
                }
                glance_agrees(&state, &owner, n, !queue.is_empty());
                let head = queue.front().cloned();
                match semaphore::acquire(&state, &owner, n, !queue.is_empty()) {
                    SemStep::Contended => queue.push_back((owner.to_vec(), n)),
                    SemStep::TooMany { total } => assert!(n > total),
                    granted => {
                        assert!(head.is_none(), "granted past the head {head:?}");
                        grant(&mut state, &owner, granted, n, &mut token);
                    }
                }
            }
            Step::Release(o, n) => {
                let owner = [b'o', o];
                match semaphore::release(&state, &owner, n, None) {
                    SemRelease::Gone => state.remove(&owner),
                    SemRelease::Remaining(left) => {
                        let mut h = state.holder(&owner).cloned().unwrap();
                        h.permits = left;
                        state.put(h);
                    }
                    SemRelease::NotHeld => {}
                }
            }
            Step::Lapse(o) => state.remove(&[b'o', o]),
            Step::Total(n) => {
                state.total = n;
                // Waits that could never be granted are sent away.
                queue.retain(|(_, p)| *p <= n);
            }
        }
        serve(&mut state, &mut queue, &mut token);
        let used = held(&state);
        assert!(
            used <= state.total || used <= used_before,
            "{used} permits held of {}",
            state.total
        );
        let back = SemState::from_fields(&fields(&state)).unwrap();
        assert_eq!(back, state, "the hash reads back");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn histories_keep_the_rules(steps in proptest::collection::vec(step(), 1..60)) {
        run(steps);
    }
}
