//! Unit tests of `fence.rs`.

use super::*;

fn holding(owner: &[u8], token: i64) -> Holding {
    Holding {
        owner: owner.to_vec(),
        count: 1,
        token,
    }
}

fn key(name: &[u8]) -> InnerKey<'_> {
    InnerKey {
        name,
        read_only: false,
    }
}

#[test]
fn parse_takes_owner_token_and_the_inner_command() {
    let argv: [&[u8]; 7] = [b"LOCK.FENCED", b"", b"me", b"12", b"HSET", b"d", b"f"];
    let parsed = parse(&argv).unwrap();
    assert_eq!(parsed.owner, b"me");
    assert_eq!(parsed.token, 12);
    assert_eq!(parsed.command, b"HSET");
}

#[test]
fn parse_refuses_a_missing_command_and_bad_tokens() {
    let short: [&[u8]; 4] = [b"LOCK.FENCED", b"", b"me", b"1"];
    assert_eq!(parse(&short), Err(LockError::WrongArity));
    let bad = |token: &'static [u8]| parse(&[b"LOCK.FENCED", b"", b"me", token, b"GET"]);
    assert_eq!(bad(b"x"), Err(LockError::NotAnInteger(Opt::Token)));
    assert_eq!(bad(b"-1"), Err(LockError::TokenNegative));
    assert_eq!(bad(b" 1"), Err(LockError::NotAnInteger(Opt::Token)));
    assert_eq!(
        parse(&[b"LOCK.FENCED", b"", b"@x", b"1", b"GET"]).unwrap_err(),
        LockError::InvalidOwner(crate::error::OwnerProblem::Reserved)
    );
}

#[test]
fn parse_never_panics_on_any_short_argument_list() {
    let words: [&[u8]; 6] = [
        b"",
        b"0",
        b"-1",
        b"\xff",
        b"LOCK.FENCED",
        b"99999999999999999999",
    ];
    for n in 0..7 {
        for seed in 0..216usize {
            let argv: Vec<&[u8]> = (0..n).map(|i| words[(seed >> i) % 6]).collect();
            let _ = parse(&argv);
            let _ = refusal(&argv, n % 2 == 0);
        }
    }
}

#[test]
fn blocking_transaction_and_lock_commands_are_refused() {
    assert_eq!(
        refusal(&[b"BLPOP", b"l", b"0"], false),
        Some(Refusal::Blocking)
    );
    assert_eq!(
        refusal(&[b"xread", b"BLOCK", b"0", b"STREAMS", b"s", b"$"], false),
        Some(Refusal::Blocking)
    );
    assert_eq!(refusal(&[b"XREAD", b"STREAMS", b"s", b"0"], false), None);
    assert_eq!(refusal(&[b"Multi"], false), Some(Refusal::Transaction));
    assert_eq!(
        refusal(&[b"WATCH", b"k"], false),
        Some(Refusal::Transaction)
    );
    assert_eq!(
        refusal(
            &[b"lock.fenced", b"k", b"o", b"1", b"SET", b"a", b"b"],
            false
        ),
        Some(Refusal::LockCommand)
    );
    assert_eq!(
        refusal(&[b"LOCK.RELEASE", b"k", b"o"], false),
        Some(Refusal::LockCommand)
    );
    assert_eq!(refusal(&[b"HSET", b"d", b"f", b"v"], false), None);
    assert_eq!(refusal(&[b"EVAL", b"return 1", b"0"], false), None);
    assert_eq!(refusal(&[], false), None);
}

#[test]
fn lock_commands_are_known_by_their_prefix() {
    assert!(is_lock_command(b"LOCK.FENCED"));
    assert!(is_lock_command(b"lock.info"));
    assert!(!is_lock_command(b"lock"));
    assert!(!is_lock_command(b"LOCKS.X"));
    assert!(!is_lock_command(b""));
}

#[test]
fn a_script_inside_a_script_is_refused() {
    let eval: [&[u8]; 3] = [b"EVAL", b"return 1", b"0"];
    assert_eq!(refusal(&eval, true), Some(Refusal::InScript));
    assert_eq!(
        refusal(&[b"fcall_ro", b"f", b"0"], true),
        Some(Refusal::InScript)
    );
    assert_eq!(refusal(&eval, false), None);
    assert_eq!(refusal(&[b"SET", b"k", b"v"], true), None);
}

#[test]
fn keys_must_exist_and_leave_the_lock_alone() {
    let refused = |keys: &[InnerKey<'_>]| check_keys(b"lk", b"DEL", keys, false).unwrap_err();
    let why = |e| match e {
        LockError::Fence(FenceError::Refused { why, .. }) => why,
        other => panic!("{other:?}"),
    };
    assert_eq!(why(refused(&[])), Refusal::NoKeys);
    assert_eq!(why(refused(&[key(b"d"), key(b"lk")])), Refusal::LockKey);
    let read = InnerKey {
        name: b"lk",
        read_only: true,
    };
    assert!(check_keys(b"lk", b"HGETALL", &[read], false).is_ok());
    assert!(check_keys(b"lk", b"SET", &[key(b"d")], false).is_ok());
}

#[test]
fn in_a_cluster_keys_must_share_the_locks_slot() {
    let lock = b"lock:{order:42}";
    let same = [key(b"order:{order:42}"), key(b"{order:42}:lines")];
    assert!(check_keys(lock, b"SET", &same, true).is_ok());
    let other = [key(b"order:{order:42}"), key(b"order:43")];
    let e = check_keys(lock, b"SET", &other, true).unwrap_err();
    assert!(matches!(
        e,
        LockError::Fence(FenceError::CrossSlot { ref key, .. }) if key == b"order:43"
    ));
    // Outside a cluster every key is local.
    assert!(check_keys(lock, b"SET", &other, false).is_ok());
}

#[test]
fn only_the_current_holding_passes() {
    let current = holding(b"a", 9);
    assert!(check_holding(Some(&current), b"k", b"a", 9).is_ok());
    assert_eq!(
        check_holding(Some(&current), b"k", b"a", 7),
        Err(LockError::Fence(FenceError::Stale {
            key: b"k".to_vec(),
            owner: b"a".to_vec(),
            token: 7,
            current: 9,
        }))
    );
    let not_held = LockError::NotHeld {
        key: b"k".to_vec(),
        owner: b"b".to_vec(),
    };
    assert_eq!(
        check_holding(Some(&current), b"k", b"b", 9),
        Err(not_held.clone())
    );
    assert_eq!(check_holding(None, b"k", b"b", 9), Err(not_held));
}

#[test]
fn only_a_block_option_before_streams_makes_a_stream_read_blocking() {
    let blocking = |argv: &[&[u8]]| refusal(argv, false) == Some(Refusal::Blocking);
    assert!(!blocking(&[
        b"XREAD", b"COUNT", b"1", b"STREAMS", b"block", b"0"
    ]));
    assert!(!blocking(&[
        b"XREAD", b"STREAMS", b"s", b"block", b"0", b"0"
    ]));
    assert!(!blocking(&[
        b"XREADGROUP",
        b"GROUP",
        b"block",
        b"block",
        b"STREAMS",
        b"block",
        b">"
    ]));
    assert!(!blocking(&[
        b"XREAD", b"COUNT", b"block", b"STREAMS", b"s", b"0"
    ]));
    assert!(blocking(&[
        b"xreadgroup",
        b"GROUP",
        b"g",
        b"c",
        b"NOACK",
        b"block",
        b"5",
        b"STREAMS",
        b"s",
        b">"
    ]));
    assert!(blocking(&[
        b"XREAD", b"COUNT", b"1", b"Block", b"0", b"STREAMS", b"s", b"0"
    ]));
    // Cut short: Redis answers the arity error itself, nothing blocks.
    assert!(!blocking(&[b"XREAD", b"COUNT"]));
}

#[test]
fn a_read_write_locks_writer_passes_the_fence_and_a_reader_does_not() {
    use crate::rwlock::RwState;
    let state = RwState::from_fields(&[
        ("mode", "write"),
        ("w:write", "2"),
        ("@h:w", "9 5000"),
        ("r", "1"),
        ("@h:r", "8 5000"),
    ])
    .unwrap();
    let writer = rw_holding(&state, b"k", b"w", 1000).unwrap().unwrap();
    assert_eq!((writer.count, writer.token), (2, 9));
    assert!(matches!(
        rw_holding(&state, b"k", b"r", 1000),
        Err(LockError::NotHeldForWrite { .. })
    ));
    assert_eq!(rw_holding(&state, b"k", b"x", 1000), Ok(None));
    assert_eq!(rw_holding(&state, b"k", b"w", 5000), Ok(None));
}
