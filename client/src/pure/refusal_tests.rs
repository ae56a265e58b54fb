use rlock_core::error::LockError as Module;
use rlock_core::parse::sem::{parse_total, permits, Total};

use crate::pure::error::Error;

/// The module's refusal `err`, mapped as the reply of `owner`'s command on `key` and as the
/// reply of a command on `key` whoever sent it.
fn mapped(err: &Module) -> [Error; 2] {
    let line = format!("-{err}\r\n");
    let value = redis::parse_redis_value(line.as_bytes()).expect("an error line");
    let wire = || value.clone().extract_error().expect_err("an error reply");
    [
        Error::from_command(wire(), "k", "o"),
        Error::of_key(wire(), "k"),
    ]
}

/// Whether `err` is the variant `name` (its name as `Debug` writes it).
fn is(err: &Error, name: &str) -> bool {
    format!("{err:?}").starts_with(&format!("{name} {{"))
}

#[test]
fn every_refusal_in_normal_use_is_typed_keeps_the_servers_text_and_says_if_retryable() {
    let add = |n: &[u8]| parse_total(&[b"SEM.PERMITS", b"k", b"ADD", n]);
    let cases = [
        (Module::NotALock, "WrongType", false),
        (Module::NotARwLock, "WrongType", false),
        (Module::NotASemaphore, "WrongType", false),
        (Module::NotALatch, "WrongType", false),
        (Module::WrongType, "WrongType", false),
        (Module::TooManyWaiters(10), "TooManyWaiters", true),
        (Module::TooManyWaitersForKey(3), "TooManyWaiters", true),
        (Module::ReplicaWrite, "ReadOnly", true),
        (Module::WritesPaused, "HeldBack", true),
        (Module::Stalled(1500), "HeldBack", true),
        (Module::FailoverDelay(2000), "HeldBack", true),
        (Module::Evicted, "OutOfMemory", false),
        (
            Total::Add(1).applied(i64::from(i32::MAX)).unwrap_err(),
            "PermitsOutOfRange",
            false,
        ),
        (add(b"-2147483648").unwrap_err(), "PermitsOutOfRange", false),
        (permits(b"0").unwrap_err(), "PermitsOutOfRange", false),
    ];
    for (refusal, variant, retryable) in cases {
        let text = refusal.to_string();
        let detail = text.split_once(' ').map_or("", |(_, detail)| detail);
        for err in mapped(&refusal) {
            assert!(is(&err, variant), "{text}: {err:?}");
            assert_eq!(err.is_retryable(), retryable, "{err:?}");
            assert!(err.to_string().contains(detail), "{text}: {err}");
            assert!(err.to_string().contains("'k'"), "{err}");
        }
    }
}

#[test]
fn refusals_of_an_owners_command_are_typed() {
    let (key, owner) = (b"k".to_vec(), b"o".to_vec());
    let cases = [
        (
            Module::NotHeld {
                key: key.clone(),
                owner: owner.clone(),
            },
            "NotHeld",
        ),
        (Module::NotHeldForWrite { key, owner }, "NotHeld"),
        (Module::Upgrade(b"o".to_vec()), "Upgrade"),
        (
            Module::TooManyPermits { asked: 5, total: 4 },
            "TooManyPermits",
        ),
    ];
    for (refusal, variant) in cases {
        let [err, _] = mapped(&refusal);
        assert!(is(&err, variant), "{refusal}: {err:?}");
        assert!(!err.is_retryable(), "{err:?}");
    }
}

#[test]
fn the_servers_own_refusals_of_a_write_are_typed() {
    let wire = |line: &str| {
        let value = redis::parse_redis_value(format!("-{line}\r\n").as_bytes());
        value
            .expect("an error line")
            .extract_error()
            .expect_err("an error")
    };
    let no_replicas = Error::of_key(wire("NOREPLICAS Not enough good replicas to write."), "k");
    assert!(
        matches!(&no_replicas, Error::NoReplicas { key, detail } if key == "k" && detail == "NOREPLICAS Not enough good replicas to write.")
    );
    assert!(no_replicas.is_retryable());
    let oom = wire("OOM command not allowed when used memory > 'maxmemory'.");
    let oom = Error::from_command(oom, "k", "o");
    assert!(matches!(&oom, Error::OutOfMemory { .. }), "{oom:?}");
    assert!(!oom.is_retryable());
    let slot = Error::from_command(
        wire("TRYAGAIN Multiple keys request during rehashing"),
        "k",
        "o",
    );
    assert!(
        matches!(&slot, Error::Redis(_)) && slot.is_retryable(),
        "{slot:?}"
    );
}
