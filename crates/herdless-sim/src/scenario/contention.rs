//! The **contention** scenario (the published AWS "Exponential Backoff and
//! Jitter" experiment).
//!
//! `N` clients share one record with a version number. Each client reads the
//! version, then writes it back conditionally: the write succeeds only if the
//! version is still the one it read, and a success bumps the version. A client
//! whose write fails waits its backoff and reads again, until it has written
//! once. We measure the total number of write calls and the time until every
//! client has written, averaged over `trials` runs, for `N` over a sweep
//! (default 10, 20, …, 200).
//!
//! Modelling choices (the experiment is described, not specified):
//!
//! * **Hops.** A read and a write are each a round trip: a request hop to the
//!   server and a response hop back, each taking `|Normal(10 ms, 2 ms)|`,
//!   drawn independently (Box–Muller on the library's [`Rng`]). The server
//!   takes no time.
//! * **What a read sees** is the version at the moment the read request
//!   arrives at the server; a write is checked and applied at the moment its
//!   request arrives. The write is sent as soon as the read's response is back.
//! * **Start.** All clients send their first read at time 0.
//! * **Backoff.** After a failed write's response arrives, the client waits the
//!   strategy's delay (base 5 ms, cap 2 s, multiplier 2, no attempt or time
//!   limit; the retry index counts failed writes), then sends a new read.
//!   `no-backoff` reads again at once; `none` is exponential without jitter.
//! * **Completion** is the arrival of the last successful write's response.
//! * **Trials.** Trial `i` of size `N` uses the same seed for every strategy
//!   (common random numbers), derived from `--seed`, `N` and `i`.

use std::time::Duration;

use herdless::engine::{Context, Decision, Engine};
use herdless::{Classification, Policy, RetryCause, Rng};
use serde::Serialize;

use crate::error::SimError;
use crate::queue::EventQueue;
use crate::strategy::{Strategy, StrategyKind};

/// Parameters of the contention scenario.
///
/// ```
/// let p = herdless_sim::ContentionParams::default();
/// assert_eq!(p.clients.first(), Some(&10));
/// assert_eq!(p.clients.last(), Some(&200));
/// assert_eq!(p.trials, 100);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ContentionParams {
    /// The numbers of clients to sweep.
    pub clients: Vec<u32>,
    /// Runs averaged per number of clients.
    pub trials: u32,
    /// Mean of a network hop.
    pub hop_mean: Duration,
    /// Standard deviation of a network hop.
    pub hop_sd: Duration,
    /// The base policy: base 5 ms, cap 2 s, no attempt or time limit.
    pub policy: Policy,
}

impl Default for ContentionParams {
    fn default() -> Self {
        Self {
            clients: Self::sweep(200),
            trials: 100,
            hop_mean: Duration::from_millis(10),
            hop_sd: Duration::from_millis(2),
            policy: Self::default_policy(),
        }
    }
}

impl ContentionParams {
    /// The experiment's policy: base 5 ms, ×2, cap 2 s, no attempt or time limit.
    ///
    /// ```
    /// let p = herdless_sim::ContentionParams::default_policy();
    /// assert_eq!(p.base().as_millis(), 5);
    /// assert_eq!(p.cap().as_secs(), 2);
    /// ```
    pub fn default_policy() -> Policy {
        Policy::builder()
            .base(Duration::from_millis(5))
            .cap(Duration::from_secs(2))
            .max_attempts(u32::MAX)
            .max_elapsed(Duration::MAX)
            .build()
            .expect("a valid policy")
    }

    /// The default sweep up to `max` clients: 20 evenly spaced sizes
    /// (`max / 20, 2 · max / 20, …, max`), or `1..=max` when `max < 20`.
    ///
    /// ```
    /// use herdless_sim::ContentionParams;
    /// assert_eq!(ContentionParams::sweep(200)[..3], [10, 20, 30]);
    /// assert_eq!(ContentionParams::sweep(3), vec![1, 2, 3]);
    /// ```
    pub fn sweep(max: u32) -> Vec<u32> {
        if max < 20 {
            return (1..=max).collect();
        }
        (1..=20).map(|i| (u64::from(max) * i / 20) as u32).collect()
    }

    /// Checks the ranges: 1 to 10,000 clients per point, 1 to 100,000 trials.
    ///
    /// ```
    /// let p = herdless_sim::ContentionParams { trials: 0, ..Default::default() };
    /// assert!(p.validate().is_err());
    /// ```
    pub fn validate(&self) -> Result<(), SimError> {
        if self.clients.is_empty() || self.clients.iter().any(|&n| !(1..=10_000).contains(&n)) {
            return Err(SimError::Invalid(
                "contention clients must be in 1..=10000".into(),
            ));
        }
        if !(1..=100_000).contains(&self.trials) {
            return Err(SimError::Invalid(format!(
                "trials must be in 1..=100000 (got {})",
                self.trials
            )));
        }
        Ok(())
    }
}

/// One point of a strategy's sweep: means over the trials.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ContentionPoint {
    /// Number of clients.
    pub clients: u32,
    /// Mean total write calls of the fleet.
    pub calls: f64,
    /// Mean time until every client has written, in seconds.
    pub completion_s: f64,
}

/// One strategy's figures in the contention scenario (JSON field names are the
/// README's contract).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ContentionFigures {
    /// Strategy name.
    pub strategy: String,
    /// Mean total write calls at the largest number of clients.
    pub calls: f64,
    /// Mean completion time at the largest number of clients, in seconds.
    pub completion_s: f64,
    /// The whole sweep.
    pub points: Vec<ContentionPoint>,
}

/// The result of one trial.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrialOutcome {
    /// Write calls made by the fleet.
    pub writes: u64,
    /// Time the last client's successful write response arrived (ns).
    pub completion_ns: u64,
}

#[derive(Debug)]
struct Writer {
    engine: Engine,
    seen: u64,
    writes: u32,
    reading: bool,
}

struct Hops {
    mean: f64,
    sd: f64,
}

impl Hops {
    /// `|Normal(mean, sd)|` in nanoseconds (Box–Muller).
    #[inline]
    fn draw(&self, rng: &mut Rng) -> u64 {
        let u1 = 1.0 - rng.unit_f64(); // (0, 1]
        let u2 = rng.unit_f64();
        let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
        (self.mean + self.sd * z).abs() as u64
    }
}

/// Runs one trial with `n` clients under `strategy`.
///
/// ```
/// use herdless_sim::{scenario::contention, ContentionParams, StrategyKind};
/// let p = ContentionParams::default();
/// let s = StrategyKind::Backoff(herdless::Jitter::Full).resolve(&p.policy);
/// let t = contention::run_trial(&p, 10, &s, 3);
/// assert!(t.writes >= 10); // every client writes at least once
/// ```
pub fn run_trial(
    params: &ContentionParams,
    n: u32,
    strategy: &Strategy,
    seed: u64,
) -> TrialOutcome {
    let hops = Hops {
        mean: params.hop_mean.as_secs_f64() * 1e9,
        sd: params.hop_sd.as_secs_f64() * 1e9,
    };
    let mut rng = Rng::with_seed(seed);
    let cx = Context::new(strategy.policy()).trace(false).metrics(false);
    let mut writers: Vec<Writer> = (0..n)
        .map(|_| Writer {
            engine: Engine::new(Duration::ZERO),
            seen: 0,
            writes: 0,
            reading: true,
        })
        .collect();
    let mut queue = EventQueue::with_capacity(n as usize);
    for i in 0..n {
        queue.push(hops.draw(&mut rng), i);
    }
    let mut version = 0u64;
    let mut out = TrialOutcome {
        writes: 0,
        completion_ns: 0,
    };
    while let Some(ev) = queue.pop() {
        let now = ev.at_ns;
        let w = &mut writers[ev.client as usize];
        if w.reading {
            // The read arrives: note the version; response hop, then write hop.
            w.seen = version;
            w.reading = false;
            let back = hops.draw(&mut rng);
            let there = hops.draw(&mut rng);
            queue.push(now + back + there, ev.client);
            continue;
        }
        w.writes += 1;
        w.engine.begin();
        out.writes += 1;
        let answered = now + hops.draw(&mut rng);
        if w.seen == version {
            version += 1;
            w.engine.succeeded(&cx, Duration::from_nanos(answered));
            out.completion_ns = out.completion_ns.max(answered);
            continue;
        }
        let at = Duration::from_nanos(answered);
        match w.engine.failed(
            &cx,
            at,
            Classification::retryable(),
            RetryCause::Error,
            &mut rng,
        ) {
            Decision::Retry { delay, .. } => {
                w.reading = true;
                let d = u64::try_from(delay.as_nanos()).unwrap_or(u64::MAX);
                let arrive = answered
                    .saturating_add(d)
                    .saturating_add(hops.draw(&mut rng));
                queue.push(arrive, ev.client);
            }
            // Unreachable with the experiment's unlimited policy; a user policy
            // with limits ends the client here.
            Decision::GiveUp(_) => out.completion_ns = out.completion_ns.max(answered),
        }
    }
    out
}

/// The seed of trial `trial` with `n` clients.
pub(crate) fn trial_seed(seed: u64, n: u32, trial: u32) -> u64 {
    crate::stream_seed(seed, (u64::from(n) << 32) | u64::from(trial))
}

/// Runs the sweep for one strategy on the calling thread (the CLI spreads
/// strategies and trials over threads through [`Simulation`](crate::Simulation)).
///
/// ```
/// use herdless_sim::{scenario::contention, ContentionParams, StrategyKind};
/// let p = ContentionParams { clients: vec![5, 10], trials: 3, ..Default::default() };
/// let f = contention::run(&p, StrategyKind::NoBackoff, 1)?;
/// assert_eq!(f.points.len(), 2);
/// # Ok::<(), herdless_sim::SimError>(())
/// ```
pub fn run(
    params: &ContentionParams,
    kind: StrategyKind,
    seed: u64,
) -> Result<ContentionFigures, SimError> {
    params.validate()?;
    super::outage_only(super::Scenario::Contention, kind)?;
    let strategy = kind.resolve(&params.policy);
    let outcomes: Vec<Vec<TrialOutcome>> = params
        .clients
        .iter()
        .map(|&n| {
            (0..params.trials)
                .map(|t| run_trial(params, n, &strategy, trial_seed(seed, n, t)))
                .collect()
        })
        .collect();
    Ok(summarize(params, kind, &outcomes))
}

/// Averages trial outcomes (`outcomes[point][trial]`) into figures.
pub(crate) fn summarize(
    params: &ContentionParams,
    kind: StrategyKind,
    outcomes: &[Vec<TrialOutcome>],
) -> ContentionFigures {
    let points: Vec<ContentionPoint> = params
        .clients
        .iter()
        .zip(outcomes)
        .map(|(&clients, trials)| {
            let k = trials.len().max(1) as f64;
            ContentionPoint {
                clients,
                calls: trials.iter().map(|t| t.writes as f64).sum::<f64>() / k,
                completion_s: trials.iter().map(|t| t.completion_ns as f64).sum::<f64>() / k / 1e9,
            }
        })
        .collect();
    let last = points.last().copied().unwrap_or(ContentionPoint {
        clients: 0,
        calls: 0.0,
        completion_s: 0.0,
    });
    ContentionFigures {
        strategy: kind.name().to_owned(),
        calls: last.calls,
        completion_s: last.completion_s,
        points,
    }
}
