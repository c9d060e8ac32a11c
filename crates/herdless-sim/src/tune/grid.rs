//! The search space: the axes of the grid and the candidates they make.
//!
//! A candidate is a library [`Policy`] (every field set, `max_retry_after`
//! declared as the cap: a server's delay never parks a client longer than its
//! own longest backoff) and, when the facts allow one, a fleet-level guard
//! with its knobs ([`GuardChoice`]). The default axes ([`Space::for_facts`])
//! are placed around the recovery time `R`, because that is where the checks
//! put the boundary: the cap must cover `R` and the chain of retries must
//! reach past it, so caps are multiples of `R`, budgets multiples of `R`
//! (and the largest the visibility timeout allows).

use std::time::Duration;

use herdless::{Jitter, Policy, PolicyError};
use serde::Serialize;

use crate::guard::{Guard, GuardParams};
use crate::report::units;
use crate::strategy::StrategyKind;

/// A fleet-level guard and its knobs.
///
/// ```
/// use herdless_sim::tune::GuardChoice;
/// let g = GuardChoice::Budget { tokens: 100.0, token_ratio: 0.1 };
/// assert_eq!(g.guard(), herdless_sim::guard::Guard::Budget);
/// assert!(g.describe().contains("100 tokens"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "guard", rename_all = "snake_case")]
pub enum GuardChoice {
    /// A shared retry budget per process (gRPC `maxTokens`, `tokenRatio`).
    Budget {
        /// `maxTokens`.
        tokens: f64,
        /// `tokenRatio`.
        token_ratio: f64,
    },
    /// A half-open probe breaker per process.
    Breaker {
        /// Consecutive failures that open it.
        threshold: u32,
        /// How long callers wait behind a probe, seconds.
        probe_wait_s: f64,
    },
}

impl GuardChoice {
    /// The guard.
    pub fn guard(&self) -> Guard {
        match self {
            GuardChoice::Budget { .. } => Guard::Budget,
            GuardChoice::Breaker { .. } => Guard::Breaker,
        }
    }

    /// Sets these knobs on the simulator's guard parameters.
    pub fn apply(&self, g: &mut GuardParams) {
        match *self {
            GuardChoice::Budget {
                tokens,
                token_ratio,
            } => {
                g.budget_tokens = tokens;
                g.budget_token_ratio = token_ratio;
            }
            GuardChoice::Breaker {
                threshold,
                probe_wait_s,
            } => {
                g.breaker_threshold = threshold;
                g.probe_wait = Duration::from_secs_f64(probe_wait_s);
            }
        }
    }

    /// The guard in words (`budget 100 tokens, ratio 0.1`).
    pub fn describe(&self) -> String {
        match *self {
            GuardChoice::Budget {
                tokens,
                token_ratio,
            } => format!(
                "budget {} tokens, ratio {}",
                units::number(tokens),
                units::number(token_ratio)
            ),
            GuardChoice::Breaker {
                threshold,
                probe_wait_s,
            } => format!(
                "breaker after {threshold} failures, probe wait {}",
                units::seconds(probe_wait_s)
            ),
        }
    }
}

/// One candidate of the search.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Candidate {
    /// The policy every client runs.
    pub policy: Policy,
    /// The fleet-level guard, if any.
    pub guard: Option<GuardChoice>,
}

impl Candidate {
    /// The simulator's strategy for this candidate.
    pub fn kind(&self) -> StrategyKind {
        let j = self.policy.jitter();
        match self.guard {
            Some(g) => StrategyKind::Guarded(j, g.guard()),
            None => StrategyKind::Backoff(j),
        }
    }
}

/// The axes of the grid: every combination is a candidate policy.
///
/// ```
/// use std::time::Duration;
/// use herdless_sim::tune::Space;
/// let s = Space::for_facts(Duration::from_secs(45), Some(Duration::from_secs(300)));
/// assert!(s.caps.iter().all(|&c| c >= Duration::from_secs(45)));
/// assert!(s.max_elapsed.contains(&Duration::from_secs(240)));
/// assert_eq!(s.len(), s.policies().count());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Space {
    /// Jitter modes.
    pub jitters: Vec<Jitter>,
    /// Base delays.
    pub bases: Vec<Duration>,
    /// Multipliers.
    pub multipliers: Vec<f64>,
    /// Caps.
    pub caps: Vec<Duration>,
    /// Attempt limits (counting the first call).
    pub max_attempts: Vec<u32>,
    /// Elapsed budgets.
    pub max_elapsed: Vec<Duration>,
    /// Budget knobs tried when the budget is allowed: `(tokens, ratio)`.
    pub budgets: Vec<(f64, f64)>,
    /// Breaker knobs tried when the breaker is allowed: `(threshold, probe wait)`.
    pub breakers: Vec<(u32, Duration)>,
}

impl Space {
    /// The default axes for a recovery time `r` and an optional visibility
    /// timeout `v`: every jitter mode; bases 250 ms, 1 s and 4 s;
    /// multipliers 1.5, 2 and 3; caps `r` and `2r`; 5, 8 and 12 attempts; elapsed budgets `2r` and `4r`, and 80 % of `v` when given
    /// (the largest the `visibility_timeout` check admits). Budgets of 100
    /// and 1,000 tokens (ratio 0.1), breakers opening after 5 or 20
    /// failures (probe wait 1 s).
    pub fn for_facts(r: Duration, v: Option<Duration>) -> Space {
        let r = r.max(Duration::from_millis(100));
        let mut max_elapsed = vec![r * 2, r * 4];
        if let Some(v) = v {
            max_elapsed.push(Duration::from_secs_f64(v.as_secs_f64() * 0.8));
        }
        max_elapsed.sort_unstable();
        max_elapsed.dedup();
        let ms = Duration::from_millis;
        Space {
            jitters: Jitter::ALL.to_vec(),
            bases: vec![ms(250), ms(1_000), ms(4_000)],
            multipliers: vec![1.5, 2.0, 3.0],
            caps: vec![r, r * 2],
            max_attempts: vec![5, 8, 12],
            max_elapsed,
            budgets: vec![(100.0, 0.1), (1_000.0, 0.1)],
            breakers: vec![(5, ms(1_000)), (20, ms(1_000))],
        }
    }

    /// The number of policies in the grid (before pruning).
    pub fn len(&self) -> usize {
        self.jitters.len()
            * self.bases.len()
            * self.multipliers.len()
            * self.caps.len()
            * self.max_attempts.len()
            * self.max_elapsed.len()
    }

    /// Whether the grid is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every policy of the grid, in a fixed order; a combination the library
    /// refuses (a cap below the base) is an error.
    pub fn policies(&self) -> impl Iterator<Item = Result<Policy, PolicyError>> + '_ {
        self.jitters.iter().flat_map(move |&j| {
            self.bases.iter().flat_map(move |&b| {
                self.multipliers.iter().flat_map(move |&m| {
                    self.caps.iter().flat_map(move |&c| {
                        self.max_attempts.iter().flat_map(move |&a| {
                            self.max_elapsed.iter().map(move |&e| {
                                Policy::builder()
                                    .jitter(j)
                                    .base(b)
                                    .multiplier(m)
                                    .cap(c)
                                    .max_attempts(a)
                                    .max_elapsed(e)
                                    .max_retry_after(c)
                                    .build()
                            })
                        })
                    })
                })
            })
        })
    }

    /// The guard variants tried for the allowed guards.
    pub fn guard_variants(&self, allowed: &[Guard]) -> Vec<GuardChoice> {
        let mut out = Vec::new();
        if allowed.contains(&Guard::Budget) {
            out.extend(
                self.budgets
                    .iter()
                    .map(|&(tokens, token_ratio)| GuardChoice::Budget {
                        tokens,
                        token_ratio,
                    }),
            );
        }
        if allowed.contains(&Guard::Breaker) {
            out.extend(
                self.breakers
                    .iter()
                    .map(|&(threshold, wait)| GuardChoice::Breaker {
                        threshold,
                        probe_wait_s: wait.as_secs_f64(),
                    }),
            );
        }
        out
    }
}
