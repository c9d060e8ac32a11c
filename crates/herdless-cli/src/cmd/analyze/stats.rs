//! The streaming tally: one pass, memory bounded by the open tasks (at most
//! [`Stats::max_open`]) and the 100 ms buckets of the log's span, never by
//! its lines.
//!
//! A task is open from its first event to its end (`retry_succeeded`,
//! `retry_abandoned_terminal`, `retry_budget_exhausted`); its attempts are
//! the largest attempt number its events name (a `retry_scheduled` for
//! attempt `n` means attempt `n + 1` follows). Tasks still open at the end
//! of the input are counted as unfinished, with the attempts seen. A first-try
//! success logs nothing in herdless, so the tasks counted are the tasks that
//! logged an event (a producer that logs first-try successes gets them
//! counted too).
//!
//! Retries are counted when they go out: the event's time plus its `sleep_s`
//! (the time of the event itself when the sleep is not logged), in 100 ms
//! buckets on two grids 50 ms apart, so a spike narrower than 50 ms is never
//! split in half by a bucket boundary. Give-ups are counted the same way at
//! the time of their event.

use std::collections::{BTreeMap, HashMap};

use herdless::http::{StatusClass, StatusClassifier};

use super::parse::Record;
use super::spread::Waves;

/// 100 ms in nanoseconds.
pub(crate) const BUCKET_NS: i64 = 100_000_000;

/// Counts per 100 ms bucket on two grids 50 ms apart.
#[derive(Debug, Clone, Default)]
pub(crate) struct Buckets {
    /// Grid A: bucket `i` holds `[i · 100 ms, (i + 1) · 100 ms)` since the epoch.
    pub(crate) a: HashMap<i64, u32>,
    /// Grid B: the same, shifted by 50 ms.
    pub(crate) b: HashMap<i64, u32>,
    /// Events counted.
    pub(crate) total: u64,
}

impl Buckets {
    /// Counts one event at `t_ns`.
    pub(crate) fn add(&mut self, t_ns: i64) {
        *self.a.entry(t_ns.div_euclid(BUCKET_NS)).or_default() += 1;
        *self
            .b
            .entry((t_ns + BUCKET_NS / 2).div_euclid(BUCKET_NS))
            .or_default() += 1;
        self.total += 1;
    }

    /// The largest bucket of either grid: its start (ns since the epoch) and count.
    pub(crate) fn largest(&self) -> Option<(i64, u32)> {
        let a = self.a.iter().map(|(&i, &c)| (c, -(i * BUCKET_NS)));
        let b = self
            .b
            .iter()
            .map(|(&i, &c)| (c, -(i * BUCKET_NS - BUCKET_NS / 2)));
        a.chain(b).max().map(|(c, t)| (-t, c))
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct Open {
    attempts: u32,
    retries: u32,
    terminal_retried: bool,
    /// A retry logged without a sleep: its wave and when its attempt
    /// failed; its sleep is the time to the task's next event.
    pending: Option<(u32, i64)>,
}

/// Everything counted so far.
#[derive(Debug, Clone)]
pub(crate) struct Stats {
    /// Lines read.
    pub(crate) lines: u64,
    /// Lines that were events analyze reads.
    pub(crate) events: u64,
    /// Lines skipped: not JSON, no time or event field, an unknown event, too long.
    pub(crate) skipped: u64,
    /// The first and last event times, ns since the epoch.
    pub(crate) first_ns: Option<i64>,
    /// See `first_ns`.
    pub(crate) last_ns: Option<i64>,
    open: HashMap<String, Open>,
    /// Open tasks held at most; past it they are all counted as unfinished.
    pub(crate) max_open: usize,
    /// Tasks counted.
    pub(crate) tasks: u64,
    /// Of those, tasks that scheduled a retry.
    pub(crate) retrying_tasks: u64,
    /// Tasks with no end event.
    pub(crate) unfinished: u64,
    /// Attempts of every task.
    pub(crate) attempts: u64,
    /// Tasks by attempts made.
    pub(crate) attempts_per_task: BTreeMap<u32, u64>,
    /// Retries, by when they go out.
    pub(crate) retries: Buckets,
    /// Give-ups (`retry_budget_exhausted`), by when.
    pub(crate) give_ups: Buckets,
    /// Tasks that succeeded after a retry (`retry_succeeded`).
    pub(crate) succeeded: u64,
    /// Calls ended by a terminal error (`retry_abandoned_terminal`).
    pub(crate) abandoned_terminal: u64,
    /// `retry_state_invalid` events.
    pub(crate) state_invalid: u64,
    /// `retry_requeued` events: a server held the call and put it back
    /// unprocessed (not an attempt; its time is the server's, not a
    /// retry's, so it is not in the retries' buckets).
    pub(crate) requeued: u64,
    /// Retries scheduled that carry a status.
    pub(crate) with_status: u64,
    /// Retries scheduled after a status the library calls terminal.
    pub(crate) terminal_retries: u64,
    /// Tasks that retried such a status.
    pub(crate) terminal_retried_tasks: u64,
    /// Those statuses, with counts.
    pub(crate) terminal_statuses: BTreeMap<i64, u64>,
    /// Retries scheduled that say whether a server's delay was honored.
    pub(crate) honored_known: u64,
    /// Of those, honored.
    pub(crate) honored: u64,
    /// Give-ups by reason.
    pub(crate) reasons: BTreeMap<String, u64>,
    /// The retries wave by wave, for the `spread` check.
    pub(crate) waves: Waves,
    /// Scheduled retries with no attempt field (their wave is the task's
    /// count of retries, which a task flushed by the bound loses).
    pub(crate) without_attempt: u64,
    /// Tasks counted as unfinished mid-log because `max_open` was reached
    /// (their later events count as new tasks).
    pub(crate) bound_flushed: u64,
    classifier: StatusClassifier,
}

impl Stats {
    /// An empty tally holding at most `max_open` open tasks.
    pub(crate) fn new(max_open: usize) -> Stats {
        Stats {
            lines: 0,
            events: 0,
            skipped: 0,
            first_ns: None,
            last_ns: None,
            open: HashMap::new(),
            max_open: max_open.max(1),
            tasks: 0,
            retrying_tasks: 0,
            unfinished: 0,
            attempts: 0,
            attempts_per_task: BTreeMap::new(),
            retries: Buckets::default(),
            give_ups: Buckets::default(),
            succeeded: 0,
            abandoned_terminal: 0,
            state_invalid: 0,
            requeued: 0,
            with_status: 0,
            terminal_retries: 0,
            terminal_retried_tasks: 0,
            terminal_statuses: BTreeMap::new(),
            honored_known: 0,
            honored: 0,
            reasons: BTreeMap::new(),
            waves: Waves::default(),
            without_attempt: 0,
            bound_flushed: 0,
            classifier: StatusClassifier::default(),
        }
    }

    /// Counts one parsed line (`None`: not an event); returns the time a
    /// retry goes out when the line scheduled one.
    pub(crate) fn add(&mut self, rec: Option<Record<'_>>) -> Option<i64> {
        self.lines += 1;
        let Some((rec, t, event)) = rec.and_then(|r| {
            let t = r.time_ns?;
            let e = r.event.clone()?;
            Some((r, t, e))
        }) else {
            self.skipped += 1;
            return None;
        };
        let task = rec.task.as_deref().unwrap_or("");
        match &*event {
            "retry_scheduled" => {
                self.seen(t);
                let sleep_ns = rec.sleep_s.map(|s| (s * 1e9).round() as i64);
                let at = t.saturating_add(sleep_ns.unwrap_or(0));
                self.retries.add(at);
                let terminal = rec.status.map(|s| {
                    self.with_status += 1;
                    u16::try_from(s)
                        .is_ok_and(|s| self.classifier.classify(s) == StatusClass::Terminal)
                });
                if terminal == Some(true) {
                    self.terminal_retries += 1;
                    *self
                        .terminal_statuses
                        .entry(rec.status.unwrap_or(0))
                        .or_default() += 1;
                }
                if let Some(h) = rec.honored {
                    self.honored_known += 1;
                    self.honored += u64::from(h);
                }
                self.without_attempt += u64::from(rec.attempt.is_none());
                let o = self.open_task(task);
                let pending = o.pending.take();
                let wave = rec.attempt.unwrap_or(o.retries.saturating_add(1));
                o.retries += 1;
                o.attempts = o
                    .attempts
                    .max(rec.attempt.unwrap_or(o.attempts).saturating_add(1));
                o.terminal_retried |= terminal == Some(true);
                if rec.honored != Some(true) && sleep_ns.is_none() {
                    o.pending = Some((wave, t));
                }
                self.sent_after(pending, t);
                match (rec.honored, sleep_ns) {
                    (Some(true), _) => self.waves.honored(wave),
                    (_, Some(sleep)) => self.waves.retry(wave, t, sleep),
                    (_, None) => {}
                }
                Some(at)
            }
            "retry_succeeded" | "retry_abandoned_terminal" | "retry_budget_exhausted" => {
                self.seen(t);
                match &*event {
                    "retry_succeeded" => self.succeeded += 1,
                    "retry_abandoned_terminal" => self.abandoned_terminal += 1,
                    _ => {
                        self.give_ups.add(t);
                        let reason = rec.reason.as_deref().unwrap_or("unknown");
                        *self
                            .reasons
                            .entry(reason.chars().take(64).collect())
                            .or_default() += 1;
                    }
                }
                let mut o = self.open.remove(task).unwrap_or_default();
                self.sent_after(o.pending.take(), t);
                o.attempts = o.attempts.max(rec.attempt.unwrap_or(1)).max(1);
                self.close(o, false);
                None
            }
            "retry_state_invalid" => {
                self.seen(t);
                self.state_invalid += 1;
                None
            }
            "retry_requeued" => {
                self.seen(t);
                self.requeued += 1;
                None
            }
            _ => {
                self.skipped += 1;
                None
            }
        }
    }

    /// A retry logged without a sleep went out by `next_ns`, its task's
    /// next event: its sleep is the time between.
    fn sent_after(&mut self, pending: Option<(u32, i64)>, next_ns: i64) {
        if let Some((wave, failed)) = pending {
            self.waves
                .retry(wave, failed, next_ns.saturating_sub(failed).max(0));
        }
    }

    fn seen(&mut self, t: i64) {
        self.events += 1;
        self.first_ns = Some(self.first_ns.map_or(t, |f| f.min(t)));
        self.last_ns = Some(self.last_ns.map_or(t, |l| l.max(t)));
    }

    fn open_task(&mut self, task: &str) -> &mut Open {
        if !self.open.contains_key(task) && self.open.len() >= self.max_open {
            self.bound_flushed += self.open.len() as u64;
            self.flush();
        }
        self.open.entry(task.to_owned()).or_default()
    }

    fn close(&mut self, o: Open, unfinished: bool) {
        self.tasks += 1;
        self.unfinished += u64::from(unfinished);
        // A task whose end names a later attempt retried, whether or not
        // its retry_scheduled lines are in the log (filtered to ERROR, or
        // runs interleaved under one id: exec without --task-id).
        self.retrying_tasks += u64::from(o.retries > 0 || o.attempts > 1);
        self.terminal_retried_tasks += u64::from(o.terminal_retried);
        self.attempts += u64::from(o.attempts);
        *self.attempts_per_task.entry(o.attempts).or_default() += 1;
    }

    /// Counts every open task as unfinished (the end of the input).
    pub(crate) fn flush(&mut self) {
        let open = std::mem::take(&mut self.open);
        for (_, o) in open {
            self.close(o, true);
        }
    }
}
