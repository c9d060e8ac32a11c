//! Test support: capture `tracing` events as (name, fields) records; a
//! scripted HTTP server (`server`).

#![allow(dead_code)]

pub(crate) mod server;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

/// One captured event: its fields rendered as strings (`event` holds the name).
#[derive(Debug, Clone, Default)]
pub(crate) struct Captured {
    pub level: String,
    pub fields: BTreeMap<String, String>,
}

impl Captured {
    pub(crate) fn name(&self) -> &str {
        self.fields.get("event").map(String::as_str).unwrap_or("")
    }
    pub(crate) fn get(&self, key: &str) -> &str {
        self.fields.get(key).map(String::as_str).unwrap_or_else(|| {
            panic!(
                "event {} has no field {key}: {:?}",
                self.name(),
                self.fields
            )
        })
    }
    pub(crate) fn f64(&self, key: &str) -> f64 {
        self.get(key).parse().unwrap()
    }
}

struct Visitor<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Visitor<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0
            .insert(field.name().to_string(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_string(), value.to_string());
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.insert(field.name().to_string(), value.to_string());
    }
}

#[derive(Clone, Default)]
pub(crate) struct Capture(Arc<Mutex<Vec<Captured>>>);

impl Capture {
    pub(crate) fn events(&self) -> Vec<Captured> {
        self.0.lock().unwrap().clone()
    }
    pub(crate) fn named(&self, name: &str) -> Vec<Captured> {
        self.events()
            .into_iter()
            .filter(|e| e.name() == name)
            .collect()
    }
}

impl<S: Subscriber> Layer<S> for Capture {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        if event.metadata().target() != "herdless" {
            return;
        }
        let mut fields = BTreeMap::new();
        event.record(&mut Visitor(&mut fields));
        self.0.lock().unwrap().push(Captured {
            level: event.metadata().level().to_string(),
            fields,
        });
    }
}

/// A second registered dispatcher that lives for the whole test process and
/// is never any thread's default.
///
/// Why: while exactly one dispatcher is registered, `tracing-core` computes a
/// newly hit callsite's interest from the *registering thread's* default
/// only. A concurrent test on another thread (no subscriber) that first hits
/// an event's callsite then caches "never" for every thread, and the
/// capturing test loses that event. With two registered dispatchers the
/// interest is computed from all of them, under a lock.
static KEEP_INTEREST: std::sync::OnceLock<tracing::Dispatch> = std::sync::OnceLock::new();

/// Runs `f` with a subscriber capturing herdless's events on this thread.
pub(crate) fn capture<R>(f: impl FnOnce() -> R) -> (R, Capture) {
    KEEP_INTEREST.get_or_init(|| tracing::Dispatch::new(tracing_subscriber::registry()));
    let cap = Capture::default();
    let subscriber = tracing_subscriber::registry().with(cap.clone());
    let out = tracing::subscriber::with_default(subscriber, || {
        // Registering the dispatcher recomputed every callsite's interest, but
        // a callsite another thread was registering at that instant may have
        // stored its stale interest afterwards: recompute once more.
        tracing::callsite::rebuild_interest_cache();
        f()
    });
    (out, cap)
}
