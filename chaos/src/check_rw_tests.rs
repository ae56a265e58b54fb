//! The read-write rule on hand-made histories, including ones it must flag.

use crate::check::{judge, Counts};
use crate::history::{Event, Mode, Section, Write};

fn write(stamp_us: u64, max_before: i64, same_holder: bool) -> Write {
    Write {
        stamp_us,
        accepted: true,
        max_before,
        same_holder,
    }
}

/// A believed section of `owner` holding `mode` with `token` from `begin` to `end`.
fn section(owner: &str, mode: Mode, token: u64, (begin, end): (u64, u64)) -> Section {
    Section {
        worker: format!("rw-{owner}"),
        key: "rw".into(),
        owner: owner.into(),
        token,
        fenced: true,
        lease_ms: 2000,
        begin: write(begin, -1, false),
        end: Some(write(end, -1, false)),
        believed: true,
        mode,
    }
}

fn read(owner: &str, token: u64, span: (u64, u64)) -> Section {
    section(owner, Mode::Read, token, span)
}

fn written(owner: &str, token: u64, span: (u64, u64)) -> Section {
    section(owner, Mode::Write, token, span)
}

fn judge_sections(sections: Vec<Section>) -> Counts {
    let events: Vec<Event> = sections.into_iter().map(Event::Section).collect();
    judge(&events)
}

#[test]
fn read_holdings_of_a_key_may_overlap() {
    let counts = judge_sections(vec![
        read("a", 10, (100, 300)),
        read("b", 11, (150, 250)),
        read("c", 12, (200, 400)),
    ]);
    assert_eq!(counts.violations(), 0, "{counts:?}");
}

#[test]
fn a_write_holding_may_overlap_no_other_holding() {
    let counts = judge_sections(vec![
        read("a", 10, (100, 300)),
        written("b", 11, (250, 350)),
    ]);
    assert_eq!((counts.overlaps, counts.rw_overlaps), (1, 1), "{counts:?}");
    let counts = judge_sections(vec![
        written("a", 10, (100, 300)),
        written("b", 11, (250, 350)),
    ]);
    assert_eq!((counts.overlaps, counts.rw_overlaps), (1, 1), "{counts:?}");
    assert_eq!(counts.violations(), 1, "rw_overlaps are part of overlaps");
}

#[test]
fn a_downgraded_holding_keeps_its_token_and_lets_readers_in() {
    let counts = judge_sections(vec![
        written("a", 10, (100, 200)),
        read("a", 10, (210, 400)),
        read("b", 11, (250, 300)),
    ]);
    assert_eq!(counts.violations(), 0, "{counts:?}");
    // A reader while the write holds were still there is an overlap.
    let counts = judge_sections(vec![
        written("a", 10, (100, 200)),
        read("a", 10, (210, 400)),
        read("b", 11, (150, 300)),
    ]);
    assert_eq!(counts.overlaps, 1, "{counts:?}");
}

#[test]
fn a_read_may_begin_after_a_later_read_ended() {
    // b was granted after a, and its section ran first: readers share the lock.
    let counts = judge_sections(vec![read("b", 11, (100, 150)), read("a", 10, (200, 300))]);
    assert_eq!(counts.backwards_tokens, 0, "{counts:?}");
}

#[test]
fn a_token_below_an_ended_write_or_a_read_before_a_write_goes_backwards() {
    let counts = judge_sections(vec![
        written("b", 11, (100, 150)),
        read("a", 10, (200, 300)),
    ]);
    assert_eq!(counts.backwards_tokens, 1, "{counts:?}");
    let counts = judge_sections(vec![
        read("b", 11, (100, 150)),
        written("a", 10, (200, 300)),
    ]);
    assert_eq!(counts.backwards_tokens, 1, "{counts:?}");
    // A write goes backwards from the highest token that ended, read or write.
    let counts = judge_sections(vec![
        written("a", 10, (100, 120)),
        read("c", 12, (130, 150)),
        written("b", 11, (200, 300)),
    ]);
    assert_eq!(counts.backwards_tokens, 1, "{counts:?}");
}

#[test]
fn read_write_acquisitions_and_wrong_replies_are_counted() {
    let acquire = |worker: &str| Event::Acquire {
        t_us: 1,
        ok: true,
        worker: worker.into(),
    };
    let wrong = Event::Wrong {
        worker: "rw0".into(),
        key: "rw".into(),
        what: "a reader's fenced write was accepted".into(),
    };
    let counts = judge(&[acquire("rw0"), acquire("rw1"), acquire("raw0"), wrong]);
    assert_eq!(counts.acquisitions, 3);
    assert_eq!(counts.rw_acquisitions, 2);
    assert_eq!(counts.rw_wrong_replies, 1);
    assert_eq!(counts.violations(), 1);
}
