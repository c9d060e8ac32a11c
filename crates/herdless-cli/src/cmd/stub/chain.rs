//! The admission chain: the admissions the flags ask for, asked in order.

use std::time::Duration;

use axum::http::{HeaderValue, StatusCode};
use herdless::pushback::Ticket;

use super::admission::{Arrival, Capacity, FailEvery, FailFirstPerWorker, Outage, Rule, Verdict};
use super::args::{DEFAULT_HORIZON, PushbackMode, StubArgs, pushback_enabled};
use super::pushback::{AdaptivePushback, Pushback};
use herdless_sim::endpoint::OutageEnd;

/// Asks each admission in order; the first rejection wins.
#[derive(Default)]
pub struct Chain(pub Vec<Box<dyn Rule>>);

impl std::fmt::Debug for Chain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Chain({} admissions)", self.0.len())
    }
}

impl Rule for Chain {
    fn admit(&self, a: &Arrival<'_>) -> Verdict {
        for admission in &self.0 {
            let v = admission.admit(a);
            if v != Verdict::Admit {
                return v;
            }
        }
        Verdict::Admit
    }

    // A hold sits first in its chain (the adaptive allocator in front of the
    // rest): the chain's hold is its first rule's.
    fn holds(&self) -> bool {
        self.0.first().is_some_and(|r| r.holds())
    }

    fn next_release(&self) -> Option<Duration> {
        self.0.first()?.next_release()
    }

    fn release(&self, now: Duration) -> Option<(Ticket, Option<Verdict>)> {
        self.0.first()?.release(now)
    }

    fn admit_released(&self, a: &Arrival<'_>, ticket: Ticket) -> Verdict {
        match self.0.first() {
            Some(r) => r.admit_released(a, ticket),
            None => Verdict::Admit,
        }
    }

    fn cancel(&self, ticket: Ticket) {
        if let Some(r) = self.0.first() {
            r.cancel(ticket);
        }
    }
}

/// Builds the admission chain the flags describe.
///
/// # Errors
///
/// A message for an invalid `--fail-status`, `--capacity`, `--horizon`,
/// `--retry-after` or `--pushback` combination.
pub fn admission_from_args(args: &StubArgs) -> Result<Chain, String> {
    let status = StatusCode::from_u16(args.fail_status)
        .ok()
        .filter(|s| s.is_client_error() || s.is_server_error())
        .ok_or_else(|| format!("--fail-status {}: must be 400-599", args.fail_status))?;
    let retry_after = match &args.retry_after {
        Some(v) => Some(HeaderValue::from_bytes(v.as_bytes()).map_err(|_| {
            format!("--retry-after {v:?}: not a valid header value (control characters)")
        })?),
        None => None,
    };
    if args.capacity == Some(0) {
        return Err("--capacity 0: must be at least 1 request per second".into());
    }
    let mode = pushback_enabled(args)?;
    if let (None, Some(h)) = (mode, args.horizon) {
        return Err(format!(
            "--horizon {h:?} applies to server-guided pushback, which --pushback off or \
             --retry-after turns off (drop --horizon, or use pushback)"
        ));
    }
    let horizon = args.horizon.unwrap_or(DEFAULT_HORIZON);
    let hold = (args.hold_max.is_some() || args.hold_for.is_some())
        .then_some((args.hold_max, args.hold_for));
    if hold.is_some() && mode != Some(PushbackMode::On) {
        return Err(
            "--hold-max and --hold-for hold requests in the adaptive allocator: they need \
             --capacity with --pushback on (the default)"
                .into(),
        );
    }
    if let Some(n) = args.hold_max.filter(|n| !(1..=10_000_000).contains(n)) {
        return Err(format!(
            "--hold-max {n}: must be within 1..=10000000 requests"
        ));
    }
    if let Some(d) = args
        .hold_for
        .filter(|d| !(Duration::from_millis(1)..=Duration::from_secs(3_600)).contains(d))
    {
        return Err(format!(
            "--hold-for {}: must be within 1ms..=1h",
            herdless_sim::report::units::duration(d)
        ));
    }
    let known_end = args.outage_end == Some(OutageEnd::Known);
    let told = |n: u32| f64::from(n) * args.capacity_estimate.unwrap_or(1.0);
    let fixed = match (mode, args.capacity) {
        (Some(PushbackMode::Static), Some(n)) => Some(Pushback::new(
            told(n),
            horizon,
            args.outage,
            known_end,
            status,
        )?),
        _ => None,
    };
    // The handler: outage, fail-first, fail-every, capacity, with the static
    // allocator at its two places when asked for.
    let mut chain: Vec<Box<dyn Rule>> = Vec::new();
    if let Some(duration) = args.outage {
        match &fixed {
            Some(p) => chain.push(Box::new(p.outage_gate())),
            None => chain.push(Box::new(Outage {
                duration,
                status,
                retry_after: retry_after.clone(),
            })),
        }
    }
    if args.fail_first > 0 {
        chain.push(Box::new(FailFirstPerWorker {
            k: u64::from(args.fail_first),
            status,
            retry_after: retry_after.clone(),
        }));
    }
    if let Some(k) = args.fail_every {
        chain.push(Box::new(FailEvery::new(
            u64::from(k),
            status,
            retry_after.clone(),
        )));
    }
    if let Some(n) = args.capacity {
        // The static allocator decides first (as the pushback layer in front
        // of a handler does) and the requests it admits still meet the
        // server's own capacity: the simulator's `PushbackEndpoint`.
        if let Some(p) = &fixed {
            chain.push(Box::new(p.capacity()));
        }
        let start = args.outage.unwrap_or_default();
        chain.push(Box::new(Capacity::new(n, start, retry_after)));
    }
    match (mode, args.capacity) {
        // The adaptive allocator in front of the whole handler: the
        // simulator's `AdaptiveEndpoint`.
        (Some(PushbackMode::On), Some(n)) => {
            Ok(Chain(vec![Box::new(AdaptivePushback::with_hold(
                told(n),
                horizon,
                args.outage.filter(|_| known_end),
                status,
                hold,
                Chain(chain),
            )?)]))
        }
        _ => Ok(Chain(chain)),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn at(ms: u64, nth: u64) -> Arrival<'static> {
        Arrival {
            since_start: Duration::from_millis(ms),
            worker: Some("1"),
            nth_for_worker: nth,
        }
    }

    #[test]
    fn chain_order_outage_then_fail_first_then_capacity() {
        let args = StubArgs {
            port: 0,
            fail_every: None,
            fail_first: 2,
            outage: Some(Duration::from_secs(1)),
            capacity: Some(2),
            pushback: None,
            capacity_estimate: None,
            outage_end: None,
            horizon: None,
            hold_max: None,
            hold_for: None,
            retry_after: Some("7".into()),
            fail_status: 502,
        };
        let chain = admission_from_args(&args).unwrap();
        let reject = |s: u16| {
            Verdict::reject(
                StatusCode::from_u16(s).unwrap(),
                Some(HeaderValue::from_static("7")),
            )
        };
        assert_eq!(chain.admit(&at(500, 9)), reject(502)); // outage
        assert_eq!(chain.admit(&at(1500, 2)), reject(502)); // fail-first
        // The capacity: 2/s, a burst of 1, empty at the outage's end (1 s).
        assert_eq!(chain.admit(&at(1500, 3)), Verdict::Admit); // 1 token by 1.5 s
        assert_eq!(chain.admit(&at(1600, 4)), reject(503)); // 0.2 token
        assert_eq!(chain.admit(&at(2000, 5)), Verdict::Admit); // 1 token again
        assert_eq!(chain.admit(&at(2100, 6)), reject(503));
        assert_eq!(chain.admit(&at(9000, 7)), Verdict::Admit); // idle: the burst
        assert_eq!(chain.admit(&at(9000, 8)), reject(503)); // and no more
    }

    fn base_args() -> StubArgs {
        StubArgs {
            port: 0,
            fail_every: None,
            fail_first: 0,
            outage: None,
            capacity: None,
            pushback: None,
            capacity_estimate: None,
            outage_end: None,
            horizon: None,
            hold_max: None,
            hold_for: None,
            retry_after: None,
            fail_status: 503,
        }
    }

    /// The slot of a rejection, in milliseconds (asserting both headers agree).
    fn slot_ms(v: &Verdict) -> Option<u64> {
        match v {
            Verdict::Admit | Verdict::Hold { .. } => None,
            Verdict::Reject {
                status,
                retry_after,
                retry_after_ms,
            } => {
                assert_eq!(*status, StatusCode::SERVICE_UNAVAILABLE);
                let ms = retry_after_ms.expect("pushback sends Retry-After-Ms");
                let secs: u64 = retry_after
                    .as_ref()
                    .unwrap()
                    .to_str()
                    .unwrap()
                    .parse()
                    .unwrap();
                assert_eq!(
                    secs,
                    ms.div_ceil(1000).max(1),
                    "Retry-After is the slot rounded up"
                );
                Some(ms)
            }
        }
    }

    #[test]
    fn fail_every_rejects_one_request_in_k() {
        let chain = admission_from_args(&StubArgs {
            fail_every: Some(4),
            ..base_args()
        })
        .unwrap();
        let failed: Vec<bool> = (0..12)
            .map(|_| chain.admit(&at(0, 1)) != Verdict::Admit)
            .collect();
        let every_4th: Vec<bool> = (1..=12).map(|n| n % 4 == 0).collect();
        assert_eq!(failed, every_4th);
    }

    #[test]
    fn capacity_with_pushback_spreads_the_rejections_one_slot_apart() {
        // 10/s: burst 1, slots 100 ms apart.
        let chain = admission_from_args(&StubArgs {
            capacity: Some(10),
            pushback: Some(PushbackMode::Static),
            ..base_args()
        })
        .unwrap();
        // The allocator admits the first request and books [0, 100 ms) for it,
        // but the server's own capacity is empty at start: a plain 503.
        assert_eq!(
            chain.admit(&at(0, 1)),
            Verdict::reject(StatusCode::SERVICE_UNAVAILABLE, None)
        );
        let slots: Vec<u64> = (0..5)
            .filter_map(|_| slot_ms(&chain.admit(&at(0, 1))))
            .collect();
        // The admitted request holds [0, 100 ms); the next free slot is 100 ms.
        assert_eq!(
            slots,
            vec![100, 200, 300, 400, 500],
            "each rejection the next slot"
        );
    }

    #[test]
    fn outage_with_pushback_books_everyone_past_its_end() {
        // 1000/s, a 1 s outage: 2000 callers at t = 0.25 s are told to come
        // back between 1 s and 1 s + 2000 / 1000 s, 1 ms apart.
        let chain = admission_from_args(&StubArgs {
            capacity: Some(1000),
            outage: Some(Duration::from_secs(1)),
            outage_end: Some(OutageEnd::Known),
            pushback: Some(PushbackMode::Static),
            fail_first: 1,
            ..base_args()
        })
        .unwrap();
        let slots: Vec<u64> = (0..2000)
            .map(|_| slot_ms(&chain.admit(&at(250, 1))).expect("shed during the outage"))
            .collect();
        assert_eq!(slots[0], 750);
        assert!(
            slots.windows(2).all(|w| w[1] == w[0] + 1),
            "strictly one slot apart"
        );
        assert_eq!(*slots.last().unwrap(), 750 + 1999);
        // After the outage: fail-first still applies, then the capacity admits.
        assert!(matches!(chain.admit(&at(1001, 1)), Verdict::Reject { .. }));
        // The capacity starts empty at the outage's end: at 1 s nothing is
        // there yet, 1 ms later one token (1000/s).
        assert_eq!(
            chain.admit(&at(1000, 2)),
            Verdict::reject(StatusCode::SERVICE_UNAVAILABLE, None)
        );
        assert_eq!(chain.admit(&at(1001, 2)), Verdict::Admit);
    }

    /// The default pushback is adaptive: it sits in front of the whole
    /// handler, finds the outage from the handler's refusals (each gets a
    /// slot), and finds its end with a probe.
    #[test]
    fn adaptive_pushback_finds_the_outage_and_its_end() {
        let chain = admission_from_args(&StubArgs {
            capacity: Some(100),
            outage: Some(Duration::from_secs(1)),
            ..base_args()
        })
        .unwrap();
        // The first five reach the handler (down): refused, each with a slot.
        for _ in 0..5 {
            assert!(slot_ms(&chain.admit(&at(10, 1))).is_some());
        }
        // Found down at the fifth: held 2 s (the minimum hold) from then on,
        // without reaching it; the same worker, back early, is told that slot
        // again.
        let held = slot_ms(&chain.admit(&at(20, 1))).unwrap();
        assert_eq!(held, 2_010 - 20, "the slot given at 10 ms, 2 s on");
        // After the outage a probe reaches the handler, which serves it
        // (its capacity has refilled): the allocator is up again.
        let served = (0..100).any(|k| chain.admit(&at(1_200 + 60 * k, 1)) == Verdict::Admit);
        assert!(served);
    }
}
