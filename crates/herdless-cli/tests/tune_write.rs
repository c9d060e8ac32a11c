//! `herdless tune`'s output as a policy file: `--format toml` prints the
//! block alone, `--write FILE` adds or replaces the table in a file and
//! keeps everything else byte for byte; and what tune reports and refuses:
//! a bad `--name` before any work, the worst calls over seeds, a figure
//! that cannot be written after the report.

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use serde_json::Value;

#[allow(dead_code)] // each test binary uses part of it
mod support;
use support::herdless;

/// A small fleet and a narrow grid: a search of a few dozen simulations.
const TINY: [&str; 22] = [
    "--workers",
    "300",
    "--capacity",
    "100",
    "--outage",
    "5s..20s",
    "--outages",
    "2",
    "--jitters",
    "full,equal",
    "--bases",
    "250ms,1s",
    "--multipliers",
    "2",
    "--attempts",
    "8,12",
    "--search-seeds",
    "2",
    "--verify-seeds",
    "3",
    "--finalists",
    "2",
];

async fn tune(extra: &[&str]) -> Output {
    let mut args = vec!["tune"];
    args.extend_from_slice(&TINY);
    args.extend_from_slice(extra);
    herdless(&args).await
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

async fn strict(file: &Path, name: &str) -> Output {
    herdless(&[
        "check",
        "--strict",
        "--config",
        file.to_str().unwrap(),
        "--policy",
        name,
    ])
    .await
}

/// `--name x.y` is a usage error before any work (it used to run the whole
/// search, then fail with exit 1).
#[tokio::test]
async fn a_bad_name_is_a_usage_error_before_the_search() {
    for name in ["x.y", "", "a b", "tuned]"] {
        // The default facts: a search of minutes in a debug build (ended
        // with the test if it starts).
        let run = tokio::process::Command::new(env!("CARGO_BIN_EXE_herdless"))
            .args(["tune", "--name", name])
            .kill_on_drop(true)
            .output();
        let out = tokio::time::timeout(Duration::from_secs(60), run)
            .await
            .expect("refused at once")
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{name:?}: {out:?}");
        assert!(text(&out.stderr).contains("a table name is"), "{out:?}");
        assert!(out.stdout.is_empty());
    }
}

/// The figures table is the worst over the verification seeds, calls
/// included (it printed their mean: 5.89 where the worst run made 6.96).
#[tokio::test]
async fn the_table_prints_the_worst_calls_over_seeds() {
    let json: Value = serde_json::from_slice(&tune(&["--json"]).await.stdout).unwrap();
    let verify = &json["recommended"]["verify"];
    let worst = verify["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["calls"].as_f64().unwrap())
        .fold(0.0, f64::max);
    let mean = verify["calls"].as_f64().unwrap();
    assert_eq!(verify["calls_worst"].as_f64(), Some(worst));
    let report = text(&tune(&[]).await.stdout);
    assert!(report.contains("worst over seeds"), "{report}");
    let row = report
        .lines()
        .find(|l| l.trim_start().starts_with("calls per worker"))
        .unwrap_or_else(|| panic!("{report}"));
    let first: f64 = row.split_whitespace().nth(3).unwrap().parse().unwrap();
    assert_eq!(
        format!("{first:.2}"),
        format!("{worst:.2}"),
        "{row} (mean {mean})"
    );
}

/// `--format toml` prints the block alone: a policy file `check --strict`
/// passes (the block sat in the middle of the report, so `tune > file`
/// wrote a file that was not TOML).
#[tokio::test]
async fn format_toml_prints_a_policy_file() {
    let out = tune(&["--format", "toml", "--name", "ingest"]).await;
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let block = text(&out.stdout);
    assert!(block.starts_with("# herdless tune:"), "{block}");
    toml::from_str::<toml::Table>(&block).expect("TOML");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("herdless.toml");
    std::fs::write(&file, &block).unwrap();
    assert_eq!(strict(&file, "ingest").await.status.code(), Some(0));
    // --json and --format conflict.
    let out = herdless(&["tune", "--json", "--format", "toml"]).await;
    assert_eq!(out.status.code(), Some(2));
}

const OTHERS: &str = "# the team's policies\r\n[policy.default]\r\nbase = \"1s\"   # tuned by hand\r\n\r\n# keep this comment\r\n[policy.batch]\r\njitter = \"equal\"\r\nmax_attempts = 5\r\n";

/// `--write FILE` adds the table to a file, keeping every byte of it (CRLF
/// line endings included), creates a missing file, leaves a file holding
/// the same table untouched, and replaces a different one only with
/// `--force`, keeping the rest byte for byte; the result passes `check
/// --strict` and no temporary file is left.
#[tokio::test]
async fn write_adds_or_replaces_the_table_and_keeps_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("herdless.toml");
    let f = file.to_str().unwrap();
    // A missing file is created.
    let out = tune(&["--write", f, "--format", "toml"]).await;
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text(&out.stdout));
    assert!(
        text(&out.stderr).contains("[policy.tuned] added to"),
        "{out:?}"
    );
    // Added beside other tables: the old bytes are the new file's start.
    std::fs::write(&file, OTHERS).unwrap();
    let out = tune(&["--write", f, "--format", "toml"]).await;
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let after = std::fs::read_to_string(&file).unwrap();
    assert!(after.starts_with(OTHERS), "{after:?}");
    // A blank line between, and the file's own line endings.
    assert_eq!(
        after[OTHERS.len()..],
        format!("\n{}", text(&out.stdout)).replace('\n', "\r\n")
    );
    assert_eq!(strict(&file, "tuned").await.status.code(), Some(0));
    // The same table again: untouched.
    let out = tune(&["--write", f]).await;
    assert!(text(&out.stderr).contains("already in"), "{out:?}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), after);
    // A different table of that name: refused without --force, the file as it was.
    let hand = "[policy.tuned]\nbase = \"3s\"\n";
    let before = format!("{OTHERS}\r\n{hand}\r\n# after it\r\n[policy.z]\r\ncap = \"9s\"\r\n");
    std::fs::write(&file, &before).unwrap();
    let out = tune(&["--write", f]).await;
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(text(&out.stderr).contains("--force"), "{out:?}");
    assert!(
        text(&out.stdout).contains("[policy.tuned]"),
        "the report is printed"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), before);
    // With --force: replaced, every other byte kept.
    let out = tune(&["--write", f, "--force", "--format", "toml"]).await;
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let after = std::fs::read_to_string(&file).unwrap();
    let at = before.find(hand).unwrap();
    assert!(after.starts_with(&before[..at]), "{after:?}");
    assert!(after.ends_with(&before[at + hand.len()..]), "{after:?}");
    assert_eq!(strict(&file, "tuned").await.status.code(), Some(0));
    // The file still reads as a policy file, the other tables with it.
    let z = herdless(&["check", "--config", f, "--policy", "z", "--format", "json"]).await;
    let z: Value = serde_json::from_slice(&z.stdout).unwrap();
    assert_eq!(z["policy"]["cap_s"], 9.0, "{z}");
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        left,
        [std::ffi::OsString::from("herdless.toml")],
        "no temporary file left"
    );
}

/// A file that is not a policy file, or defines the table another way, is
/// refused and left as it is.
#[tokio::test]
async fn write_refuses_a_file_it_cannot_edit_safely() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("herdless.toml");
    let f = file.to_str().unwrap();
    for (content, why) in [
        ("[policy.a]\nbase = \n", "not a policy file"),
        ("[policy]\ntuned.base = \"1s\"\n", "replace it by hand"),
    ] {
        std::fs::write(&file, content).unwrap();
        let out = tune(&["--write", f, "--force"]).await;
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        assert!(text(&out.stderr).contains(why), "{out:?}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), content);
    }
}

/// A figure that cannot be written fails after the report is printed, as
/// `simulate` does (`analyze` and `tune` printed nothing).
#[tokio::test]
async fn a_figure_that_cannot_be_written_fails_after_the_report() {
    let out = tune(&["--out", "/proc/nope"]).await;
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(text(&out.stdout).contains("[policy.tuned]"), "{out:?}");
    assert!(text(&out.stderr).contains("/proc/nope"), "{out:?}");
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.jsonl");
    let line = |t: f64, task: u32| {
        format!(
            "{{\"timestamp\":{t},\"event\":\"retry_scheduled\",\"task_id\":\"t{task}\",\"attempt\":1,\"sleep_s\":{}}}\n",
            0.1 * f64::from(task)
        )
    };
    let text_log: String = (0..20).map(|i| line(100.0, i)).collect();
    std::fs::write(&log, text_log).unwrap();
    let out = herdless(&["analyze", "--out", "/proc/nope", log.to_str().unwrap()]).await;
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    assert!(
        text(&out.stdout).contains("herdless analyze: 20 lines"),
        "{out:?}"
    );
    assert!(text(&out.stderr).contains("/proc/nope"), "{out:?}");
}

/// Quotes inside a comment or a one-line string are not the start of a
/// multi-line string: a file whose comment says `"""` (or whose `task_id`
/// holds `'''`) had every table after it taken for that string's inside,
/// and `--write --force` refused it with "internal error: the other tables
/// would not read as before".
#[tokio::test]
async fn quotes_in_comments_and_strings_do_not_hide_the_tables_after_them() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("herdless.toml");
    let before = "[policy.tuned]\nbase = \"7s\"\n\n# a note with \"\"\" in it, and ''' too\n\
                  [policy.other]\nbase = \"2s\"\ntask_id = \"say \\\"\\\"\\\" and '''\" # \"\"\"\n\n\
                  [policy.last]\nbase = \"3s\"\n";
    std::fs::write(&file, before).unwrap();
    let out = tune(&["--write", file.to_str().unwrap(), "--force"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let after = std::fs::read_to_string(&file).unwrap();
    let from = after.find("# a note").unwrap();
    assert_eq!(
        &after[from..],
        &before[before.find("# a note").unwrap()..],
        "{after}"
    );
    assert!(!after.contains("base = \"7s\""), "{after}");
    assert_eq!(strict(&file, "tuned").await.status.code(), Some(0));
}
