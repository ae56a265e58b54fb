//! The semaphore and latch rules on hand-made histories, including ones they must flag.

use super::{counts as judge, describe, SemCounts as Counts, SEM_TOTAL};
use crate::history::Event;
use crate::history_sem::{Latch, SemSpan};

/// `owner` believed `permits` with `token` over `[from, to)`, its holding asked at `sent`.
fn span(owner: &str, token: u64, permits: u64, (from, to): (u64, u64), sent: u64) -> Event {
    Event::Sem(SemSpan {
        worker: format!("sem-{owner}"),
        key: "sem:{a}".into(),
        owner: owner.into(),
        token,
        permits,
        from_us: from,
        to_us: to,
        sent_us: sent,
    })
}

fn set(count: u64) -> Event {
    Event::Latch(Latch::Set {
        key: "latch:x".into(),
        count,
    })
}

fn down(sent_us: u64) -> Event {
    let key = "latch:x".into();
    Event::Latch(Latch::Down { key, sent_us })
}

fn wait((sent_us, got_us): (u64, u64), wait_ms: u64, released: bool) -> Event {
    Event::Latch(Latch::Wait {
        worker: "latch0w0".into(),
        key: "latch:x".into(),
        sent_us,
        got_us,
        wait_ms,
        released,
    })
}

#[test]
fn holdings_within_the_total_pass() {
    assert_eq!(SEM_TOTAL, 3);
    let events = [
        span("a", 10, 2, (100, 500), 90),
        span("b", 11, 1, (200, 900), 150),
        // `a` gives its permits back at 500; `c` takes 2 after.
        span("c", 12, 2, (500, 800), 300),
        // `d` adds a permit while nobody else holds any: a span of 3, the same token.
        span("d", 13, 1, (1000, 1100), 950),
        span("d", 13, 3, (1100, 1200), 950),
    ];
    let c = judge(&events);
    assert_eq!(c, Counts::default(), "{c:?}");
}

#[test]
fn more_believed_than_the_total_is_an_overlap() {
    let events = [
        span("a", 10, 2, (100, 500), 90),
        span("b", 11, 1, (200, 900), 150),
        // Believed from 400 while `a` still believes its 2: 4 of 3 permits.
        span("c", 12, 1, (400, 800), 300),
    ];
    let c = judge(&events);
    assert_eq!(c.overlaps, 1, "{c:?}");
    let lines = describe(&events);
    assert!(lines[0].starts_with("semaphore over its permits on sem:{a} at 400: "));
    assert!(lines[0].contains("a token=10 permits=2"), "{lines:?}");
}

#[test]
fn a_token_given_twice_or_backwards_is_flagged() {
    let twice = [
        span("a", 10, 1, (100, 200), 90),
        span("b", 10, 1, (300, 400), 250),
    ];
    let c = judge(&twice);
    assert_eq!(c.repeated_tokens, 1, "{c:?}");
    // `a` (token 20) ended at 200; `b` asked at 250 and got 15.
    let back = [
        span("a", 20, 1, (100, 200), 90),
        span("b", 15, 1, (300, 400), 250),
    ];
    let c = judge(&back);
    assert_eq!(c.backwards_tokens, 1, "{c:?}");
    assert!(describe(&back)[0].starts_with("token backwards on sem:{a}: a token=20"));
    // Asked before `a` ended: its grant may have come first.
    let racing = [
        span("a", 20, 1, (100, 200), 90),
        span("b", 15, 1, (300, 400), 150),
    ];
    assert_eq!(judge(&racing), Counts::default());
}

#[test]
fn a_latch_wait_released_at_zero_or_timed_out_in_time_passes() {
    let events = [
        set(3),
        down(100),
        wait((50, 400), 1000, true),
        down(300),
        down(350),
        // Timed out after its whole WAIT of 1 ms, before the last count-down.
        wait((60, 1060), 1, false),
    ];
    let c = judge(&events);
    assert_eq!((c.latch_waits, c.latch_early), (2, 0), "{c:?}");
}

#[test]
fn a_latch_wait_released_before_zero_or_timed_out_early_is_flagged() {
    let early = [
        set(3),
        down(100),
        down(300),
        wait((50, 320), 1000, true),
        down(350),
    ];
    let c = judge(&early);
    assert_eq!((c.latch_waits, c.latch_early), (1, 1), "{c:?}");
    let line = &super::early(&early)[0];
    assert!(
        line.contains("released on latch:x at 320; zero at the earliest at 350"),
        "{line}"
    );
    // Only two of three count-downs were ever sent.
    let never = [set(3), down(100), down(300), wait((50, 320), 1000, true)];
    assert_eq!(judge(&never).latch_early, 1);
    // A WAIT of 5 ms answered 0 after 2 ms.
    let short = [set(3), wait((50, 2050), 5, false)];
    let c = judge(&short);
    assert_eq!(c.latch_early, 1, "{c:?}");
    assert!(super::early(&short)[0].contains("timed out on latch:x after 2000 us"));
}
