//! The server-side allocators' tuned constants, in one place, apart from the
//! mechanisms that use them (`adaptive/`, `waves/`).
//!
//! Each is a number the simulator chose among its neighbours; each says what
//! it does, what bounds it, and the `herdless simulate` command that shows it
//! doing its job (a release build: `cargo run --release -- simulate ...`). The
//! figures those runs give, and the values tried and not kept, are in
//! `docs/fleet-protection.md` ("Adaptive pushback" and "Robustness: the
//! server wrong on purpose"), next to their commands and the machine's load:
//! a figure changes when a constant does, the reasoning here should not.
//!
//! The goals the robustness matrix checks for every cell (`goals` in its
//! JSON): the honoring clients drain within 1.25x the physical limit with at
//! most 2 calls each, nobody gives up, the honoring peak and the service's
//! own load stay within 1.2x the capacity. Seeds 1 to 8 (`--seed N`) must
//! all pass: one seed is a sample, not a claim.

/// Estimate: the fewest events (admissions and rejections) a window must
/// hold before it teaches the estimate anything; sparse traffic says nothing
/// about a rate. Twenty keeps one 100 ms window meaningful down to 200
/// requests a second.
///
/// `herdless simulate --scenario robustness --jitter full+pushback`: the
/// estimate converges in the cells with a wrong estimate.
pub(crate) const MIN_EVENTS: u64 = 20;

/// Estimate: a window is **saturated** when the service refused at least one
/// in this many of the requests admitted (2 %): below it, a refusal is noise
/// (a retry racing a slot), not the capacity.
///
/// `herdless simulate --scenario robustness --jitter full+pushback`.
pub(crate) const SATURATED_ONE_IN: u64 = 50;

/// Estimate: a saturated window's served rate becomes the estimate, but it
/// falls by at most this factor per window (at most halving): one bad window
/// (a stall, a burst of slow requests) cannot collapse it.
///
/// `herdless simulate --scenario robustness --jitter full+pushback` (the cells
/// told twice the capacity: corrected within one window of traffic).
pub(crate) const MAX_DECREASE: f64 = 0.5;

/// Estimate: a served rate no more than this factor above the estimate
/// verifies it (a measured, not a guessed, capacity), and a verified
/// estimate grows by this factor per window while callers are turned away
/// and nothing is refused (additive increase, gently: it was measured).
///
/// `herdless simulate --scenario robustness --jitter full+pushback` (the cells
/// told half the capacity: the estimate climbs to it).
pub(crate) const VERIFIED_GROWTH: f64 = 1.05;

/// Estimate: growth per window of an unverified estimate without a hold
/// (doubling, TCP's slow start: an underestimate is corrected within a few
/// windows).
///
/// `herdless simulate --scenario robustness --jitter full+pushback`.
pub(crate) const UNVERIFIED_GROWTH: f64 = 2.0;

/// Estimate, with a hold: growth per window of an unverified estimate (the
/// release's slow start, gentler than doubling: the whole queue is behind it,
/// and an overshoot is paid by every held request at once).
///
/// `herdless simulate --scenario robustness --jitter full+hold` (the C = 2E
/// cells: the release grows from 0.3 C to C).
pub(crate) const HOLD_GROWTH: f64 = 1.25;

/// Estimate: growth per window of an unverified estimate above its ceiling
/// (what the service was known to take): slowly, because a service with slack
/// (an accept queue, a token bucket that filled while fed less) refuses
/// nothing until the slack is spent, so a loss-based probe overshoots by what
/// grows while the slack lasts.
///
/// `herdless simulate --scenario robustness --jitter full+hold` (the service's
/// own peak in the C = E/2 cells).
pub(crate) const PROBE_GROWTH: f64 = 1.02;

/// A caller that comes back this much before its slot (nanoseconds, 5 ms) is
/// still on time: clock differences between the caller and the server.
///
/// `herdless simulate --honor 0.5 --jitter full+pushback` (the honoring
/// callers are not marked early).
pub(crate) const EARLY_TOLERANCE: u64 = 5_000_000;

/// While down with an unknown end (or while a refusal run outlasts its first
/// slot), callers are rebooked at this share of the estimate: generations
/// booked at different times overlap when they come back.
///
/// `herdless simulate --scenario robustness --jitter full+hold,full+pushback`
/// (the unknown-end cells).
pub(crate) const HOLD_SHARE: f64 = 0.9;

/// With a hold: the share of the estimate at which releases start after an
/// outage (the estimate restarts there, unverified). It also sizes the
/// default `hold_max` ([`HOLD_MAX_SPAN`]). Low enough that an estimate twice
/// the capacity releases at 1.2x it, where the settle windows catch it.
///
/// `herdless simulate --scenario robustness --jitter full+hold` (the C = E/2
/// cells' service peak; the C = 2E cells' drain).
pub(crate) const RELEASE_START: f64 = 0.6;

/// With a hold: the share of the estimate at which the callers the hold
/// cannot keep (past `hold_max`) are booked: these are the only arrivals the
/// allocator cannot correct, so an estimate twice the capacity brings them
/// back at 1.1x it, with room for their own spread.
///
/// `herdless simulate --scenario robustness --jitter full+hold` (0.6 left the
/// C = E/2 cells' honoring peak above the goal; 0.5 slowed the C = 2E drain).
pub(crate) const OUTSIDE_SHARE: f64 = 0.55;

/// With a hold: windows the release keeps its starting rate after a recovery
/// before it grows (a refusal ends the wait). A service back between two
/// probes banks up to one probe interval of its capacity; released at 1.2x
/// it, that slack hides the overrun for up to 2.5 windows, and growing
/// meanwhile would take the service well past its capacity before the first
/// refusal.
///
/// `herdless simulate --scenario robustness --jitter full+hold` (the C = E/2
/// cells' service peak; costs the C = E and 2E cells a little drain).
pub(crate) const SETTLE_WINDOWS: u32 = 3;

/// With a hold: the default `hold_max` is what the starting rate
/// ([`RELEASE_START`]) releases in this share of `hold_for`, so that a hold
/// filled when an outage of up to `1 − HOLD_MAX_SPAN` of `hold_for` begins
/// drains before its first request runs out of time (2.4 s of the estimate
/// at the default 10 s `hold_for`).
///
/// `herdless simulate --scenario robustness --jitter full+hold` (`max_held`
/// per cell: the bound reached in the 5 s outages, not in the 60 s ones).
pub(crate) const HOLD_MAX_SPAN: f64 = 0.4;

/// The shortest wait handed out while down with an unknown end, by default
/// (`min_hold`): a caller checks back about once per elapsed outage, never
/// sooner than this.
///
/// `herdless simulate --jitter full+pushback` (the outage table: calls per
/// client in an unknown 5 s outage).
pub(crate) const DEFAULT_MIN_HOLD: std::time::Duration = std::time::Duration::from_secs(2);

/// Waves: the share of the capacity a plan fills (its wave sizes are this
/// share of the estimate times the spacing). The rest is headroom for what
/// a plan cannot shape: a 100 ms bucket of uniformly drawn arrivals varies
/// by about its square root (3 % at 1,000 per bucket), a wave's size by the
/// hash's balance, and callers the plan cannot name come on top.
///
/// `herdless simulate --scenario reactivation` (the announced plan's peak
/// within 1.10x the capacity and its drain within 1.10x `N / C`).
pub(crate) const WAVE_SHARE: f64 = 0.95;

/// Waves: the spacing a plan aims at when nothing is told (its `K` is the
/// plan's span over it, rounded up, and the spacing then the span over `K`,
/// so the last wave is as full as the others). Long enough that a caller
/// which misses its wave waits little more than a spacing, short enough
/// that the plan's span is cut in many waves.
///
/// `herdless simulate --scenario reactivation` (the announced plan).
pub(crate) const WAVE_SPACING: std::time::Duration = std::time::Duration::from_secs(1);

/// Waves: how long one segment of a counted plan lasts (its one wave): the
/// callers turned away are placed in turn, a segment's worth of the
/// capacity at a time, and the last segment, never full, wastes at most
/// this much of the drain.
///
/// `herdless simulate --scenario reactivation --plan unannounced` and the
/// outage scenario's `full+waves` (drain within 1.10x the limit).
pub(crate) const WAVE_SEGMENT: std::time::Duration = std::time::Duration::from_millis(100);

/// Replicas sharing their reports: the share of the fleet's capacity a
/// replica aims at is its backlog's share of the total, times this margin:
/// the reports are a period old and every replica applies its own at its
/// own time, so shares computed from them overlap by what changed since.
///
/// `herdless simulate --scenario field` (the coordinated cells' service
/// peak with 3 and 8 replicas).
pub(crate) const SHARE_MARGIN: f64 = 0.9;

/// Replicas sharing their reports: the least share of the fleet's capacity a
/// replica is left with, as a share of an even split (a replica whose queue
/// is empty still serves what arrives, and learns from it).
///
/// `herdless simulate --scenario field` (the `restart` cells).
pub(crate) const SHARE_FLOOR: f64 = 0.1;
