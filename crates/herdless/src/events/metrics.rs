//! Metrics through the `metrics` crate's facade (feature `metrics`).
//!
//! The engine records them on its one event path, beside the `tracing` events
//! and the notify hook, so every driver (the blocking and async executors, the
//! tower `RetryPolicy`, a hand-written driver) reports the same numbers. They
//! go to whatever recorder the application installed (a Prometheus exporter,
//! say); with none installed they cost a no-op call. Without the feature this
//! module only names them and nothing is recorded.
//!
//! | name | kind | labels | recorded |
//! |---|---|---|---|
//! | `herdless_attempts_total` | counter | — | once per attempt that ended (success or failure) |
//! | `herdless_retries_total` | counter | — | once per retry scheduled (`retry_scheduled`) |
//! | `herdless_retry_successes_total` | counter | — | once per call that succeeded after at least one retry (`retry_succeeded`) |
//! | `herdless_give_ups_total` | counter | `reason` = `terminal` \| `max_attempts` \| `max_elapsed` \| `retry_budget` \| `server_pushback` | once per call that gave up (`retry_abandoned_terminal`, `retry_budget_exhausted`) |
//! | `herdless_hedges_total` | counter | — | once per hedge sent (`hedge_sent`) |
//! | `herdless_hedge_wins_total` | counter | — | once per call won by a hedge (`hedge_won`) |
//! | `herdless_retry_sleep_seconds` | histogram | — | the sleep before each scheduled retry, in seconds (`sleep_s`) |
//! | `herdless_retry_budget_tokens` | gauge | — | a shared [`RetryBudget`]'s tokens after each event (calls with a budget only) |
//! | `herdless_breaker_open` | gauge | — | a shared [`Breaker`]'s state after each event: 1 open, 0 closed (calls with a breaker only) |
//!
//! Notes:
//!
//! - A first-try success emits no event but still counts one attempt (and
//!   sets the gauges when the call has guards).
//! - A call given up while waiting on an open breaker counts a give-up
//!   (`max_elapsed`) but no extra attempt: the retry it waited for never ran.
//! - A call dropped mid-chain counts the attempts that ended, no give-up.
//! - No label carries the task id: task ids are often per request or per
//!   worker, and a label per task id would grow the recorder without bound.
//! - The gauges have no label: with several budgets or breakers in one
//!   process, each event writes the state of the call's own, so the gauge
//!   shows the one used last.
//! - [`Context::metrics(false)`](crate::engine::Context::metrics) turns them
//!   off for a context (the fleet simulator does, beside `trace(false)`: its
//!   virtual clients must not show up in a real process's metrics).
//!
//! [`RetryBudget`]: crate::RetryBudget
//! [`Breaker`]: crate::Breaker

/// Attempts that ended, successful or not (counter).
///
/// ```
/// assert_eq!(herdless::events::metrics::ATTEMPTS, "herdless_attempts_total");
/// ```
pub const ATTEMPTS: &str = "herdless_attempts_total";

/// Retries scheduled (counter).
///
/// ```
/// assert_eq!(herdless::events::metrics::RETRIES, "herdless_retries_total");
/// ```
pub const RETRIES: &str = "herdless_retries_total";

/// Calls that succeeded after at least one retry (counter).
///
/// ```
/// assert_eq!(herdless::events::metrics::RETRY_SUCCESSES, "herdless_retry_successes_total");
/// ```
pub const RETRY_SUCCESSES: &str = "herdless_retry_successes_total";

/// Calls that gave up, labelled `reason` (counter).
///
/// ```
/// assert_eq!(herdless::events::metrics::GIVE_UPS, "herdless_give_ups_total");
/// ```
pub const GIVE_UPS: &str = "herdless_give_ups_total";

/// Hedges sent (counter).
///
/// ```
/// assert_eq!(herdless::events::metrics::HEDGES, "herdless_hedges_total");
/// ```
pub const HEDGES: &str = "herdless_hedges_total";

/// Calls won by a hedge (counter).
///
/// ```
/// assert_eq!(herdless::events::metrics::HEDGE_WINS, "herdless_hedge_wins_total");
/// ```
pub const HEDGE_WINS: &str = "herdless_hedge_wins_total";

/// Requeue answers taken: a server's queue answered an attempt unprocessed
/// (counter; not an attempt).
///
/// ```
/// assert_eq!(herdless::events::metrics::REQUEUES, "herdless_requeues_total");
/// ```
pub const REQUEUES: &str = "herdless_requeues_total";

/// The sleep before each scheduled retry, in seconds (histogram).
///
/// ```
/// assert_eq!(herdless::events::metrics::RETRY_SLEEP, "herdless_retry_sleep_seconds");
/// ```
pub const RETRY_SLEEP: &str = "herdless_retry_sleep_seconds";

/// A shared retry budget's tokens (gauge).
///
/// ```
/// assert_eq!(herdless::events::metrics::BUDGET_TOKENS, "herdless_retry_budget_tokens");
/// ```
pub const BUDGET_TOKENS: &str = "herdless_retry_budget_tokens";

/// A shared breaker's state, 1 open and 0 closed (gauge).
///
/// ```
/// assert_eq!(herdless::events::metrics::BREAKER_OPEN, "herdless_breaker_open");
/// ```
pub const BREAKER_OPEN: &str = "herdless_breaker_open";

/// The label of [`GIVE_UPS`]: its values are [`GiveUp::as_str`](crate::GiveUp::as_str).
///
/// ```
/// assert_eq!(herdless::events::metrics::REASON, "reason");
/// ```
pub const REASON: &str = "reason";

#[cfg(feature = "metrics")]
pub(crate) use record::{copy_failed, event, first_success, installed};

/// Whether a recorder is installed: never without the feature.
#[cfg(not(feature = "metrics"))]
#[inline(always)]
pub(crate) fn installed() -> bool {
    false
}

#[cfg(feature = "metrics")]
mod record {
    use metrics::{Counter, Gauge, Histogram, Key, Label, Level, Metadata, NoopRecorder, Recorder};

    use super::*;
    use crate::events::GiveUp;
    use crate::events::RetryEvent;
    use crate::guard::{Breaker, RetryBudget};

    // Keys built at compile time, hashes included: `metrics::counter!(NAME)`
    // with a constant (not a literal) builds and hashes its key on every
    // call, which a first-try success would pay even with no recorder
    // installed.
    static META: Metadata<'static> =
        Metadata::new(module_path!(), Level::INFO, Some(module_path!()));
    static ATTEMPTS_KEY: Key = Key::from_static_name(ATTEMPTS);
    static RETRIES_KEY: Key = Key::from_static_name(RETRIES);
    static RETRY_SUCCESSES_KEY: Key = Key::from_static_name(RETRY_SUCCESSES);
    static RETRY_SLEEP_KEY: Key = Key::from_static_name(RETRY_SLEEP);
    static HEDGES_KEY: Key = Key::from_static_name(HEDGES);
    static HEDGE_WINS_KEY: Key = Key::from_static_name(HEDGE_WINS);
    static REQUEUES_KEY: Key = Key::from_static_name(REQUEUES);
    static BUDGET_TOKENS_KEY: Key = Key::from_static_name(BUDGET_TOKENS);
    static BREAKER_OPEN_KEY: Key = Key::from_static_name(BREAKER_OPEN);

    macro_rules! give_up_key {
        ($reason:literal) => {{
            static LABELS: [Label; 1] = [Label::from_static_parts(REASON, $reason)];
            static KEY: Key = Key::from_static_parts(GIVE_UPS, &LABELS);
            &KEY
        }};
    }

    fn give_up_key(reason: GiveUp) -> &'static Key {
        match reason {
            GiveUp::Terminal => give_up_key!("terminal"),
            GiveUp::MaxAttempts => give_up_key!("max_attempts"),
            GiveUp::MaxElapsed => give_up_key!("max_elapsed"),
            GiveUp::RetryBudget => give_up_key!("retry_budget"),
            GiveUp::DoNotRetry => give_up_key!("server_pushback"),
        }
    }

    /// Whether a recorder is installed, a thread-local one or the global one
    /// (one thread-local read and one atomic load).
    ///
    /// The facade has no such query: what it hands out when none is
    /// installed is its [`NoopRecorder`], recognised here by its vtable
    /// (the data address is taken from the recorder itself, so only the
    /// vtables are compared). Two types share a vtable only when their
    /// methods are the same code, so a "no" is never wrong. A vtable may be
    /// duplicated between codegen units: an unoptimized build usually
    /// answers "installed" for the no-op recorder too, and then records
    /// through it as before (slower, nothing lost); an optimized build
    /// merges the two and folds the test into the facade's own branch.
    #[inline]
    pub(crate) fn installed() -> bool {
        metrics::with_recorder(|recorder| {
            let noop: &dyn Recorder = &NoopRecorder;
            let recorder = recorder as *const dyn Recorder;
            !std::ptr::eq(
                recorder,
                (noop as *const dyn Recorder).with_addr(recorder.addr()),
            )
        })
    }

    fn counter(key: &'static Key) -> Counter {
        metrics::with_recorder(|r| r.register_counter(key, &META))
    }

    fn gauge(key: &'static Key) -> Gauge {
        metrics::with_recorder(|r| r.register_gauge(key, &META))
    }

    fn histogram(key: &'static Key) -> Histogram {
        metrics::with_recorder(|r| r.register_histogram(key, &META))
    }

    fn gauges(budget: Option<&RetryBudget>, breaker: Option<&Breaker>) {
        if let Some(budget) = budget {
            gauge(&BUDGET_TOKENS_KEY).set(budget.tokens());
        }
        if let Some(breaker) = breaker {
            gauge(&BREAKER_OPEN_KEY).set(if breaker.is_open() { 1.0 } else { 0.0 });
        }
    }

    /// Records one event; `attempt_ended` is false for a give-up while
    /// waiting on the breaker (no attempt ran).
    pub(crate) fn event(
        event: &RetryEvent<'_>,
        attempt_ended: bool,
        budget: Option<&RetryBudget>,
        breaker: Option<&Breaker>,
    ) {
        if !installed() {
            return;
        }
        if attempt_ended {
            counter(&ATTEMPTS_KEY).increment(1);
        }
        match *event {
            RetryEvent::Scheduled { sleep, .. } => {
                counter(&RETRIES_KEY).increment(1);
                histogram(&RETRY_SLEEP_KEY).record(sleep.as_secs_f64());
            }
            RetryEvent::Succeeded { .. } => counter(&RETRY_SUCCESSES_KEY).increment(1),
            RetryEvent::AbandonedTerminal { .. } => {
                counter(give_up_key(GiveUp::Terminal)).increment(1);
            }
            RetryEvent::BudgetExhausted { reason, .. } => {
                counter(give_up_key(reason)).increment(1);
            }
            // Not a decision about an attempt: the state it resumed from was refused.
            RetryEvent::StateInvalid { .. } => {}
            RetryEvent::HedgeSent { .. } => counter(&HEDGES_KEY).increment(1),
            RetryEvent::HedgeWon { .. } => counter(&HEDGE_WINS_KEY).increment(1),
            RetryEvent::Requeued { .. } => counter(&REQUEUES_KEY).increment(1),
        }
        gauges(budget, breaker);
    }

    /// A copy of a hedged call that failed while others were in flight:
    /// one attempt ended, no event.
    pub(crate) fn copy_failed() {
        if installed() {
            counter(&ATTEMPTS_KEY).increment(1);
        }
    }

    /// A first-try success: one attempt, no event. The question inline,
    /// the recording out of line.
    #[inline]
    pub(crate) fn first_success(budget: Option<&RetryBudget>, breaker: Option<&Breaker>) {
        if installed() {
            first_success_recorded(budget, breaker);
        }
    }

    #[inline(never)]
    fn first_success_recorded(budget: Option<&RetryBudget>, breaker: Option<&Breaker>) {
        counter(&ATTEMPTS_KEY).increment(1);
        gauges(budget, breaker);
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn an_installed_recorder_is_seen_and_records() {
            let recorder = metrics_util::debugging::DebuggingRecorder::new();
            let snapshotter = recorder.snapshotter();
            metrics::with_local_recorder(&recorder, || {
                assert!(installed(), "a recorder taken for the no-op one");
                first_success(None, None);
            });
            let recorded = snapshotter.snapshot().into_vec();
            assert_eq!(recorded.len(), 1, "the attempt counter");
            assert_eq!(recorded[0].0.key().name(), ATTEMPTS);
        }

        /// What keeps the `metrics` feature from taxing a process with no
        /// recorder: in an optimized build the facade's no-op recorder is
        /// recognised (unoptimized builds may duplicate its vtable; then it
        /// is recorded through, correct but slower).
        #[cfg(not(debug_assertions))]
        #[test]
        fn the_noop_recorder_is_recognised_in_an_optimized_build() {
            // No unit test installs a global recorder.
            assert!(!installed());
        }

        #[test]
        fn every_give_up_reason_has_its_label() {
            for reason in [
                GiveUp::Terminal,
                GiveUp::MaxAttempts,
                GiveUp::MaxElapsed,
                GiveUp::RetryBudget,
                GiveUp::DoNotRetry,
            ] {
                let key = give_up_key(reason);
                assert_eq!(key.name(), GIVE_UPS);
                let labels: Vec<_> = key.labels().map(|l| (l.key(), l.value())).collect();
                assert_eq!(labels, [(REASON, reason.as_str())]);
            }
        }
    }
}
