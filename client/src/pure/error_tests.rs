use super::*;

fn server_error(code: &str, detail: &str) -> redis::RedisError {
    redis::make_extension_error(code.to_owned(), Some(detail.to_owned()))
}

#[test]
fn notheld_code_maps_to_not_held() {
    let err = server_error("NOTHELD", "lock 'k' is not held by 'o'");
    let mapped = Error::from_command(err, "k", "o");
    assert!(matches!(&mapped, Error::NotHeld { key, owner } if key == "k" && owner == "o"));
    assert_eq!(mapped.to_string(), "lock 'k' is not held by 'o'");
}

#[test]
fn unknown_lock_command_maps_to_module_missing() {
    let err = server_error(
        "ERR",
        "unknown command 'LOCK.ACQUIRE', with args beginning with: 'k' 'o' ",
    );
    let mapped = Error::from_command(err, "k", "o");
    assert!(matches!(mapped, Error::ModuleMissing { .. }), "{mapped:?}");
    assert!(mapped.to_string().contains("rlock module is not loaded"));
}

#[test]
fn other_server_errors_stay_redis_errors() {
    let err = server_error("BUSYKEY", "target key name already exists");
    let mapped = Error::from_command(err, "k", "o");
    assert!(matches!(&mapped, Error::Redis(e) if e.code() == Some("BUSYKEY")));
}

#[test]
fn a_key_of_another_kind_is_wrong_type_with_the_server_text() {
    let mapped = Error::from_command(wire_error("WRONGTYPE key is not a lock"), "k", "o");
    assert!(
        matches!(&mapped, Error::WrongType { key, detail } if key == "k" && detail == "WRONGTYPE key is not a lock"),
        "{mapped:?}"
    );
    assert_eq!(
        mapped.to_string(),
        "'k' is not the kind of object asked for (WRONGTYPE key is not a lock)"
    );
}

#[test]
fn asking_more_permits_than_the_total_is_too_many_permits() {
    let text = "ERR rlock: asks for 5 permits; the semaphore has 4";
    let mapped = Error::from_command(wire_error(text), "pool", "o");
    let Error::TooManyPermits {
        key,
        asked,
        total,
        detail,
    } = &mapped
    else {
        panic!("{mapped:?}");
    };
    assert_eq!((key.as_str(), *asked, *total), ("pool", 5, 4));
    assert_eq!(detail, "rlock: asks for 5 permits; the semaphore has 4");
    assert_eq!(
        mapped.to_string(),
        "semaphore 'pool': rlock: asks for 5 permits; the semaphore has 4"
    );
}

/// An error reply as the server sends it, parsed as from the wire.
fn wire_error(line: &str) -> redis::RedisError {
    let value = redis::parse_redis_value(format!("-{line}\r\n").as_bytes()).unwrap();
    value.extract_error().unwrap_err()
}

#[test]
fn a_redirection_that_reaches_the_caller_is_too_many_redirects() {
    let err = wire_error("MOVED 3999 127.0.0.1:7001");
    let mapped = Error::from_command(err, "k", "o");
    assert!(
        matches!(&mapped, Error::TooManyRedirects { slot: 3999, to } if to == "127.0.0.1:7001"),
        "{mapped:?}"
    );
    assert_eq!(
        mapped.to_string(),
        "gave up following Redis Cluster redirections for slot 3999 (the last to 127.0.0.1:7001)"
    );
    let ask = Error::from(wire_error("ASK 12 10.0.0.2:7002"));
    assert!(
        matches!(ask, Error::TooManyRedirects { slot: 12, .. }),
        "{ask:?}"
    );
}

#[test]
fn a_timeout_is_unresponsive_and_readonly_is_typed() {
    let mapped = Error::from_command(timed_out("no reply to PING"), "k", "o");
    assert!(matches!(mapped, Error::Unresponsive { .. }), "{mapped:?}");
    assert!(mapped
        .to_string()
        .starts_with("the server did not answer in time"));
    let err = server_error("READONLY", "You can't write against a read only replica.");
    let mapped = Error::from_command(err, "k", "o");
    assert!(
        matches!(&mapped, Error::ReadOnly { key, .. } if key == "k"),
        "{mapped:?}"
    );
}

#[test]
fn lost_and_timeout_render_key_and_cause() {
    let lost = Error::Lost {
        key: "k".into(),
        reason: LossReason::Expired,
    };
    assert_eq!(
        lost.to_string(),
        "lock 'k' was lost: its lease ran out without renewal"
    );
    let timeout = Error::Timeout {
        key: "k".into(),
        waited: Duration::from_millis(250),
    };
    assert_eq!(
        timeout.to_string(),
        "timed out after 250ms waiting for lock 'k'"
    );
    let internal = Error::internal("a task ended");
    assert_eq!(
        internal.to_string(),
        "internal error in rlock-client: a task ended"
    );
    assert!(!matches!(internal, Error::Redis(_)), "not an I/O error");
    let unreplicated = Error::NotReplicated {
        key: "k".into(),
        wanted: 2,
        acked: 1,
    };
    assert_eq!(
        unreplicated.to_string(),
        "lock 'k' was granted but only 1 of 2 replicas acknowledged it in time; released it"
    );
}

#[test]
fn a_connection_error_names_its_server_and_keeps_its_sort() {
    let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
    let err = unreachable("127.0.0.1:6379", refused.into());
    assert!(err.is_io_error() && err.is_connection_refusal());
    assert!(
        err.to_string().starts_with("cannot reach 127.0.0.1:6379: "),
        "{err}"
    );
    let late = unreachable("h:1", timed_out("no connection within the connect timeout"));
    assert!(late.is_timeout());
    let mapped = Error::from(late);
    assert!(
        matches!(&mapped, Error::Unresponsive { detail } if detail == "cannot reach h:1: no connection within the connect timeout"),
        "{mapped:?}"
    );
    let refused_password = server_error("WRONGPASS", "invalid username-password pair");
    let kept = unreachable("h:1", refused_password);
    assert_eq!(kept.code(), Some("WRONGPASS"));
}

#[test]
fn a_refused_upgrade_maps_to_upgrade() {
    let err = wire_error(
        "ERR rlock: 'o' holds only read holds of this lock; release them before asking for a \
         write hold (an upgrade deadlocks as soon as two readers try it)",
    );
    let mapped = Error::from_command(err, "k", "o");
    assert!(
        matches!(&mapped, Error::Upgrade { key, owner } if key == "k" && owner == "o"),
        "{mapped:?}"
    );
    assert!(
        mapped.to_string().contains("release them first"),
        "{mapped}"
    );
    let other = wire_error("ERR rlock: something else");
    let other = Error::from_command(other, "k", "o");
    assert!(matches!(other, Error::Redis(_)), "{other:?}");
}

#[test]
fn passing_troubles_are_retryable_and_refusals_are_not() {
    let retryable = [
        Error::Unresponsive { detail: "d".into() },
        Error::from(timed_out("a reply")),
        Error::from(redis::RedisError::from(std::io::Error::from(
            std::io::ErrorKind::ConnectionRefused,
        ))),
        Error::from(wire_error("LOADING Redis is loading the dataset in memory")),
        Error::from(wire_error(
            "TRYAGAIN Multiple keys request during rehashing",
        )),
        Error::from(wire_error("CLUSTERDOWN The cluster is down")),
        Error::ReadOnly {
            key: "k".into(),
            detail: "d".into(),
        },
        Error::NoQuorum {
            key: "k".into(),
            answered: 1,
            needed: 2,
        },
        Error::TooManyRedirects {
            slot: 1,
            to: "n:1".into(),
        },
        Error::Timeout {
            key: "k".into(),
            waited: Duration::ZERO,
        },
        Error::NotReplicated {
            key: "k".into(),
            wanted: 1,
            acked: 0,
        },
    ];
    for err in retryable {
        assert!(err.is_retryable(), "{err:?}");
    }
    let final_ = [
        Error::from_command(server_error("NOTHELD", "n"), "k", "o"),
        Error::Upgrade {
            key: "k".into(),
            owner: "o".into(),
        },
        Error::Lost {
            key: "k".into(),
            reason: LossReason::NotHeld,
        },
        Error::Closed,
        Error::InvalidArgument { detail: "d".into() },
        Error::ModuleMissing { detail: "d".into() },
        Error::internal("d"),
        Error::from(wire_error("WRONGTYPE key is not a lock")),
        Error::from_command(wire_error("WRONGTYPE key is not a lock"), "k", "o"),
        Error::from_command(
            wire_error("ERR rlock: asks for 5 permits; the semaphore has 4"),
            "k",
            "o",
        ),
        Error::from(wire_error("NOPERM this user has no permissions")),
        Error::from(wire_error(
            "ERR rlock: asks for 5 permits; the semaphore has 4",
        )),
    ];
    for err in final_ {
        assert!(!err.is_retryable(), "{err:?}");
    }
}

#[test]
fn a_node_holding_grants_back_is_held_back_with_why() {
    let text = "TRYAGAIN rlock: this node stalled; it grants and renews nothing for 1500 ms, until it knows its replicas again";
    let mapped = Error::from(wire_error(text)).held_back_at("k");
    assert!(
        matches!(&mapped, Error::HeldBack { key, detail } if key == "k" && detail == text),
        "{mapped:?}"
    );
    assert!(mapped.is_retryable());
    let other = Error::from(wire_error(
        "TRYAGAIN Multiple keys request during rehashing",
    ));
    assert!(matches!(other.held_back_at("k"), Error::Redis(_)));
}
