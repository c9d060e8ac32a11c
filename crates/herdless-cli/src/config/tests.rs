//! The policy file's parsing and errors.

use std::path::Path;

use super::parse::line_at;
use super::*;

fn parse(text: &str) -> Result<ConfigFile, ConfigError> {
    ConfigFile::parse(Path::new("herdless.toml"), text)
}

#[test]
fn every_key_parses() {
    let f = parse(
        r#"
[policy.all]
jitter = "equal"
base = "250ms"
multiplier = 3
cap = 60
max_attempts = 9
max_elapsed = "5m"
max_retry_after = 1.5
retry_after_spread = 0.2
seed = 42
task_id = "mount"
recovery_time = "45s"
visibility_timeout = "10m"
workers = 1
retry_on = "75,111,200-210"
terminal_on = [1, 2]
timeout = "30s"
kill_after = "2s"

[policy.empty]
"#,
    )
    .unwrap();
    let p = f.policy("all").unwrap();
    assert_eq!(p.line, 2);
    assert_eq!(p.jitter.as_ref().unwrap().value, Jitter::Equal);
    assert_eq!(p.base.as_ref().unwrap().value, Duration::from_millis(250));
    assert_eq!(p.multiplier.as_ref().unwrap().value, 3.0);
    assert_eq!(p.cap.as_ref().unwrap().value, Duration::from_secs(60));
    assert_eq!(p.cap.as_ref().unwrap().line, 6);
    assert_eq!(
        p.max_retry_after.as_ref().unwrap().value,
        Duration::from_millis(1500)
    );
    assert_eq!(p.seed.as_ref().unwrap().value, 42);
    assert!(p.retry_on.as_ref().unwrap().value.contains(205));
    assert!(p.terminal_on.as_ref().unwrap().value.contains(2));
    assert_eq!(p.workers.as_ref().unwrap().value, 1);
    assert_eq!(
        f.policy("empty").unwrap(),
        &FilePolicy {
            name: "empty".into(),
            line: 21,
            ..Default::default()
        }
    );
    let missing = f.policy("nope").unwrap_err().to_string();
    assert!(
        missing.contains("policy.nope") && missing.contains("all, empty"),
        "{missing}"
    );
}

#[test]
fn errors_name_file_line_and_key() {
    let cases = [
        (
            "[policy.a]\nbase = \"1s\"\ncapp = \"1s\"\n",
            "herdless.toml:3: policy.a.capp: unknown key",
        ),
        (
            "[policy.a]\ncap = \"soon\"\n",
            "herdless.toml:2: policy.a.cap: \"soon\"",
        ),
        (
            "[policy.a]\n\nmax_attempts = 0\n",
            "herdless.toml:3: policy.a.max_attempts: must be at least 1",
        ),
        (
            "[policy.a]\nmax_attempts = \"6\"\n",
            "herdless.toml:2: policy.a.max_attempts: expected a whole number, found string",
        ),
        (
            "[policy.a]\nmultiplier = 0.5\n",
            "herdless.toml:2: policy.a.multiplier: 0.5 must be a finite number of at least 1.0",
        ),
        (
            "[policy.a]\nvisibility_timeout = true\n",
            "herdless.toml:2: policy.a.visibility_timeout: expected a duration",
        ),
        (
            "[policy.a]\njitter = \"fuzzy\"\n",
            "herdless.toml:2: policy.a.jitter: unknown jitter mode",
        ),
        (
            "[policy.a]\nretry_on = \"1,300\"\n",
            "herdless.toml:2: policy.a.retry_on: \"300\"",
        ),
        (
            "[policy.a]\nbase = -1\n",
            "herdless.toml:2: policy.a.base: -1 is negative",
        ),
        ("[polcy.a]\n", "herdless.toml:1: unknown field `polcy`"),
        ("[policy.a]\ncap = \n", "herdless.toml:2: "),
    ];
    for (text, want) in cases {
        let err = parse(text).unwrap_err().to_string();
        assert!(err.starts_with(want), "{text:?}\n got: {err}\nwant: {want}");
    }
}

#[test]
fn lines_are_counted_from_one() {
    assert_eq!(line_at("a\nb\nc", 0), 1);
    assert_eq!(line_at("a\nb\nc", 2), 2);
    assert_eq!(line_at("a\nb\nc", 99), 3);
}
