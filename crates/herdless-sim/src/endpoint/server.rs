//! The pushback server's settings: the hold (the same knobs as `herdless
//! stub` and the tower layer), how many replicas run it, how the balancer
//! splits the arrivals between them, and whether they share what they learn.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use herdless::pushback::adaptive::{DEFAULT_HOLD_FOR, DEFAULT_HOLD_FOR_MAX, MAX_HOLD};

use crate::error::SimError;

/// How a balancer spreads the arrivals over the replicas (per request).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Split {
    /// Round robin: each replica the same share.
    #[default]
    Even,
    /// Round robin where one replica gets twice the share of each other.
    Skewed,
    /// Even, and one replica restarts 2 s after the outage's end: it answers
    /// every request it holds as on a shutdown (each its own slot, a requeue
    /// answer) and comes back with no state.
    Restart,
}

impl Split {
    /// Every split, in documentation order.
    pub const ALL: [Split; 3] = [Split::Even, Split::Skewed, Split::Restart];

    /// The split's name (`even`, `skewed`, `restart`).
    ///
    /// ```
    /// assert_eq!(herdless_sim::endpoint::Split::Skewed.name(), "skewed");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Split::Even => "even",
            Split::Skewed => "skewed",
            Split::Restart => "restart",
        }
    }
}

impl fmt::Display for Split {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Split {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Split::ALL
            .into_iter()
            .find(|x| x.name() == s)
            .ok_or_else(|| format!("unknown split {s:?} (expected even, skewed or restart)"))
    }
}

/// Whether the replicas share what they learn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Coordination {
    /// Each on its own.
    #[default]
    None,
    /// Through a shared store (reports once a second, read
    /// `coordination_delay` late).
    Shared,
}

impl Coordination {
    /// The name (`none`, `shared`).
    ///
    /// ```
    /// assert_eq!(herdless_sim::endpoint::Coordination::Shared.name(), "shared");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Coordination::None => "none",
            Coordination::Shared => "shared",
        }
    }
}

impl fmt::Display for Coordination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Coordination {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "none" => Ok(Coordination::None),
            "shared" => Ok(Coordination::Shared),
            _ => Err(format!(
                "unknown coordination {s:?} (expected none or shared)"
            )),
        }
    }
}

/// The most replicas a run may have.
pub const MAX_REPLICAS: u32 = 64;

/// The pushback server's settings.
///
/// ```
/// let s = herdless_sim::endpoint::ServerParams::default();
/// assert_eq!((s.replicas, s.hold_for.as_secs(), s.hold_for_max.as_secs()), (1, 10, 50));
/// assert!(s.validate().is_ok());
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ServerParams {
    /// The longest a request is held when its caller says nothing of its
    /// patience (the library's `hold_for`).
    pub hold_for: Duration,
    /// The longest a request is held when its caller waits longer
    /// (`hold_for_max`).
    pub hold_for_max: Duration,
    /// The most requests one replica holds (`None`: the library's default,
    /// from its estimate).
    pub hold_max: Option<usize>,
    /// Replicas in front of the one device (1 to [`MAX_REPLICAS`]); each is
    /// told `1 / replicas` of the estimate.
    pub replicas: u32,
    /// How the balancer splits the arrivals.
    pub split: Split,
    /// Whether the replicas share what they learn.
    pub coordination: Coordination,
    /// How late a replica reads the others' reports.
    pub coordination_delay: Duration,
}

impl Default for ServerParams {
    fn default() -> Self {
        ServerParams {
            hold_for: DEFAULT_HOLD_FOR,
            hold_for_max: DEFAULT_HOLD_FOR_MAX,
            hold_max: None,
            replicas: 1,
            split: Split::Even,
            coordination: Coordination::None,
            coordination_delay: Duration::from_secs(1),
        }
    }
}

impl ServerParams {
    /// Checks every setting against its range.
    ///
    /// # Errors
    ///
    /// [`SimError::Invalid`] naming the setting.
    ///
    /// ```
    /// let s = herdless_sim::endpoint::ServerParams { replicas: 0, ..Default::default() };
    /// assert!(s.validate().is_err());
    /// ```
    pub fn validate(&self) -> Result<(), SimError> {
        let bad = |ok: bool, what: &str| {
            if ok {
                Ok(())
            } else {
                Err(SimError::Invalid(what.to_owned()))
            }
        };
        let hour = Duration::from_secs(3_600);
        bad(
            (Duration::from_millis(10)..=hour).contains(&self.hold_for),
            "--hold-for must be within 10ms..=1h",
        )?;
        bad(
            (self.hold_for..=hour).contains(&self.hold_for_max),
            "--hold-for-max must be within --hold-for..=1h",
        )?;
        bad(
            self.hold_max.is_none_or(|n| (1..=MAX_HOLD).contains(&n)),
            "--hold-max must be within 1..=10000000",
        )?;
        bad(
            (1..=MAX_REPLICAS).contains(&self.replicas),
            "--replicas must be within 1..=64",
        )?;
        bad(
            self.coordination_delay <= Duration::from_secs(60),
            "--coordination-delay must be within 0s..=60s",
        )
    }
}
