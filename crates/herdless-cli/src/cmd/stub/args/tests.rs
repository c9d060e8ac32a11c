//! The flags of `herdless stub`: each refused combination names the flags
//! at fault; ranges are documented.

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
use crate::cmd::stub::front::Pushback;
use crate::cmd::stub::plan::Plan;

fn admission_from_args(a: &StubArgs) -> Result<Plan, String> {
    Plan::from_args(a)
}

#[test]
fn bad_flags_are_clear_errors() {
    let base = base_args();
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
        admission_from_args(&a).map(|p| matches!(p.pushback, Pushback::Adaptive { hold: true, .. }))
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
    // The range is the library's hold's, 10 ms to 1 h, said as the flag's
    // (5 ms used to pass the flag's own check, 1 ms, and come back from the
    // allocator naming --capacity-estimate and --horizon, which were not given).
    let e = with(|a| a.hold_for = Some(Duration::from_millis(5))).unwrap_err();
    assert!(
        e.contains("--hold-for 5 ms: must be within 10ms..=1h"),
        "{e}"
    );
    assert_eq!(
        with(|a| a.hold_for = Some(Duration::from_millis(10))),
        Ok(true)
    );
    // The patient callers' hold: on its own it turns the hold on; below
    // --hold-for it is refused, naming the setting.
    assert_eq!(
        with(|a| a.hold_for_max = Some(Duration::from_secs(30))),
        Ok(true)
    );
    let e = with(|a| {
        a.hold_for = Some(Duration::from_secs(20));
        a.hold_for_max = Some(Duration::from_secs(5));
    })
    .unwrap_err();
    assert!(e.contains("hold_for_max"), "{e}");
}

/// A gateway (`--upstream`): the stub's own device flags, pushback off with
/// a capacity, `--coordinate` without the adaptive allocator, a bad NATS
/// URL or replica id, an upstream that is not an origin, a timeout out of
/// range: each refused (exit 2 from the command), naming the flags.
#[test]
fn gateway_flags_that_contradict_are_refused_naming_them() {
    use clap::Parser;
    let plan = |flags: &[&str]| {
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
    let up = "http://127.0.0.1:9";
    for (flags, want) in [
        (&["--upstream", up, "--outage", "5s"][..], "exit 2"),
        (&["--upstream", up, "--fail-first", "1"], "--fail-first"),
        (&["--upstream", up, "--fail-every", "2"], "--fail-every"),
        (&["--upstream", up, "--retry-after", "1"], "--retry-after"),
        (&["--upstream", up, "--fail-status", "500"], "--fail-status"),
        (&["--coordinate", "nats://127.0.0.1:4222"], "--upstream"),
        (&["--upstream-timeout", "2s"], "--upstream"),
        (&["--upstream", up, "--replica-id", "gw-1"], "--coordinate"),
        (
            &["--upstream", up, "--capacity", "10", "--pushback", "off"],
            "--capacity with --upstream",
        ),
        (
            &[
                "--upstream",
                up,
                "--capacity",
                "10",
                "--pushback",
                "static",
                "--coordinate",
                "nats://127.0.0.1:4222",
            ],
            "--coordinate shares what the adaptive allocator learns",
        ),
        (
            &["--upstream", up, "--coordinate", "nats://127.0.0.1:4222"],
            "--coordinate shares",
        ),
        (
            &[
                "--upstream",
                up,
                "--capacity",
                "10",
                "--coordinate",
                "nats://127.0.0.1:4222",
                "--replica-id",
                "gw:1",
            ],
            "--replica-id: replica id \"gw:1\"",
        ),
        (
            &[
                "--upstream",
                up,
                "--capacity",
                "10",
                "--coordinate",
                "nats://:x",
            ],
            "--coordinate \"nats://:x\": not a NATS server URL",
        ),
        (
            &["--upstream", "https://db:443"],
            "--upstream \"https://db:443\"",
        ),
        (&["--upstream", "http://db:80/x"], "origin alone"),
        (
            &["--upstream", up, "--upstream-timeout", "2h"],
            "--upstream-timeout 2h: must be within 1ms..=1h",
        ),
    ] {
        let e = plan(flags).unwrap_err();
        assert!(e.contains(want), "{flags:?}: {e}");
        if want != "exit 2" && e.starts_with("exit") {
            assert!(e.starts_with("exit 2"), "{flags:?}: {e}");
        }
    }
    let p = plan(&[
        "--upstream",
        up,
        "--capacity",
        "167",
        "--hold-for",
        "10s",
        "--coordinate",
        "nats://127.0.0.1:4222",
        "--replica-id",
        "gw-1",
    ])
    .unwrap();
    let g = p.gateway.expect("a gateway");
    assert_eq!(g.upstream, "http://127.0.0.1:9/");
    assert_eq!(g.timeout, Duration::from_secs(10));
    let c = g.coordinate.expect("coordinated");
    assert_eq!(
        (c.name.as_str(), c.replica.as_deref()),
        ("127_0_0_1_9", Some("gw-1"))
    );
    assert!(p.device.capacity.is_none(), "the upstream is the device");
    assert!(matches!(p.pushback, Pushback::Adaptive { hold: true, .. }));
    // A plain relay: no pushback, no capacity.
    let relay = plan(&["--upstream", up]).unwrap();
    assert!(matches!(relay.pushback, Pushback::Off));
}

mod plans;
use plans::base_args;
