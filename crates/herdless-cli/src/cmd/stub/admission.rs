//! The [`Rule`] trait (whether the stub serves an arrival) and the
//! simple admissions: the outage, fail-first, fail-every and the capacity.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::http::{HeaderValue, StatusCode};
use herdless::pushback::Ticket;
use herdless_sim::endpoint::TokenBucket;

/// What the admission sees of one arrival.
#[derive(Debug, Clone, Copy)]
pub struct Arrival<'a> {
    /// Time since the stub started.
    pub since_start: Duration,
    /// The `X-Worker-Id` header, if any.
    pub worker: Option<&'a str>,
    /// This client's request count, this one included (1-based).
    pub nth_for_worker: u64,
}

/// An admission decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Serve it (200).
    Admit,
    /// Reject it with `status`, and `Retry-After` when given.
    Reject {
        /// The status to answer.
        status: StatusCode,
        /// The `Retry-After` header value, if any.
        retry_after: Option<HeaderValue>,
        /// The `Retry-After-Ms` header value (milliseconds), if any.
        retry_after_ms: Option<u64>,
    },
    /// Keep the request open: its answer comes when the rule's hold releases
    /// it ([`Rule::release`]).
    Hold {
        /// The held request's ticket.
        ticket: Ticket,
    },
}

impl Verdict {
    /// A rejection with a fixed (or no) `Retry-After` and no `Retry-After-Ms`.
    pub fn reject(status: StatusCode, retry_after: Option<HeaderValue>) -> Self {
        Verdict::Reject {
            status,
            retry_after,
            retry_after_ms: None,
        }
    }
}

/// Decides whether the stub serves an arrival. See the [`herdless stub` docs](super#admission-is-a-replaceable-component).
pub trait Rule: Send + Sync + 'static {
    /// The verdict on `arrival`.
    fn admit(&self, arrival: &Arrival<'_>) -> Verdict;

    /// Whether the rule may answer [`Verdict::Hold`] (then the server drives
    /// [`next_release`](Self::next_release) and [`release`](Self::release)).
    fn holds(&self) -> bool {
        false
    }

    /// When the hold next has something to do, since the stub started.
    fn next_release(&self) -> Option<Duration> {
        None
    }

    /// The next held request whose turn has come at `now`: its ticket, and
    /// `None` when it is let through (answer it with
    /// [`admit_released`](Self::admit_released)) or the verdict to answer it
    /// with (its hold ran out: a slot).
    fn release(&self, now: Duration) -> Option<(Ticket, Option<Verdict>)> {
        let _ = now;
        None
    }

    /// A held request let through, as it arrived (`arrival.since_start` is
    /// now): the rules behind the hold decide it; a refusal parks it again
    /// ([`Verdict::Hold`], same ticket) while its hold lasts.
    fn admit_released(&self, arrival: &Arrival<'_>, ticket: Ticket) -> Verdict {
        let _ = (arrival, ticket);
        Verdict::Admit
    }

    /// The caller of a held request hung up.
    fn cancel(&self, ticket: Ticket) {
        let _ = ticket;
    }
}

/// Rejects every request during the first `duration` after start.
#[derive(Debug, Clone)]
pub struct Outage {
    /// How long the outage lasts.
    pub duration: Duration,
    /// The rejection.
    pub status: StatusCode,
    /// Its `Retry-After`.
    pub retry_after: Option<HeaderValue>,
}

impl Rule for Outage {
    fn admit(&self, a: &Arrival<'_>) -> Verdict {
        if a.since_start < self.duration {
            Verdict::reject(self.status, self.retry_after.clone())
        } else {
            Verdict::Admit
        }
    }
}

/// Rejects each client's first `k` requests.
#[derive(Debug, Clone)]
pub struct FailFirstPerWorker {
    /// How many requests of each client fail.
    pub k: u64,
    /// The rejection.
    pub status: StatusCode,
    /// Its `Retry-After`.
    pub retry_after: Option<HeaderValue>,
}

impl Rule for FailFirstPerWorker {
    fn admit(&self, a: &Arrival<'_>) -> Verdict {
        if a.nth_for_worker <= self.k {
            Verdict::reject(self.status, self.retry_after.clone())
        } else {
            Verdict::Admit
        }
    }
}

/// Rejects every `k`-th request (the `k`-th, `2k`-th, … arrival to reach it).
#[derive(Debug)]
pub struct FailEvery {
    k: u64,
    status: StatusCode,
    retry_after: Option<HeaderValue>,
    seen: AtomicU64,
}

impl FailEvery {
    /// Fails every `k`-th request (`k` at least 1) with `status`.
    pub fn new(k: u64, status: StatusCode, retry_after: Option<HeaderValue>) -> Self {
        FailEvery {
            k: k.max(1),
            status,
            retry_after,
            seen: AtomicU64::new(0),
        }
    }
}

impl Rule for FailEvery {
    fn admit(&self, _: &Arrival<'_>) -> Verdict {
        let n = self.seen.fetch_add(1, Ordering::Relaxed) + 1;
        if n % self.k == 0 {
            Verdict::reject(self.status, self.retry_after.clone())
        } else {
            Verdict::Admit
        }
    }
}

/// The capacity: the simulator's capacity model ([`TokenBucket`]) on the
/// stub's clock (nanoseconds since start). It refills at `per_second` tokens
/// per second, holds at most 100 ms worth of them
/// ([`TokenBucket::default_burst`]) and is **empty when it starts** (at the
/// end of `--outage`, else when the stub starts): at most `per_second · t`
/// requests are admitted in the first `t` seconds, and at most
/// `burst + per_second · w` in any window `w`. The rest are answered 503.
#[derive(Debug)]
pub struct Capacity {
    bucket: Mutex<TokenBucket>,
    retry_after: Option<HeaderValue>,
}

impl Capacity {
    /// A capacity of `per_second` (at least 1) whose bucket starts empty
    /// `start` after the stub started; its rejections carry `retry_after`.
    pub fn new(per_second: u32, start: Duration, retry_after: Option<HeaderValue>) -> Self {
        let start_ns = u64::try_from(start.as_nanos()).unwrap_or(u64::MAX);
        let bucket = TokenBucket::new(start_ns, per_second, TokenBucket::default_burst(per_second));
        Self {
            bucket: Mutex::new(bucket),
            retry_after,
        }
    }
}

impl Rule for Capacity {
    fn admit(&self, a: &Arrival<'_>) -> Verdict {
        let now_ns = u64::try_from(a.since_start.as_nanos()).unwrap_or(u64::MAX);
        let admitted = self
            .bucket
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .try_take(now_ns);
        if admitted {
            Verdict::Admit
        } else {
            Verdict::reject(StatusCode::SERVICE_UNAVAILABLE, self.retry_after.clone())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64, nth: u64) -> Arrival<'static> {
        Arrival {
            since_start: Duration::from_millis(ms),
            worker: Some("1"),
            nth_for_worker: nth,
        }
    }

    #[test]
    fn capacity_is_a_token_bucket_empty_at_its_start() {
        // 20/s, burst 2, empty at 1 s.
        let c = Capacity::new(20, Duration::from_secs(1), None);
        let admitted = |ms: u64, n: usize| {
            (0..n)
                .filter(|_| c.admit(&at(ms, 1)) == Verdict::Admit)
                .count()
        };
        assert_eq!(admitted(500, 5), 0, "nothing before its start");
        assert_eq!(admitted(1_000, 5), 0, "empty at its start");
        assert_eq!(admitted(1_050, 5), 1, "one token per 50 ms");
        assert_eq!(admitted(1_100, 5), 1);
        assert_eq!(admitted(9_000, 5), 2, "idle: at most the burst saved up");
        assert_eq!(
            c.admit(&at(9_000, 1)),
            Verdict::reject(StatusCode::SERVICE_UNAVAILABLE, None)
        );
    }
}
