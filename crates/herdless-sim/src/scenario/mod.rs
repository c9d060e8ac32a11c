//! The scenarios: what the fleet faces. One module each.
//!
//! | name | module | what it shows |
//! |---|---|---|
//! | `spread` | [`spread`] | retry waves in 100 ms buckets: spikes without jitter, a smear with it |
//! | `outage` (default) | [`outage`] | a 5 s failover in front of 40,000 clients, against the physical limit, with and without fleet-level guards |
//! | `contention` | [`contention`] | the AWS optimistic-concurrency experiment: write calls and time against clients |
//! | `robustness` | [`robustness`] | the outage under pushback with a wrong capacity estimate, an unknown end and clients that ignore Retry-After, cell by cell |
//! | `latency-tail` | [`tail`] | hedged requests against a slow tail, then an overload: the p99 they cut, the load an unbudgeted hedge adds |
//! | `reactivation` | [`reactivation`] | a whole fleet back at once to a server that is up: waves against jitter, slots, the hold and the throttle, on three fleets |
//! | `field` | [`field`] | recovery in the field: every outage length and end, 1, 3 or 8 server replicas, with and without shared state |

use std::fmt;
use std::str::FromStr;

use herdless::Jitter;

use crate::error::SimError;
use crate::strategy::StrategyKind;

pub mod contention;
pub mod field;
pub mod outage;
pub mod reactivation;
pub mod robustness;
pub mod spread;
pub mod tail;

/// A scenario by name (`spread`, `outage`, `contention`, `robustness`,
/// `latency-tail`, `reactivation`, `field`).
///
/// ```
/// use herdless_sim::Scenario;
/// assert_eq!("outage".parse::<Scenario>(), Ok(Scenario::Outage));
/// assert_eq!(Scenario::default(), Scenario::Outage);
/// assert!("storm".parse::<Scenario>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Scenario {
    /// W workers, a controller failing each one's first K calls.
    Spread,
    /// N clients, T seconds of outage, then C calls per second.
    #[default]
    Outage,
    /// N clients doing optimistic-concurrency writes to one record.
    Contention,
    /// The outage under pushback, with what the server knows made wrong.
    Robustness,
    /// Hedged requests against a slow tail, then an overload.
    LatencyTail,
    /// A whole fleet back at once to a server that is up.
    Reactivation,
    /// Recovery in the field: long outages, an unknown end, server replicas.
    Field,
}

impl Scenario {
    /// Every scenario.
    pub const ALL: [Scenario; 7] = [
        Scenario::Spread,
        Scenario::Outage,
        Scenario::Contention,
        Scenario::Robustness,
        Scenario::LatencyTail,
        Scenario::Reactivation,
        Scenario::Field,
    ];

    /// The scenario's name.
    ///
    /// ```
    /// assert_eq!(herdless_sim::Scenario::Contention.name(), "contention");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Spread => "spread",
            Scenario::Outage => "outage",
            Scenario::Contention => "contention",
            Scenario::Robustness => "robustness",
            Scenario::LatencyTail => "latency-tail",
            Scenario::Reactivation => "reactivation",
            Scenario::Field => "field",
        }
    }

    /// The strategies compared when none are named: every jitter mode, plus
    /// the scenario's baseline (`fixed-1s` for spread and outage, `no-backoff`
    /// first for contention), plus, in outage, full jitter with each
    /// fleet-level guard ([`StrategyKind::GUARDED`]); robustness tests
    /// `full+hold`, `full+pushback` and `full+throttle` (against plain full
    /// jitter, always run beside them);
    /// latency-tail compares full jitter without hedging, `hedge` and
    /// `hedge+budget`.
    ///
    /// ```
    /// use herdless_sim::{Scenario, StrategyKind};
    /// assert_eq!(Scenario::Outage.default_strategies().len(), 9);
    /// assert_eq!(Scenario::Spread.default_strategies().len(), 6);
    /// assert_eq!(Scenario::Contention.default_strategies()[0], StrategyKind::NoBackoff);
    /// ```
    pub fn default_strategies(self) -> Vec<StrategyKind> {
        let jitters = Jitter::ALL.into_iter().map(StrategyKind::Backoff);
        match self {
            Scenario::Spread => jitters.chain([StrategyKind::FixedInterval]).collect(),
            Scenario::Outage => jitters
                .chain([StrategyKind::FixedInterval])
                .chain(StrategyKind::GUARDED)
                .collect(),
            Scenario::Contention => [StrategyKind::NoBackoff]
                .into_iter()
                .chain(jitters)
                .collect(),
            Scenario::Robustness => crate::scenario::robustness::DEFAULT_STRATEGIES.to_vec(),
            Scenario::LatencyTail => vec![
                StrategyKind::Backoff(Jitter::Full),
                StrategyKind::Hedge,
                StrategyKind::HedgeBudget,
            ],
            Scenario::Reactivation => crate::scenario::reactivation::DEFAULT_STRATEGIES.to_vec(),
            // The scenario runs its own four (see `field`).
            Scenario::Field => vec![
                StrategyKind::Guarded(Jitter::Full, crate::guard::Guard::Hold),
                StrategyKind::Guarded(Jitter::Full, crate::guard::Guard::Throttle),
                StrategyKind::Backoff(Jitter::Full),
            ],
        }
    }
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Scenario {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Scenario::ALL
            .into_iter()
            .find(|sc| sc.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| {
                format!(
                    "unknown scenario {:?} (expected spread, outage, contention, robustness, \
                     latency-tail, reactivation or field)",
                    s.chars().take(64).collect::<String>()
                )
            })
    }
}

/// Refuses a fleet-level strategy outside the outage scenario (the guards are
/// modelled there and in robustness, which runs the outage cell by cell; see
/// [`guard`](crate::guard)), and hedging outside latency-tail (which
/// takes hedging and plain jitter modes only).
pub(crate) fn outage_only(scenario: Scenario, kind: StrategyKind) -> Result<(), SimError> {
    let hedging = matches!(kind, StrategyKind::Hedge | StrategyKind::HedgeBudget);
    if scenario == Scenario::LatencyTail {
        return match kind {
            StrategyKind::Backoff(_) | StrategyKind::Hedge | StrategyKind::HedgeBudget => Ok(()),
            _ => Err(SimError::Invalid(format!(
                "the latency-tail scenario compares hedge, hedge+budget and jitter modes \
                 (no hedging), not {kind}"
            ))),
        };
    }
    if scenario == Scenario::Reactivation {
        return crate::scenario::reactivation::supported(kind);
    }
    if hedging {
        return Err(SimError::Invalid(format!(
            "{kind} runs in the latency-tail scenario only (use --scenario latency-tail)"
        )));
    }
    match kind.guard() {
        Some(_)
            if !matches!(
                scenario,
                Scenario::Outage | Scenario::Robustness | Scenario::Field
            ) =>
        {
            Err(SimError::Invalid(format!(
                "{kind} runs in the outage scenario only (the fleet-level guards are modelled \
             there; use --scenario outage)"
            )))
        }
        _ => Ok(()),
    }
}
