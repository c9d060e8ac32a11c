//! docs/cli.md is the reference of every subcommand's flags: each flag
//! `herdless SUB --help` shows is in its section (or, for the retrying
//! subcommands, in the policy flags' table), and each flag its section names
//! is one `--help` shows, but for the few the section names as another
//! command's (`check --strict` in tune's; lines that run `cargo` or another
//! subcommand) or that a subcommand accepts without showing them (`check`
//! hides the policy flags that do not shape what it shows, and says so).

use std::collections::BTreeSet;

use herdless_cli::testing::help;

/// The `--flags` written in `text` (a flag is `--` then lowercase letters,
/// digits and dashes, not inside a longer word).
fn flags(text: &str) -> BTreeSet<String> {
    let b = text.as_bytes();
    let mut out = BTreeSet::new();
    let mut i = 0;
    while i + 2 < b.len() {
        let starts = b[i] == b'-'
            && b[i + 1] == b'-'
            && b[i + 2].is_ascii_lowercase()
            && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'-'));
        if starts {
            let mut j = i + 2;
            while j < b.len()
                && (b[j].is_ascii_lowercase() || b[j].is_ascii_digit() || b[j] == b'-')
            {
                j += 1;
            }
            out.insert(text[i..j].trim_end_matches('-').to_owned());
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

/// The section of docs/cli.md headed `## \`herdless SUB\``, or `## TITLE`.
fn section(doc: &str, title: &str) -> String {
    let start = doc
        .find(&format!("\n## {title}"))
        .unwrap_or_else(|| panic!("docs/cli.md has no section {title}"));
    let rest = &doc[start + 4..];
    let end = rest.find("\n## ").unwrap_or(rest.len());
    rest[..end].to_owned()
}

#[test]
fn every_flag_of_every_help_is_in_the_reference_and_back() {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/cli.md")).unwrap();
    let policy = flags(&section(&doc, "Policy flags"));
    let retrying = ["exec", "check", "get", "fleet", "worker"];
    // Named in a section but another command's, or accepted and not shown.
    let elsewhere: &[(&str, &[&str])] = &[
        ("check", &["--seed", "--task-id", "--log-format", "--quiet"]),
        ("worker", &["--task-id"]),
        ("tune", &["--strict"]),
        ("analyze", &["--log-format"]),
        (
            "stub",
            &[
                "--probe-wait",
                "--breaker-release",
                "--breaker",
                "--urgent-quota",
                "--urgent-workers",
                "--urgent",
                "--budget-tokens",
                "--retry-budget",
            ],
        ),
    ];
    let mut wrong = Vec::new();
    for sub in [
        "simulate", "exec", "check", "get", "stub", "fleet", "worker", "tune", "analyze",
    ] {
        let shown: BTreeSet<String> = flags(&help(sub))
            .into_iter()
            .filter(|f| f != "--help")
            .collect();
        // Lines that run another command (an example's `cargo test ...`,
        // `herdless fleet ...` in stub's section) name that command's flags.
        let subs = [
            "simulate", "exec", "check", "get", "stub", "fleet", "worker", "tune", "analyze",
        ];
        let own: String = section(&doc, &format!("`herdless {sub}"))
            .lines()
            .filter(|l| {
                !l.contains("cargo ")
                    && !subs
                        .iter()
                        .any(|o| *o != sub && l.contains(&format!("herdless {o} ")))
            })
            .collect::<Vec<_>>()
            .join("\n");
        let mut documented = flags(&own);
        if retrying.contains(&sub) {
            documented.extend(policy.iter().cloned());
        }
        let allowed: BTreeSet<String> = elsewhere
            .iter()
            .filter(|(s, _)| *s == sub)
            .flat_map(|(_, f)| f.iter().map(|f| (*f).to_owned()))
            .collect();
        for f in shown.difference(&documented) {
            wrong.push(format!("{sub}: {f} is in --help, not in docs/cli.md"));
        }
        for f in documented.difference(&shown) {
            if !allowed.contains(f) {
                wrong.push(format!("{sub}: {f} is in docs/cli.md, not in --help"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
