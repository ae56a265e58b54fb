//! Unit tests of `error.rs`.

use super::*;

fn text(e: LockError) -> String {
    e.to_string()
}

#[test]
fn option_errors_name_the_argument() {
    assert_eq!(
        text(LockError::NotAnInteger(Opt::Lease)),
        "ERR LEASE is not an integer or out of range"
    );
    assert_eq!(
        text(LockError::NotAnInteger(Opt::Wait)),
        "ERR WAIT is not an integer or out of range"
    );
    assert_eq!(
        text(LockError::MissingValue(Opt::Wait)),
        "ERR WAIT needs a value in milliseconds"
    );
    assert_eq!(
        text(LockError::LeaseNotPositive),
        "ERR LEASE must be a positive integer"
    );
    assert_eq!(
        text(LockError::WaitNegative),
        "ERR WAIT must not be negative"
    );
    assert_eq!(
        text(LockError::TooLarge(Opt::Lease)),
        "ERR LEASE is too large"
    );
    assert_eq!(
        text(LockError::Duplicate(Opt::Lease)),
        "ERR LEASE is given more than once"
    );
}

#[test]
fn token_errors_name_the_argument() {
    assert_eq!(
        text(LockError::MissingValue(Opt::Token)),
        "ERR TOKEN needs a value"
    );
    assert_eq!(
        text(LockError::NotAnInteger(Opt::Token)),
        "ERR TOKEN is not an integer or out of range"
    );
    assert_eq!(
        text(LockError::TokenNegative),
        "ERR TOKEN must not be negative"
    );
}

#[test]
fn unknown_option_is_echoed_safely() {
    let e = LockError::UnknownOption {
        given: b"FOO\r\n".to_vec(),
        expected: "LEASE or WAIT",
    };
    assert_eq!(
        text(e),
        "ERR unknown option 'FOO\\x0d\\x0a', expected LEASE or WAIT"
    );
}

#[test]
fn owner_errors_start_with_invalid_owner() {
    for p in [
        OwnerProblem::Empty,
        OwnerProblem::TooLong,
        OwnerProblem::Reserved,
        OwnerProblem::WriteSuffix,
        OwnerProblem::LayoutField,
    ] {
        assert!(text(LockError::InvalidOwner(p)).starts_with("ERR invalid owner: "));
    }
}

#[test]
fn an_owner_named_as_a_layout_field_is_told_the_reserved_names() {
    assert_eq!(
        text(LockError::InvalidOwner(OwnerProblem::LayoutField)),
        "ERR invalid owner: must not be 'mode' or 'permits'"
    );
    assert_eq!(
        text(LockError::InvalidOwner(OwnerProblem::Reserved)),
        "ERR invalid owner: must not start with '@'"
    );
}

#[test]
fn an_unknown_option_names_what_the_command_takes() {
    let unknown = |expected| LockError::UnknownOption {
        given: b"LEASE".to_vec(),
        expected,
    };
    assert_eq!(
        text(unknown("WAIT")),
        "ERR unknown option 'LEASE', expected WAIT"
    );
    assert_eq!(
        text(unknown("TOKEN")),
        "ERR unknown option 'LEASE', expected TOKEN"
    );
}

#[test]
fn wrongtype_texts_match_the_spec() {
    assert_eq!(
        text(LockError::WrongType),
        "WRONGTYPE Operation against a key holding the wrong kind of value"
    );
    assert_eq!(text(LockError::NotALock), "WRONGTYPE key is not a lock");
}

#[test]
fn apply_errors_say_what_the_command_is_for() {
    assert_eq!(
        text(LockError::ApplyFromClient),
        "ERR LOCK.APPLY only replays a master's writes (replication stream or AOF)"
    );
    assert!(text(LockError::BadApply).starts_with("ERR LOCK.APPLY needs "));
    assert!(text(LockError::BadRaise).starts_with("ERR LOCK.RAISE needs "));
}

#[test]
fn notheld_names_key_and_owner() {
    let e = LockError::NotHeld {
        key: b"lock:1".to_vec(),
        owner: b"me\0".to_vec(),
    };
    assert_eq!(text(e), "NOTHELD lock 'lock:1' is not held by 'me\\x00'");
}

#[test]
fn echoed_bytes_are_cut_at_128_with_an_ellipsis() {
    let key = vec![b'k'; 1 << 20];
    let e = LockError::NotHeld {
        key: clip(&key),
        owner: b"me".to_vec(),
    };
    let expected = format!("NOTHELD lock '{}...' is not held by 'me'", "k".repeat(128));
    assert_eq!(text(e), expected);
    assert_eq!(printable(&[b'k'; 128]), "k".repeat(128));
    assert_eq!(printable(&[0u8; 200]).len(), 128 * 4 + 3);
}

#[test]
fn resource_errors_name_their_config() {
    assert_eq!(
        text(LockError::TooManyWaiters(10)),
        "ERR too many waiters: rlock.max-waiters (10) clients wait on this node"
    );
    assert_eq!(
        text(LockError::TooManyWaitersForKey(2)),
        "ERR too many waiters for this lock: rlock.max-waiters-per-key (2) clients wait for it"
    );
    assert_eq!(
        text(LockError::TokensExhausted),
        "ERR fencing tokens are exhausted on this node: the counter is at its maximum"
    );
}

#[test]
fn printable_escapes_backslash_and_high_bytes() {
    assert_eq!(printable(b"a\\b\xff"), "a\\x5cb\\xff");
}

#[test]
fn gate_errors_carry_the_codes_clients_act_on() {
    assert!(text(LockError::ReplicaWrite).starts_with("READONLY rlock: this node is a replica"));
    assert!(text(LockError::WritesPaused).starts_with("TRYAGAIN rlock: writes are paused"));
    assert_eq!(
        text(LockError::Stalled(1500)),
        "TRYAGAIN rlock: this node stalled; it grants and renews nothing for 1500 ms, until it knows its replicas again"
    );
    assert!(text(LockError::Evicted).starts_with("OOM rlock: the lock was evicted"));
}

#[test]
fn ticket_rights_errors_name_the_connection_or_the_wait() {
    assert_eq!(
        text(LockError::ToOtherUser(12)),
        "ERR TO names connection 12 of another ACL user: outcomes go only to connections of the caller's user"
    );
    assert_eq!(
        text(LockError::NotYourWait(7)),
        "ERR LOCK.CANCEL: wait 7 is not yours: only the connection that queued it, its receiver, or a connection of the same ACL user may cancel it"
    );
    assert_eq!(
        text(LockError::GrantsInScript),
        "ERR LOCK.GRANTS cannot run inside a script or a function: it reads the calling connection's mailbox"
    );
}

#[test]
fn a_cancelled_wait_has_a_code_of_its_own() {
    assert_eq!(
        text(LockError::Cancelled),
        "CANCELLED the wait was cancelled by LOCK.CANCEL"
    );
}

#[test]
fn read_write_lock_errors_say_what_to_do() {
    assert_eq!(
        text(LockError::NotARwLock),
        "WRONGTYPE key is not a read-write lock"
    );
    assert_eq!(
        text(LockError::Upgrade(b"me".to_vec())),
        "ERR rlock: 'me' holds only read holds of this lock; release them before asking for a write hold (an upgrade deadlocks as soon as two readers try it)"
    );
    assert_eq!(
        text(LockError::BadMode(b"SHARED".to_vec())),
        "ERR unknown mode 'SHARED', expected READ or WRITE"
    );
    assert_eq!(
        text(LockError::NotHeldForWrite {
            key: b"k".to_vec(),
            owner: b"r".to_vec()
        }),
        "NOTHELD lock 'k' is not held for writing by 'r'"
    );
    assert_eq!(
        text(LockError::InvalidOwner(OwnerProblem::WriteSuffix)),
        "ERR invalid owner: must not end with ':write'"
    );
    assert_eq!(
        text(LockError::RwApplyFromClient),
        "ERR RWLOCK.APPLY only replays a master's writes (replication stream or AOF)"
    );
    assert_eq!(
        text(LockError::BadRwApply),
        "ERR RWLOCK.APPLY needs key owner reads writes token unix-ms: reads, writes and token >= 0"
    );
}

#[test]
fn a_reentry_in_the_failover_delay_is_told_to_try_again() {
    assert_eq!(
        text(LockError::FailoverDelay(1200)),
        "TRYAGAIN rlock: this node was promoted less than rlock.failover-delay ago; it reenters no holding for 1200 ms (its copy may be one the old master ended)"
    );
}

#[test]
fn a_key_that_holds_no_count_is_not_a_latch() {
    assert_eq!(text(LockError::NotALatch), "WRONGTYPE key is not a latch");
}
