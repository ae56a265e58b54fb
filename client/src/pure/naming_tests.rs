use super::*;
use crate::pure::error::{timed_out, unreachable};

#[test]
fn a_connection_error_is_named_after_its_server_and_key_keeping_its_sort() {
    let dropped = redis::RedisError::from(std::io::Error::from(std::io::ErrorKind::BrokenPipe));
    let err = Error::Redis(dropped).concerning("10.0.0.1:6379", "lock:a");
    let Error::Redis(inner) = &err else {
        panic!("{err:?}")
    };
    assert!(
        inner.is_io_error() && inner.is_connection_dropped(),
        "{inner:?}"
    );
    let text = err.to_string();
    assert!(text.contains("10.0.0.1:6379, key 'lock:a': "), "{text}");
    let late = Error::Unresponsive {
        detail: "timed out".into(),
    };
    let text = late.concerning("h:1", "k").to_string();
    assert_eq!(
        text,
        "the server did not answer in time (h:1, key 'k': timed out)"
    );
    let held = Error::Timeout {
        key: "k".into(),
        waited: std::time::Duration::ZERO,
    };
    assert!(matches!(held.concerning("h:1", "k"), Error::Timeout { .. }));
}

#[test]
fn a_command_error_names_the_node_that_failed_keeping_its_sort() {
    let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
    let err = at_node("10.0.0.2:7001", reset.into());
    assert!(err.is_connection_dropped(), "{err:?}");
    assert!(err.to_string().starts_with("10.0.0.2:7001: "), "{err}");
    // The node that failed is named, not the one the client was opened on.
    let text = Error::from(err)
        .concerning("10.0.0.1:7000", "k")
        .to_string();
    assert!(text.contains("10.0.0.2:7001, key 'k': "), "{text}");
    assert!(!text.contains("10.0.0.1:7000"), "{text}");
    let late = Error::from(at_node("h:2", timed_out("no reply")));
    assert!(matches!(&late, Error::Unresponsive { .. }), "{late:?}");
    let text = late.concerning("h:1", "k").to_string();
    assert_eq!(
        text,
        "the server did not answer in time (h:2, key 'k': no reply)"
    );
    let refusal = server_error("NOTHELD", "not held");
    assert_eq!(at_node("h:2", refusal).code(), Some("NOTHELD"));
}

#[test]
fn naming_is_done_once_and_keeps_a_node_named_already() {
    let late = Error::from(timed_out("no reply")).concerning("h:1", "k");
    let again = late.concerning("h:1", "k").to_string();
    assert_eq!(
        again,
        "the server did not answer in time (h:1, key 'k': no reply)"
    );
    let named = at_node("h:2", at_node("h:2", timed_out("no reply")));
    assert_eq!(named.to_string(), "h:2: no reply");
    let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
    let err = Error::from(unreachable("h:2", refused.into())).concerning("h:1", "k");
    let text = err.to_string();
    assert!(text.starts_with("key 'k': cannot reach h:2: "), "{text}");
    assert!(err.is_retryable(), "{text}");
}

fn server_error(code: &str, detail: &str) -> redis::RedisError {
    redis::make_extension_error(code.to_owned(), Some(detail.to_owned()))
}
