use super::*;
use crate::history::Window;
use crate::history_sem::Held;

fn held(from_ms: u64, told_ms: Option<u64>, until_ms: u64) -> Event {
    Event::Held(Held {
        key: "loss:0".into(),
        owner: "c:1".into(),
        from_us: from_ms * 1000,
        told_us: told_ms.map(|t| t * 1000),
        until_us: until_ms * 1000,
    })
}

fn ended(at_ms: u64) -> Event {
    Event::Ended {
        t_us: at_ms * 1000,
        key: "loss:0".into(),
        owners: vec!["c:1".into()],
    }
}

#[test]
fn a_holder_told_in_time_is_not_late() {
    assert_eq!(
        late_losses(&[held(0, Some(1010), 1020), ended(1000)]),
        vec![]
    );
}

#[test]
fn a_holder_told_at_its_renewal_is_late() {
    let late = late_losses(&[held(0, Some(1600), 1610), ended(1000)]);
    assert_eq!(late.len(), 1);
    assert_eq!(late[0].ended_us, 1_000_000);
}

#[test]
fn a_holder_never_told_that_held_on_is_late() {
    assert_eq!(late_losses(&[held(0, None, 3000), ended(1000)]).len(), 1);
}

#[test]
fn a_holder_that_let_go_within_the_bound_is_not_late() {
    assert_eq!(late_losses(&[held(0, None, 1100), ended(1000)]), vec![]);
}

#[test]
fn another_owner_or_a_later_holding_is_not_judged() {
    let other = Event::Ended {
        t_us: 1_000_000,
        key: "loss:0".into(),
        owners: vec!["c:2".into()],
    };
    assert_eq!(late_losses(&[held(0, None, 3000), other]), vec![]);
    assert_eq!(late_losses(&[held(1500, None, 3000), ended(1000)]), vec![]);
}

#[test]
fn an_end_in_or_just_after_a_fault_window_is_excused() {
    let window = Event::Window(Window {
        server: "s0".into(),
        from_us: 0,
        to_us: 500_000,
        silent: false,
    });
    assert_eq!(
        late_losses(&[window.clone(), held(0, None, 3000), ended(1000)]),
        vec![]
    );
    assert_eq!(
        late_losses(&[window, held(0, None, 9000), ended(2000)]).len(),
        1
    );
}
