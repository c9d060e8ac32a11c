//! The plan the flags make (what the stub does with them), built from one
//! base set of arguments: flags that cannot apply, ranges, which flags turn
//! pushback on, waves.

use super::*;

/// Every flag at its default: what each test changes stands out.
pub(super) fn base_args() -> StubArgs {
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
        hold_for_max: None,
        retry_after: None,
        fail_status: 503,
        waves: None,
        wave_spacing: None,
        upstream: None,
        upstream_timeout: None,
        coordinate: None,
        replica_id: None,
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

/// `--waves` puts the wave planner in front of the device, told the
/// population or counting it, and refuses what cannot go with it, naming
/// the flag.
#[test]
fn waves_need_a_capacity_and_refuse_other_refusal_schemes() {
    use clap::Parser;
    let parse = |flags: &[&str]| {
        let argv = ["herdless", "stub"].iter().chain(flags);
        match cli::Cli::try_parse_from(argv) {
            Ok(cli) => {
                let cli::Command::Stub(a) = cli.command else {
                    unreachable!()
                };
                admission_from_args(&a)
            }
            Err(e) => Err(format!("exit {}: {e}", e.exit_code())),
        }
    };
    for flags in [
        &["--capacity", "500", "--waves", "2000"][..],
        &["--capacity", "500", "--waves", "counted"],
        &[
            "--capacity",
            "500",
            "--waves",
            "2000",
            "--wave-spacing",
            "250ms",
        ],
        &[
            "--capacity",
            "500",
            "--waves",
            "10",
            "--outage",
            "2s",
            "--outage-end",
            "known",
        ],
        &[
            "--capacity",
            "500",
            "--waves",
            "10",
            "--capacity-estimate",
            "2",
        ],
    ] {
        let plan = parse(flags).unwrap_or_else(|e| panic!("{flags:?}: {e}"));
        assert!(matches!(plan.pushback, Pushback::Waves(_)), "{flags:?}");
    }
    for (flags, want) in [
        (&["--waves", "2000"][..], "--waves needs --capacity"),
        (
            &["--capacity", "5", "--waves", "0"],
            "a population of 1 to 1000000000",
        ),
        (
            &["--capacity", "5", "--waves", "some"],
            "a population of 1 to 1000000000",
        ),
        (
            &["--capacity", "5", "--wave-spacing", "1s"],
            "--wave-spacing applies to --waves",
        ),
        (
            &["--capacity", "5", "--waves", "9", "--retry-after", "2"],
            "does not go with --retry-after",
        ),
        (
            &["--capacity", "5", "--waves", "9", "--hold-for", "2s"],
            "does not go with --hold-max/--hold-for",
        ),
        (
            &["--capacity", "5", "--waves", "9", "--pushback", "static"],
            "does not go with --pushback",
        ),
        (
            &["--capacity", "5", "--waves", "9", "--wave-spacing", "0s"],
            "--wave-spacing 0 ns: the spacing must be within 1 ms..=1 h",
        ),
        (
            &[
                "--capacity",
                "5",
                "--waves",
                "counted",
                "--wave-spacing",
                "250ms",
            ],
            "--wave-spacing shapes a plan of the whole population (--waves N)",
        ),
        // The pushback ranges, named by the flags given (not the product
        // the planner is told).
        (
            &[
                "--capacity",
                "1",
                "--capacity-estimate",
                "0.01",
                "--waves",
                "5",
            ],
            "--capacity 1 x --capacity-estimate 0.01 = 0.01 requests/s",
        ),
        (
            &["--capacity", "4294967295", "--waves", "1"],
            "--capacity 4294967295: with pushback at most 1e9 requests/s",
        ),
    ] {
        let e = parse(flags).map(|_| ()).unwrap_err();
        assert!(e.contains(want), "{flags:?}: {e}");
    }
}
