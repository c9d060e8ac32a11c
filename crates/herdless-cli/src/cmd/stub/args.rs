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
    /// with --hold-for: 2.4 s of the capacity].
    #[arg(long, value_name = "N", requires = "capacity")]
    pub hold_max: Option<usize>,
    /// With --pushback on: the longest a request is held, 1ms to 1h, before it
    /// is answered with a slot; keep it below the clients' per-attempt
    /// timeouts [default with --hold-max: 10s].
    #[arg(long, value_parser = parse_duration, value_name = "DUR", requires = "capacity")]
    pub hold_for: Option<Duration>,
    /// Retry-After value sent with every rejection, verbatim and the same for
    /// everyone (e.g. 2, or an HTTP-date); turns pushback off. Not empty.
    #[arg(long, value_name = "VALUE", value_parser = parse_retry_after)]
    pub retry_after: Option<String>,
    /// Status for --fail-first and --outage rejections (400-599).
    #[arg(long, value_name = "CODE", default_value_t = 503)]
    pub fail_status: u16,
}

/// The pushback horizon without `--horizon`: the longest Retry-After handed out.
pub const DEFAULT_HORIZON: Duration = Duration::from_secs(60);

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
pub fn pushback_enabled(args: &StubArgs) -> Result<Option<PushbackMode>, String> {
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
mod tests {
    use super::*;

    /// The command line as `herdless` parses it, for `stub` alone (a
    /// subcommand does not import the parser above it).
    mod cli {
        #[derive(Debug, clap::Parser)]
        #[command(name = "herdless")]
        pub(super) struct Cli {
            #[command(subcommand)]
            pub(super) command: Command,
        }

        #[derive(Debug, clap::Subcommand)]
        #[allow(clippy::large_enum_variant)] // a test's parser: one value, parsed once
        pub(super) enum Command {
            Stub(super::StubArgs),
            /// Stands for every other subcommand.
            Other,
        }
    }
    use crate::cmd::stub::chain::admission_from_args;

    #[test]
    fn bad_flags_are_clear_errors() {
        let base = StubArgs {
            port: 0,
            fail_every: None,
            fail_first: 0,
            outage: None,
            capacity: None,
            pushback: None,
            capacity_estimate: None,
            outage_end: None,
            horizon: None,
            hold_max: None,
            hold_for: None,
            retry_after: None,
            fail_status: 503,
        };
        let e = admission_from_args(&StubArgs {
            fail_status: 200,
            ..base.clone()
        })
        .unwrap_err();
        assert!(e.contains("400-599"), "{e}");
        let e = admission_from_args(&StubArgs {
            capacity: Some(0),
            ..base.clone()
        })
        .unwrap_err();
        assert!(e.contains("at least 1"), "{e}");
        let e = admission_from_args(&StubArgs {
            retry_after: Some("a\nb".into()),
            ..base.clone()
        })
        .unwrap_err();
        assert!(e.contains("header value"), "{e}");
        let e = admission_from_args(&StubArgs {
            pushback: Some(PushbackMode::On),
            ..base.clone()
        })
        .unwrap_err();
        assert!(e.contains("needs --capacity"), "{e}");
        let e = admission_from_args(&StubArgs {
            pushback: Some(PushbackMode::Static),
            capacity: Some(10),
            retry_after: Some("2".into()),
            ..base.clone()
        })
        .unwrap_err();
        assert!(e.contains("--pushback off"), "{e}");
        let e = admission_from_args(&StubArgs {
            capacity: Some(10),
            horizon: Some(Duration::from_millis(10)),
            ..base
        })
        .unwrap_err();
        assert!(e.contains("horizon"), "{e}");
    }

    /// The hold needs the adaptive allocator, and its sizes have ranges.
    #[test]
    fn hold_flags_need_adaptive_pushback_and_stay_in_range() {
        let with = |f: fn(&mut StubArgs)| {
            let mut a = base_args();
            a.capacity = Some(100);
            f(&mut a);
            admission_from_args(&a).map(|c| crate::cmd::stub::Rule::holds(&c))
        };
        assert_eq!(
            with(|a| a.hold_for = Some(Duration::from_secs(5))),
            Ok(true)
        );
        assert_eq!(with(|a| a.hold_max = Some(50)), Ok(true));
        assert_eq!(with(|_| {}), Ok(false));
        let e = with(|a| {
            a.hold_max = Some(50);
            a.pushback = Some(PushbackMode::Static);
        })
        .unwrap_err();
        assert!(e.contains("--pushback on"), "{e}");
        let e = with(|a| a.hold_max = Some(0)).unwrap_err();
        assert!(e.contains("--hold-max 0"), "{e}");
        let e = with(|a| a.hold_for = Some(Duration::from_secs(7_200))).unwrap_err();
        assert!(e.contains("--hold-for"), "{e}");
    }

    fn base_args() -> StubArgs {
        StubArgs {
            port: 0,
            fail_every: None,
            fail_first: 0,
            outage: None,
            capacity: None,
            pushback: None,
            capacity_estimate: None,
            outage_end: None,
            horizon: None,
            hold_max: None,
            hold_for: None,
            retry_after: None,
            fail_status: 503,
        }
    }

    /// A flag that cannot apply is refused (exit 2) naming what it needs;
    /// an empty Retry-After is refused rather than sent.
    #[test]
    fn flags_that_cannot_apply_are_refused() {
        use clap::Parser;
        let parse = |flags: &[&str]| {
            let argv = ["herdless", "stub"].iter().chain(flags);
            cli::Cli::try_parse_from(argv)
        };
        for (bad, needs) in [
            (&["--horizon", "5s"][..], "--capacity <N>"),
            (&["--retry-after", ""], "--retry-after"),
            (&["--retry-after", "  "], "--retry-after"),
        ] {
            let e = parse(bad).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad:?}");
            let msg = e.to_string();
            assert!(msg.contains(needs), "{bad:?}: {msg}");
        }
        // --horizon with a capacity but pushback off does not apply either.
        for flags in [
            &["--capacity", "10", "--horizon", "5s", "--pushback", "off"][..],
            &["--capacity", "10", "--horizon", "5s", "--retry-after", "2"],
        ] {
            let cli::Command::Stub(a) = parse(flags).unwrap().command else {
                unreachable!()
            };
            let e = admission_from_args(&a).unwrap_err();
            assert!(e.contains("--horizon") && e.contains("pushback"), "{e}");
        }
        let cli::Command::Stub(a) = parse(&["--capacity", "10", "--horizon", "5s"])
            .unwrap()
            .command
        else {
            unreachable!()
        };
        assert!(admission_from_args(&a).is_ok());
    }

    /// Each pushback setting out of its range is refused naming the flag at
    /// fault (`--horizon 2d` blamed `--capacity-estimate`, never passed, with
    /// "at least one slot"), and `--fail-every 0` (which never failed) too.
    #[test]
    fn ranges_name_the_flag_at_fault() {
        use clap::Parser;
        let admit = |flags: &[&str]| {
            let argv = ["herdless", "stub"].iter().chain(flags);
            match cli::Cli::try_parse_from(argv) {
                Ok(cli) => {
                    let cli::Command::Stub(a) = cli.command else {
                        unreachable!()
                    };
                    admission_from_args(&a).map(|_| ())
                }
                Err(e) => Err(format!("exit {}: {e}", e.exit_code())),
            }
        };
        for (flags, want) in [
            (
                &["--capacity", "500", "--horizon", "2d"][..],
                "--horizon 2d: must be within 1 s..=1 day",
            ),
            (
                &["--capacity", "500", "--horizon", "500ms"],
                "--horizon 500 ms: must be within",
            ),
            (
                &[
                    "--capacity",
                    "500",
                    "--pushback",
                    "static",
                    "--horizon",
                    "1ms",
                ],
                "--horizon 1 ms: must be within",
            ),
            (
                &["--capacity", "5", "--horizon", "10000000000d"],
                "exit 2: error: invalid value '10000000000d' for '--horizon <DUR>'",
            ),
            (
                &["--capacity", "4294967295"],
                "--capacity 4294967295: with pushback at most 1e9",
            ),
            (
                &["--capacity", "10", "--capacity-estimate", "0.01"],
                "--capacity 10 x --capacity-estimate 0.01 = 0.1 requests/s: the capacity",
            ),
            (
                &["--fail-every", "0"],
                "exit 2: error: invalid value '0' for '--fail-every <K>'",
            ),
        ] {
            let e = admit(flags).unwrap_err();
            assert!(e.starts_with(want), "{flags:?}: {e}");
            if !flags.contains(&"--capacity-estimate") {
                assert!(!e.contains("--capacity-estimate"), "{flags:?}: {e}");
            }
        }
        for ok in [
            &["--capacity", "500", "--horizon", "1d"][..],
            &[
                "--capacity",
                "500",
                "--horizon",
                "1s",
                "--pushback",
                "static",
            ],
            &["--capacity", "4294967295", "--pushback", "off"],
            &["--capacity", "10", "--capacity-estimate", "0.1"],
            &["--fail-every", "1"],
        ] {
            assert_eq!(admit(ok), Ok(()), "{ok:?}");
        }
    }

    #[test]
    fn which_flags_turn_pushback_on() {
        let on = |a: StubArgs| pushback_enabled(&a).unwrap();
        assert_eq!(on(base_args()), None);
        assert_eq!(
            on(StubArgs {
                capacity: Some(5),
                ..base_args()
            }),
            Some(PushbackMode::On)
        );
        assert_eq!(
            on(StubArgs {
                capacity: Some(5),
                pushback: Some(PushbackMode::Static),
                ..base_args()
            }),
            Some(PushbackMode::Static)
        );
        assert_eq!(
            on(StubArgs {
                capacity: Some(5),
                pushback: Some(PushbackMode::Off),
                ..base_args()
            }),
            None
        );
        assert_eq!(
            on(StubArgs {
                capacity: Some(5),
                retry_after: Some("2".into()),
                ..base_args()
            }),
            None
        );
        for bad in [
            StubArgs {
                capacity: Some(5),
                capacity_estimate: Some(0.0),
                ..base_args()
            },
            StubArgs {
                capacity: Some(5),
                pushback: Some(PushbackMode::Off),
                capacity_estimate: Some(2.0),
                ..base_args()
            },
            StubArgs {
                capacity: Some(5),
                pushback: Some(PushbackMode::Off),
                outage: Some(Duration::from_secs(1)),
                outage_end: Some(OutageEnd::Known),
                ..base_args()
            },
        ] {
            assert!(pushback_enabled(&bad).is_err(), "{bad:?}");
        }
    }
}
