//! What a key is, when the server refused a command of another kind on it (`WRONGTYPE`): a
//! plain lock, a read-write lock and a semaphore never share a key, so `rlock` then finds
//! which one the key is and says which flag takes it.

use rlock_client::{Client, Error};

use crate::check::Family;
use crate::failure::{At, Failure};

/// What a command asked for: the kind of object, by which flag (`None`: a plain lock), and
/// whether it was `run` (whose flags differ from `info`'s and `release`'s).
#[derive(Clone, Copy)]
pub struct Asked {
    pub family: Family,
    pub flag: Option<&'static str>,
    pub run: bool,
}

/// Whether the server refused a command because the key is of another kind.
pub fn is_wrong_type(error: &Error) -> bool {
    matches!(error, Error::WrongType { .. })
}

/// What `key` is on `client`'s server: the first kind whose `INFO` reads it.
pub async fn family_of(client: &Client, key: &str) -> Option<Family> {
    if client.info(key).await.is_ok_and(|i| i.is_some()) {
        return Some(Family::Lock);
    }
    if client.rw_lock(key).info().await.is_ok_and(|i| i.is_some()) {
        return Some(Family::Rw);
    }
    let sem = client.semaphore(key).info().await;
    sem.is_ok_and(|i| i.is_some()).then_some(Family::Sem)
}

/// `result`, tied to `client`'s server; a `WRONGTYPE` refusal is told as what `key` is and
/// which flag takes it.
pub async fn explain<T>(
    result: Result<T, Error>,
    client: &Client,
    key: &str,
    asked: Asked,
) -> Result<T, Failure> {
    let failure = match result {
        Err(error) if is_wrong_type(&error) => Err::<T, _>(error).at(client.server()),
        other => return other.at(client.server()),
    };
    let found = family_of(client, key).await;
    failure.map_err(|f| f.told(wrong_kind(key, asked, found)))
}

fn name(family: Family) -> &'static str {
    match family {
        Family::Lock => "a plain lock",
        Family::Rw => "a read-write lock",
        Family::Sem => "a semaphore",
    }
}

/// What `rlock` says of `key`, found to be `found` (`None`: none of the three) when `asked`.
pub fn wrong_kind(key: &str, asked: Asked, found: Option<Family>) -> String {
    let Some(found) = found else {
        let asked = name(asked.family);
        return format!(
            "'{key}' is not {asked}: it holds another type (not a lock, a read-write lock or a \
             semaphore)"
        );
    };
    let fits = match (found, asked.run) {
        (Family::Lock, _) => format!("without {}", asked.flag.unwrap_or("a flag")),
        (Family::Rw, true) => "with --shared (a read hold) or -x/--exclusive (a write hold)".into(),
        (Family::Rw, false) => "with --shared".into(),
        (Family::Sem, true) => "with --permits N (one of its permits)".into(),
        (Family::Sem, false) => "with --permits".into(),
    };
    let (found, asked) = (name(found), name(asked.family));
    format!("'{key}' is {found}, not {asked}: take it {fits}")
}

#[cfg(test)]
mod tests {
    use super::{wrong_kind, Asked};
    use crate::check::Family;

    #[test]
    fn the_text_names_the_kind_found_and_the_flag_that_fits() {
        let plain = Asked {
            family: Family::Lock,
            flag: None,
            run: true,
        };
        assert_eq!(
            wrong_kind("k", plain, Some(Family::Rw)),
            "'k' is a read-write lock, not a plain lock: take it with --shared (a read hold) \
             or -x/--exclusive (a write hold)"
        );
        let shared = Asked {
            family: Family::Rw,
            flag: Some("--shared"),
            run: false,
        };
        assert_eq!(
            wrong_kind("k", shared, Some(Family::Lock)),
            "'k' is a plain lock, not a read-write lock: take it without --shared"
        );
        assert!(wrong_kind("k", shared, None).contains("holds another type"));
    }
}
