use super::*;

fn glance(total: i64, used: i64, holders: usize, mine: Option<(i64, i64)>) -> SemGlance {
    SemGlance {
        fields: 2 + 2 * holders,
        total: Some(total),
        used,
        next: None,
        mine: mine.map(|(permits, deadline_ms)| SemHolder {
            owner: b"me".to_vec(),
            permits,
            token: 9,
            deadline_ms,
        }),
    }
}

#[test]
fn free_permits_are_granted_from_a_glance() {
    let g = glance(5, 3, 2, None);
    assert_eq!(
        acquire(&g, b"me", 2, false, 0),
        Quick::Decided(SemStep::Fresh)
    );
    let g = glance(5, 3, 2, Some((1, 100)));
    let step = acquire(&g, b"me", 2, false, 0);
    assert_eq!(
        step,
        Quick::Decided(SemStep::Reenter {
            permits: 3,
            token: 9
        })
    );
}

#[test]
fn too_few_free_permits_read_the_whole_hash() {
    assert_eq!(
        acquire(&glance(5, 4, 2, None), b"me", 2, false, 0),
        Quick::Slow
    );
    assert_eq!(
        acquire(&glance(5, 4, 2, Some((1, 100))), b"me", 2, false, 0),
        Quick::Slow
    );
}

#[test]
fn a_queue_or_a_too_large_ask_decides_at_once() {
    let g = glance(5, 0, 0, None);
    assert_eq!(
        acquire(&g, b"me", 1, true, 0),
        Quick::Decided(SemStep::Contended)
    );
    assert_eq!(
        acquire(&g, b"me", 6, false, 0),
        Quick::Decided(SemStep::TooMany { total: 5 })
    );
    let none = SemGlance::default();
    assert_eq!(
        acquire(&none, b"me", 1, false, 0),
        Quick::Decided(SemStep::TooMany { total: 0 })
    );
}

#[test]
fn a_lapsed_own_holding_or_a_strange_hash_reads_the_whole_hash() {
    let lapsed = glance(5, 1, 1, Some((1, 100)));
    assert_eq!(acquire(&lapsed, b"me", 1, false, 100), Quick::Slow);
    assert_eq!(release(&lapsed, b"me", None, None, 100), Quick::Slow);
    assert_eq!(renewal(&lapsed, None, 100), Quick::Slow);
    let strange = SemGlance {
        fields: 3,
        ..SemGlance::default()
    };
    assert_eq!(acquire(&strange, b"me", 1, false, 0), Quick::Slow);
}

#[test]
fn releases_and_renewals_decide_from_the_owner_fields() {
    let g = glance(5, 3, 2, Some((2, 100)));
    let released = release(&g, b"me", Some(1), None, 0);
    assert_eq!(released, Quick::Decided(SemRelease::Remaining(1)));
    assert_eq!(
        release(&g, b"me", None, Some(8), 0),
        Quick::Decided(SemRelease::NotHeld)
    );
    assert!(matches!(renewal(&g, Some(9), 0), Quick::Decided(Some(_))));
    assert_eq!(renewal(&g, Some(8), 0), Quick::Decided(None));
    assert_eq!(
        renewal(&glance(5, 0, 0, None), None, 0),
        Quick::Decided(None)
    );
}

#[test]
fn too_few_free_permits_while_no_lease_ended_decide_at_once() {
    let mut g = glance(5, 4, 2, None);
    g.next = Some(100);
    assert_eq!(
        acquire(&g, b"me", 2, false, 99),
        Quick::Decided(SemStep::Contended)
    );
    assert_eq!(acquire(&g, b"me", 2, false, 100), Quick::Slow);
    assert_eq!(
        acquire(&g, b"me", 1, false, 100),
        Quick::Decided(SemStep::Fresh)
    );
}
