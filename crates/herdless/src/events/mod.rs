//! Observability: structured `tracing` events and a notify hook.
//!
//! Every decision the executor takes is visible, so a forming retry storm shows
//! in the logs before it shows on the hardware. The events are a public contract
//! (names and fields are stable; fields may be added):
//!
//! | event | default level | fields |
//! |---|---|---|
//! | `retry_scheduled` | WARN | `task_id`, `attempt`, `computed_jitter_s`, `sleep_s`, `honored_retry_after`, `timed_out`, `elapsed_s` |
//! | `retry_succeeded` | INFO | `task_id`, `attempt`, `elapsed_s` |
//! | `retry_abandoned_terminal` | WARN on the first attempt, ERROR after a retry | `task_id`, `attempt`, `classification`, `timed_out`, `elapsed_s` |
//! | `retry_budget_exhausted` | ERROR | `task_id`, `attempt`, `timed_out`, `elapsed_s`, `reason` (`max_attempts`, `max_elapsed`, `retry_budget`, `server_pushback`) |
//! | `retry_state_invalid` | WARN | `task_id`, `attempt`, `reason` (`too_long`, `unknown_version`, `garbled`) |
//! | `hedge_sent` | DEBUG | `task_id`, `attempt` (the copy's number), `hedge` (1 for the call's first hedge), `elapsed_s` |
//! | `hedge_won` | DEBUG | `task_id`, `attempt` (the copy that won), `hedges` (sent by the call), `elapsed_s` |
//!
//! `hedge_sent` and `hedge_won` come from the hedging drivers
//! ([`hedge`](crate::hedge)): a copy of a request sent before the first one
//! answered, and a call won by such a copy (when the original wins, no
//! event: the hedge was wasted, and `herdless_hedges_total` against
//! `herdless_hedge_wins_total` shows how often). Hedges count as attempts:
//! `attempt` numbers every copy of the call.
//!
//! `retry_state_invalid` comes only from a driver that resumes calls from
//! state carried in a message ([`redelivery`](crate::redelivery)): the state
//! was refused and the call starts afresh from what the broker vouches for
//! (its delivery count), never with more than the policy allows.
//!
//! The drivers that send requests (the tower `RetryPolicy`, the reqwest
//! `RetryMiddleware`) add one of their own, outside these levels:
//! `retry_not_clonable` (DEBUG, `task_id`), a request that cannot be copied
//! (a streaming body) is sent once, never retried.
//!
//! The levels are configurable per event ([`EventLevels`], set with
//! [`Retry::event_levels`](crate::Retry::event_levels) or
//! [`Context::event_levels`](crate::engine::Context::event_levels)). A terminal
//! error on the first attempt defaults to WARN, not ERROR: nothing was retried,
//! the endpoint answered "no" to the caller's request (a 404, a 401), and the
//! caller gets that answer as its error; ERROR is kept for calls that spent
//! retries and still failed. See [`levels`].
//!
//! `attempt` is the 1-based number of the attempt that just ended (1 is the
//! first call). `timed_out` says whether that attempt timed out: cut at its
//! deadline by an async executor (the policy's `attempt_timeout`), or ended
//! by an error its classifier calls a timeout
//! ([`RetryCause::Timeout`](crate::RetryCause)). Durations are seconds as `f64`. `retry_succeeded` is emitted only
//! when a retry succeeded (attempt ≥ 2): a first-try success is the hot path and
//! logs nothing. The tracing target is `herdless`, the event's name is both the
//! message and the `event` field.
//!
//! For users without `tracing`, [`Notify`] receives the same events as
//! [`RetryEvent`] values (any `Fn(&RetryEvent<'_>)` closure is a `Notify`).

pub(crate) mod emit;
mod give_up;
pub mod levels;
pub mod metrics;

pub use give_up::GiveUp;
pub use levels::{EventLevels, UnknownEvent};

use std::time::Duration;

use crate::classify::Classification;

/// One retry decision, as passed to a [`Notify`] hook.
///
/// ```
/// use herdless::{GiveUp, RetryEvent};
/// let e = RetryEvent::BudgetExhausted {
///     task_id: "scan-7", attempt: 6, timed_out: false, elapsed: std::time::Duration::from_secs(40),
///     reason: GiveUp::MaxAttempts,
/// };
/// assert_eq!(e.name(), "retry_budget_exhausted");
/// assert_eq!(e.attempt(), 6);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum RetryEvent<'a> {
    /// A retry will happen after `sleep`.
    Scheduled {
        /// The caller's task id (empty when none was set).
        task_id: &'a str,
        /// The attempt that just failed (1-based).
        attempt: u32,
        /// The delay the jitter mode computed.
        computed_jitter: Duration,
        /// The actual sleep (the server's delay, clamped and spread, when honored).
        sleep: Duration,
        /// Whether a server-supplied delay replaced the computed jitter.
        honored_retry_after: bool,
        /// Whether the attempt that failed timed out (cut at its deadline,
        /// or an error its classifier calls a timeout).
        timed_out: bool,
        /// Time since the call started.
        elapsed: Duration,
    },
    /// A retry succeeded.
    Succeeded {
        /// The caller's task id.
        task_id: &'a str,
        /// The attempt that succeeded (≥ 2).
        attempt: u32,
        /// Time since the call started.
        elapsed: Duration,
    },
    /// A terminal (or unknown) error ended the call.
    AbandonedTerminal {
        /// The caller's task id.
        task_id: &'a str,
        /// The attempt that failed.
        attempt: u32,
        /// `Terminal` or `Unknown`.
        classification: Classification,
        /// Whether the attempt timed out (cut at its deadline).
        timed_out: bool,
        /// Time since the call started.
        elapsed: Duration,
    },
    /// The budget ended the call.
    BudgetExhausted {
        /// The caller's task id.
        task_id: &'a str,
        /// The last attempt made.
        attempt: u32,
        /// Whether that attempt timed out (false for a give-up while waiting
        /// on a breaker: no attempt ended).
        timed_out: bool,
        /// Time since the call started.
        elapsed: Duration,
        /// Which budget (`DoNotRetry`: the server's own, it asked not to be retried).
        reason: GiveUp,
    },
    /// A resumed call's travelling state was refused (see
    /// [`redelivery`](crate::redelivery)): it starts afresh from the broker's
    /// delivery count.
    StateInvalid {
        /// The caller's task id.
        task_id: &'a str,
        /// The attempt about to start (the broker's delivery count is its floor).
        attempt: u32,
        /// Why the state was refused: `too_long`, `unknown_version`, `garbled`.
        reason: &'a str,
    },
    /// A hedge was sent: another copy of the request, before the first
    /// answered (see [`hedge`](crate::hedge)).
    HedgeSent {
        /// The caller's task id.
        task_id: &'a str,
        /// The copy's attempt number (hedges count as attempts).
        attempt: u32,
        /// Which hedge of the call (1 for the first).
        hedge: u32,
        /// Time since the call started.
        elapsed: Duration,
    },
    /// A hedge answered first: the call succeeded with it.
    HedgeWon {
        /// The caller's task id.
        task_id: &'a str,
        /// The attempt number of the copy that won.
        attempt: u32,
        /// Hedges the call sent.
        hedges: u32,
        /// Time since the call started.
        elapsed: Duration,
    },
    /// The server queued the attempt and answered it unprocessed
    /// ([`Classification::Requeued`]): the call comes back after `sleep`,
    /// and the attempt does not count.
    Requeued {
        /// The caller's task id.
        task_id: &'a str,
        /// The attempt the server queued (its number is used again).
        attempt: u32,
        /// The wait (the server's delay, clamped and spread).
        sleep: Duration,
        /// Requeue answers this call has taken, this one included.
        requeues: u32,
        /// Time since the call started.
        elapsed: Duration,
    },
}

impl RetryEvent<'_> {
    /// The event's stable name (`retry_scheduled`, `retry_succeeded`,
    /// `retry_abandoned_terminal`, `retry_budget_exhausted`,
    /// `retry_state_invalid`, `hedge_sent`, `hedge_won`, `retry_requeued`).
    ///
    /// ```
    /// let e = herdless::RetryEvent::Succeeded { task_id: "", attempt: 2, elapsed: Default::default() };
    /// assert_eq!(e.name(), "retry_succeeded");
    /// ```
    pub fn name(&self) -> &'static str {
        match self {
            RetryEvent::Scheduled { .. } => "retry_scheduled",
            RetryEvent::Succeeded { .. } => "retry_succeeded",
            RetryEvent::AbandonedTerminal { .. } => "retry_abandoned_terminal",
            RetryEvent::BudgetExhausted { .. } => "retry_budget_exhausted",
            RetryEvent::StateInvalid { .. } => "retry_state_invalid",
            RetryEvent::HedgeSent { .. } => "hedge_sent",
            RetryEvent::HedgeWon { .. } => "hedge_won",
            RetryEvent::Requeued { .. } => "retry_requeued",
        }
    }

    /// The attempt number the event is about.
    ///
    /// ```
    /// let e = herdless::RetryEvent::Succeeded { task_id: "", attempt: 3, elapsed: Default::default() };
    /// assert_eq!(e.attempt(), 3);
    /// ```
    pub fn attempt(&self) -> u32 {
        match *self {
            RetryEvent::Scheduled { attempt, .. }
            | RetryEvent::Succeeded { attempt, .. }
            | RetryEvent::AbandonedTerminal { attempt, .. }
            | RetryEvent::BudgetExhausted { attempt, .. }
            | RetryEvent::StateInvalid { attempt, .. }
            | RetryEvent::HedgeSent { attempt, .. }
            | RetryEvent::HedgeWon { attempt, .. }
            | RetryEvent::Requeued { attempt, .. } => attempt,
        }
    }

    /// The task id the event is about.
    ///
    /// ```
    /// let e = herdless::RetryEvent::Succeeded { task_id: "t", attempt: 3, elapsed: Default::default() };
    /// assert_eq!(e.task_id(), "t");
    /// ```
    pub fn task_id(&self) -> &str {
        match *self {
            RetryEvent::Scheduled { task_id, .. }
            | RetryEvent::Succeeded { task_id, .. }
            | RetryEvent::AbandonedTerminal { task_id, .. }
            | RetryEvent::BudgetExhausted { task_id, .. }
            | RetryEvent::StateInvalid { task_id, .. }
            | RetryEvent::HedgeSent { task_id, .. }
            | RetryEvent::HedgeWon { task_id, .. }
            | RetryEvent::Requeued { task_id, .. } => task_id,
        }
    }

    /// Visits the event's fields in their documented order (without the name),
    /// for writing events in a format of one's own (the CLI's JSON lines use it).
    ///
    /// ```
    /// use herdless::RetryEvent;
    /// let e = RetryEvent::Succeeded { task_id: "t", attempt: 2, elapsed: std::time::Duration::from_millis(1500) };
    /// let mut out = Vec::new();
    /// e.visit(|name, value| out.push(format!("{name}={value}")));
    /// assert_eq!(out, ["task_id=t", "attempt=2", "elapsed_s=1.5"]);
    /// ```
    pub fn visit(&self, mut f: impl FnMut(&'static str, EventValue<'_>)) {
        use EventValue::{Bool, Seconds, Str, U32};
        match *self {
            RetryEvent::Scheduled {
                task_id,
                attempt,
                computed_jitter,
                sleep,
                honored_retry_after,
                timed_out,
                elapsed,
            } => {
                f("task_id", Str(task_id));
                f("attempt", U32(attempt));
                f("computed_jitter_s", Seconds(computed_jitter));
                f("sleep_s", Seconds(sleep));
                f("honored_retry_after", Bool(honored_retry_after));
                f("timed_out", Bool(timed_out));
                f("elapsed_s", Seconds(elapsed));
            }
            RetryEvent::Succeeded {
                task_id,
                attempt,
                elapsed,
            } => {
                f("task_id", Str(task_id));
                f("attempt", U32(attempt));
                f("elapsed_s", Seconds(elapsed));
            }
            RetryEvent::AbandonedTerminal {
                task_id,
                attempt,
                classification,
                timed_out,
                elapsed,
            } => {
                f("task_id", Str(task_id));
                f("attempt", U32(attempt));
                f("classification", Str(classification.as_str()));
                f("timed_out", Bool(timed_out));
                f("elapsed_s", Seconds(elapsed));
            }
            RetryEvent::BudgetExhausted {
                task_id,
                attempt,
                timed_out,
                elapsed,
                reason,
            } => {
                f("task_id", Str(task_id));
                f("attempt", U32(attempt));
                f("timed_out", Bool(timed_out));
                f("elapsed_s", Seconds(elapsed));
                f("reason", Str(reason.as_str()));
            }
            RetryEvent::StateInvalid {
                task_id,
                attempt,
                reason,
            } => {
                f("task_id", Str(task_id));
                f("attempt", U32(attempt));
                f("reason", Str(reason));
            }
            RetryEvent::HedgeSent {
                task_id,
                attempt,
                hedge,
                elapsed,
            } => {
                f("task_id", Str(task_id));
                f("attempt", U32(attempt));
                f("hedge", U32(hedge));
                f("elapsed_s", Seconds(elapsed));
            }
            RetryEvent::HedgeWon {
                task_id,
                attempt,
                hedges,
                elapsed,
            } => {
                f("task_id", Str(task_id));
                f("attempt", U32(attempt));
                f("hedges", U32(hedges));
                f("elapsed_s", Seconds(elapsed));
            }
            RetryEvent::Requeued {
                task_id,
                attempt,
                sleep,
                requeues,
                elapsed,
            } => {
                f("task_id", Str(task_id));
                f("attempt", U32(attempt));
                f("sleep_s", Seconds(sleep));
                f("requeues", U32(requeues));
                f("elapsed_s", Seconds(elapsed));
            }
        }
    }
}

/// One field value of a [`RetryEvent`], as passed to [`RetryEvent::visit`].
///
/// ```
/// use herdless::events::EventValue;
/// assert_eq!(EventValue::Seconds(std::time::Duration::from_millis(250)).to_string(), "0.25");
/// assert_eq!(EventValue::Bool(true).to_string(), "true");
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum EventValue<'a> {
    /// A string (task id, classification, reason).
    Str(&'a str),
    /// A count (attempt).
    U32(u32),
    /// A duration, reported in seconds (fields ending in `_s`).
    Seconds(Duration),
    /// A flag (honored_retry_after).
    Bool(bool),
}

impl std::fmt::Display for EventValue<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            EventValue::Str(s) => f.write_str(s),
            EventValue::U32(n) => write!(f, "{n}"),
            EventValue::Seconds(d) => write!(f, "{}", d.as_secs_f64()),
            EventValue::Bool(b) => write!(f, "{b}"),
        }
    }
}

/// Receives every [`RetryEvent`], beside `tracing`.
///
/// ```
/// use std::sync::Mutex;
/// use herdless::{Notify, RetryEvent};
/// let names = Mutex::new(Vec::new());
/// let hook = |e: &RetryEvent<'_>| names.lock().unwrap().push(e.name());
/// hook.notify(&RetryEvent::Succeeded { task_id: "", attempt: 2, elapsed: Default::default() });
/// assert_eq!(names.into_inner().unwrap(), vec!["retry_succeeded"]);
/// ```
pub trait Notify {
    /// Whether this hook does anything: `false` only for [`NoNotify`], so
    /// that, with no `tracing` subscriber and no metrics, the engine builds no
    /// event at all.
    const ACTIVE: bool = true;

    /// Called once per event, synchronously, before the executor acts on it.
    fn notify(&self, event: &RetryEvent<'_>);
}

impl<F: Fn(&RetryEvent<'_>)> Notify for F {
    fn notify(&self, event: &RetryEvent<'_>) {
        self(event)
    }
}

/// The default hook: does nothing (events still go to `tracing`).
///
/// ```
/// use herdless::{Notify, RetryEvent};
/// use herdless::events::NoNotify;
/// NoNotify.notify(&RetryEvent::Succeeded { task_id: "", attempt: 2, elapsed: Default::default() });
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct NoNotify;

impl Notify for NoNotify {
    const ACTIVE: bool = false;

    #[inline]
    fn notify(&self, _event: &RetryEvent<'_>) {}
}
