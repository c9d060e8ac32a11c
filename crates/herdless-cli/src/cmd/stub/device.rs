//! The device: what the stub adds behind the pushback layer. Asked in
//! order, the first refusal wins:
//!
//! 1. the outage: refuses everything for `--outage` after start;
//! 2. fail-first: refuses each client's first `--fail-first` requests (the
//!    client is named by `X-Worker-Id`; requests without it share one name);
//! 3. fail-every: refuses every `--fail-every`-th request (a healthy endpoint
//!    with a small, steady error rate: 1 / K of all requests);
//! 4. the capacity: the simulator's token bucket
//!    (`herdless_sim::endpoint::TokenBucket`) on the stub's clock, refilled at
//!    `--capacity` tokens per second, holding at most 100 ms worth of them and
//!    **empty when it starts** (at the end of `--outage`, else at the start):
//!    at most `N · t` requests are served in the first `t` seconds after the
//!    outage, and at most `burst + N · w` in any window `w`. The rest are
//!    answered 503.
//!
//! The device counts what reaches it: fail-first counts a client's requests
//! as the device sees them, so a request the pushback layer held and then
//! released is a new arrival for it (a client held past its `--fail-first`
//! requests is served when released, not refused again).
//!
//! Fail-first remembers at most [`WORKERS_KEPT`] clients (100,000, the
//! largest `herdless fleet --workers`); past that, the client seen first is
//! forgotten (its count starts again), so a flood of distinct ids costs a
//! bounded map (ids are at most [`MAX_WORKER_ID`] bytes: the stub answers a
//! longer `X-Worker-Id` 431 before it reaches the device).

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::http::{HeaderValue, StatusCode};
use herdless_sim::endpoint::TokenBucket;

/// The longest `X-Worker-Id` the stub takes, in bytes; a longer one is
/// answered `431 Request Header Fields Too Large` (and recorded, without
/// its id).
pub(crate) const MAX_WORKER_ID: usize = 256;

/// How many clients fail-first remembers (the largest `herdless fleet
/// --workers`); the one seen first is forgotten past it.
pub(crate) const WORKERS_KEPT: usize = 100_000;

/// The device's answer to one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DeviceAnswer {
    /// Served (200).
    Admit,
    /// Refused with `status`, and `Retry-After` when given.
    Reject {
        /// The status to answer.
        status: StatusCode,
        /// The `Retry-After` header value, if any.
        retry_after: Option<HeaderValue>,
    },
}

/// The rules the flags ask for (see the module documentation).
#[derive(Debug)]
pub(crate) struct Device {
    /// `--fail-status` and `--retry-after`: what the outage, fail-first and
    /// fail-every answer (capacity refusals are always 503).
    pub(crate) status: StatusCode,
    pub(crate) retry_after: Option<HeaderValue>,
    pub(crate) outage: Option<Duration>,
    pub(crate) fail_first: Option<FailFirstByWorker>,
    pub(crate) fail_every: Option<FailEvery>,
    pub(crate) capacity: Option<Mutex<TokenBucket>>,
}

impl Device {
    /// The device's answer at `now` (since start) to a request of `worker`.
    pub(crate) fn answer(&self, now: Duration, worker: Option<&str>) -> DeviceAnswer {
        let refuse = |status| DeviceAnswer::Reject {
            status,
            retry_after: self.retry_after.clone(),
        };
        if self.outage.is_some_and(|d| now < d) {
            return refuse(self.status);
        }
        if self.fail_first.as_ref().is_some_and(|f| f.fails(worker)) {
            return refuse(self.status);
        }
        if self.fail_every.as_ref().is_some_and(FailEvery::fails) {
            return refuse(self.status);
        }
        if let Some(bucket) = &self.capacity {
            let now_ns = u64::try_from(now.as_nanos()).unwrap_or(u64::MAX);
            if !bucket
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .try_take(now_ns)
            {
                return refuse(StatusCode::SERVICE_UNAVAILABLE);
            }
        }
        DeviceAnswer::Admit
    }
}

/// The capacity's token bucket: `per_second` (at least 1), empty at
/// `start` (since the stub started).
pub(crate) fn bucket(per_second: u32, start: Duration) -> Mutex<TokenBucket> {
    let start_ns = u64::try_from(start.as_nanos()).unwrap_or(u64::MAX);
    Mutex::new(TokenBucket::new(
        start_ns,
        per_second,
        TokenBucket::default_burst(per_second),
    ))
}

/// Refuses each client's first `k` requests.
#[derive(Debug)]
pub(crate) struct FailFirstByWorker {
    k: u64,
    seen: Mutex<Seen>,
}

/// Requests per client, at most [`WORKERS_KEPT`] clients (the oldest
/// forgotten first).
#[derive(Debug, Default)]
struct Seen {
    counts: HashMap<Option<Box<str>>, u64>,
    order: VecDeque<Option<Box<str>>>,
}

impl FailFirstByWorker {
    pub(crate) fn new(k: u64) -> Self {
        FailFirstByWorker {
            k,
            seen: Mutex::new(Seen::default()),
        }
    }

    /// Counts a request of `worker`; whether it is among its first `k`.
    fn fails(&self, worker: Option<&str>) -> bool {
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        let key: Option<Box<str>> = worker.map(Box::from);
        if let Some(n) = seen.counts.get_mut(&key) {
            *n += 1;
            return *n <= self.k;
        }
        if seen.counts.len() >= WORKERS_KEPT {
            if let Some(oldest) = seen.order.pop_front() {
                seen.counts.remove(&oldest);
            }
        }
        seen.order.push_back(key.clone());
        seen.counts.insert(key, 1);
        1 <= self.k
    }

    /// Clients remembered now.
    #[cfg(test)]
    fn remembered(&self) -> usize {
        self.seen.lock().unwrap().counts.len()
    }
}

/// Refuses every `k`-th request (the `k`-th, `2k`-th, … to reach it).
#[derive(Debug)]
pub(crate) struct FailEvery {
    k: u64,
    seen: AtomicU64,
}

impl FailEvery {
    pub(crate) fn new(k: u64) -> Self {
        FailEvery {
            k: k.max(1),
            seen: AtomicU64::new(0),
        }
    }

    fn fails(&self) -> bool {
        let n = self.seen.fetch_add(1, Ordering::Relaxed) + 1;
        n % self.k == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn device() -> Device {
        Device {
            status: StatusCode::BAD_GATEWAY,
            retry_after: Some(HeaderValue::from_static("7")),
            outage: None,
            fail_first: None,
            fail_every: None,
            capacity: None,
        }
    }

    fn reject(s: u16) -> DeviceAnswer {
        DeviceAnswer::Reject {
            status: StatusCode::from_u16(s).unwrap(),
            retry_after: Some(HeaderValue::from_static("7")),
        }
    }

    #[test]
    fn outage_then_fail_first_then_capacity() {
        let d = Device {
            outage: Some(Duration::from_secs(1)),
            fail_first: Some(FailFirstByWorker::new(1)),
            capacity: Some(bucket(2, Duration::from_secs(1))),
            ..device()
        };
        let at = |ms| Duration::from_millis(ms);
        assert_eq!(d.answer(at(500), Some("a")), reject(502), "the outage");
        // The outage's refusal did not reach fail-first: `a`'s first is next.
        assert_eq!(d.answer(at(1_500), Some("a")), reject(502), "fail-first");
        // The capacity: 2/s, a burst of 1, empty at the outage's end (1 s).
        assert_eq!(d.answer(at(1_500), Some("a")), DeviceAnswer::Admit);
        assert_eq!(d.answer(at(1_600), Some("a")), reject(503));
        assert_eq!(d.answer(at(2_000), Some("a")), DeviceAnswer::Admit);
        assert_eq!(
            d.answer(at(9_000), Some("a")),
            DeviceAnswer::Admit,
            "the burst"
        );
        assert_eq!(d.answer(at(9_000), Some("a")), reject(503), "no more");
    }

    #[test]
    fn fail_every_refuses_one_request_in_k() {
        let d = Device {
            fail_every: Some(FailEvery::new(4)),
            ..device()
        };
        let failed: Vec<bool> = (0..12)
            .map(|_| d.answer(Duration::ZERO, None) != DeviceAnswer::Admit)
            .collect();
        let every_4th: Vec<bool> = (1..=12).map(|n| n % 4 == 0).collect();
        assert_eq!(failed, every_4th);
    }

    #[test]
    fn capacity_is_a_token_bucket_empty_at_its_start() {
        // 20/s, burst 2, empty at 1 s.
        let d = Device {
            capacity: Some(bucket(20, Duration::from_secs(1))),
            ..device()
        };
        let admitted = |ms: u64, n: usize| {
            (0..n)
                .filter(|_| d.answer(Duration::from_millis(ms), None) == DeviceAnswer::Admit)
                .count()
        };
        assert_eq!(admitted(500, 5), 0, "nothing before its start");
        assert_eq!(admitted(1_000, 5), 0, "empty at its start");
        assert_eq!(admitted(1_050, 5), 1, "one token per 50 ms");
        assert_eq!(admitted(1_100, 5), 1);
        assert_eq!(admitted(9_000, 5), 2, "idle: at most the burst saved up");
    }

    /// The map of clients is bounded: past `WORKERS_KEPT` distinct ids the
    /// first seen is forgotten (and fails again as a new client).
    #[test]
    fn fail_first_remembers_a_bounded_number_of_clients() {
        let f = FailFirstByWorker::new(1);
        assert!(f.fails(Some("first")));
        assert!(!f.fails(Some("first")), "its second request passes");
        for i in 0..WORKERS_KEPT {
            f.fails(Some(&i.to_string()));
        }
        assert_eq!(f.remembered(), WORKERS_KEPT);
        assert!(f.fails(Some("first")), "forgotten: a new client again");
        assert_eq!(f.remembered(), WORKERS_KEPT);
    }
}
