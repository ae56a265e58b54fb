use super::*;

fn holder(owner: &str, reads: i64, writes: i64, deadline: i64) -> RwHolder {
    RwHolder {
        owner: owner.as_bytes().to_vec(),
        reads,
        writes,
        token: 7,
        deadline_ms: Some(deadline),
    }
}

fn glance(fields: usize, writer: Option<&str>, mine: Option<RwHolder>) -> Glance {
    Glance {
        fields,
        marked: fields > 0,
        writer: writer.map(|w| w.as_bytes().to_vec()),
        writer_deadline: writer.map(|_| 5000),
        mine,
    }
}

#[test]
fn a_free_key_or_a_reader_beside_readers_is_decided_at_a_glance() {
    let free = Glance::default();
    assert_eq!(
        acquire(&free, b"a", RwMode::Write, false, 0),
        Quick::Decided(RwStep::Fresh)
    );
    assert_eq!(
        acquire(&free, b"a", RwMode::Read, true, 0),
        Quick::Decided(RwStep::Contended)
    );
    let readers = glance(6, None, None);
    assert_eq!(
        acquire(&readers, b"a", RwMode::Read, false, 0),
        Quick::Decided(RwStep::Fresh)
    );
    assert_eq!(
        acquire(&readers, b"a", RwMode::Write, false, 0),
        Quick::Slow
    );
    assert_eq!(
        acquire(&readers, b"a", RwMode::Read, true, 0),
        Quick::Decided(RwStep::Contended)
    );
}

#[test]
fn a_live_writer_makes_a_reader_wait_and_a_lapsed_one_asks_for_the_whole_hash() {
    let g = glance(5, Some("w"), None);
    assert_eq!(
        acquire(&g, b"a", RwMode::Read, false, 1000),
        Quick::Decided(RwStep::Contended)
    );
    assert_eq!(acquire(&g, b"a", RwMode::Read, false, 5000), Quick::Slow);
}

#[test]
fn the_owners_own_holding_decides_reentry_upgrade_and_release() {
    let g = glance(4, None, Some(holder("a", 1, 0, 5000)));
    assert_eq!(
        acquire(&g, b"a", RwMode::Read, true, 0),
        Quick::Decided(RwStep::Reenter {
            reads: 2,
            writes: 0,
            token: 7
        })
    );
    assert_eq!(
        acquire(&g, b"a", RwMode::Write, false, 0),
        Quick::Decided(RwStep::Upgrade)
    );
    assert_eq!(
        release(&g, b"a", RwMode::Read, None, 0),
        Quick::Decided(RwRelease::Gone)
    );
    assert_eq!(release(&g, b"a", RwMode::Read, None, 5000), Quick::Slow);
    let nobody = glance(4, None, None);
    assert_eq!(
        release(&nobody, b"a", RwMode::Read, None, 0),
        Quick::Decided(RwRelease::NotHeld)
    );
    assert_eq!(
        renewal(&g, Some(7), 0),
        Quick::Decided(Some(holder("a", 1, 0, 5000)))
    );
    assert_eq!(renewal(&g, Some(8), 0), Quick::Decided(None));
    assert_eq!(renewal(&g, None, 5000), Quick::Slow);
}

#[test]
fn a_hash_without_the_mark_is_read_whole() {
    let redisson = Glance {
        fields: 2,
        ..Glance::default()
    };
    assert_eq!(
        acquire(&redisson, b"a", RwMode::Read, false, 0),
        Quick::Slow
    );
    assert_eq!(release(&redisson, b"a", RwMode::Read, None, 0), Quick::Slow);
    assert_eq!(renewal(&redisson, None, 0), Quick::Slow);
}
