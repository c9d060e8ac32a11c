//! The policy file's parsing and errors.

use std::path::Path;

use super::lines::{Lines, work};
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
attempt_timeout = "20s"
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
    let t = p.attempt_timeout.as_ref().unwrap();
    assert_eq!((t.value, t.line), (Duration::from_secs(20), 11));
    assert_eq!(p.line_of("attempt_timeout"), Some(11));
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
            line: 22,
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
        (
            "[policy.a]\n\nattempt_timeout = \"0s\"\n",
            "herdless.toml:3: policy.a.attempt_timeout: must be greater than zero",
        ),
        (
            "[policy.a]\nattempt_timeout = \"600y\"\n",
            "herdless.toml:2: policy.a.attempt_timeout: 18934560000 s is too large",
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
    let lines = Lines::new("a\nb\nc");
    assert_eq!(lines.line_at(0), 1);
    assert_eq!(lines.line_at(1), 1, "the newline ends its line");
    assert_eq!(lines.line_at(2), 2);
    assert_eq!(lines.line_at(99), 3);
    assert_eq!(Lines::new("").line_at(0), 1);
}

/// `n` policy tables of eight keys each, about 56 bytes per policy.
fn many_policies(n: usize) -> String {
    (0..n)
        .map(|i| {
            format!(
                "[policy.p{i}]\njitter = \"full\"\nbase = \"1s\"\ncap = \"30s\"\n\
                 max_attempts = 6\nmax_elapsed = \"2m\"\nseed = {i}\nworkers = 3\n\
                 timeout = \"5s\"\n"
            )
        })
        .collect()
}

/// Finding the line of every key is linear in the file: eight times the
/// policies cost at most about eight times the work (plus the binary
/// searches' logarithm), where counting from the start for each key cost 64
/// times. Counted in work units (bytes scanned, probes), not on a clock.
#[test]
fn finding_lines_is_linear_in_the_file() {
    let work_of = |n: usize| {
        let text = many_policies(n);
        let (work, parsed) = work::during(|| parse(&text));
        let file = parsed.unwrap();
        assert_eq!(file.policies.len(), n);
        let last = file.policy(&format!("p{}", n - 1)).unwrap();
        assert_eq!(last.timeout.as_ref().unwrap().line, 9 * n, "the last line");
        work
    };
    let (small, large) = (work_of(625), work_of(5_000));
    assert!(small > 0, "the parse goes through the index");
    let ratio = large as f64 / small as f64;
    assert!(
        ratio < 12.0,
        "8x the policies cost {ratio:.1}x the work ({small} -> {large})"
    );
}

/// A file past the size limit is refused, naming the file and the limit,
/// from a path as from text; one at the limit is read.
#[test]
fn a_file_past_the_size_limit_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("herdless.toml");
    let mut text = many_policies(20_000);
    assert!(text.len() > MAX_FILE_BYTES);
    std::fs::write(&path, &text).unwrap();
    let err = ConfigFile::read(&path).unwrap_err().to_string();
    let want = format!(
        "{}: larger than 1024 KiB, the limit of a policy file",
        path.display()
    );
    assert!(err.starts_with(&want), "{err}");
    let err = ConfigFile::parse(&path, &text).unwrap_err().to_string();
    assert!(err.starts_with(&want), "{err}");
    // At the limit exactly (a comment pads it): read and parsed.
    text.truncate(text[..MAX_FILE_BYTES - 1].rfind('\n').unwrap() + 1);
    let pad = MAX_FILE_BYTES - text.len();
    text.push_str(&format!("#{}", "x".repeat(pad - 1)));
    assert_eq!(text.len(), MAX_FILE_BYTES);
    std::fs::write(&path, &text).unwrap();
    assert!(ConfigFile::read(&path).is_ok());
}

#[test]
fn a_file_that_is_not_utf8_names_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("herdless.toml");
    std::fs::write(&path, b"[policy.a]\ntask_id = \"caf\xe9\"\n").unwrap();
    let err = ConfigFile::read(&path).unwrap_err().to_string();
    assert!(
        err.ends_with(":2: not UTF-8 text (a policy file is TOML, which is UTF-8)"),
        "{err}"
    );
}

/// `seed` takes the whole `u64` range of `--seed`: an integer as far as TOML
/// goes, a string (decimal or hex) beyond; every refusal names the key.
#[test]
fn a_seed_takes_the_whole_u64_range_and_errors_name_the_key() {
    let seed = |v: &str| {
        parse(&format!("[policy.a]\nseed = {v}\n"))
            .map(|f| f.policy("a").unwrap().seed.as_ref().unwrap().value)
            .map_err(|e| e.to_string())
    };
    assert_eq!(seed("0"), Ok(0));
    assert_eq!(seed("9223372036854775807"), Ok(i64::MAX as u64));
    assert_eq!(seed("\"18446744073709551615\""), Ok(u64::MAX));
    assert_eq!(seed("\"0xffffffffffffffff\""), Ok(u64::MAX));
    assert_eq!(seed("\" 42 \""), Ok(42));
    for bad in [
        "18446744073709551615",
        "-1",
        "\"18446744073709551616\"",
        "\"-1\"",
        "1.5",
    ] {
        let e = seed(bad).unwrap_err();
        assert!(
            e.starts_with("herdless.toml:2: policy.a.seed: "),
            "{bad}: {e}"
        );
        assert!(e.contains("18446744073709551615"), "{bad}: the range: {e}");
    }
}

/// TOML's own errors (syntax, a number it cannot hold) name the key too.
#[test]
fn toml_errors_name_the_key_of_their_line() {
    let err = parse("[policy.a]\nbase = \"1s\"\ncap = 1s\n")
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("herdless.toml:3: policy.a.cap: "), "{err}");
    let err = parse("[policy.a]\n[policy.b]\nmax_attempts = 99999999999999999999\n")
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("herdless.toml:3: policy.b.max_attempts: "),
        "{err}"
    );
}

/// One range for every duration key: what the flags take, up to u64
/// nanoseconds; past it, an error naming the key.
#[test]
fn duration_keys_share_the_flags_range() {
    for key in [
        "timeout",
        "kill_after",
        "recovery_time",
        "visibility_timeout",
    ] {
        let ok = parse(&format!("[policy.a]\n{key} = \"584y\"\n"));
        assert!(ok.is_ok(), "{key}: {ok:?}");
        let err = parse(&format!("[policy.a]\n{key} = \"585y\"\n"))
            .unwrap_err()
            .to_string();
        let want = format!(
            "herdless.toml:2: policy.a.{key}: \"585y\" is too large (at most 18446744073 s"
        );
        assert!(err.starts_with(&want), "{err}");
    }
}
