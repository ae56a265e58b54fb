//! The properties every reachable state must have (`always`), and the states the check
//! must reach for its bounds to mean something (`sometimes`).

use rlock_core::kind::{Family, Kind};
use rlock_core::lock::Holding;
use rlock_core::rwlock::{RwState, WRITER_FIELD};
use rlock_core::semaphore::{SemState, USED_FIELD};
use stateright::Property;

use super::state::{Key, Reply, State};
use super::Locks;

pub const ONE_WRITER: &str = "at most one writer, or readers only";
pub const ONE_HOLDER: &str = "a plain lock has at most one holder";
pub const PERMITS: &str = "permits held never over the total";
pub const ONE_FAMILY: &str = "one family holds the key at a time";
pub const LATCH_AT_ZERO: &str = "a latch wait is let go only at zero or with the key gone";
pub const OWN_FAMILY: &str = "every wait ends once, by an event of its own family";
pub const OWN_TOKEN: &str = "a lock, rw or semaphore wait is answered only with its own token";
pub const TOKENS_GROW: &str = "fencing tokens given out only grow";
pub const LAYOUT: &str = "the key reads back in the layout the module wrote";

fn holders(st: &State, family: Family) -> impl Iterator<Item = &super::state::Held> {
    st.held.iter().filter(move |h| h.family == family)
}

fn one_writer(_: &Locks, st: &State) -> bool {
    let mut rw = holders(st, Family::Rw);
    match holders(st, Family::Rw).find(|h| h.counts.1 > 0) {
        Some(writer) => rw.all(|h| h.owner == writer.owner),
        None => true,
    }
}

fn one_holder(_: &Locks, st: &State) -> bool {
    holders(st, Family::Lock).count() <= 1
}

fn permits(_: &Locks, st: &State) -> bool {
    holders(st, Family::Sem).map(|h| h.counts.0).sum::<i64>() <= st.total.unwrap_or(0)
}

fn one_family(_: &Locks, st: &State) -> bool {
    st.held.iter().all(|h| h.family == st.held[0].family)
}

fn latch_at_zero(_: &Locks, st: &State) -> bool {
    !st.flaws.latch_early
}

fn own_family(_: &Locks, st: &State) -> bool {
    let queued = |w: usize| st.queue.iter().any(|q| q.wait == w);
    let ended_once = (0..st.waits.len()).all(|w| queued(w) != (st.waits[w].ends == 1));
    ended_once && !st.flaws.double_end && !st.flaws.foreign_end
}

fn own_token(_: &Locks, st: &State) -> bool {
    !st.flaws.not_its_token
}

fn tokens_grow(_: &Locks, st: &State) -> bool {
    !st.flaws.token_back
}

fn layout(_: &Locks, st: &State) -> bool {
    let Key::Hash(f) = &st.store.key else {
        return true;
    };
    let fields: Vec<_> = f.iter().collect();
    if f.contains_key(WRITER_FIELD) {
        RwState::from_fields(&fields).is_ok()
    } else if f.contains_key(USED_FIELD) {
        SemState::from_fields(&fields).is_ok()
    } else {
        Holding::from_fields(&fields).is_ok()
    }
}

fn granted(st: &State, family: Family) -> bool {
    st.waits
        .iter()
        .any(|w| w.kind.family() == family && matches!(w.reply, Some(Reply::Granted(_))))
}

pub fn all() -> Vec<Property<Locks>> {
    vec![
        Property::always(ONE_WRITER, one_writer),
        Property::always(ONE_HOLDER, one_holder),
        Property::always(PERMITS, permits),
        Property::always(ONE_FAMILY, one_family),
        Property::always(LATCH_AT_ZERO, latch_at_zero),
        Property::always(OWN_FAMILY, own_family),
        Property::always(OWN_TOKEN, own_token),
        Property::always(TOKENS_GROW, tokens_grow),
        Property::always(LAYOUT, layout),
        Property::sometimes("a lock wait is handed the lock", |_, st: &State| {
            granted(st, Family::Lock)
        }),
        Property::sometimes("a read or write wait is granted", |_, st: &State| {
            granted(st, Family::Rw)
        }),
        Property::sometimes("a semaphore wait is granted", |_, st: &State| {
            granted(st, Family::Sem)
        }),
        Property::sometimes("a latch wait is let go", |_, st: &State| {
            granted(st, Family::Latch)
        }),
        Property::sometimes(
            "a latch wait and another family's wait queued",
            |_, st: &State| {
                let latch = st.queue.iter().any(|q| q.kind == Kind::Latch);
                latch && st.queue.iter().any(|q| q.kind != Kind::Latch)
            },
        ),
    ]
}
