//! Unit tests of `fence_error.rs`.

use super::*;

#[test]
fn fenced_errors_say_why_the_inner_command_did_not_run() {
    let fence = |e: FenceError| e.to_string();
    let stale = FenceError::Stale {
        key: b"lock:{o}".to_vec(),
        owner: b"a".to_vec(),
        token: 7,
        current: 9,
    };
    assert_eq!(
        fence(stale),
        "FENCED lock 'lock:{o}' is held by 'a' with a newer token (9), not 7"
    );
    let other = FenceError::Stale {
        key: b"k".to_vec(),
        owner: b"a".to_vec(),
        token: 7,
        current: 0,
    };
    assert_eq!(
        fence(other),
        "FENCED lock 'k' is held by 'a' with another token (0), not 7"
    );
    let refused = |why| {
        let command = b"blpop".to_vec();
        fence(FenceError::Refused { command, why })
    };
    assert_eq!(
        refused(Refusal::Blocking),
        "ERR LOCK.FENCED refuses 'blpop': it may block"
    );
    assert_eq!(
        refused(Refusal::Transaction),
        "ERR LOCK.FENCED refuses 'blpop': transactions and subscriptions cannot run inside it"
    );
    assert_eq!(
        refused(Refusal::LockCommand),
        "ERR LOCK.FENCED refuses 'blpop': lock commands cannot run inside it"
    );
    assert_eq!(
        refused(Refusal::NoKeys),
        "ERR LOCK.FENCED refuses 'blpop': it names no key, so nothing ties it to the lock"
    );
    assert_eq!(
        refused(Refusal::LockKey),
        "ERR LOCK.FENCED refuses 'blpop': it may write the lock's own key"
    );
    assert_eq!(
        refused(Refusal::InScript),
        "ERR LOCK.FENCED refuses 'blpop': it cannot run inside a script"
    );
}

#[test]
fn fenced_call_errors_keep_the_servers_codes() {
    let fence = |e: FenceError| e.to_string();
    let cross = FenceError::CrossSlot {
        key: b"b".to_vec(),
        lock: b"a".to_vec(),
    };
    assert_eq!(
        fence(cross),
        "CROSSSLOT LOCK.FENCED: key 'b' is not in the slot of lock 'a'; give both one hash tag (lock:{order:42} and order:{order:42})"
    );
    let command = || b"h\r\nset".to_vec();
    assert_eq!(
        fence(FenceError::Unknown { command: command() }),
        "ERR unknown command 'h\\x0d\\x0aset' in LOCK.FENCED"
    );
    assert_eq!(
        fence(FenceError::Arity { command: command() }),
        "ERR wrong number of arguments for 'h\\x0d\\x0aset' in LOCK.FENCED"
    );
    assert_eq!(
        fence(FenceError::NoPerm {
            command: b"hset".to_vec()
        }),
        "NOPERM this user has no permissions to run 'hset' or to access its keys (in LOCK.FENCED)"
    );
    assert_eq!(
        fence(FenceError::Oom),
        "OOM command not allowed when used memory > 'maxmemory' (in LOCK.FENCED)"
    );
    let not_run = FenceError::NotRun {
        command: b"hset".to_vec(),
        errno: 30,
    };
    assert_eq!(
        fence(not_run),
        "ERR LOCK.FENCED could not run 'hset' here (errno 30)"
    );
}
