//! Retry strategies: what a simulated client does after a failed call.
//!
//! A [`StrategyKind`] names a strategy (its CLI name is what `--jitter`
//! accepts); a [`Strategy`] is a kind resolved against a scenario's base
//! [`Policy`]; a [`Retrier`] is the per-run decision maker built from it.
//!
//! # Every delay comes from the library
//!
//! The simulator does not re-implement backoff. A failed call is decided
//! exactly as `herdless::Retry` decides it (see `herdless::retry`):
//!
//! 1. draw the computed delay with [`Policy::next_delay`] (this advances the
//!    client's 16-byte [`Schedule`]);
//! 2. if the endpoint supplied a delay (Retry-After), replace it with
//!    [`Policy::server_delay`] (clamped, spread);
//! 3. check the budget with [`Policy::may_retry`] (attempts, then elapsed time
//!    plus the next sleep), and give up before sleeping if it fails.
//!
//! The baselines are policies too: "retry every second" is a policy with no
//! jitter, base = cap = 1 s and multiplier 1 (no attempt limit, the same elapsed
//! budget as the others); "no backoff" retries after zero delay (no attempt
//! limit, the same elapsed budget).
//!
//! # Fleet-level strategies
//!
//! [`StrategyKind::Guarded`] adds a [`Guard`] to a jitter mode: `full+budget`,
//! `full+breaker`, `full+pushback` (any jitter mode may take a guard). The
//! shared state (the library's [`RetryBudget`](herdless::RetryBudget) or
//! [`Breaker`](herdless::Breaker), one per simulated process) lives in the
//! [`Retrier`], which is built once per run and sees every failure and success
//! of the fleet with its virtual time and client ([`Retrier::on_failure`] with
//! a [`Failure`], [`Retrier::on_success`], [`Retrier::gate`] before a retry
//! goes out). After step 3 the shared budget is asked for the retry (a denial
//! gives up with [`GiveUp::RetryBudget`]); a give-up for another reason still
//! charges the budget's failure cost, as the executors do. Server pushback is
//! an endpoint that answers [`Reply::Rejected`] with a `retry_after`, which
//! step 2 already honors. See [`guard`](crate::guard) for the model.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use herdless::{GiveUp, Jitter, Policy, Rng, Schedule};

use crate::guard::{Gate, Guard, GuardParams, GuardState};

/// The interval of the naive "retry every second" baseline.
pub const FIXED_INTERVAL: Duration = Duration::from_secs(1);

/// A strategy by name. [`FromStr`] accepts the jitter mode names (`none`,
/// `full`, `equal`, `decorrelated`, `decorrelated-window`), a jitter mode
/// with a fleet-level guard (`full+budget`, `full+breaker`, `full+pushback`)
/// and the baselines `fixed-1s` and `no-backoff`.
///
/// ```
/// use herdless_sim::StrategyKind;
/// let s: StrategyKind = "full".parse()?;
/// assert_eq!(s, StrategyKind::Backoff(herdless::Jitter::Full));
/// assert_eq!("fixed-1s".parse::<StrategyKind>()?, StrategyKind::FixedInterval);
/// assert_eq!(StrategyKind::NoBackoff.name(), "no-backoff");
/// let g: StrategyKind = "full+pushback".parse()?;
/// assert_eq!(g, StrategyKind::Guarded(herdless::Jitter::Full, herdless_sim::guard::Guard::Pushback));
/// # Ok::<(), herdless_sim::ParseStrategyError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StrategyKind {
    /// Capped exponential backoff with this jitter mode (`none` is exponential
    /// without jitter).
    Backoff(Jitter),
    /// Retry every second, whatever happens: the second seed's naive loop.
    FixedInterval,
    /// Retry at once (the contention experiment's first baseline).
    NoBackoff,
    /// Capped exponential backoff with this jitter mode plus a fleet-level
    /// guard (outage scenario only).
    Guarded(Jitter, Guard),
}

/// `GUARDED_NAMES[jitter][guard]`, in `Jitter::ALL` and `Guard::ALL` order.
const GUARDED_NAMES: [[&str; 3]; 5] = [
    ["none+budget", "none+breaker", "none+pushback"],
    ["full+budget", "full+breaker", "full+pushback"],
    ["equal+budget", "equal+breaker", "equal+pushback"],
    [
        "decorrelated+budget",
        "decorrelated+breaker",
        "decorrelated+pushback",
    ],
    [
        "decorrelated-window+budget",
        "decorrelated-window+breaker",
        "decorrelated-window+pushback",
    ],
];

impl StrategyKind {
    /// Every jitter mode, in the library's documentation order.
    ///
    /// ```
    /// assert_eq!(herdless_sim::StrategyKind::JITTERS.len(), 5);
    /// ```
    pub const JITTERS: [StrategyKind; 5] = [
        StrategyKind::Backoff(Jitter::None),
        StrategyKind::Backoff(Jitter::Full),
        StrategyKind::Backoff(Jitter::Equal),
        StrategyKind::Backoff(Jitter::Decorrelated),
        StrategyKind::Backoff(Jitter::DecorrelatedWindow),
    ];

    /// Full jitter with each fleet-level guard: what the outage scenario shows
    /// beside the plain modes.
    ///
    /// ```
    /// let names: Vec<_> = herdless_sim::StrategyKind::GUARDED.iter().map(|k| k.name()).collect();
    /// assert_eq!(names, ["full+budget", "full+breaker", "full+pushback"]);
    /// ```
    pub const GUARDED: [StrategyKind; 3] = [
        StrategyKind::Guarded(Jitter::Full, Guard::Budget),
        StrategyKind::Guarded(Jitter::Full, Guard::Breaker),
        StrategyKind::Guarded(Jitter::Full, Guard::Pushback),
    ];

    /// The fleet-level guard of this strategy, if any.
    ///
    /// ```
    /// use herdless_sim::{guard::Guard, StrategyKind};
    /// assert_eq!(StrategyKind::GUARDED[0].guard(), Some(Guard::Budget));
    /// assert_eq!(StrategyKind::FixedInterval.guard(), None);
    /// ```
    pub fn guard(self) -> Option<Guard> {
        match self {
            StrategyKind::Guarded(_, g) => Some(g),
            _ => None,
        }
    }

    /// The strategy's name (CLI, table and JSON).
    ///
    /// ```
    /// use herdless_sim::StrategyKind;
    /// assert_eq!(StrategyKind::Backoff(herdless::Jitter::None).name(), "none");
    /// assert_eq!(StrategyKind::FixedInterval.name(), "fixed-1s");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            StrategyKind::Backoff(j) => j.name(),
            StrategyKind::FixedInterval => "fixed-1s",
            StrategyKind::NoBackoff => "no-backoff",
            StrategyKind::Guarded(j, g) => {
                let ji = Jitter::ALL.iter().position(|&x| x == j).unwrap_or(0);
                let gi = Guard::ALL.iter().position(|&x| x == g).unwrap_or(0);
                GUARDED_NAMES[ji][gi]
            }
        }
    }

    /// Resolves this kind against a scenario's base policy: the jitter modes
    /// take the base policy with their jitter; the baselines keep its elapsed
    /// budget and drop its attempt limit.
    ///
    /// ```
    /// use herdless_sim::StrategyKind;
    /// let s = StrategyKind::FixedInterval.resolve(&herdless::Policy::default());
    /// assert_eq!(s.policy().cap(), std::time::Duration::from_secs(1));
    /// ```
    pub fn resolve(self, base: &Policy) -> Strategy {
        let policy = match self {
            StrategyKind::Backoff(j) | StrategyKind::Guarded(j, _) => {
                base.to_builder().jitter(j).build()
            }
            StrategyKind::FixedInterval => base
                .to_builder()
                .jitter(Jitter::None)
                .base(FIXED_INTERVAL)
                .cap(FIXED_INTERVAL)
                .multiplier(1.0)
                .max_attempts(u32::MAX)
                .build(),
            StrategyKind::NoBackoff => base.to_builder().max_attempts(u32::MAX).build(),
        }
        // Only the jitter, base = cap and the attempt limit change: every
        // combination of a valid policy with these is valid.
        .unwrap_or(*base);
        Strategy { kind: self, policy }
    }
}

impl fmt::Display for StrategyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for StrategyKind {
    type Err = ParseStrategyError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        if t.eq_ignore_ascii_case("fixed-1s") || t.eq_ignore_ascii_case("fixed") {
            return Ok(StrategyKind::FixedInterval);
        }
        if t.eq_ignore_ascii_case("no-backoff") {
            return Ok(StrategyKind::NoBackoff);
        }
        let err = || ParseStrategyError {
            input: t.chars().take(64).collect(),
        };
        if let Some((j, g)) = t.split_once('+') {
            let j = j.trim().parse::<Jitter>().map_err(|_| err())?;
            let g = Guard::parse(g).ok_or_else(err)?;
            return Ok(StrategyKind::Guarded(j, g));
        }
        t.parse::<Jitter>()
            .map(StrategyKind::Backoff)
            .map_err(|_| err())
    }
}

/// An unknown strategy name.
///
/// ```
/// let err = "fuzzy".parse::<herdless_sim::StrategyKind>().unwrap_err();
/// assert!(err.to_string().contains("fixed-1s"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseStrategyError {
    input: String,
}

impl fmt::Display for ParseStrategyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown strategy {:?} (expected one of none, full, equal, decorrelated, \
             decorrelated-window, fixed-1s, no-backoff, or a jitter mode with a guard: \
             full+budget, full+breaker, full+pushback)",
            self.input
        )
    }
}

impl std::error::Error for ParseStrategyError {}

/// A strategy resolved against a scenario's policy.
///
/// ```
/// use herdless_sim::StrategyKind;
/// let s = StrategyKind::Backoff(herdless::Jitter::Equal).resolve(&herdless::Policy::default());
/// assert_eq!(s.name(), "equal");
/// assert_eq!(s.policy().jitter(), herdless::Jitter::Equal);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Strategy {
    kind: StrategyKind,
    policy: Policy,
}

impl Strategy {
    /// The kind this strategy was resolved from.
    ///
    /// ```
    /// use herdless_sim::StrategyKind;
    /// let s = StrategyKind::NoBackoff.resolve(&herdless::Policy::default());
    /// assert_eq!(s.kind(), StrategyKind::NoBackoff);
    /// ```
    pub fn kind(&self) -> StrategyKind {
        self.kind
    }

    /// The strategy's name.
    ///
    /// ```
    /// use herdless_sim::StrategyKind;
    /// assert_eq!(StrategyKind::NoBackoff.resolve(&herdless::Policy::default()).name(), "no-backoff");
    /// ```
    pub fn name(&self) -> &'static str {
        self.kind.name()
    }

    /// The library policy that draws this strategy's delays and budgets.
    ///
    /// ```
    /// use herdless_sim::StrategyKind;
    /// let s = StrategyKind::NoBackoff.resolve(&herdless::Policy::default());
    /// assert_eq!(s.policy().max_attempts(), u32::MAX);
    /// ```
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// A fresh per-run decision maker.
    ///
    /// ```
    /// use herdless_sim::{Decision, Failure, Reply, StrategyKind};
    /// use herdless::{Rng, Schedule};
    /// let s = StrategyKind::Backoff(herdless::Jitter::None).resolve(&herdless::Policy::default());
    /// let mut r = s.retrier();
    /// let mut sched = Schedule::new();
    /// let failed = Failure { client: 0, now_ns: 0, attempts: 1, elapsed_ns: 0, reply: Reply::Rejected { retry_after: None } };
    /// let d = r.on_failure(&mut sched, &mut Rng::with_seed(1), failed);
    /// assert_eq!(d, Decision::RetryAfter(500_000_000)); // the default base, 0.5 s
    /// ```
    pub fn retrier(&self) -> Retrier {
        self.retrier_with(&GuardParams::default(), 0)
    }

    /// A fresh per-run decision maker whose fleet-level guard (if any) is set
    /// up with `guards`; `seed` draws each call's budget level.
    ///
    /// ```
    /// use herdless_sim::{guard::GuardParams, StrategyKind};
    /// let s = "full+budget".parse::<StrategyKind>()?.resolve(&herdless::Policy::default());
    /// let _r = s.retrier_with(&GuardParams { clients_per_process: 10, ..Default::default() }, 7);
    /// # Ok::<(), herdless_sim::ParseStrategyError>(())
    /// ```
    pub fn retrier_with(&self, guards: &GuardParams, seed: u64) -> Retrier {
        Retrier {
            kind: self.kind,
            policy: self.policy,
            guard: GuardState::new(self.kind.guard(), *guards, seed),
        }
    }
}

/// An endpoint's answer to one simulated call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    /// The call succeeded.
    Ok,
    /// The call failed with a retryable error (a 503), possibly carrying a
    /// server-supplied delay (Retry-After).
    Rejected {
        /// The server's requested delay, if any.
        retry_after: Option<Duration>,
    },
}

/// What the event loop knows about a failed call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Failure {
    /// The client that failed (its index in the fleet).
    pub client: u32,
    /// Virtual time of the failure, in nanoseconds (for fleet-level state
    /// that depends on time: token refills, breaker timeouts).
    pub now_ns: u64,
    /// Calls made so far by this client, the failed one included.
    pub attempts: u32,
    /// Time since this client's first call, in nanoseconds.
    pub elapsed_ns: u64,
    /// The endpoint's answer.
    pub reply: Reply,
}

/// What a client does after a failed call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Call again after this many nanoseconds.
    RetryAfter(u64),
    /// Stop, for this reason.
    GiveUp(GiveUp),
}

/// The per-run decision maker of a [`Strategy`]: the place for state shared by
/// the whole fleet (see the [module documentation](self)). Cloning gives a
/// fresh one (full budgets, closed breakers).
#[derive(Debug, Clone)]
pub struct Retrier {
    kind: StrategyKind,
    policy: Policy,
    guard: GuardState,
}

impl Retrier {
    /// Decides after a failed call of a client whose per-retrier state is
    /// `schedule`. Advances `schedule` and draws from `rng` exactly as
    /// `herdless::Retry` does.
    ///
    /// ```
    /// use herdless_sim::{Decision, Failure, Reply, StrategyKind};
    /// use herdless::{GiveUp, Rng, Schedule};
    /// let s = StrategyKind::Backoff(herdless::Jitter::Full).resolve(&herdless::Policy::default());
    /// let mut r = s.retrier();
    /// let failed = Failure { client: 0, now_ns: 0, attempts: 6, elapsed_ns: 0, reply: Reply::Rejected { retry_after: None } };
    /// let d = r.on_failure(&mut Schedule::new(), &mut Rng::with_seed(1), failed);
    /// assert_eq!(d, Decision::GiveUp(GiveUp::MaxAttempts)); // the default allows 6 attempts
    /// ```
    #[inline]
    pub fn on_failure(
        &mut self,
        schedule: &mut Schedule,
        rng: &mut Rng,
        failure: Failure,
    ) -> Decision {
        let Failure {
            client,
            now_ns,
            attempts,
            elapsed_ns,
            reply,
        } = failure;
        self.guard.failed(now_ns, client);
        let retry_after = match reply {
            Reply::Ok => None,
            Reply::Rejected { retry_after } => retry_after,
        };
        let computed = match self.kind {
            StrategyKind::NoBackoff => Duration::ZERO,
            StrategyKind::Backoff(_) | StrategyKind::Guarded(..) | StrategyKind::FixedInterval => {
                self.policy.next_delay(schedule, rng)
            }
        };
        let sleep = match retry_after {
            Some(r) if !r.is_zero() => self.policy.server_delay(r, rng),
            _ => computed,
        };
        match self
            .policy
            .may_retry(attempts, Duration::from_nanos(elapsed_ns), sleep)
        {
            Ok(()) if self.guard.try_retry(client) => {
                Decision::RetryAfter(u64::try_from(sleep.as_nanos()).unwrap_or(u64::MAX))
            }
            Ok(()) => Decision::GiveUp(GiveUp::RetryBudget),
            Err(reason) => {
                self.guard.gave_up(client);
                Decision::GiveUp(reason)
            }
        }
    }

    /// Records a success of `client` at `now_ns` (refunds its process's
    /// budget, closes its breaker).
    ///
    /// ```
    /// let s = herdless_sim::StrategyKind::NoBackoff.resolve(&herdless::Policy::default());
    /// s.retrier().on_success(0, 0);
    /// ```
    #[inline]
    pub fn on_success(&mut self, now_ns: u64, client: u32) {
        self.guard.succeeded(now_ns, client);
    }

    /// A retry of `client` is due at `now_ns`, `elapsed_ns` after its first
    /// call: with an open breaker it may have to wait (jittered, not a call)
    /// or give up when the wait would pass the elapsed budget. Always
    /// [`Gate::Go`] without a breaker.
    ///
    /// ```
    /// use herdless_sim::{guard::Gate, StrategyKind};
    /// let s = StrategyKind::Backoff(herdless::Jitter::Full).resolve(&herdless::Policy::default());
    /// assert_eq!(s.retrier().gate(0, 0, 0, &mut herdless::Rng::with_seed(1)), Gate::Go);
    /// ```
    #[inline]
    pub fn gate(&mut self, now_ns: u64, client: u32, elapsed_ns: u64, rng: &mut Rng) -> Gate {
        self.guard
            .gate(now_ns, client, elapsed_ns, self.policy.max_elapsed(), rng)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(attempts: u32, elapsed_ns: u64, reply: Reply) -> Failure {
        Failure {
            client: 0,
            now_ns: elapsed_ns,
            attempts,
            elapsed_ns,
            reply,
        }
    }

    #[test]
    fn names_round_trip() {
        let guarded = Jitter::ALL
            .into_iter()
            .flat_map(|j| Guard::ALL.map(|g| StrategyKind::Guarded(j, g)));
        for k in StrategyKind::JITTERS
            .into_iter()
            .chain([StrategyKind::FixedInterval, StrategyKind::NoBackoff])
            .chain(guarded)
        {
            assert_eq!(k.name().parse::<StrategyKind>().unwrap(), k);
        }
        assert!("sometimes".parse::<StrategyKind>().is_err());
        assert!("full+fuse".parse::<StrategyKind>().is_err());
        assert!("fixed-1s+budget".parse::<StrategyKind>().is_err());
    }

    #[test]
    fn fixed_interval_is_one_second_forever_within_the_elapsed_budget() {
        let base = Policy::builder()
            .max_elapsed(Duration::from_secs(10))
            .build()
            .unwrap();
        let mut r = StrategyKind::FixedInterval.resolve(&base).retrier();
        let mut s = Schedule::new();
        let mut rng = Rng::with_seed(1);
        let fail = Reply::Rejected { retry_after: None };
        for n in 1..=9u32 {
            let elapsed = u64::from(n - 1) * 1_000_000_000;
            assert_eq!(
                r.on_failure(&mut s, &mut rng, failed(n, elapsed, fail)),
                Decision::RetryAfter(1_000_000_000)
            );
        }
        assert_eq!(
            r.on_failure(&mut s, &mut rng, failed(10, 9_500_000_000, fail)),
            Decision::GiveUp(GiveUp::MaxElapsed)
        );
    }

    #[test]
    fn a_server_delay_replaces_the_computed_one() {
        let mut r = StrategyKind::Backoff(Jitter::Full)
            .resolve(&Policy::default())
            .retrier();
        let reply = Reply::Rejected {
            retry_after: Some(Duration::from_secs(3)),
        };
        let d = r.on_failure(
            &mut Schedule::new(),
            &mut Rng::with_seed(2),
            failed(1, 0, reply),
        );
        let Decision::RetryAfter(ns) = d else {
            panic!("{d:?}")
        };
        assert!((3_000_000_000..=3_300_000_000).contains(&ns), "{ns}");
    }
}
