//! `herdless analyze --follow` as `tail -F` follows: standard input and
//! FIFOs read without seeking, a file followed by name through a rename and
//! a copytruncate, one report at the end whatever ends it, and linear time.
//!
//! Each test knows what analyze has read by a storm line it waits for: a
//! batch of 30 tasks that failed together and all sleep 1 s puts 30 retries
//! in one bucket, which analyze announces (`storm forming`) as soon as it
//! reads the batch.

use std::io::Write as _;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout};

/// 30 tasks failing together at `t` s, each retrying 1 s later: a storm.
fn storm(t: f64, prefix: &str) -> String {
    (0..30)
        .map(|i| {
            format!(
                "{{\"timestamp\":{:.3},\"event\":\"retry_scheduled\",\"task_id\":\"{prefix}{i}\",\"attempt\":1,\"sleep_s\":1.0}}\n",
                t + f64::from(i) * 0.001
            )
        })
        .collect()
}

/// `n` retries spread over time (no storm), from `t` s.
fn calm(t: f64, n: u32, prefix: &str) -> String {
    (0..n)
        .map(|i| {
            format!(
                "{{\"timestamp\":{:.3},\"event\":\"retry_scheduled\",\"task_id\":\"{prefix}{i}\",\"attempt\":1,\"sleep_s\":{:.3}}}\n",
                t + f64::from(i) * 0.3,
                0.1 + f64::from(i) * 0.07
            )
        })
        .collect()
}

fn follow(args: &[&str], stdin: Stdio) -> (Child, Lines<BufReader<ChildStdout>>) {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_herdless"))
        .arg("analyze")
        .arg("--follow")
        .args(args)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let out = BufReader::new(child.stdout.take().unwrap()).lines();
    (child, out)
}

/// Waits for the storm line naming the bucket `bucket` (RFC 3339 prefix).
async fn storm_line(out: &mut Lines<BufReader<ChildStdout>>, bucket: &str) {
    loop {
        let line = tokio::time::timeout(Duration::from_secs(30), out.next_line())
            .await
            .unwrap_or_else(|_| panic!("a storm line at {bucket} within 30 s"))
            .unwrap()
            .expect("analyze still running");
        if line.contains("storm forming") && line.contains(bucket) {
            return;
        }
    }
}

/// Signals `child` and returns the rest of its stdout and its exit code.
async fn stop(
    mut child: Child,
    mut out: Lines<BufReader<ChildStdout>>,
    signal: Signal,
) -> (String, Option<i32>) {
    let pid = Pid::from_raw(i32::try_from(child.id().unwrap()).unwrap());
    kill(pid, signal).unwrap();
    let mut rest = Vec::new();
    while let Some(l) = tokio::time::timeout(Duration::from_secs(30), out.next_line())
        .await
        .expect("the report within 30 s")
        .unwrap()
    {
        rest.push(l);
    }
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .unwrap()
        .unwrap();
    (rest.join("\n"), status.code())
}

/// On standard input, SIGTERM, SIGINT and SIGHUP end the run with the
/// report (they used to kill it: exit 143, 130 or 129, nothing printed).
#[tokio::test]
async fn on_stdin_a_signal_ends_with_the_report() {
    for signal in [Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP] {
        let (mut child, mut out) = follow(&["-"], Stdio::piped());
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all(storm(1_000.0, "a").as_bytes())
            .await
            .unwrap();
        stdin.flush().await.unwrap();
        storm_line(&mut out, "1970-01-01T00:16:41.0").await;
        // stdin stays open: the signal, not its end, stops the run.
        let (report, code) = stop(child, out, signal).await;
        drop(stdin);
        assert!(report.contains("tasks 30"), "{signal:?}: {report}");
        assert!(report.contains("FAIL spread"), "{report}");
        assert_eq!(code, Some(1), "{signal:?}: {report}");
    }
}

/// A FIFO (and bash's `<(cmd)`) is read as a stream to its end, never
/// seeked (it failed with "Illegal seek" after the first batch).
#[tokio::test]
async fn a_fifo_and_a_process_substitution_are_read_to_their_end() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("events.fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let (mut child, mut out) = follow(&[fifo.to_str().unwrap()], Stdio::null());
    let text = calm(1_000.0, 20, "c") + &storm(1_040.0, "s") + &calm(1_050.0, 3_000, "d");
    // Opening a FIFO to write waits for its reader.
    let fifo_w = fifo.clone();
    let mut f = tokio::task::spawn_blocking(move || {
        std::fs::OpenOptions::new()
            .write(true)
            .open(fifo_w)
            .unwrap()
    })
    .await
    .unwrap();
    // Two batches, the second once analyze has read the first (its storm).
    let at = text.find("\"task_id\":\"d100\"").unwrap();
    let half = text[..at].rfind('\n').unwrap() + 1;
    let (first, second) = (text[..half].to_owned(), text[half..].to_owned());
    let mut f = tokio::task::spawn_blocking(move || {
        f.write_all(first.as_bytes()).unwrap();
        f
    })
    .await
    .unwrap();
    storm_line(&mut out, "1970-01-01T00:17:21.0").await;
    tokio::task::spawn_blocking(move || f.write_all(second.as_bytes()).unwrap())
        .await
        .unwrap();
    let mut report = Vec::new();
    while let Some(l) = tokio::time::timeout(Duration::from_secs(30), out.next_line())
        .await
        .expect("analyze ends at the FIFO's end")
        .unwrap()
    {
        report.push(l);
    }
    let report = report.join("\n");
    let status = child.wait().await.unwrap();
    assert!(report.contains("3050 lines, 3050 events"), "{report}");
    assert!(report.ends_with("passed"), "{report}");
    assert_eq!(status.code(), Some(0), "{report}");

    let log = dir.path().join("events.jsonl");
    std::fs::write(&log, &text).unwrap();
    let script = format!(
        "exec '{}' analyze --follow <(cat '{}')",
        env!("CARGO_BIN_EXE_herdless"),
        log.display()
    );
    let done = tokio::time::timeout(
        Duration::from_secs(30),
        tokio::process::Command::new("bash")
            .args(["-c", &script])
            .output(),
    )
    .await
    .expect("analyze ends at the substitution's end")
    .unwrap();
    assert!(
        out_of(&done.stdout).contains("3050 lines, 3050 events"),
        "{done:?}"
    );
    assert_eq!(done.status.code(), Some(0));
}

fn out_of(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn append(path: &Path, text: &str) {
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

/// A log rotated by rename is followed by name: what the writer still
/// appends to the renamed file is read, then the new file from its start
/// (the new file used to be never read, with no warning).
#[tokio::test]
async fn a_rename_rotation_is_followed_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.jsonl");
    std::fs::write(&path, storm(1_000.0, "a")).unwrap();
    let (child, mut out) = follow(&[path.to_str().unwrap()], Stdio::null());
    storm_line(&mut out, "1970-01-01T00:16:41.0").await;
    let old = dir.path().join("app.jsonl.1");
    std::fs::rename(&path, &old).unwrap();
    append(&old, &calm(1_002.0, 5, "b"));
    std::fs::write(&path, storm(1_010.0, "c")).unwrap();
    storm_line(&mut out, "1970-01-01T00:16:51.0").await;
    let (report, code) = stop(child, out, Signal::SIGTERM).await;
    assert!(report.contains("65 lines, 65 events"), "{report}");
    assert!(report.contains("tasks 65"), "{report}");
    assert_eq!(code, Some(1));
}

/// A copytruncate that grows back past what was read within one poll is
/// seen: the new content is read from its start (its first lines were
/// lost, read from the old offset).
#[tokio::test]
async fn a_copytruncate_grown_back_within_a_poll_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.jsonl");
    std::fs::write(&path, storm(1_000.0, "a")).unwrap();
    let (child, mut out) = follow(&[path.to_str().unwrap()], Stdio::null());
    storm_line(&mut out, "1970-01-01T00:16:41.0").await;
    // Copied elsewhere, truncated and written again at once: longer than
    // before, the storm first.
    std::fs::copy(&path, dir.path().join("app.jsonl.1")).unwrap();
    let again = storm(1_010.0, "c") + &calm(1_011.0, 20, "d");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&path)
        .unwrap();
    f.write_all(again.as_bytes()).unwrap();
    drop(f);
    storm_line(&mut out, "1970-01-01T00:16:51.0").await;
    let (report, code) = stop(child, out, Signal::SIGTERM).await;
    assert!(report.contains("80 lines, 80 events"), "{report}");
    assert_eq!(code, Some(1));
}

/// 100,000 lines whose retries each go out in a bucket of their own: with
/// `--follow` about as fast as without (it was quadratic in the future
/// buckets: 2.76 s against 0.06 s in a release build).
#[tokio::test]
async fn following_is_linear_in_the_lines() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("many.jsonl");
    let mut text = String::with_capacity(100_000 * 110);
    for i in 0..100_000u32 {
        let t = 1_000.0 + f64::from(i) * 0.001;
        text.push_str(&format!(
            "{{\"timestamp\":{t:.3},\"event\":\"retry_scheduled\",\"task_id\":\"t{i}\",\"attempt\":1,\"sleep_s\":{:.1}}}\n",
            f64::from(i) * 0.1
        ));
    }
    std::fs::write(&path, &text).unwrap();
    let run = |follow: bool| {
        let path = path.clone();
        async move {
            let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_herdless"));
            cmd.arg("analyze").kill_on_drop(true);
            if follow {
                cmd.args(["--follow", "-"])
                    .stdin(std::fs::File::open(&path).unwrap());
            } else {
                cmd.arg(&path);
            }
            let start = Instant::now();
            let out = cmd.output().await.unwrap();
            assert!(out_of(&out.stdout).contains("100000 lines"), "{out:?}");
            start.elapsed()
        }
    };
    let plain = run(false).await;
    let limit = plain * 3 + Duration::from_secs(1);
    let followed = tokio::time::timeout(limit, run(true))
        .await
        .unwrap_or_else(|_| panic!("--follow took more than {limit:?}; without it {plain:?}"));
    eprintln!("100,000 lines: {plain:?} without --follow, {followed:?} with it");
}

/// A file that does not exist yet is waited for, as `tail -F` does (a
/// monitor started before the service that writes the log): it used to
/// exit 2 at once ("No such file or directory").
#[tokio::test]
async fn a_file_that_does_not_exist_yet_is_waited_for() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("later.jsonl");
    let (mut child, mut out) = follow(&[path.to_str().unwrap()], Stdio::null());
    let mut err = BufReader::new(child.stderr.take().unwrap()).lines();
    let said = tokio::time::timeout(Duration::from_secs(30), err.next_line())
        .await
        .expect("a line on stderr within 30 s")
        .unwrap()
        .unwrap_or_default();
    assert!(said.contains("waiting for it"), "{said}");
    std::fs::write(&path, storm(1_000.0, "a")).unwrap();
    storm_line(&mut out, "1970-01-01T00:16:41.0").await;
    let (report, code) = stop(child, out, Signal::SIGTERM).await;
    assert!(report.contains("tasks 30"), "{report}");
    assert_eq!(code, Some(1), "{report}");
    // Stopped while still waiting: the report of nothing, not judged.
    let (mut child, out) = follow(
        &[dir.path().join("never.jsonl").to_str().unwrap()],
        Stdio::null(),
    );
    let mut err = BufReader::new(child.stderr.take().unwrap()).lines();
    let said = tokio::time::timeout(Duration::from_secs(30), err.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap_or_default();
    assert!(said.contains("waiting for it"), "{said}");
    let (report, code) = stop(child, out, Signal::SIGINT).await;
    assert!(report.contains("NOT JUDGED"), "{report}");
    assert_eq!(code, Some(4), "{report}");
}
