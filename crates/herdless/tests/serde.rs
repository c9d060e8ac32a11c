//! Feature `serde`: policies round-trip through JSON and TOML, invalid values
//! are errors naming the field, missing fields take the defaults.

use std::time::Duration;

use herdless::policy::serde::PolicyConfig;
use herdless::{Jitter, Policy, MAX_DURATION};
use proptest::prelude::*;

fn json(p: &Policy) -> Policy {
    serde_json::from_str(&serde_json::to_string(p).unwrap()).unwrap()
}

fn toml_trip(p: &Policy) -> Policy {
    toml::from_str(&toml::to_string(p).unwrap()).unwrap()
}

#[test]
fn the_default_policy_serializes_in_human_form() {
    let text = serde_json::to_string(&Policy::default()).unwrap();
    assert_eq!(
        text,
        r#"{"jitter":"full","base":"500ms","multiplier":2.0,"cap":"30s","max_attempts":6,"max_elapsed":"2m","max_retry_after":"1m","retry_after_spread":0.1}"#
    );
    let t = toml::to_string(&Policy::default()).unwrap();
    assert!(t.contains("base = \"500ms\"\n"), "{t}");
    assert_eq!(toml_trip(&Policy::default()), Policy::default());
}

#[test]
fn missing_fields_take_the_defaults() {
    assert_eq!(
        serde_json::from_str::<Policy>("{}").unwrap(),
        Policy::default()
    );
    let p: Policy = toml::from_str("jitter = \"decorrelated-window\"\ncap = 60\n").unwrap();
    assert_eq!(p.jitter(), Jitter::DecorrelatedWindow);
    assert_eq!(p.cap(), Duration::from_secs(60));
    assert_eq!(p.base(), Policy::DEFAULT_BASE);
    let p: Policy = serde_json::from_str(r#"{"max_elapsed": 1.5}"#).unwrap();
    assert_eq!(p.max_elapsed(), Duration::from_millis(1500));
}

#[test]
fn invalid_values_are_errors_naming_the_field() {
    let cases = [
        (
            r#"{"base": "0s"}"#,
            "invalid base: must be greater than zero",
        ),
        (r#"{"base": "soon"}"#, "invalid base: \"soon\": "),
        (r#"{"base": -1}"#, "invalid base: -1 is negative"),
        (r#"{"base": true}"#, "invalid base: expected a duration"),
        (r#"{"multiplier": 0.5}"#, "invalid multiplier: 0.5 must be"),
        (
            r#"{"multiplier": "2"}"#,
            "invalid multiplier: expected a number, found string",
        ),
        (
            r#"{"cap": "1s", "base": "5s"}"#,
            "invalid cap: 1s is below base 5s",
        ),
        (r#"{"cap": "600years"}"#, "invalid cap: "),
        (
            r#"{"max_attempts": 0}"#,
            "invalid max_attempts: must be at least 1",
        ),
        (
            r#"{"max_attempts": 5000000000}"#,
            "invalid max_attempts: 5000000000 is out of range",
        ),
        (
            r#"{"max_attempts": 2.5}"#,
            "invalid max_attempts: expected a whole number",
        ),
        (
            r#"{"max_elapsed": "0ms"}"#,
            "invalid max_elapsed: must be greater than zero",
        ),
        (
            r#"{"max_retry_after": 0}"#,
            "invalid max_retry_after: must be greater than zero",
        ),
        (
            r#"{"retry_after_spread": 2}"#,
            "invalid retry_after_spread: 2 must be",
        ),
        (
            r#"{"jitter": "fuzzy"}"#,
            "invalid jitter: unknown jitter mode \"fuzzy\"",
        ),
        (
            r#"{"jitter": 1}"#,
            "invalid jitter: expected a string, found integer",
        ),
        (
            r#"{"capp": "1s"}"#,
            "unknown field `capp`, expected one of `jitter`",
        ),
        (r#"{"cap": "1m", "cap": "2m"}"#, "duplicate field `cap`"),
    ];
    for (text, want) in cases {
        let err = serde_json::from_str::<Policy>(text)
            .unwrap_err()
            .to_string();
        assert!(err.starts_with(want), "{text}\n got: {err}\nwant: {want}");
    }
    // TOML errors carry the line as well.
    let err = toml::from_str::<Policy>("base = \"1s\"\nmax_attempts = 0\n").unwrap_err();
    assert!(err.to_string().contains("invalid max_attempts"), "{err}");
}

#[test]
fn a_partial_config_keeps_what_is_unset_unset() {
    let c: PolicyConfig = toml::from_str("base = \"60s\"\n").unwrap();
    assert_eq!(c.base, Some(Duration::from_secs(60)));
    assert_eq!(c.cap, None);
    // The cap below the base is the builder's rule: a layer may fix it.
    assert!(c.build().is_err());
    let p = c
        .apply(Policy::builder().cap(Duration::from_secs(90)))
        .build()
        .unwrap();
    assert_eq!(p.cap(), Duration::from_secs(90));
    assert_eq!(serde_json::to_string(&c).unwrap(), r#"{"base":"1m"}"#);
    assert_eq!(
        serde_json::from_str::<PolicyConfig>(r#"{"base":"1m"}"#).unwrap(),
        c
    );
}

#[test]
fn extreme_policies_round_trip() {
    let p = Policy::builder()
        .base(Duration::from_nanos(1))
        .cap(MAX_DURATION)
        .multiplier(f64::MAX)
        .max_attempts(u32::MAX)
        .max_elapsed(Duration::MAX)
        .max_retry_after(MAX_DURATION)
        .retry_after_spread(1.0)
        .build()
        .unwrap();
    assert_eq!(json(&p), p);
    assert_eq!(toml_trip(&p), p);
}

fn any_jitter() -> impl Strategy<Value = Jitter> {
    prop::sample::select(Jitter::ALL.to_vec())
}

prop_compose! {
    fn any_policy()(
        base in 1u64..=u64::MAX,
        cap_over in any::<u64>(),
        multiplier in 1.0f64..1e6,
        max_attempts in 1u32..=u32::MAX,
        elapsed_s in any::<u64>(),
        elapsed_ns in 0u32..1_000_000_000,
        max_retry_after in 1u64..=u64::MAX,
        spread in 0.0f64..=1.0,
        jitter in any_jitter(),
    ) -> Policy {
        Policy::builder()
            .base(Duration::from_nanos(base))
            .cap(Duration::from_nanos(base.saturating_add(cap_over)))
            .multiplier(multiplier)
            .max_attempts(max_attempts)
            .max_elapsed(Duration::new(elapsed_s, elapsed_ns).max(Duration::from_nanos(1)))
            .max_retry_after(Duration::from_nanos(max_retry_after))
            .retry_after_spread(spread)
            .jitter(jitter)
            .build()
            .unwrap()
    }
}

proptest! {
    #[test]
    fn any_policy_round_trips(p in any_policy()) {
        prop_assert_eq!(json(&p), p);
        prop_assert_eq!(toml_trip(&p), p);
    }
}
