//! The checker on hand-made histories, including ones it must flag.

use super::*;
use crate::history::{Event, Mode, Section, Wait, Write};

fn write(stamp_us: u64, max_before: i64, same_holder: bool) -> Write {
    Write {
        stamp_us,
        accepted: true,
        max_before,
        same_holder,
    }
}

/// A believed, fenced section of `owner` with `token` from `begin` to `end`, whose writes
/// the resource accepted (the highest token before it: `max`, from another owner).
fn section(owner: &str, token: u64, begin: u64, end: u64, max: i64) -> Section {
    Section {
        worker: format!("w-{owner}"),
        key: "k".into(),
        owner: owner.into(),
        token,
        fenced: true,
        lease_ms: 2000,
        begin: write(begin, max, false),
        end: Some(write(end, token as i64, true)),
        believed: true,
        mode: Mode::Plain,
    }
}

fn judge_sections(sections: Vec<Section>) -> Counts {
    let events: Vec<Event> = sections.into_iter().map(Event::Section).collect();
    judge(&events)
}

#[test]
fn successive_holdings_with_growing_tokens_are_clean() {
    let counts = judge_sections(vec![
        section("a", 10, 100, 200, -1),
        section("b", 11, 210, 300, 10),
        section("a", 12, 310, 400, 11),
    ]);
    assert_eq!(counts.violations(), 0, "{counts:?}");
}

#[test]
fn two_believed_holders_at_once_are_an_overlap() {
    let counts = judge_sections(vec![
        section("a", 10, 100, 200, -1),
        section("b", 11, 150, 300, 10),
    ]);
    assert_eq!(counts.overlaps, 1);
}

#[test]
fn a_holder_that_knew_it_had_lost_is_no_overlap() {
    let mut lost = section("a", 10, 100, 200, -1);
    lost.believed = false;
    let counts = judge_sections(vec![lost, section("b", 11, 150, 300, 10)]);
    assert_eq!(counts.violations(), 0, "{counts:?}");
}

#[test]
fn reentrant_sections_of_one_holding_are_no_overlap() {
    let counts = judge_sections(vec![
        section("a", 10, 100, 300, -1),
        section("a", 10, 150, 200, 10),
    ]);
    assert_eq!(counts.overlaps, 0);
    // ... but one owner under two tokens is two holdings.
    let counts = judge_sections(vec![
        section("a", 10, 100, 300, -1),
        section("a", 11, 150, 200, 10),
    ]);
    assert_eq!(counts.overlaps, 1);
}

#[test]
fn a_lower_token_accepted_by_the_resource_is_a_stale_write() {
    let mut stale = section("a", 9, 310, 400, 11);
    stale.believed = false;
    stale.end = Some(write(400, 11, false));
    let counts = judge_sections(vec![section("b", 11, 100, 300, 10), stale]);
    assert_eq!(counts.stale_accepted, 2);
    let mut refused = section("a", 9, 310, 400, 11);
    refused.begin.accepted = false;
    refused.end = None;
    refused.believed = false;
    assert_eq!(judge_sections(vec![refused]).stale_accepted, 0);
}

#[test]
fn one_token_given_to_two_owners_is_repeated_and_stale() {
    let first = section("a", 20, 100, 200, -1);
    let second = section("b", 20, 300, 400, 20);
    let counts = judge_sections(vec![first, second]);
    assert_eq!(counts.repeated_tokens, 1);
    assert_eq!(counts.stale_accepted, 1, "b's begin: 20 was a's");
}

#[test]
fn a_token_below_one_that_already_ended_goes_backwards() {
    let mut late = section("b", 15, 300, 400, 20);
    late.begin.accepted = false; // the fence refused it, but b believed it held
    let counts = judge_sections(vec![section("a", 20, 100, 200, -1), late]);
    assert_eq!(counts.backwards_tokens, 1);
    assert_eq!(counts.overlaps, 0);
}

#[test]
fn unfenced_sections_count_for_overlaps_only() {
    let mut script = section("r", 0, 150, 250, 10);
    script.fenced = false;
    script.begin.accepted = true;
    let counts = judge_sections(vec![section("a", 10, 100, 200, -1), script]);
    assert_eq!(counts.overlaps, 1);
    assert_eq!(
        counts.stale_accepted + counts.backwards_tokens + counts.repeated_tokens,
        0
    );
}

#[test]
fn waits_need_exactly_one_reply() {
    let wait = |replies, conn_error| {
        Event::Wait(Wait {
            worker: "r".into(),
            key: "k".into(),
            replies,
            conn_error,
        })
    };
    let events = vec![
        wait(1, false),
        wait(0, true),
        wait(0, false),
        wait(2, false),
    ];
    let counts = judge(&events);
    assert_eq!((counts.lost_replies, counts.double_replies), (1, 1));
}

#[test]
fn unavailability_is_measured_from_each_fault_to_the_next_grant() {
    let grant = |t_us| Event::Acquire {
        t_us,
        ok: true,
        worker: "w".into(),
    };
    let fault = |t_us| Event::Fault {
        t_us,
        what: "kill".into(),
    };
    let events = vec![
        fault(0),
        grant(5_000),
        fault(10_000),
        grant(40_000),
        fault(50_000),
    ];
    // gaps: 5 ms, 30 ms, and the last fault had none until the end (at 60 ms): 10 ms.
    assert_eq!(unavailability(&events, 60_000), (10, 30));
    assert_eq!(judge(&events).acquisitions, 2);
    assert_eq!(judge(&events).faults, 3);
}
