//! The names and paths renamed or moved this release still work, as
//! deprecated aliases, until the next one: a caller's code compiles and
//! means the same (each alias is the new item, not a copy).

#![allow(deprecated)]

use herdless::{Classification, GiveUp};

#[test]
fn server_pushback_is_do_not_retry() {
    assert_eq!(Classification::ServerPushback, Classification::DoNotRetry);
    assert_eq!(GiveUp::ServerPushback, GiveUp::DoNotRetry);
    // As a pattern too.
    assert!(matches!(
        Classification::DoNotRetry,
        Classification::ServerPushback
    ));
    assert!(matches!(GiveUp::DoNotRetry, GiveUp::ServerPushback));
    // The names written down (events, metrics, headers) did not change.
    assert_eq!(GiveUp::DoNotRetry.as_str(), "server_pushback");
}

#[test]
fn the_guards_old_paths_are_the_new_items() {
    fn budget(b: herdless::guard::RetryBudget) -> herdless::fleet::RetryBudget {
        b
    }
    fn urgent(u: herdless::guard::Urgent) -> herdless::fleet::escape_lane::Urgent {
        u
    }
    let b = budget(herdless::fleet::RetryBudget::grpc(50.0, 0.1).unwrap());
    assert_eq!(b.max_tokens(), 50.0);
    let _ = urgent(herdless::guard::Urgent::new(
        std::time::Duration::from_secs(1),
    ));
    let _: herdless::fleet::Throttle = herdless::guard::Throttle::new();
}

#[test]
fn the_executors_and_events_old_paths_are_the_new_items() {
    fn retry(r: herdless::retry::RetryBuilder) -> herdless::engine::RetryBuilder {
        r
    }
    let _ = retry(herdless::Retry::builder());
    let e: herdless::engine::GiveUp = herdless::events::GiveUp::MaxAttempts;
    assert_eq!(e, GiveUp::MaxAttempts);
    let t: herdless::engine::TimedOut =
        herdless::classify::TimedOut::new(1, std::time::Duration::from_secs(1));
    assert_eq!(t.attempt(), 1);
    assert_eq!(
        herdless::engine::metrics::ATTEMPTS,
        herdless::events::metrics::ATTEMPTS
    );
    let _: herdless::engine::events::NoNotify = herdless::events::NoNotify;
}

/// The old names are for callers' code only: no guide, rustdoc, doctest,
/// manifest comment or test comment of the workspace writes them (a reader
/// copies what the documentation shows). The lines that define the aliases
/// or say they are deprecated are the exceptions; the CHANGELOG lists them.
#[test]
fn the_documentation_writes_only_the_new_names() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let old = [
        "herdless::fleet",
        "herdless_sim::fleet",
        "escape_lane",
        "ServerPushback",
        "fleet::throttle",
        "fleet::budget",
        "fleet::breaker",
        "fleet::Throttle",
        "fleet::RetryBudget",
        "fleet::Breaker",
        "fleet::Urgent",
        "engine::Retry",
        "engine::Attempt",
        "engine::IntoRetry",
        "engine::events",
        "engine::levels",
        "engine::metrics",
        "engine::Notify",
        "engine::NoNotify",
        "engine::EventValue",
        "engine::EventLevels",
        "engine::UnknownEvent",
        "engine::GiveUp",
        "engine::TimedOut",
    ];
    let mut found = Vec::new();
    let mut stack = vec![root.join("crates"), root.join("docs")];
    let mut files = vec![root.join("README.md")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                if name != "target" && !name.starts_with('.') {
                    stack.push(path);
                }
            } else if [".rs", ".md", ".toml", ".py", ".pyi"]
                .iter()
                .any(|e| name.ends_with(e))
                && name != "old_names.rs"
            {
                files.push(path);
            }
        }
    }
    assert!(files.len() > 100, "the workspace's files: {}", files.len());
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        for (i, line) in text.lines().enumerate() {
            let defines = line.contains("deprecated")
                || line.contains("pub const ServerPushback")
                || line.contains("pub mod escape_lane")
                || line.contains("pub mod fleet");
            if let Some(name) = old.iter().find(|o| line.contains(*o)).filter(|_| !defines) {
                found.push(format!("{}:{}: {name}: {line}", file.display(), i + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "old names written down:\n{}",
        found.join("\n")
    );
}
