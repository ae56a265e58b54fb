//! An exhaustive model check of the core: every kind of wait on one key (a plain lock's,
//! a read-write lock's reads and writes, a semaphore's permits, a latch's), three clients,
//! every interleaving of their commands and of what else happens to the key, up to a
//! small depth.
//!
//! Why a model checker rather than random `proptest` sequences: the bugs of a key shared
//! by several families of waits take a precise interleaving of five or six steps (a lock
//! waiter queued, the key replaced by a latch, a latch waiter, the count down); a random
//! sequence finds such a path rarely and cannot say it found none, where a breadth-first
//! search over every path up to the bound finds it every time, finds the shortest one,
//! and prints it as the counterexample. Within its bounds a passing check is a proof; the
//! two tests at the end show it catching the unsafe settings it must catch.
//!
//! The decisions are the core's own: the commands' parsers on their argument vectors, the
//! state machines (`lock.rs`, `rwlock.rs`, `semaphore.rs`), the glances, the registry
//! with its lines per family, the token counter. What the module does around them is
//! mirrored, each part citing its module file: the store's field writes
//! (`model/store.rs`), the commands (`model/commands.rs`, `model/events.rs`), the
//! serving of each family after an event (`model/serve.rs`).

#[path = "model/commands.rs"]
mod commands;
#[path = "model/events.rs"]
mod events;
#[path = "model/lines.rs"]
mod lines;
#[path = "model/props.rs"]
mod props;
#[path = "model/release.rs"]
mod release;
#[path = "model/serve.rs"]
mod serve;
#[path = "model/state.rs"]
mod state;
#[path = "model/step.rs"]
mod step;
#[path = "model/store.rs"]
mod store;

use std::time::Instant;

use rlock_core::kind::Family;
use stateright::{Checker, HasDiscoveries, Model, Property};

use commands::What;
use state::{Key, State, CLIENTS};
use step::{LatchRelease, OwnerCheck, Settings, Step};

/// One step: a client's command, or something else that happens to the key.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    Acquire(usize, What),
    Release(usize, What),
    Renew(usize, Family),
    Cancel(usize),
    Close(usize),
    /// Time passes to the next lease end.
    Tick,
    Del,
    /// `SET k 1`: a latch's count, over whatever the key was.
    SetCount,
    /// `SET k x`: a string that is no latch.
    SetOther,
    Countdown,
    SemPermits,
}

/// The model: one key, three clients, the switches of `Settings`.
pub struct Locks(Settings);

impl Model for Locks {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        self.0
            .owners
            .iter()
            .map(|owners| State::new(*owners))
            .collect()
    }

    fn actions(&self, st: &State, actions: &mut Vec<Action>) {
        for c in 0..CLIENTS {
            if st.pending(c).is_some() {
                // A blocked client waits: its wait is cancelled (or runs out), or it closes.
                actions.extend([Action::Cancel(c), Action::Close(c)]);
                continue;
            }
            actions.extend(What::ALL.map(|w| Action::Acquire(c, w)));
            let owner = &st.owners[c];
            for family in [Family::Lock, Family::Rw, Family::Sem] {
                let Some(h) = st.holding(owner, family) else {
                    continue;
                };
                let releases: &[What] = match family {
                    Family::Lock => &[What::Lock],
                    Family::Rw if h.counts.0 > 0 && h.counts.1 > 0 => &[What::Read, What::Write],
                    Family::Rw if h.counts.0 > 0 => &[What::Read],
                    Family::Rw => &[What::Write],
                    _ => &[What::Permits(1)],
                };
                actions.extend(releases.iter().map(|w| Action::Release(c, *w)));
                actions.push(Action::Renew(c, family));
            }
        }
        if events::next_deadline(st).is_some() {
            actions.push(Action::Tick);
        }
        if st.store.key != Key::Gone {
            actions.push(Action::Del);
        }
        actions.extend([Action::SetCount, Action::SetOther, Action::SemPermits]);
        if matches!(st.store.key, Key::Str(_)) {
            actions.push(Action::Countdown);
        }
    }

    fn next_state(&self, st: &State, action: Action) -> Option<State> {
        let mut step = Step::new(&self.0, st);
        match action {
            Action::Acquire(c, what) => step.acquire(c, what),
            Action::Release(c, what) => step.release(c, what),
            Action::Renew(c, family) => step.renew(c, family),
            Action::Cancel(c) => step.cancel(c),
            Action::Close(c) => step.close(c),
            Action::Tick => step.tick(),
            Action::Del => step.del(),
            Action::SetCount => step.set(b"1"),
            Action::SetOther => step.set(b"x"),
            Action::Countdown => step.countdown(),
            Action::SemPermits => step.sem_permits(),
        }
        step.serve();
        Some(step.finish())
    }

    fn properties(&self) -> Vec<Property<Self>> {
        props::all()
    }
}

/// Steps after the initial state.
const DEPTH: usize = 6;

const PLAIN_OWNERS: [[&str; CLIENTS]; 2] = [["a", "b", "c"], ["a", "a", "b"]];
/// Owners named like a layout's own field: the semaphore's total, the read-write lock's
/// mode (the other fixed fields, `@token`, `@w`, `@used`, `@next`, `@h:`, begin with `@`,
/// which every parser refuses; `<owner>:write` is refused by the read-write parsers).
const FIELD_OWNERS: [[&str; CLIENTS]; 2] = [["a", "b", "permits"], ["a", "b", "mode"]];

fn settings(
    owners: &[[&'static str; CLIENTS]],
    latch: LatchRelease,
    owner_check: OwnerCheck,
) -> Settings {
    Settings {
        owners: owners.to_vec(),
        latch,
        owner_check,
    }
}

/// Runs the check breadth first on two threads, `depth` steps deep, and reports its size
/// and time.
fn check(settings: Settings, depth: usize, finish: HasDiscoveries) -> impl Checker<Locks> {
    let started = Instant::now();
    let checker = Locks(settings)
        .checker()
        .threads(2)
        .target_max_depth(depth + 1)
        .finish_when(finish)
        .spawn_bfs()
        .join();
    eprintln!(
        "{} states ({} unique), depth {}, in {:.1?}",
        checker.state_count(),
        checker.unique_state_count(),
        checker.max_depth(),
        started.elapsed()
    );
    checker
}

/// A shortest counterexample of `property` within `DEPTH` steps, printed: its steps, then
/// the state it ends in. The check runs one step deeper at a time (a later discovery of a
/// property replaces an earlier one in stateright's table, so one run does not tell the
/// shortest).
fn counterexample(settings: Settings, property: &'static str) -> String {
    let found = (1..=DEPTH).find_map(|depth| {
        let only = [property].into_iter().collect();
        check(settings.clone(), depth, HasDiscoveries::AnyOf(only)).discovery(property)
    });
    let path = found.unwrap_or_else(|| panic!("no counterexample of {property:?}"));
    let actions: Vec<String> = path
        .clone()
        .into_actions()
        .iter()
        .map(|a| format!("{a:?}"))
        .collect();
    let end = path.last_state();
    let text = format!(
        "{property}:\n  owners {:?}\n  steps {}\n  key {}\n  waits {:?}\n  held {:?}",
        end.owners.iter().map(|o| text(o)).collect::<Vec<_>>(),
        actions.join(", "),
        key_text(&end.store.key),
        end.waits
            .iter()
            .map(|w| (w.kind, &w.reply))
            .collect::<Vec<_>>(),
        end.held
            .iter()
            .map(|h| (text(&h.owner), h.family, h.counts, h.token))
            .collect::<Vec<_>>()
    );
    eprintln!("{text}");
    text
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn key_text(key: &Key) -> String {
    match key {
        Key::Gone => "gone".into(),
        Key::Str(s) => format!("string {:?}", text(s)),
        Key::Hash(fields) => {
            let pairs: Vec<String> = fields
                .iter()
                .map(|(f, v)| format!("{} {}", text(f), text(v)))
                .collect();
            format!("hash {{{}}}", pairs.join(", "))
        }
    }
}

#[test]
fn every_family_of_waits_on_one_key_keeps_its_rules() {
    let settings = settings(&PLAIN_OWNERS, LatchRelease::Lane, OwnerCheck::Parser);
    check(settings, DEPTH, HasDiscoveries::All).assert_properties();
}

/// The whole check with owners named like the layouts' fields too (`permits`, `mode`), the
/// parsers deciding: they refuse them, so they do no harm.
#[test]
fn owners_named_like_a_layout_field() {
    let owners = [PLAIN_OWNERS, FIELD_OWNERS].concat();
    let settings = settings(&owners, LatchRelease::Lane, OwnerCheck::Parser);
    check(settings, DEPTH, HasDiscoveries::All).assert_properties();
}

#[test]
fn the_checker_catches_a_latch_that_releases_the_whole_queue() {
    let settings = settings(&PLAIN_OWNERS, LatchRelease::WholeQueue, OwnerCheck::Parser);
    let text = counterexample(settings, props::OWN_FAMILY);
    assert!(text.contains("Granted(1)"), "{text}");
}

#[test]
fn the_checker_catches_owners_named_like_a_layout_field() {
    let settings = settings(&FIELD_OWNERS, LatchRelease::Lane, OwnerCheck::Unchecked);
    counterexample(settings.clone(), props::PERMITS);
    counterexample(settings, props::LAYOUT);
}
