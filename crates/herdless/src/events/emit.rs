//! The engine's one event path: `tracing` at the configured level; and the
//! one event a driver emits itself, `retry_not_clonable`.

use tracing::Level;

use crate::events::RetryEvent;

/// `tracing::event!` at a level known only at run time (the macro wants a
/// constant): one callsite per level.
macro_rules! event_at {
    ($level:expr, $($rest:tt)+) => {
        match $level {
            Level::ERROR => tracing::event!(target: "herdless", Level::ERROR, $($rest)+),
            Level::WARN => tracing::event!(target: "herdless", Level::WARN, $($rest)+),
            Level::INFO => tracing::event!(target: "herdless", Level::INFO, $($rest)+),
            Level::DEBUG => tracing::event!(target: "herdless", Level::DEBUG, $($rest)+),
            _ => tracing::event!(target: "herdless", Level::TRACE, $($rest)+),
        }
    };
}

/// Emits `event` through `tracing` (target `herdless`) at `level`.
pub(crate) fn trace(event: &RetryEvent<'_>, level: Level) {
    match *event {
        RetryEvent::Scheduled {
            task_id,
            attempt,
            computed_jitter,
            sleep,
            honored_retry_after,
            timed_out,
            elapsed,
        } => event_at!(
            level,
            event = "retry_scheduled",
            task_id,
            attempt,
            computed_jitter_s = computed_jitter.as_secs_f64(),
            sleep_s = sleep.as_secs_f64(),
            honored_retry_after,
            timed_out,
            elapsed_s = elapsed.as_secs_f64(),
            "retry_scheduled"
        ),
        RetryEvent::Succeeded {
            task_id,
            attempt,
            elapsed,
        } => event_at!(
            level,
            event = "retry_succeeded",
            task_id,
            attempt,
            elapsed_s = elapsed.as_secs_f64(),
            "retry_succeeded"
        ),
        RetryEvent::AbandonedTerminal {
            task_id,
            attempt,
            classification,
            timed_out,
            elapsed,
        } => event_at!(
            level,
            event = "retry_abandoned_terminal",
            task_id,
            attempt,
            classification = classification.as_str(),
            timed_out,
            elapsed_s = elapsed.as_secs_f64(),
            "retry_abandoned_terminal"
        ),
        RetryEvent::BudgetExhausted {
            task_id,
            attempt,
            timed_out,
            elapsed,
            reason,
        } => event_at!(
            level,
            event = "retry_budget_exhausted",
            task_id,
            attempt,
            timed_out,
            elapsed_s = elapsed.as_secs_f64(),
            reason = reason.as_str(),
            "retry_budget_exhausted"
        ),
        RetryEvent::StateInvalid {
            task_id,
            attempt,
            reason,
        } => event_at!(
            level,
            event = "retry_state_invalid",
            task_id,
            attempt,
            reason,
            "retry_state_invalid"
        ),
        RetryEvent::HedgeSent {
            task_id,
            attempt,
            hedge,
            elapsed,
        } => event_at!(
            level,
            event = "hedge_sent",
            task_id,
            attempt,
            hedge,
            elapsed_s = elapsed.as_secs_f64(),
            "hedge_sent"
        ),
        RetryEvent::HedgeWon {
            task_id,
            attempt,
            hedges,
            elapsed,
        } => event_at!(
            level,
            event = "hedge_won",
            task_id,
            attempt,
            hedges,
            elapsed_s = elapsed.as_secs_f64(),
            "hedge_won"
        ),
        RetryEvent::Requeued {
            task_id,
            attempt,
            sleep,
            requeues,
            elapsed,
        } => event_at!(
            level,
            event = "retry_requeued",
            task_id,
            attempt,
            sleep_s = sleep.as_secs_f64(),
            requeues,
            elapsed_s = elapsed.as_secs_f64(),
            "retry_requeued"
        ),
    }
}

/// `retry_not_clonable` (DEBUG, target `herdless`): a request is sent once,
/// never retried, because the driver cannot copy it (a streaming body). The
/// drivers that send requests (the tower policy, the reqwest middleware)
/// emit it before the attempt.
#[cfg_attr(
    not(any(feature = "tower", feature = "reqwest-middleware")),
    allow(dead_code)
)]
pub(crate) fn not_clonable(task_id: &str) {
    tracing::debug!(
        target: "herdless",
        event = "retry_not_clonable",
        task_id,
        "retry_not_clonable"
    );
}
