//! No input panics: arbitrary command lines and arbitrary policy files go
//! through the same parsing and validation as the binary (in process, so
//! thousands of cases run in seconds), and each either resolves to a valid
//! policy or is refused with an error. A panic fails the property.

use herdless::Jitter;
use herdless_cli::testing::{
    help, parse_and_resolve, parse_policy_file, policy_keys, resolve_policy,
};
use proptest::prelude::*;

const FLAGS: &[&str] = &[
    "--jitter",
    "--base",
    "--multiplier",
    "--cap",
    "--max-attempts",
    "--max-elapsed",
    "--max-retry-after",
    "--seed",
    "--task-id",
    "--log-format",
    "--policy",
    "--config",
    "--recovery-time",
    "--visibility-timeout",
    "--workers",
    "--timeout",
    "--kill-after",
    "--retry-on",
    "--terminal-on",
    "--strict",
    "--format",
    "--exec",
    "--clients",
    "--outage",
    "--capacity",
    "--burst",
    "--scenario",
    "--json",
    "--no-plots",
    "--trials",
    "--stdin",
    "--breaker",
    "--probe-wait",
    "--urgent",
    "--urgent-quota",
    "--retry-budget",
    "--horizon",
    "--nats",
    "--stream",
    "--consumer",
    "--dead-letter",
    "--concurrency",
    "--exit-when-idle",
    "--redelivery",
    "--waves",
    "--wave-spacing",
    "--plan",
    "--ignore-plan",
];

/// Values that stress the parsers: durations at and past every bound, huge
/// and negative numbers, NaN, empty and non-ASCII text, code lists and ranges.
fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("0".to_owned()),
        Just("0s".to_owned()),
        Just("-1".to_owned()),
        Just("NaN".to_owned()),
        Just("inf".to_owned()),
        Just("1e308".to_owned()),
        Just("18446744073709551616".to_owned()),
        Just("584y".to_owned()),
        Just("600000000000000000000s".to_owned()),
        Just("1-255".to_owned()),
        Just("126,127,141".to_owned()),
        Just("full".to_owned()),
        Just("decorrelated-window".to_owned()),
        Just(String::new()),
        "[0-9]{1,25}(ns|us|ms|s|m|h|d)?",
        "-?[0-9]{1,3}\\.[0-9]{1,3}",
        "\\PC{0,12}",
    ]
}

fn argv() -> impl Strategy<Value = Vec<String>> {
    let sub = prop_oneof![
        Just("check"),
        Just("simulate"),
        Just("get"),
        Just("fleet"),
        Just("stub"),
        Just("exec"),
        Just("worker"),
        Just("tune"),
        Just("analyze")
    ];
    let pair = (prop::sample::select(FLAGS), prop::option::of(value()));
    (sub, prop::collection::vec(pair, 0..8)).prop_map(|(sub, pairs)| {
        let mut v = vec!["herdless".to_owned(), sub.to_owned()];
        for (flag, val) in pairs {
            v.push(flag.to_owned());
            if let Some(val) = val {
                v.push(val);
            }
        }
        v
    })
}

/// A policy file: sections (named, nested wrongly, or not tables) holding
/// known and unknown keys with values of every kind, sometimes unquoted.
fn policy_file() -> impl Strategy<Value = String> {
    let entry = (
        // Every key a policy table may hold, and one misspelt.
        prop::sample::select(
            policy_keys()
                .into_iter()
                .chain(["capp"])
                .collect::<Vec<_>>(),
        ),
        value(),
        prop_oneof![Just('"'), Just(' ')],
    )
        .prop_map(|(k, v, q)| {
            let v = v.replace(['"', '\\', '\n'], "");
            if q == '"' {
                format!("{k} = \"{v}\"")
            } else {
                format!("{k} = {v}")
            }
        });
    let section = (
        prop_oneof![
            Just("[policy.a]"),
            Just("[policy.default]"),
            Just("[policy]"),
            Just("[other]")
        ],
        prop::collection::vec(entry, 0..6),
    )
        .prop_map(|(h, es)| format!("{h}\n{}\n", es.join("\n")));
    prop::collection::vec(section, 0..4).prop_map(|s| s.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn no_command_line_panics(args in argv()) {
        // Parsing never panics; a parsed command's policy resolves or is refused.
        let _ = parse_and_resolve(&args);
    }

    #[test]
    fn no_policy_file_panics(text in policy_file(), raw in "\\PC{0,200}") {
        let dir = tempfile::tempdir().unwrap();
        for body in [&text, &raw] {
            let path = dir.path().join("herdless.toml");
            let _ = parse_policy_file(&path, body);
            std::fs::write(&path, body).unwrap();
            for name in ["a", "default", "missing"] {
                let _ = resolve_policy(&path, name, Jitter::Full);
                let _ = resolve_policy(&path, name, Jitter::Equal);
            }
        }
    }
}

/// Every retrying subcommand's help shows `--jitter`'s default.
#[test]
fn jitter_help_shows_its_default() {
    for sub in ["get", "fleet", "check", "exec", "worker"] {
        let help = help(sub);
        assert!(
            help.contains("[default: full; exec: equal]"),
            "{sub} --help:\n{help}"
        );
    }
}
