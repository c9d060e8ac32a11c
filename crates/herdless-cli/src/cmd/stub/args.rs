//! `herdless stub`'s flags, and which of them turn server-guided pushback on.

use std::time::Duration;

use clap::{Args, ValueEnum};
use herdless_sim::endpoint::OutageEnd;

use herdless_sim::report::units;

use crate::shared::values::parse_duration;

/// `herdless stub` flags.
#[derive(Debug, Clone, Args)]
pub struct StubArgs {
    /// Port on 127.0.0.1 (0 picks a free one).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Fail each client's first K requests (client = X-Worker-Id header).
    #[arg(long, value_name = "K", default_value_t = 0)]
    pub fail_first: u32,
    /// Fail every K-th request, counted over all clients: 1 (every request)
    /// to 4294967295 [default: none].
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u32).range(1..))]
    pub fail_every: Option<u32>,
    /// Fail every request for this long after start (e.g. 5s).
    #[arg(long, value_parser = parse_duration, value_name = "DUR")]
    pub outage: Option<Duration>,
    /// Admit at most N requests per second; answer the rest 503 (with pushback:
    /// each rejection gets its own Retry-After slot).
    #[arg(long, value_name = "N")]
    pub capacity: Option<u32>,
    /// Server-guided pushback with --capacity: spread Retry-After / Retry-After-Ms
    /// slots. on: the adaptive allocator (learns the capacity and the outage's
    /// end); static: the slot allocator told the capacity; off: none
    /// (default: on when --capacity is given and --retry-after is not).
    #[arg(long, value_enum, value_name = "on|static|off")]
    pub pushback: Option<PushbackMode>,
    /// With pushback: the allocator's starting capacity estimate, as a factor
    /// of --capacity, 0.01 to 100 [default: 1].
    #[arg(long, value_name = "FACTOR", requires = "capacity")]
    pub capacity_estimate: Option<f64>,
    /// With pushback and --outage: whether the allocator is told when the
    /// outage ends (known) or finds it (unknown; the static allocator is then
    /// recovered at the end, as an operator would) [default: unknown].
    #[arg(long, value_parser = parse_outage_end, value_name = "known|unknown", requires = "outage")]
    pub outage_end: Option<OutageEnd>,
    /// With pushback (--capacity): the longest Retry-After handed out, 1s to
    /// 1d [default: 60s].
    #[arg(long, value_parser = parse_duration, value_name = "DUR", requires = "capacity")]
    pub horizon: Option<Duration>,
    /// With --pushback on: hold requests open instead of answering them
    /// during an outage or when their slot is near (a reconnect queue), at
    /// most N at once (1 to 10,000,000); past it, callers get slots [default
    /// with --hold-for or --hold-for-max: what the starting release rate
    /// serves in 0.4 --hold-for-max at the allocator's estimate, --capacity
    /// times --capacity-estimate: 120,000 at 10,000/s].
    #[arg(long, value_name = "N", requires = "capacity")]
    pub hold_max: Option<usize>,
    /// With --pushback on: the longest a request is held, 10ms to 1h, before it
    /// is answered with a slot; keep it below the clients' per-attempt
    /// timeouts [default with --hold-max: 10s].
    #[arg(long, value_parser = parse_duration, value_name = "DUR", requires = "capacity")]
    pub hold_for: Option<Duration>,
    /// With --pushback on: the longest a request is held when its client says
    /// it waits longer (`Prefer: wait=N`, which herdless clients send),
    /// --hold-for to 1h [default with --hold-for or --hold-max: 50s].
    #[arg(long, value_parser = parse_duration, value_name = "DUR", requires = "capacity")]
    pub hold_for_max: Option<Duration>,
    /// Retry-After value sent with every rejection, verbatim and the same for
    /// everyone (e.g. 2, or an HTTP-date); turns pushback off. Not empty.
    #[arg(long, value_name = "VALUE", value_parser = parse_retry_after)]
    pub retry_after: Option<String>,
    /// Status for --fail-first and --outage rejections (400-599).
    #[arg(long, value_name = "CODE", default_value_t = 503)]
    pub fail_status: u16,
    /// With --capacity: plan the refusals in waves (the library's wave
    /// planner): N, the population every plan covers (each caller's wave
    /// a salted hash of its X-Worker-Id), or `counted` (callers placed in
    /// turn as they are turned away). Every refusal carries Herdless-Plan
    /// and the caller's own point as Retry-After-Ms.
    #[arg(long, value_name = "N|counted", value_parser = super::waves::parse_population)]
    pub waves: Option<Population>,
    /// With --waves N: the spacing a plan of the whole population aims at,
    /// 1ms to 1h [default: 1s].
    #[arg(long, value_parser = parse_duration, value_name = "DUR")]
    pub wave_spacing: Option<Duration>,
    /// A gateway replica: forward what pushback admits to this HTTP endpoint
    /// (http://HOST:PORT, the request's path and query kept) and relay its
    /// answer; its 503s, 429s, timeouts and refused connections are the
    /// device failing. --capacity is then what pushback is told (the device
    /// is the upstream's; the flags of the stub's own device do not apply).
    #[arg(long, value_name = "URL", conflicts_with_all = ["outage", "outage_end", "fail_first", "fail_every", "retry_after", "fail_status"])]
    pub upstream: Option<String>,
    /// With --upstream: the longest the upstream may take to answer a
    /// forwarded request (to its response head), 1ms to 1h; past it, the
    /// device failed [default: 10s].
    #[arg(long, value_parser = parse_duration, value_name = "DUR", requires = "upstream")]
    pub upstream_timeout: Option<Duration>,
    /// With --upstream and --pushback on: share what this replica learns
    /// with the other gateways in front of the same upstream, through a NATS
    /// JetStream key-value bucket on this server (nats://HOST:PORT).
    #[arg(long, value_name = "nats://HOST:PORT", requires = "upstream")]
    pub coordinate: Option<String>,
    /// With --coordinate: this replica's id, its key in the bucket (letters,
    /// digits, '-', '_', '=', '.'; 1 to 128 bytes) [default: HOSTNAME-PORT].
    #[arg(long, value_name = "ID", requires = "coordinate")]
    pub replica_id: Option<String>,
}

/// The pushback horizon without `--horizon`: the longest Retry-After handed out.
pub(crate) const DEFAULT_HORIZON: Duration = Duration::from_secs(60);

/// The range of `--horizon`: the adaptive allocator's (1 s to 1 day), for the
/// static one too (whose slots, one per `1 / capacity`, are never longer
/// than 1 s at the at least 1 request per second it is told).
pub(super) const HORIZON_RANGE: std::ops::RangeInclusive<Duration> =
    Duration::from_secs(1)..=Duration::from_secs(86_400);

/// The range of the capacity a pushback allocator is told (`--capacity`
/// times `--capacity-estimate`), in requests per second: the library's.
pub(super) const TOLD_CAPACITY_RANGE: std::ops::RangeInclusive<f64> = 1.0..=1e9;

/// `--retry-after`: any header value but an empty (or blank) one, which would
/// send an empty `Retry-After` header.
fn parse_retry_after(s: &str) -> Result<String, String> {
    if s.trim().is_empty() {
        Err("must not be empty (leave --retry-after out to send no Retry-After)".into())
    } else {
        Ok(s.to_owned())
    }
}

fn parse_outage_end(s: &str) -> Result<OutageEnd, String> {
    s.parse()
}

/// `--waves` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Population {
    /// `--waves N`: told.
    Told(u64),
    /// `--waves counted`.
    Counted,
}

/// `--pushback` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PushbackMode {
    /// The adaptive allocator.
    On,
    /// The static slot allocator.
    Static,
    /// No pushback.
    Off,
}

/// Which pushback the flags ask for (`None`: none).
///
/// # Errors
///
/// A message for `--pushback on|static` with `--retry-after` or without
/// `--capacity`, or pushback settings without pushback.
pub(crate) fn pushback_enabled(args: &StubArgs) -> Result<Option<PushbackMode>, String> {
    let mode = match (args.pushback, &args.retry_after, args.capacity) {
        (Some(PushbackMode::Off), _, _) => None,
        (Some(m), Some(v), _) => {
            return Err(format!(
                "--pushback {} gives each rejection its own Retry-After slot; --retry-after {v:?} \
                 sends one value to everyone (drop one of them, or add --pushback off)",
                name(m)
            ));
        }
        (Some(m), None, None) => {
            return Err(format!(
                "--pushback {} needs --capacity N (the rate to spread the callers over)",
                name(m)
            ));
        }
        (Some(m), None, Some(_)) => Some(m),
        (None, None, Some(_)) => Some(PushbackMode::On),
        (None, _, _) => None,
    };
    if mode.is_none() {
        for (set, flag) in [
            (args.capacity_estimate.is_some(), "--capacity-estimate"),
            (args.outage_end.is_some(), "--outage-end"),
        ] {
            if set {
                return Err(format!(
                    "{flag} applies to server-guided pushback, which --pushback off or \
                     --retry-after turns off (drop {flag}, or use pushback)"
                ));
            }
        }
    }
    if let Some(f) = args.capacity_estimate {
        if !(0.01..=100.0).contains(&f) {
            return Err(format!(
                "--capacity-estimate {}: must be a factor of --capacity within 0.01..=100",
                units::number(f)
            ));
        }
    }
    if mode.is_some() {
        pushback_ranges(args)?;
    }
    Ok(mode)
}

/// The ranges of the pushback settings, each error naming the flags that
/// were given: `--horizon` within [`HORIZON_RANGE`], and the capacity told
/// to the allocator within [`TOLD_CAPACITY_RANGE`].
fn pushback_ranges(args: &StubArgs) -> Result<(), String> {
    if let Some(h) = args.horizon.filter(|h| !HORIZON_RANGE.contains(h)) {
        return Err(format!(
            "--horizon {}: must be within 1 s..=1 day (the longest Retry-After pushback hands out)",
            units::duration(h)
        ));
    }
    let Some(n) = args.capacity else {
        return Ok(());
    };
    let told = f64::from(n) * args.capacity_estimate.unwrap_or(1.0);
    if n == 0 || TOLD_CAPACITY_RANGE.contains(&told) {
        // (`--capacity 0` has its own message.)
        return Ok(());
    }
    Err(match args.capacity_estimate {
        Some(f) => format!(
            "--capacity {n} x --capacity-estimate {} = {} requests/s: the capacity pushback \
             starts from must be within 1..=1e9 requests/s",
            units::number(f),
            units::number(told)
        ),
        None => format!(
            "--capacity {n}: with pushback at most 1e9 requests/s (add --pushback off for a \
             larger token bucket alone)"
        ),
    })
}

fn name(m: PushbackMode) -> &'static str {
    match m {
        PushbackMode::On => "on",
        PushbackMode::Static => "static",
        PushbackMode::Off => "off",
    }
}

#[cfg(test)]
mod tests;
