//! `herdless stub`'s flags, and which of them turn server-guided pushback on.

use std::time::Duration;

use clap::{Args, ValueEnum};
use herdless_sim::endpoint::OutageEnd;

use crate::policy_args::parse_duration;

/// `herdless stub` flags.
#[derive(Debug, Clone, Args)]
pub struct StubArgs {
    /// Port on 127.0.0.1 (0 picks a free one).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Fail each client's first K requests (client = X-Worker-Id header).
    #[arg(long, value_name = "K", default_value_t = 0)]
    pub fail_first: u32,
    /// Fail every K-th request (counted over all clients; 0: never).
    #[arg(long, value_name = "K", default_value_t = 0)]
    pub fail_every: u32,
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
    /// With pushback (--capacity): the longest Retry-After handed out [default: 60s].
    #[arg(long, value_parser = parse_duration, value_name = "DUR", requires = "capacity")]
    pub horizon: Option<Duration>,
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
            ))
        }
        (Some(m), None, None) => {
            return Err(format!(
                "--pushback {} needs --capacity N (the rate to spread the callers over)",
                name(m)
            ))
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
                "--capacity-estimate {f}: must be a factor of --capacity within 0.01..=100"
            ));
        }
    }
    Ok(mode)
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
    use crate::stub::chain::admission_from_args;

    #[test]
    fn bad_flags_are_clear_errors() {
        let base = StubArgs {
            port: 0,
            fail_every: 0,
            fail_first: 0,
            outage: None,
            capacity: None,
            pushback: None,
            capacity_estimate: None,
            outage_end: None,
            horizon: None,
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

    fn base_args() -> StubArgs {
        StubArgs {
            port: 0,
            fail_every: 0,
            fail_first: 0,
            outage: None,
            capacity: None,
            pushback: None,
            capacity_estimate: None,
            outage_end: None,
            horizon: None,
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
            crate::cli::Cli::try_parse_from(argv)
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
            let crate::cli::Command::Stub(a) = parse(flags).unwrap().command else {
                unreachable!()
            };
            let e = admission_from_args(&a).unwrap_err();
            assert!(e.contains("--horizon") && e.contains("pushback"), "{e}");
        }
        let crate::cli::Command::Stub(a) = parse(&["--capacity", "10", "--horizon", "5s"])
            .unwrap()
            .command
        else {
            unreachable!()
        };
        assert!(admission_from_args(&a).is_ok());
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
