//! From the flags to the device and the layer in front of it, every
//! combination checked first (a usage error names the flags at fault).

use std::time::Duration;

use axum::http::{HeaderValue, StatusCode};
use herdless::pushback::{AdaptiveAllocator, SlotAllocator};
use herdless_sim::endpoint::{OutageEnd, TokenBucket};

use super::args::{DEFAULT_HORIZON, PushbackMode, StubArgs, pushback_enabled};
use super::device::{Device, FailEvery, FailFirstByWorker, bucket};
use super::front::Pushback;
use super::gateway::{Gateway, gateway};

/// What `herdless stub` serves: the device, the pushback in front of it,
/// and the status of the outage's refusals.
#[derive(Debug)]
pub(crate) struct Plan {
    pub(crate) device: Device,
    pub(crate) pushback: Pushback,
    pub(crate) outage_status: StatusCode,
    /// `--upstream`: the layer relays to it instead of serving `device`.
    pub(crate) gateway: Option<Gateway>,
}

impl Plan {
    /// The plan the flags describe.
    ///
    /// # Errors
    ///
    /// A message for an invalid `--fail-status`, `--capacity`, `--horizon`,
    /// `--retry-after`, `--pushback` or hold combination.
    pub(crate) fn from_args(args: &StubArgs) -> Result<Plan, String> {
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
        super::waves::conflicts(args)?;
        let mode = if args.waves.is_some() {
            // The planner is the layer's allocator: the pushback ranges
            // apply, checked before it is built so the messages name the
            // flags given.
            pushback_enabled(&StubArgs {
                pushback: Some(PushbackMode::On),
                ..args.clone()
            })?
        } else {
            pushback_enabled(args)?
        };
        let waves = super::waves::pushback(args, args.capacity.map(|n| told(args, n)))?;
        if let (None, Some(h)) = (mode, args.horizon) {
            return Err(format!(
                "--horizon {h:?} applies to server-guided pushback, which --pushback off or \
                 --retry-after turns off (drop --horizon, or use pushback)"
            ));
        }
        let hold = hold(args, mode)?;
        let gateway = gateway(args, mode)?;
        let device = Device {
            status,
            retry_after,
            outage: args.outage,
            fail_first: (args.fail_first > 0)
                .then(|| FailFirstByWorker::new(u64::from(args.fail_first))),
            fail_every: args.fail_every.map(|k| FailEvery::new(u64::from(k))),
            // A gateway's capacity is what pushback is told; the device is
            // the upstream's.
            capacity: args
                .capacity
                .filter(|_| gateway.is_none())
                .map(|n| bucket(n, args.outage.unwrap_or_default())),
        };
        let pushback = match (waves, mode, args.capacity) {
            (Some(planner), _, _) => planner,
            (None, Some(PushbackMode::On), Some(n)) => adaptive(args, told(args, n), hold)?,
            (None, Some(PushbackMode::Static), Some(n)) => static_(args, told(args, n))?,
            _ => Pushback::Off,
        };
        Ok(Plan {
            device,
            pushback,
            outage_status: status,
            gateway,
        })
    }
}

/// The capacity the allocator is told: `--capacity` times
/// `--capacity-estimate`.
fn told(args: &StubArgs, n: u32) -> f64 {
    f64::from(n) * args.capacity_estimate.unwrap_or(1.0)
}

/// A hold: `(most held, longest hold, longest hold of a patient caller)`,
/// each `None` for the library's default.
type Hold = (Option<usize>, Option<Duration>, Option<Duration>);

/// The hold the flags ask for, if any.
fn hold(args: &StubArgs, mode: Option<PushbackMode>) -> Result<Option<Hold>, String> {
    if args.hold_max.is_none() && args.hold_for.is_none() && args.hold_for_max.is_none() {
        return Ok(None);
    }
    if mode != Some(PushbackMode::On) {
        return Err(
            "--hold-max, --hold-for and --hold-for-max hold requests in the adaptive \
             allocator: they need --capacity with --pushback on (the default)"
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
        .filter(|d| !(Duration::from_millis(10)..=Duration::from_secs(3_600)).contains(d))
    {
        return Err(format!(
            "--hold-for {}: must be within 10ms..=1h",
            herdless_sim::report::units::duration(d)
        ));
    }
    // --hold-for-max below --hold-for or past 1h: the library's builder
    // refuses it, naming the setting.
    Ok(Some((args.hold_max, args.hold_for, args.hold_for_max)))
}

/// The adaptive allocator (`--pushback on`), told the outage's end with
/// `--outage-end known`.
fn adaptive(args: &StubArgs, estimate: f64, hold: Option<Hold>) -> Result<Pushback, String> {
    let horizon = args.horizon.unwrap_or(DEFAULT_HORIZON);
    let mut b = AdaptiveAllocator::builder()
        .estimate(estimate)
        .horizon(horizon);
    if let Some((max, for_, for_max)) = hold {
        b = b.hold();
        if let Some(n) = max {
            b = b.hold_max(n);
        }
        if let Some(d) = for_ {
            b = b.hold_for(d);
        }
        if let Some(d) = for_max {
            b = b.hold_for_max(d);
        }
    }
    let mut alloc = b.build().map_err(|e| {
        format!("--capacity-estimate {estimate}/s --horizon {horizon:?} and the hold: {e}")
    })?;
    if let Some(end) = args
        .outage
        .filter(|_| args.outage_end == Some(OutageEnd::Known))
    {
        alloc = alloc.outage_until(end);
    }
    Ok(Pushback::Adaptive {
        alloc: Box::new(alloc),
        hold: hold.is_some(),
    })
}

/// The static allocator (`--pushback static`) at `told` requests per second
/// (its burst 100 ms of it), in outage mode during `--outage`: told the end,
/// or recovered at it.
fn static_(args: &StubArgs, told: f64) -> Result<Pushback, String> {
    let horizon = args.horizon.unwrap_or(DEFAULT_HORIZON);
    let burst = TokenBucket::default_burst(told.round().clamp(1.0, f64::from(u32::MAX)) as u32);
    let mut alloc = SlotAllocator::new(told, horizon)
        .map_err(|e| format!("--capacity {told}/s --horizon {horizon:?}: {e}"))?
        .burst(burst);
    let mut recover_at = None;
    match args.outage {
        Some(d) if args.outage_end == Some(OutageEnd::Known) => alloc = alloc.outage_until(d),
        Some(d) => {
            alloc = alloc.outage();
            recover_at = Some(d);
        }
        None => {}
    }
    Ok(Pushback::Static { alloc, recover_at })
}
