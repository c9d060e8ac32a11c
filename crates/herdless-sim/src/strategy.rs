//! Retry strategies: what a simulated client does after a failed call.
//!
//! A [`StrategyKind`] names a strategy (its CLI name is what `--jitter`
//! accepts); a [`Strategy`] is a kind resolved against a scenario's base
//! [`Policy`]: the policy every client's engine decides with.
//!
//! # Every decision comes from the library
//!
//! The simulator does not re-implement a retry decision. Each simulated client
//! carries the library's own per-call state, [`herdless::engine::Engine`], and
//! the event loop ([`event_loop`](crate::event_loop)) reports every outcome to it exactly
//! as `herdless::Retry`'s executors do: classification, attempt limit, the
//! jitter draw, the server's delay (clamped and spread), the elapsed limit,
//! the shared budget and the breaker are all decided there, in that order.
//!
//! The baselines are policies too: "retry every second" is a policy with no
//! jitter, base = cap = 1 s and multiplier 1 (no attempt limit, the same elapsed
//! limit as the others); "no backoff" retries after 1 ns, the shortest delay a
//! policy can express (no attempt limit, the same elapsed limit).
//!
//! # Fleet-level strategies
//!
//! [`StrategyKind::Guarded`] adds a [`Guard`] to a jitter mode: `full+budget`,
//! `full+breaker`, `full+pushback`, `full+throttle` (the library's
//! client-side adaptive throttle), `full+cubic` (the AWS-adaptive baseline,
//! the simulator's own) (any jitter mode may take a guard). The
//! shared state (the library's [`RetryBudget`](herdless::RetryBudget) or
//! [`Breaker`](herdless::Breaker), one per simulated process) lives in the
//! run's [`Guards`](crate::guard::Guards) and reaches the engine through its
//! [`Context`](herdless::engine::Context). Server pushback is an endpoint that
//! answers [`Reply::Rejected`] with a `retry_after`, which the engine honors.
//! See [`guard`](crate::guard) for the model.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use herdless::{Jitter, Policy};

use crate::guard::Guard;

/// The interval of the naive "retry every second" baseline.
pub const FIXED_INTERVAL: Duration = Duration::from_secs(1);

/// The delay of the "no backoff" baseline: the shortest a policy can express.
pub const NO_BACKOFF: Duration = Duration::from_nanos(1);

/// A strategy by name. [`FromStr`] accepts the jitter mode names (`none`,
/// `full`, `equal`, `decorrelated`, `decorrelated-window`), a jitter mode
/// with a fleet-level guard (`full+budget`, `full+breaker`, `full+pushback`),
/// the baselines `fixed-1s` and `no-backoff`, and the hedging strategies
/// `hedge` and `hedge+budget` (latency-tail).
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
    /// Retry every second, whatever happens: the naive fixed loop.
    FixedInterval,
    /// Retry at once (the contention experiment's first baseline).
    NoBackoff,
    /// Capped exponential backoff with this jitter mode plus a fleet-level
    /// guard (outage scenario only).
    Guarded(Jitter, Guard),
    /// Full jitter with hedged requests, no budget (latency-tail scenario
    /// only).
    Hedge,
    /// Full jitter with hedged requests, every hedge and retry admitted by a
    /// shared retry budget (latency-tail scenario only).
    HedgeBudget,
}

/// `GUARDED_NAMES[jitter][guard]`, in `Jitter::ALL` and `Guard::ALL` order.
const GUARDED_NAMES: [[&str; 9]; 5] = [
    [
        "none+budget",
        "none+breaker",
        "none+pushback",
        "none+static-pushback",
        "none+hold",
        "none+throttle",
        "none+cubic",
        "none+waves",
        "none+waves+throttle",
    ],
    [
        "full+budget",
        "full+breaker",
        "full+pushback",
        "full+static-pushback",
        "full+hold",
        "full+throttle",
        "full+cubic",
        "full+waves",
        "full+waves+throttle",
    ],
    [
        "equal+budget",
        "equal+breaker",
        "equal+pushback",
        "equal+static-pushback",
        "equal+hold",
        "equal+throttle",
        "equal+cubic",
        "equal+waves",
        "equal+waves+throttle",
    ],
    [
        "decorrelated+budget",
        "decorrelated+breaker",
        "decorrelated+pushback",
        "decorrelated+static-pushback",
        "decorrelated+hold",
        "decorrelated+throttle",
        "decorrelated+cubic",
        "decorrelated+waves",
        "decorrelated+waves+throttle",
    ],
    [
        "decorrelated-window+budget",
        "decorrelated-window+breaker",
        "decorrelated-window+pushback",
        "decorrelated-window+static-pushback",
        "decorrelated-window+hold",
        "decorrelated-window+throttle",
        "decorrelated-window+cubic",
        "decorrelated-window+waves",
        "decorrelated-window+waves+throttle",
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
            StrategyKind::Hedge => "hedge",
            StrategyKind::HedgeBudget => "hedge+budget",
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
            StrategyKind::Hedge | StrategyKind::HedgeBudget => {
                base.to_builder().jitter(Jitter::Full).build()
            }
            StrategyKind::FixedInterval => base
                .to_builder()
                .jitter(Jitter::None)
                .base(FIXED_INTERVAL)
                .cap(FIXED_INTERVAL)
                .multiplier(1.0)
                .max_attempts(u32::MAX)
                .build(),
            StrategyKind::NoBackoff => base
                .to_builder()
                .jitter(Jitter::None)
                .base(NO_BACKOFF)
                .cap(NO_BACKOFF)
                .multiplier(1.0)
                .max_attempts(u32::MAX)
                .build(),
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
        if t.eq_ignore_ascii_case("hedge") {
            return Ok(StrategyKind::Hedge);
        }
        if t.eq_ignore_ascii_case("hedge+budget") {
            return Ok(StrategyKind::HedgeBudget);
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
             decorrelated-window, fixed-1s, no-backoff, hedge, hedge+budget, or a jitter \
             mode with a guard: full+budget, full+breaker, full+pushback, \
             full+static-pushback, full+hold, full+throttle, full+cubic, full+waves)",
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
    /// The endpoint holds the call open: its answer comes later, through
    /// [`Endpoint::answer`](crate::endpoint::Endpoint::answer) (a pushback
    /// server with a hold).
    Held,
    /// A rejection that announces a plan of waves (the `Herdless-Plan`
    /// header) beside its Retry-After (a wave planner's). A client with a
    /// wave guard comes back in its wave; one without reads the
    /// Retry-After alone.
    Planned {
        /// The server's requested delay (the caller's own point in the plan).
        retry_after: Option<Duration>,
        /// The plan, relative to this answer.
        plan: herdless::pushback::waves::WavePlan,
    },
    /// The endpoint's queue answers the call unprocessed: come back after
    /// `retry_after` to be queued again (`Herdless-Requeue`; a herdless
    /// client does not count it as an attempt).
    Requeued {
        /// When to come back.
        retry_after: Duration,
    },
}

impl Reply {
    /// Whether the call failed (rejected, with a plan or not, or requeued).
    ///
    /// ```
    /// assert!(herdless_sim::Reply::Rejected { retry_after: None }.is_rejection());
    /// assert!(!herdless_sim::Reply::Ok.is_rejection());
    /// ```
    #[inline]
    pub fn is_rejection(&self) -> bool {
        matches!(
            self,
            Reply::Rejected { .. } | Reply::Planned { .. } | Reply::Requeued { .. }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use herdless::engine::{Context, Decision, Engine};
    use herdless::{Classification, GiveUp, RetryCause, Rng};

    #[test]
    fn names_round_trip() {
        let guarded = Jitter::ALL
            .into_iter()
            .flat_map(|j| Guard::ALL.map(|g| StrategyKind::Guarded(j, g)));
        for k in StrategyKind::JITTERS
            .into_iter()
            .chain([
                StrategyKind::FixedInterval,
                StrategyKind::NoBackoff,
                StrategyKind::Hedge,
                StrategyKind::HedgeBudget,
            ])
            .chain(guarded)
        {
            assert_eq!(k.name().parse::<StrategyKind>().unwrap(), k);
        }
        assert!("sometimes".parse::<StrategyKind>().is_err());
        assert!("full+fuse".parse::<StrategyKind>().is_err());
        assert!("fixed-1s+budget".parse::<StrategyKind>().is_err());
    }

    #[test]
    fn fixed_interval_is_one_second_forever_within_the_elapsed_limit() {
        let base = Policy::builder()
            .max_elapsed(Duration::from_secs(10))
            .build()
            .unwrap();
        let s = StrategyKind::FixedInterval.resolve(&base);
        let cx = Context::new(s.policy()).trace(false).metrics(false);
        let mut call = Engine::new(Duration::ZERO);
        let mut rng = Rng::with_seed(1);
        let mut now = Duration::ZERO;
        let mut decide = |call: &mut Engine, now| {
            call.begin();
            call.failed(
                &cx,
                now,
                Classification::retryable(),
                RetryCause::Error,
                &mut rng,
            )
        };
        for _ in 1..=9 {
            let d = decide(&mut call, now);
            assert_eq!(
                d,
                Decision::Retry {
                    delay: FIXED_INTERVAL,
                    honored_retry_after: false
                }
            );
            now += FIXED_INTERVAL;
        }
        // The 10th failure at 9.5 s: another second would pass 10 s.
        let d = decide(&mut call, Duration::from_millis(9_500));
        assert_eq!(d, Decision::GiveUp(GiveUp::MaxElapsed));
    }

    #[test]
    fn no_backoff_retries_after_the_shortest_delay_without_an_attempt_limit() {
        let s = StrategyKind::NoBackoff.resolve(&Policy::default());
        assert_eq!(s.policy().max_attempts(), u32::MAX);
        assert_eq!(s.policy().ceiling(0), NO_BACKOFF);
        assert_eq!(s.policy().ceiling(u32::MAX), NO_BACKOFF);
    }
}
