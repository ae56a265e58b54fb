//! Hand-made histories of the watchers, including ones the checker must flag.

use super::*;

const MS: u64 = 1000;

fn belief(t_ms: u64, owner: &str, begin: bool) -> Event {
    Event::Belief {
        t_us: t_ms * MS,
        key: "k".into(),
        owner: owner.into(),
        begin,
    }
}

/// Samples of key `k` every 100 ms over [from, to) ms, each seeing `owners`.
fn samples(from_ms: u64, to_ms: u64, owners: &[&str]) -> Vec<Event> {
    (from_ms / 100..to_ms / 100)
        .map(|i| Event::Sample {
            sent_us: i * 100 * MS,
            got_us: i * 100 * MS + 2 * MS,
            key: "k".into(),
            owners: owners.iter().map(|o| o.to_string()).collect(),
        })
        .collect()
}

fn window(server: &str, from_ms: u64, to_ms: u64, silent: bool) -> Event {
    Event::Window(Window {
        server: server.into(),
        from_us: from_ms * MS,
        to_us: to_ms * MS,
        silent,
    })
}

fn stall(server: &str, sent_ms: u64, got_ms: u64) -> Event {
    Event::Stall {
        server: server.into(),
        sent_us: sent_ms * MS,
        got_us: got_ms * MS,
        starved_us: 20 * MS,
    }
}

/// `c:1` acquires at 0 ms and releases at 1000 ms; the server shows its hold until `until`.
fn released_at_1s_held_until(until_ms: u64) -> Vec<Event> {
    let mut events = vec![belief(0, "c:1", true), belief(1000, "c:1", false)];
    events.extend(samples(0, until_ms, &["c:1"]));
    events.extend(samples(until_ms, until_ms + 500, &[]));
    events
}

#[test]
fn a_hold_believed_throughout_is_no_leak() {
    assert_eq!(leaked_holds(&released_at_1s_held_until(1000)), vec![]);
}

#[test]
fn a_hold_nobody_believes_for_over_a_second_is_a_leak() {
    let leaks = leaked_holds(&released_at_1s_held_until(2600));
    assert_eq!(leaks.len(), 1, "{leaks:?}");
    assert_eq!(
        (leaks[0].key.as_str(), leaks[0].owner.as_str()),
        ("k", "c:1")
    );
    assert_eq!(describe(&released_at_1s_held_until(2600)).len(), 1);
}

#[test]
fn a_hold_nobody_believes_for_under_a_second_is_no_leak() {
    assert_eq!(leaked_holds(&released_at_1s_held_until(1900)), vec![]);
}

#[test]
fn a_hold_freed_and_taken_again_counts_per_episode() {
    let mut events = released_at_1s_held_until(1800);
    events.extend(samples(2300, 3900, &["c:1"]));
    assert_eq!(leaked_holds(&events).len(), 1);
}

#[test]
fn a_hold_during_a_fault_or_its_lease_after_is_no_leak() {
    let mut events = released_at_1s_held_until(2600);
    events.push(window("server0", 0, 100, false));
    assert_eq!(leaked_holds(&events), vec![]);
    let mut events = released_at_1s_held_until(2600);
    events.push(window("*", 2000, 2200, true));
    assert_eq!(leaked_holds(&events), vec![]);
}

#[test]
fn owners_no_worker_ever_believed_in_are_not_judged() {
    let events = samples(0, 5000, &["storm:1"]);
    assert_eq!(leaked_holds(&events), vec![]);
}

#[test]
fn a_belief_that_never_ended_covers_the_rest_of_the_run() {
    let mut events = vec![belief(0, "c:1", true)];
    events.extend(samples(0, 5000, &["c:1"]));
    assert_eq!(leaked_holds(&events), vec![]);
}

#[test]
fn reentrant_beliefs_of_a_shared_owner_end_with_the_last() {
    let mut events = vec![
        belief(0, "o:1", true),
        belief(100, "o:1", true),
        belief(500, "o:1", false),
        belief(3000, "o:1", false),
    ];
    events.extend(samples(0, 3000, &["o:1"]));
    assert_eq!(leaked_holds(&events), vec![]);
    events.extend(samples(3000, 4500, &["o:1"]));
    assert_eq!(leaked_holds(&events).len(), 1);
}

#[test]
fn a_late_heartbeat_is_a_stall() {
    let events = [stall("server0", 1000, 1300)];
    assert_eq!(stalls(&events), vec![("server0", 1000 * MS, 1300 * MS)]);
    assert_eq!(describe(&events).len(), 1);
}

#[test]
fn a_late_heartbeat_in_its_servers_silent_window_is_no_stall() {
    let events = [
        window("server0", 900, 1100, true),
        stall("server0", 1000, 1300),
    ];
    assert_eq!(stalls(&events), vec![]);
    let events = [window("*", 900, 1100, true), stall("server0", 1000, 1300)];
    assert_eq!(stalls(&events), vec![]);
}

#[test]
fn another_servers_window_or_a_window_that_is_not_silent_excuses_no_stall() {
    let events = [
        window("server1", 900, 1100, true),
        stall("server0", 1000, 1300),
    ];
    assert_eq!(stalls(&events).len(), 1);
    let events = [
        window("server0", 900, 1100, false),
        stall("server0", 1000, 1300),
    ];
    assert_eq!(stalls(&events).len(), 1);
    let events = [
        window("server0", 100, 200, true),
        stall("server0", 5000, 5300),
    ];
    assert_eq!(stalls(&events).len(), 1);
}

#[test]
fn a_stall_while_the_control_stalled_too_is_the_machines() {
    let events = [stall(CONTROL, 1100, 1400), stall("server0", 1000, 1300)];
    assert_eq!(stalls(&events), vec![]);
}

#[test]
fn a_late_heartbeat_spent_waiting_for_a_cpu_is_the_machines() {
    let starved = |starved_ms: u64| Event::Stall {
        server: "server0".into(),
        sent_us: 1000 * MS,
        got_us: 1400 * MS,
        starved_us: starved_ms * MS,
    };
    assert_eq!(stalls(&[starved(200)]), vec![]);
    assert_eq!(stalls(&[starved(150)]).len(), 1);
}
