//! Every acquisition is a `tracing` span named `acquire`, with the key, the owner, the kind
//! of hold, and once it ends the token (0 when none was granted) and the time it waited.

mod support;

use std::collections::{BTreeMap, HashMap};
use std::fmt::Debug;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use support::Server;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::Subscriber;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

/// The fields of each `acquire` span, by span id.
#[derive(Clone, Default)]
struct Spans(Arc<Mutex<HashMap<u64, BTreeMap<String, String>>>>);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Spans {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, _: Context<'_, S>) {
        if attrs.metadata().name() == "acquire" {
            let mut fields = BTreeMap::new();
            attrs.record(&mut Fields(&mut fields));
            self.0.lock().unwrap().insert(id.into_u64(), fields);
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _: Context<'_, S>) {
        if let Some(fields) = self.0.lock().unwrap().get_mut(&id.into_u64()) {
            values.record(&mut Fields(fields));
        }
    }
}

#[tokio::test]
async fn each_acquisition_is_a_span_with_its_key_owner_token_and_wait() {
    let spans = Spans::default();
    let subscriber = tracing_subscriber::registry().with(spans.clone());
    let _default = tracing::subscriber::set_default(subscriber);
    let server = Server::start();
    let client = server.client().await;
    let guard = client.lock("traced").acquire().await.unwrap();
    let busy = client.owner().lock("traced");
    assert!(busy
        .try_acquire(Duration::from_millis(50))
        .await
        .unwrap()
        .is_none());
    let seen: Vec<_> = spans.0.lock().unwrap().values().cloned().collect();
    assert_eq!(seen.len(), 2, "{seen:?}");
    let granted = seen
        .iter()
        .find(|f| f["owner"] == format!("{:?}", guard.owner()));
    let granted = granted.expect("the granted acquisition's span");
    assert_eq!(granted["key"], "\"traced\"");
    assert_eq!(granted["token"], guard.token().to_string());
    assert!(granted.contains_key("waited_ms"), "{granted:?}");
    let busy = seen
        .iter()
        .find(|f| f["token"] == "0")
        .expect("the busy one's span");
    let waited: u64 = busy["waited_ms"].parse().unwrap();
    assert!(waited >= 50, "{busy:?}");
    guard.release().await.unwrap();
}
