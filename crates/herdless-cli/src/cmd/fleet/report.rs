//! The fleet's report: outcome counts, give-ups, and the attempt times'
//! histogram and busiest windows, measured with the simulator's metrics
//! ([`herdless_sim::metrics`]).

use std::time::Duration;

use herdless::GiveUp;
use herdless_sim::metrics::{self, BUCKET, Timeline};
use serde::Serialize;

use super::args::FleetStrategy;
use super::balance::UrlCalls;
use super::run::{AttemptAt, Outcome, WorkerEnd};

/// Give-ups by reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub(crate) struct GiveUps {
    /// Terminal (or unknown) errors.
    pub(crate) terminal: u64,
    /// `max_attempts` reached.
    pub(crate) max_attempts: u64,
    /// The next sleep would have passed `max_elapsed` (or the urgent deadline).
    pub(crate) max_elapsed: u64,
    /// The shared retry budget denied a retry.
    pub(crate) retry_budget: u64,
}

/// One 100 ms histogram bucket.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct Bucket {
    /// The bucket's start, seconds since the fleet started.
    pub(crate) start_s: f64,
    /// Attempts started in it.
    pub(crate) attempts: u64,
}

/// The busiest 100 ms window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct PeakReport {
    /// Attempts started in it.
    pub(crate) attempts: u64,
    /// `attempts` over all the attempts counted (the share of attempts).
    pub(crate) share_of_attempts: f64,
    /// `attempts / workers` (the share of the fleet; above 1 when workers
    /// attempt more than once in the window).
    pub(crate) share_of_fleet: f64,
    /// Its start, seconds since the fleet started.
    pub(crate) start_s: f64,
}

/// The fleet's report (`--json` prints exactly this).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct FleetReport {
    /// The fleet-level pieces in use.
    pub(crate) strategy: FleetStrategy,
    /// The URLs, in the order given, and the requests each got (with
    /// several, each request went to the next in turn).
    pub(crate) urls: Vec<UrlCalls>,
    /// Number of workers.
    pub(crate) workers: u64,
    /// Workers whose call succeeded.
    pub(crate) succeeded: u64,
    /// Workers whose call ended on a terminal error.
    pub(crate) terminal: u64,
    /// Workers whose budget ran out.
    pub(crate) exhausted: u64,
    /// Whether SIGINT, SIGTERM or SIGHUP ended the fleet before every call ended:
    /// the report is then partial, over what finished.
    pub(crate) interrupted: bool,
    /// Workers whose call was still running when the fleet was interrupted
    /// (0 unless `interrupted`). With `succeeded`, `terminal` and
    /// `exhausted` they sum to `workers`.
    pub(crate) interrupted_workers: u64,
    /// Every request sent, first tries included.
    pub(crate) calls: u64,
    /// Attempts numbered 2 or more.
    pub(crate) retries: u64,
    /// Attempts ended by `--timeout` (connect to end of response: a body that
    /// stalls counts).
    pub(crate) timed_out_attempts: u64,
    /// Response body bytes read (and discarded) over all attempts.
    pub(crate) body_bytes: u64,
    /// From the first attempt to the last worker's end, seconds.
    pub(crate) duration_s: f64,
    /// From the fleet's start to the end of the last successful call, seconds
    /// (null when none succeeded).
    pub(crate) drain_s: Option<f64>,
    /// `calls / workers`.
    pub(crate) calls_per_worker: f64,
    /// The most calls any one worker made.
    pub(crate) max_calls_per_worker: u64,
    /// Give-ups by reason (`terminal` equals the `terminal` count; the other
    /// three sum to `exhausted`).
    pub(crate) give_ups: GiveUps,
    /// Retries the shared budget denied (each ends one call: equals
    /// `give_ups.retry_budget`).
    pub(crate) budget_denials: u64,
    /// The budget's level when the fleet ended (null without a budget).
    pub(crate) budget_tokens_left: Option<f64>,
    /// Busiest 100 ms window of give-ups (exhausted calls' ends): a budget
    /// cliff shows as one window holding most of them.
    pub(crate) give_ups_peak_100ms: PeakReport,
    /// `calls / duration_s`.
    pub(crate) attempts_per_s: f64,
    /// Busiest 100 ms window over all attempts.
    pub(crate) peak_100ms: PeakReport,
    /// Busiest 100 ms window over retries only.
    pub(crate) peak_100ms_retries: PeakReport,
    /// Attempts per fixed 100 ms bucket, from 0 to the last attempt.
    pub(crate) histogram: Vec<Bucket>,
}

/// Nanoseconds as seconds.
fn secs(ns: u64) -> f64 {
    Duration::from_nanos(ns).as_secs_f64()
}

/// Builds the report from every worker's end and attempts: the windows and
/// buckets are the simulator's ([`Timeline::peak`] over the exact attempt
/// times, [`metrics::Histogram`] buckets), so a fleet over real sockets and a
/// simulated one are measured the same way.
pub(crate) fn summarize(
    ends: &[WorkerEnd],
    attempts: &[AttemptAt],
    duration: Duration,
    strategy: FleetStrategy,
    budget_tokens_left: Option<f64>,
) -> FleetReport {
    let workers = ends.len() as u64;
    let count = |o: Outcome| ends.iter().filter(|x| x.outcome == o).count() as u64;
    let reason = |r: GiveUp| ends.iter().filter(|x| x.reason == Some(r)).count() as u64;
    let give_ups = GiveUps {
        terminal: reason(GiveUp::Terminal),
        max_attempts: reason(GiveUp::MaxAttempts),
        max_elapsed: reason(GiveUp::MaxElapsed),
        retry_budget: reason(GiveUp::RetryBudget),
    };
    let drain_s = ends
        .iter()
        .filter(|e| e.outcome == Outcome::Succeeded)
        .map(|e| e.end_ns)
        .max()
        .map(secs);
    let mut per_worker: std::collections::HashMap<u32, u64> = std::collections::HashMap::new();
    for a in attempts {
        *per_worker.entry(a.worker).or_default() += 1;
    }
    let give_up_times: Timeline = ends
        .iter()
        .filter(|e| e.outcome == Outcome::Exhausted)
        .map(|e| e.end_ns)
        .collect();
    let all: Timeline = attempts.iter().map(|a| a.t_ns).collect();
    let retries: Timeline = attempts
        .iter()
        .filter(|a| a.number >= 2)
        .map(|a| a.t_ns)
        .collect();
    let ratio = |n: u64, d: u64| if d == 0 { 0.0 } else { n as f64 / d as f64 };
    let peak = |times: &Timeline| {
        let p = times.peak(BUCKET);
        PeakReport {
            attempts: p.count,
            share_of_attempts: ratio(p.count, times.len() as u64),
            share_of_fleet: ratio(p.count, workers),
            start_s: secs(p.start_ns),
        }
    };
    let histogram = all
        .histogram()
        .counts()
        .iter()
        .enumerate()
        .map(|(i, &n)| Bucket {
            start_s: metrics::bucket_start(i).as_secs_f64(),
            attempts: u64::from(n),
        })
        .collect();
    let duration_s = duration.as_secs_f64();
    FleetReport {
        strategy,
        urls: Vec::new(),
        workers,
        succeeded: count(Outcome::Succeeded),
        terminal: count(Outcome::Terminal),
        exhausted: count(Outcome::Exhausted),
        interrupted: false,
        interrupted_workers: count(Outcome::Interrupted),
        calls: all.len() as u64,
        retries: retries.len() as u64,
        timed_out_attempts: attempts.iter().filter(|a| a.timed_out).count() as u64,
        body_bytes: attempts
            .iter()
            .fold(0u64, |n, a| n.saturating_add(a.body_bytes)),
        duration_s,
        drain_s,
        calls_per_worker: ratio(all.len() as u64, workers),
        max_calls_per_worker: per_worker.values().copied().max().unwrap_or(0),
        give_ups,
        budget_denials: give_ups.retry_budget,
        budget_tokens_left,
        give_ups_peak_100ms: peak(&give_up_times),
        attempts_per_s: if duration_s > 0.0 {
            all.len() as f64 / duration_s
        } else {
            0.0
        },
        peak_100ms: peak(&all),
        peak_100ms_retries: peak(&retries),
        histogram,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::fleet::args::BudgetKind;
    use crate::cmd::fleet::render::render_text;

    #[test]
    fn summary_counts_and_histogram() {
        let ms = |ms: u64| ms * 1_000_000;
        let end = |outcome, reason, end_ms| WorkerEnd {
            outcome,
            reason,
            end_ns: ms(end_ms),
        };
        let ends = [
            end(Outcome::Succeeded, None, 900),
            end(Outcome::Exhausted, Some(GiveUp::RetryBudget), 500),
            end(Outcome::Terminal, Some(GiveUp::Terminal), 20),
        ];
        let at = |t_ms, number, worker| AttemptAt {
            t_ns: ms(t_ms),
            number,
            worker,
            // Worker 1's first attempt timed out; each success read 2 bytes.
            timed_out: (t_ms, worker) == (10, 1),
            body_bytes: if t_ms == 310 { 2 } else { 0 },
        };
        let attempts = [
            at(0, 1, 0),
            at(10, 1, 1),
            at(20, 1, 2),
            at(250, 2, 0),
            at(310, 2, 1),
        ];
        let strategy = FleetStrategy {
            retry_budget: BudgetKind::Grpc,
            budget_tokens: Some(10.0),
            breaker: None,
            breaker_release_s: None,
            throttle: false,
            waves: true,
            urgent_s: None,
            urgent_workers: 0,
        };
        let r = summarize(
            &ends,
            &attempts,
            Duration::from_secs(1),
            strategy,
            Some(4.5),
        );
        assert_eq!(
            (r.workers, r.succeeded, r.terminal, r.exhausted),
            (3, 1, 1, 1)
        );
        assert_eq!((r.interrupted, r.interrupted_workers), (false, 0));
        assert_eq!((r.calls, r.retries), (5, 2));
        assert_eq!((r.timed_out_attempts, r.body_bytes), (1, 2));
        assert_eq!(r.peak_100ms.attempts, 3);
        assert_eq!(r.peak_100ms_retries.attempts, 2);
        assert!((r.peak_100ms_retries.share_of_fleet - 2.0 / 3.0).abs() < 1e-9);
        assert!((r.peak_100ms_retries.share_of_attempts - 1.0).abs() < 1e-9);
        assert!((r.peak_100ms.share_of_attempts - 3.0 / 5.0).abs() < 1e-9);
        let counts: Vec<u64> = r.histogram.iter().map(|b| b.attempts).collect();
        assert_eq!(counts, vec![3, 0, 1, 1]);
        let starts: Vec<f64> = r.histogram.iter().map(|b| b.start_s).collect();
        assert_eq!(starts, vec![0.0, 0.1, 0.2, 0.3], "exact bucket starts");
        assert!((r.attempts_per_s - 5.0).abs() < 1e-9);
        // The strategy comparison fields.
        assert_eq!(r.drain_s, Some(0.9));
        assert!((r.calls_per_worker - 5.0 / 3.0).abs() < 1e-9);
        assert_eq!(r.max_calls_per_worker, 2);
        assert_eq!(
            r.give_ups,
            GiveUps {
                terminal: 1,
                max_attempts: 0,
                max_elapsed: 0,
                retry_budget: 1
            }
        );
        assert_eq!(r.budget_denials, 1);
        assert_eq!(r.budget_tokens_left, Some(4.5));
        assert_eq!(r.give_ups_peak_100ms.attempts, 1);
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["strategy"]["retry_budget"], "grpc");
        assert_eq!(json["give_ups"]["retry_budget"], 1);
        let text = render_text(&r);
        assert!(text.contains("exhausted    1"), "{text}");
        assert!(text.contains("timeouts     1 attempts"), "{text}");
        assert!(text.contains("retry_budget 1"), "{text}");
        // Nobody succeeded: no drain time.
        let none = summarize(
            &ends[1..],
            &attempts,
            Duration::from_secs(1),
            strategy,
            None,
        );
        assert_eq!(none.drain_s, None);
        // An interrupted worker is counted as such, and in nothing else.
        let mut ends = ends.to_vec();
        ends.push(end(Outcome::Interrupted, None, 950));
        let mut r = summarize(&ends, &attempts, Duration::from_secs(1), strategy, None);
        r.interrupted = true;
        assert_eq!(
            (r.workers, r.succeeded, r.terminal, r.exhausted),
            (4, 1, 1, 1)
        );
        assert_eq!(r.interrupted_workers, 1);
        assert_eq!(r.give_ups.max_attempts + r.give_ups.retry_budget, 1);
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(
            (&json["interrupted"], &json["interrupted_workers"]),
            (&true.into(), &1.into())
        );
        let text = render_text(&r);
        assert!(text.starts_with("interrupted: partial report"), "{text}");
        assert!(text.contains("interrupted  1"), "{text}");
    }

    /// Bucket and window boundaries are exact: an attempt at 300 ms is in
    /// bucket [300, 400) ms, and retries exactly 100 ms apart never share a
    /// 100 ms window (in float seconds 0.3 / 0.1 < 3 and 0.3 - 0.2 < 0.1).
    #[test]
    fn boundaries_are_exact() {
        let at = |t_ms: u64, number| AttemptAt {
            t_ns: t_ms * 1_000_000,
            number,
            worker: 0,
            timed_out: false,
            body_bytes: 0,
        };
        let ends = [WorkerEnd {
            outcome: Outcome::Succeeded,
            reason: None,
            end_ns: 400_000_000,
        }];
        let strategy = FleetStrategy {
            retry_budget: BudgetKind::None,
            budget_tokens: None,
            breaker: None,
            breaker_release_s: None,
            throttle: false,
            waves: true,
            urgent_s: None,
            urgent_workers: 0,
        };
        let r = summarize(
            &ends,
            &[at(0, 1), at(200, 2), at(300, 3)],
            Duration::from_millis(400),
            strategy,
            None,
        );
        let counts: Vec<u64> = r.histogram.iter().map(|b| b.attempts).collect();
        assert_eq!(counts, vec![1, 0, 1, 1]);
        assert_eq!(r.peak_100ms_retries.attempts, 1);
        assert_eq!(r.peak_100ms_retries.start_s, 0.2);
        assert_eq!(r.drain_s, Some(0.4));
    }
}
