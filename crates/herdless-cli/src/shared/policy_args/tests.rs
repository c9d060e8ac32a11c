use super::*;

#[test]
fn flags_override_the_file_and_policy_errors_point_at_the_line() {
    let file = crate::shared::config::ConfigFile::parse(
        std::path::Path::new("h.toml"),
        "[policy.p]\njitter = \"none\"\nbase = \"2s\"\ncap = \"8s\"\n",
    )
    .unwrap();
    let table = file.policy("p").unwrap().clone();
    let flags = PolicyArgs {
        cap: Some(Duration::from_secs(20)),
        ..Default::default()
    };
    let r = flags
        .layer(Jitter::Equal, Some("h.toml".into()), Some(table.clone()))
        .unwrap();
    assert_eq!(r.policy.base(), Duration::from_secs(2), "from the file");
    assert_eq!(r.policy.cap(), Duration::from_secs(20), "the flag wins");
    assert_eq!(
        r.policy.jitter(),
        Jitter::None,
        "the file beats the default"
    );
    assert!(r.jitter_declared && !r.max_retry_after_declared);

    let none = PolicyArgs::default()
        .layer(Jitter::Equal, None, None)
        .unwrap();
    assert_eq!(
        none.policy.jitter(),
        Jitter::Equal,
        "the subcommand's default"
    );
    assert!(!none.jitter_declared);

    // A file base above a flag cap: the error blames the flag, not the file.
    let low_cap = PolicyArgs {
        cap: Some(Duration::from_secs(1)),
        ..Default::default()
    };
    let err = low_cap
        .layer(Jitter::Full, Some("h.toml".into()), Some(table.clone()))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("invalid cap") && err.contains("--cap or HERDLESS_CAP"),
        "{err}"
    );
    assert!(err.contains("base from h.toml:3 (policy.p.base)"), "{err}");
    // A flag base above the file's cap: the flag (or its variable)
    // introduced the conflict, and the file's cap line is named beside it.
    let high_base = PolicyArgs {
        base: Some(Duration::from_secs(10)),
        ..Default::default()
    };
    let err = high_base
        .layer(Jitter::Full, Some("h.toml".into()), Some(table.clone()))
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "invalid cap: 8s is below base 10s (base from --base or HERDLESS_BASE; \
         cap from h.toml:4 (policy.p.cap))"
    );
    // Both from the file: its line and key, as before.
    let file = crate::shared::config::ConfigFile::parse(
        std::path::Path::new("h.toml"),
        "[policy.q]\nbase = \"10s\"\ncap = \"1s\"\n",
    )
    .unwrap();
    let err = PolicyArgs::default()
        .layer(
            Jitter::Full,
            Some("h.toml".into()),
            file.policies.get("q").cloned(),
        )
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("h.toml:3: policy.q.cap: invalid cap"),
        "{err}"
    );
}

#[test]
fn a_files_max_requeues_reaches_the_policy() {
    for (text, want) in [("0", 0), ("255", 255)] {
        let file = crate::shared::config::ConfigFile::parse(
            std::path::Path::new("h.toml"),
            &format!("[policy.p]\nmax_requeues = {text}\n"),
        )
        .unwrap();
        let table = file.policy("p").unwrap().clone();
        let r = PolicyArgs::default()
            .layer(Jitter::Full, Some("h.toml".into()), Some(table.clone()))
            .unwrap();
        assert_eq!(r.policy.max_requeues(), want, "max_requeues = {text}");
        assert_eq!(table.line_of("max_requeues"), Some(2));
    }
    let none = PolicyArgs::default()
        .layer(Jitter::Full, None, None)
        .unwrap();
    assert_eq!(none.policy.max_requeues(), Policy::DEFAULT_MAX_REQUEUES);
}

#[test]
fn flags_override_defaults_and_errors_name_the_field() {
    let args = PolicyArgs {
        cap: Some(Duration::from_secs(5)),
        ..Default::default()
    };
    let p = args.resolve_layered(Jitter::Equal).unwrap().policy;
    assert_eq!(p.cap(), Duration::from_secs(5));
    assert_eq!(p.jitter(), Jitter::Equal);
    let bad = PolicyArgs {
        multiplier: Some(0.5),
        ..Default::default()
    };
    assert!(
        bad.resolve_layered(Jitter::Full)
            .unwrap_err()
            .to_string()
            .contains("multiplier")
    );
}
