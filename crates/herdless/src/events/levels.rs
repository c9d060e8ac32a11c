//! [`EventLevels`]: the `tracing` level of each retry event, configurable.
//!
//! | event | default level |
//! |---|---|
//! | `retry_scheduled` | WARN |
//! | `retry_succeeded` | INFO |
//! | `retry_abandoned_terminal` on the first attempt | WARN |
//! | `retry_abandoned_terminal` after a retry | ERROR |
//! | `retry_budget_exhausted` | ERROR |
//! | `retry_state_invalid` | WARN |
//! | `hedge_sent` | DEBUG |
//! | `hedge_won` | DEBUG |
//! | `retry_requeued` | INFO |
//!
//! The hedging events are DEBUG: a hedge is the latency tail's ordinary
//! path (a few percent of calls, by design), not a sign of trouble; their
//! rate is in the metrics (`herdless_hedges_total`). A hedge the budget
//! refuses logs nothing either: the call goes on with the copies it has.
//!
//! A terminal error on the **first** attempt is WARN, not ERROR: nothing was
//! retried, the endpoint answered and the answer was "no" (a 404, a 401, a
//! validation error). It is the caller's error, which the caller sees in the
//! returned [`RetryError`](crate::RetryError) anyway; logging it at ERROR would
//! make every bad request page someone as if the retry layer had failed. WARN
//! rather than INFO keeps it under the usual `warn` filter, because a burst of
//! them is still worth seeing. A terminal error *after* retries stays ERROR:
//! the call spent retries (and the fleet's capacity) and still failed.
//!
//! Set levels on a [`Retry`](crate::Retry) with
//! [`Retry::event_levels`](crate::Retry::event_levels), or on an engine
//! [`Context`](crate::engine::Context) with
//! [`Context::event_levels`](crate::engine::Context::event_levels); every
//! driver (the executors, the tower policy, a hand-written driver) emits through
//! the context, so the levels hold everywhere.

use std::fmt;

/// `tracing`'s level type, re-exported so levels can be named without a
/// direct `tracing` dependency.
///
/// ```
/// use herdless::events::levels::Level;
/// assert!(Level::ERROR < Level::WARN); // more severe is smaller
/// ```
pub use tracing::Level;

use crate::events::RetryEvent;

/// The `tracing` level of each retry event (see the [module
/// documentation](self) for the defaults and why).
///
/// ```
/// use herdless::events::EventLevels;
/// use tracing::Level;
/// let quiet = EventLevels::default()
///     .retry_scheduled(Level::DEBUG)
///     .set("retry_budget_exhausted", Level::WARN)?;
/// assert_eq!(quiet.get("retry_scheduled"), Some(Level::DEBUG));
/// assert_eq!(quiet.get("retry_budget_exhausted"), Some(Level::WARN));
/// # Ok::<(), herdless::events::UnknownEvent>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct EventLevels {
    scheduled: Lv,
    succeeded: Lv,
    terminal_first: Lv,
    terminal: Lv,
    exhausted: Lv,
    state_invalid: Lv,
    hedge_sent: Lv,
    hedge_won: Lv,
    requeued: Lv,
}

/// A `tracing::Level` in one byte (a `Level` is a word): the engine's
/// `Context` carries five of them and is built once per call.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Lv(u8);

impl Lv {
    const fn of(level: Level) -> Lv {
        Lv(match level {
            Level::ERROR => 0,
            Level::WARN => 1,
            Level::INFO => 2,
            Level::DEBUG => 3,
            _ => 4,
        })
    }

    #[inline]
    const fn level(self) -> Level {
        match self.0 {
            0 => Level::ERROR,
            1 => Level::WARN,
            2 => Level::INFO,
            3 => Level::DEBUG,
            _ => Level::TRACE,
        }
    }
}

impl fmt::Debug for EventLevels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventLevels")
            .field("scheduled", &self.scheduled.level())
            .field("succeeded", &self.succeeded.level())
            .field("terminal_first", &self.terminal_first.level())
            .field("terminal", &self.terminal.level())
            .field("exhausted", &self.exhausted.level())
            .field("state_invalid", &self.state_invalid.level())
            .field("hedge_sent", &self.hedge_sent.level())
            .field("hedge_won", &self.hedge_won.level())
            .field("requeued", &self.requeued.level())
            .finish()
    }
}

impl Default for EventLevels {
    fn default() -> Self {
        EventLevels::DEFAULT
    }
}

impl EventLevels {
    /// The defaults: WARN, INFO, WARN (terminal on the first attempt), ERROR
    /// (terminal after a retry), ERROR, WARN (`retry_state_invalid`), DEBUG
    /// (`hedge_sent`), DEBUG (`hedge_won`), INFO (`retry_requeued`: a server's
    /// queue at work, not a failure).
    ///
    /// ```
    /// use herdless::events::EventLevels;
    /// assert_eq!(EventLevels::DEFAULT, EventLevels::default());
    /// assert_eq!(EventLevels::DEFAULT.get("retry_succeeded"), Some(tracing::Level::INFO));
    /// ```
    pub const DEFAULT: EventLevels = EventLevels {
        scheduled: Lv::of(Level::WARN),
        succeeded: Lv::of(Level::INFO),
        terminal_first: Lv::of(Level::WARN),
        terminal: Lv::of(Level::ERROR),
        exhausted: Lv::of(Level::ERROR),
        state_invalid: Lv::of(Level::WARN),
        hedge_sent: Lv::of(Level::DEBUG),
        hedge_won: Lv::of(Level::DEBUG),
        requeued: Lv::of(Level::INFO),
    };

    /// The eight event names, in the order of the events table.
    ///
    /// ```
    /// assert_eq!(herdless::events::EventLevels::NAMES.len(), 8);
    /// ```
    pub const NAMES: [&'static str; 8] = [
        "retry_scheduled",
        "retry_succeeded",
        "retry_abandoned_terminal",
        "retry_budget_exhausted",
        "retry_state_invalid",
        "hedge_sent",
        "hedge_won",
        "retry_requeued",
    ];

    /// The level of `retry_scheduled`.
    ///
    /// ```
    /// let l = herdless::events::EventLevels::default().retry_scheduled(tracing::Level::INFO);
    /// assert_eq!(l.get("retry_scheduled"), Some(tracing::Level::INFO));
    /// ```
    pub const fn retry_scheduled(mut self, level: Level) -> Self {
        self.scheduled = Lv::of(level);
        self
    }

    /// The level of `retry_succeeded`.
    ///
    /// ```
    /// let l = herdless::events::EventLevels::default().retry_succeeded(tracing::Level::DEBUG);
    /// assert_eq!(l.get("retry_succeeded"), Some(tracing::Level::DEBUG));
    /// ```
    pub const fn retry_succeeded(mut self, level: Level) -> Self {
        self.succeeded = Lv::of(level);
        self
    }

    /// The level of `retry_abandoned_terminal` after at least one retry
    /// (attempt ≥ 2).
    ///
    /// ```
    /// let l = herdless::events::EventLevels::default().retry_abandoned_terminal(tracing::Level::WARN);
    /// assert_eq!(l.get("retry_abandoned_terminal"), Some(tracing::Level::WARN));
    /// ```
    pub const fn retry_abandoned_terminal(mut self, level: Level) -> Self {
        self.terminal = Lv::of(level);
        self
    }

    /// The level of `retry_abandoned_terminal` on the first attempt (nothing
    /// was retried: the caller's error, answered by the endpoint).
    ///
    /// ```
    /// use herdless::{Classification, RetryEvent};
    /// use tracing::Level;
    /// let l = herdless::events::EventLevels::default().first_attempt_terminal(Level::INFO);
    /// let e = RetryEvent::AbandonedTerminal {
    ///     task_id: "", attempt: 1, classification: Classification::terminal(), timed_out: false,
    ///     elapsed: Default::default(),
    /// };
    /// assert_eq!(l.level(&e), Level::INFO);
    /// ```
    pub const fn first_attempt_terminal(mut self, level: Level) -> Self {
        self.terminal_first = Lv::of(level);
        self
    }

    /// The level of `retry_budget_exhausted`.
    ///
    /// ```
    /// let l = herdless::events::EventLevels::default().retry_budget_exhausted(tracing::Level::WARN);
    /// assert_eq!(l.get("retry_budget_exhausted"), Some(tracing::Level::WARN));
    /// ```
    pub const fn retry_budget_exhausted(mut self, level: Level) -> Self {
        self.exhausted = Lv::of(level);
        self
    }

    /// The level of `retry_state_invalid`.
    ///
    /// ```
    /// let l = herdless::events::EventLevels::default().retry_state_invalid(tracing::Level::ERROR);
    /// assert_eq!(l.get("retry_state_invalid"), Some(tracing::Level::ERROR));
    /// ```
    pub const fn retry_state_invalid(mut self, level: Level) -> Self {
        self.state_invalid = Lv::of(level);
        self
    }

    /// The level of `hedge_sent`.
    ///
    /// ```
    /// let l = herdless::events::EventLevels::default().hedge_sent(tracing::Level::INFO);
    /// assert_eq!(l.get("hedge_sent"), Some(tracing::Level::INFO));
    /// ```
    pub const fn hedge_sent(mut self, level: Level) -> Self {
        self.hedge_sent = Lv::of(level);
        self
    }

    /// The level of `hedge_won`.
    ///
    /// ```
    /// let l = herdless::events::EventLevels::default().hedge_won(tracing::Level::INFO);
    /// assert_eq!(l.get("hedge_won"), Some(tracing::Level::INFO));
    /// ```
    pub const fn hedge_won(mut self, level: Level) -> Self {
        self.hedge_won = Lv::of(level);
        self
    }

    /// The level of `retry_requeued`.
    ///
    /// ```
    /// let l = herdless::events::EventLevels::default().retry_requeued(tracing::Level::DEBUG);
    /// assert_eq!(l.get("retry_requeued"), Some(tracing::Level::DEBUG));
    /// ```
    pub const fn retry_requeued(mut self, level: Level) -> Self {
        self.requeued = Lv::of(level);
        self
    }

    /// Sets an event's level by its name (from a configuration file, say).
    /// `retry_abandoned_terminal` sets both of its levels (first attempt and
    /// after a retry).
    ///
    /// ```
    /// use herdless::events::EventLevels;
    /// assert!(EventLevels::default().set("retry_scheduled", tracing::Level::INFO).is_ok());
    /// let err = EventLevels::default().set("retry_sheduled", tracing::Level::INFO).unwrap_err();
    /// assert_eq!(err.to_string(), "unknown retry event \"retry_sheduled\" (expected one of retry_scheduled, retry_succeeded, retry_abandoned_terminal, retry_budget_exhausted, retry_state_invalid, hedge_sent, hedge_won, retry_requeued)");
    /// ```
    ///
    /// # Errors
    ///
    /// [`UnknownEvent`] when `event` is not one of [`NAMES`](Self::NAMES).
    pub fn set(self, event: &str, level: Level) -> Result<Self, UnknownEvent> {
        Ok(match event {
            "retry_scheduled" => self.retry_scheduled(level),
            "retry_succeeded" => self.retry_succeeded(level),
            "retry_abandoned_terminal" => self
                .retry_abandoned_terminal(level)
                .first_attempt_terminal(level),
            "retry_budget_exhausted" => self.retry_budget_exhausted(level),
            "retry_state_invalid" => self.retry_state_invalid(level),
            "hedge_sent" => self.hedge_sent(level),
            "hedge_won" => self.hedge_won(level),
            "retry_requeued" => self.retry_requeued(level),
            other => return Err(UnknownEvent(other.to_owned())),
        })
    }

    /// An event's level by its name (`retry_abandoned_terminal`: after a
    /// retry), or `None` for an unknown name.
    ///
    /// ```
    /// let l = herdless::events::EventLevels::default();
    /// assert_eq!(l.get("retry_abandoned_terminal"), Some(tracing::Level::ERROR));
    /// assert_eq!(l.get("nope"), None);
    /// ```
    pub fn get(&self, event: &str) -> Option<Level> {
        match event {
            "retry_scheduled" => Some(self.scheduled.level()),
            "retry_succeeded" => Some(self.succeeded.level()),
            "retry_abandoned_terminal" => Some(self.terminal.level()),
            "retry_budget_exhausted" => Some(self.exhausted.level()),
            "retry_state_invalid" => Some(self.state_invalid.level()),
            "hedge_sent" => Some(self.hedge_sent.level()),
            "hedge_won" => Some(self.hedge_won.level()),
            "retry_requeued" => Some(self.requeued.level()),
            _ => None,
        }
    }

    /// The level this event is emitted at.
    ///
    /// ```
    /// use herdless::{events::EventLevels, RetryEvent};
    /// let e = RetryEvent::Succeeded { task_id: "", attempt: 2, elapsed: Default::default() };
    /// assert_eq!(EventLevels::default().level(&e), tracing::Level::INFO);
    /// ```
    #[inline]
    pub fn level(&self, event: &RetryEvent<'_>) -> Level {
        match *event {
            RetryEvent::Scheduled { .. } => self.scheduled,
            RetryEvent::Succeeded { .. } => self.succeeded,
            RetryEvent::AbandonedTerminal { attempt, .. } if attempt <= 1 => self.terminal_first,
            RetryEvent::AbandonedTerminal { .. } => self.terminal,
            RetryEvent::BudgetExhausted { .. } => self.exhausted,
            RetryEvent::StateInvalid { .. } => self.state_invalid,
            RetryEvent::HedgeSent { .. } => self.hedge_sent,
            RetryEvent::HedgeWon { .. } => self.hedge_won,
            RetryEvent::Requeued { .. } => self.requeued,
        }
        .level()
    }
}

/// An event name [`EventLevels::set`] does not know.
///
/// ```
/// let e = herdless::events::EventLevels::default().set("x", tracing::Level::INFO).unwrap_err();
/// assert_eq!(e.name(), "x");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownEvent(String);

impl UnknownEvent {
    /// The name that was given.
    ///
    /// ```
    /// let e = herdless::events::EventLevels::default().set("y", tracing::Level::INFO).unwrap_err();
    /// assert_eq!(e.name(), "y");
    /// ```
    pub fn name(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for UnknownEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown retry event {:?} (expected one of {})",
            self.0,
            EventLevels::NAMES.join(", ")
        )
    }
}

impl std::error::Error for UnknownEvent {}
