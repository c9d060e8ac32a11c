//! `--waves`: the library's wave planner in front of the device, so a fleet
//! coming back at once is told a plan of waves with every refusal.
//!
//! `--waves N` tells the planner the population (N callers: one plan of
//! the whole population, each caller's wave a salted hash of its
//! `X-Worker-Id`); `--waves counted` tells it nothing (it places the
//! callers it turns away in turn, a counted plan). `--wave-spacing DUR`
//! is the spacing a plan of the whole population aims at (default 1 s;
//! refused with `counted`, whose segments are the library's). The planner is told
//! `--capacity` (its capacity, not learned); with `--capacity-estimate`
//! it starts from `--capacity` times it and learns the rest as the
//! adaptive allocator does. It is told the outage's end with
//! `--outage-end known`. Every refusal is `503` with `Herdless-Plan` and
//! the caller's own point in the plan as `Retry-After-Ms` (and
//! `Retry-After`).

use std::ops::RangeInclusive;
use std::time::Duration;

use herdless::pushback::waves::{MAX_POPULATION, WavePlanner};
use herdless_sim::endpoint::OutageEnd;
use herdless_sim::report::units;

use super::args::{DEFAULT_HORIZON, Population, PushbackMode, StubArgs};
use super::front::Pushback;

/// `--wave-spacing`'s range (the planner's).
const SPACING_RANGE: RangeInclusive<Duration> =
    Duration::from_millis(1)..=Duration::from_secs(3_600);

/// Parses `--waves`: a number of callers (1 to 1e9) or `counted`.
pub(crate) fn parse_population(s: &str) -> Result<Population, String> {
    let t = s.trim();
    if t.eq_ignore_ascii_case("counted") {
        return Ok(Population::Counted);
    }
    t.parse::<u64>()
        .ok()
        .filter(|n| (1..=MAX_POPULATION).contains(n))
        .map(Population::Told)
        .ok_or_else(|| format!("{s:?}: a population of 1 to 1000000000 callers, or counted"))
}

/// Refuses what cannot go with `--waves` (run before the pushback ranges,
/// so the message names `--waves`).
///
/// # Errors
///
/// A message naming the flags at fault.
pub(crate) fn conflicts(args: &StubArgs) -> Result<(), String> {
    if args.waves.is_none() {
        if args.wave_spacing.is_some() {
            return Err(
                "--wave-spacing applies to --waves (add --waves N or --waves counted)".into(),
            );
        }
        return Ok(());
    }
    if args.capacity.is_none() {
        return Err("--waves needs --capacity N (the rate the waves are sized to)".into());
    }
    if args.waves == Some(Population::Counted) && args.wave_spacing.is_some() {
        return Err(
            "--wave-spacing shapes a plan of the whole population (--waves N); a counted plan \
             places callers in segments of 100 ms (drop --wave-spacing, or give --waves N)"
                .into(),
        );
    }
    if let Some(d) = args.wave_spacing.filter(|d| !SPACING_RANGE.contains(d)) {
        return Err(format!(
            "--wave-spacing {}: the spacing must be within 1 ms..=1 h",
            units::duration(d)
        ));
    }
    for (set, flag) in [
        (args.retry_after.is_some(), "--retry-after"),
        (
            args.hold_max.is_some() || args.hold_for.is_some(),
            "--hold-max/--hold-for",
        ),
        (
            matches!(
                args.pushback,
                Some(PushbackMode::Static | PushbackMode::Off)
            ),
            "--pushback static|off",
        ),
    ] {
        if set {
            return Err(format!(
                "--waves plans the refusals itself: it does not go with {flag} (drop one of them)"
            ));
        }
    }
    Ok(())
}

/// The planner `--waves` asks for (`None` without it), told `estimate`
/// (`--capacity` times `--capacity-estimate`, already checked against the
/// pushback ranges).
///
/// # Errors
///
/// A setting out of range ([`conflicts`] is checked before).
pub(crate) fn pushback(args: &StubArgs, estimate: Option<f64>) -> Result<Option<Pushback>, String> {
    let (Some(population), Some(estimate)) = (args.waves, estimate) else {
        return Ok(None);
    };
    // `--capacity` alone is the capacity, told; with `--capacity-estimate`
    // it is a guess, learned from.
    let b = match args.capacity_estimate {
        None => WavePlanner::builder().capacity(estimate),
        Some(_) => WavePlanner::builder().estimate(estimate),
    };
    let mut b = b.horizon(args.horizon.unwrap_or(DEFAULT_HORIZON));
    if let Population::Told(n) = population {
        b = b.population(n);
    }
    if let Some(d) = args.wave_spacing {
        b = b.spacing(d);
    }
    let mut planner = b.build().map_err(|e| format!("--waves: {e}"))?;
    if let Some(end) = args
        .outage
        .filter(|_| args.outage_end == Some(OutageEnd::Known))
    {
        planner = planner.outage_until(end);
    }
    Ok(Some(Pushback::Waves(Box::new(planner))))
}
