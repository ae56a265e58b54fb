use super::*;

fn watch(owner: &str, held: Held, token: i64, count: i64) -> Watch {
    Watch {
        owner: owner.as_bytes().to_vec(),
        held,
        token,
        count,
    }
}

fn listening() -> Watched {
    let mut w = Watched::default();
    assert!(w.listen(7, b"app"));
    w
}

#[test]
fn the_prefix_is_the_owner_up_to_its_last_colon() {
    assert_eq!(prefix_of(b"0f3a-uuid:12"), b"0f3a-uuid");
    assert_eq!(prefix_of(b"a:b:c"), b"a:b");
    assert_eq!(prefix_of(b"plain"), b"plain");
    assert_eq!(prefix_of(b":1"), b"");
    assert_eq!(channel(b"app"), b"__rlock_lost__:app");
}

#[test]
fn only_listened_owners_are_tracked() {
    let mut w = listening();
    w.holds((0, b"k"), "app:1".as_bytes(), (Held::Lock, 5, 1));
    w.holds((0, b"k"), "other:1".as_bytes(), (Held::Lock, 6, 1));
    assert_eq!(w.of(0, b"k"), vec![watch("app:1", Held::Lock, 5, 1)]);
    assert!(!w.has(1, b"k"));
}

#[test]
fn a_connection_that_closes_stops_listening() {
    let mut w = listening();
    assert!(!w.listen(7, b"app"));
    assert!(w.listen(8, b"app"));
    w.holds((0, b"j"), b"app:1", (Held::Lock, 1, 1));
    w.released(0, b"j", (b"app:1", Held::Lock), 0);
    w.client_gone(7);
    assert!(w.listened(b"app:1"));
    w.client_gone(8);
    assert!(!w.listened(b"app:1"));
    w.holds((0, b"k"), b"app:1", (Held::Lock, 1, 1));
    assert!(
        !w.has(0, b"k"),
        "a prefix nobody listens for any more is not tracked"
    );
    assert!(!w.active());
}

#[test]
fn an_own_release_announces_nothing() {
    let mut w = listening();
    w.holds((0, b"k"), "app:1".as_bytes(), (Held::Lock, 5, 2));
    w.released(0, b"k", (b"app:1", Held::Lock), 1);
    assert_eq!(w.of(0, b"k"), vec![watch("app:1", Held::Lock, 5, 1)]);
    w.released(0, b"k", (b"app:1", Held::Lock), 0);
    assert!(!w.has(0, b"k"));
    assert!(w.key_gone(0, b"k", Cause::Deleted).is_empty());
}

#[test]
fn a_key_gone_ends_each_of_its_holdings() {
    let mut w = listening();
    w.holds((0, b"k"), "app:1".as_bytes(), (Held::Read, 5, 1));
    w.holds((0, b"k"), "app:2".as_bytes(), (Held::Read, 6, 1));
    let lost = w.key_gone(0, b"k", Cause::Deleted);
    assert_eq!(lost.len(), 2);
    assert_eq!(lost[0].message(), b"deleted read 5 1 k app:1");
    assert_eq!(lost[0].channel(), b"__rlock_lost__:app");
    assert!(!w.active() || w.tracked() == 0);
}

#[test]
fn a_flush_ends_its_database_or_all() {
    let mut w = listening();
    w.holds((0, b"a"), "app:1".as_bytes(), (Held::Lock, 1, 1));
    w.holds((1, b"b"), "app:1".as_bytes(), (Held::Lock, 2, 1));
    assert_eq!(w.db_gone(1, Cause::Flushed).len(), 1);
    assert_eq!(w.tracked(), 1);
    assert_eq!(w.db_gone(-1, Cause::Flushed).len(), 1);
    assert_eq!(w.tracked(), 0);
}

#[test]
fn a_reread_keeps_what_is_still_held_and_ends_the_rest() {
    let mut w = listening();
    w.holds((0, b"k"), "app:1".as_bytes(), (Held::Lock, 5, 2));
    // A count taken away is an end.
    let found = [(
        watch("app:1", Held::Lock, 0, 0),
        Found::Holds { token: 5, count: 1 },
    )];
    let lost = w.settle((0, b"k"), &found, (Cause::Restored, None));
    assert_eq!(lost.len(), 1);
    assert_eq!(lost[0].cause, Cause::Restored);
    // Still held, with a larger count: kept, count learned.
    w.holds((0, b"k"), "app:1".as_bytes(), (Held::Lock, 5, 1));
    let found = [(
        watch("app:1", Held::Lock, 0, 0),
        Found::Holds { token: 5, count: 3 },
    )];
    assert!(w
        .settle((0, b"k"), &found, (Cause::Expired, None))
        .is_empty());
    assert_eq!(w.of(0, b"k")[0].count, 3);
    // Another token: ended.
    let found = [(
        watch("app:1", Held::Lock, 0, 0),
        Found::Holds { token: 9, count: 1 },
    )];
    assert_eq!(
        w.settle((0, b"k"), &found, (Cause::ForceRelease, None))
            .len(),
        1
    );
    assert!(!w.has(0, b"k"));
}

#[test]
fn the_askers_own_end_is_silent_and_others_are_told() {
    let mut w = listening();
    w.holds((0, b"k"), "app:1".as_bytes(), (Held::Permits, 5, 2));
    w.holds((0, b"k"), "app:2".as_bytes(), (Held::Permits, 6, 1));
    let found = [
        (watch("app:1", Held::Permits, 0, 0), Found::Gone),
        (watch("app:2", Held::Permits, 0, 0), Found::Gone),
    ];
    let lost = w.settle((0, b"k"), &found, (Cause::Expired, Some(b"app:1")));
    assert_eq!(lost.len(), 1);
    assert_eq!(lost[0].watch.owner, b"app:2");
    assert!(!w.has(0, b"k"));
}

#[test]
fn keyspace_events_name_their_cause() {
    assert_eq!(Cause::of_removal(b"del"), Some(Cause::Deleted));
    assert_eq!(Cause::of_removal(b"rename_from"), Some(Cause::Renamed));
    assert_eq!(Cause::of_removal(b"hset"), None);
    assert_eq!(Cause::of_overwrite(b"restore"), Some(Cause::Restored));
    assert_eq!(Cause::of_overwrite(b"copy_to"), Some(Cause::Overwritten));
    assert_eq!(Cause::of_overwrite(b"expire"), None);
}

#[test]
fn a_key_with_spaces_is_told_by_its_length() {
    let loss = Loss {
        key: b"a b".to_vec(),
        watch: watch("c d:1", Held::Write, 42, 1),
        cause: Cause::ForceRelease,
    };
    assert_eq!(loss.message(), b"forcerelease write 42 3 a b c d:1");
}

#[test]
fn names_reused_from_released_holdings_hold_the_new_names() {
    let mut w = listening();
    for round in 0..200i64 {
        // Names of every length, so that a reused buffer longer than the new name shows.
        let key = format!("k{}", "x".repeat((round % 7) as usize));
        let owner = format!("app:{}", "9".repeat((round % 5) as usize));
        w.holds(
            (0, key.as_bytes()),
            owner.as_bytes(),
            (Held::Lock, round, 1),
        );
        w.holds(
            (0, key.as_bytes()),
            owner.as_bytes(),
            (Held::Lock, round, 2),
        );
        w.holds((0, b"other"), b"app:2", (Held::Read, round, 1));
        assert_eq!(
            w.of(0, key.as_bytes()),
            vec![watch(&owner, Held::Lock, round, 2)]
        );
        assert_eq!(
            w.of(0, b"other"),
            vec![watch("app:2", Held::Read, round, 1)]
        );
        w.released(0, key.as_bytes(), (owner.as_bytes(), Held::Lock), 0);
        w.released(0, b"other", (b"app:2", Held::Read), 0);
        assert_eq!(w.tracked(), 0);
        assert!(w.spare.len() <= SPARE);
    }
    // A name too large to keep is not kept.
    let long = vec![b'k'; SPARE_BYTES + 1];
    w.holds((0, &long), b"app:1", (Held::Lock, 1, 1));
    let kept = w.spare.len();
    w.released(0, &long, (b"app:1", Held::Lock), 0);
    assert_eq!(w.spare.len(), kept + 1, "only the owner's buffer is kept");
}
