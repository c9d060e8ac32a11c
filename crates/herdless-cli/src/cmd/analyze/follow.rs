//! `herdless analyze --follow`: tail a growing log, say when a storm forms.
//!
//! The file is read to its end, then polled every 100 ms for new bytes (a
//! file that shrinks was truncated or rotated in place: it is read again
//! from its start). Every line goes into the tally as without `--follow`, and
//! every scheduled retry into a rolling window of `--window` (by the log's
//! own clock: the latest event time). A storm is forming when one 100 ms
//! bucket of retries about to go out holds more than `--max-bucket-share` of
//! the tasks that retried within the window (at least `--min-tasks` of
//! them): that is visible in the log before the retries reach the device,
//! since each event says when its retry goes out (time + `sleep_s`). One
//! line is printed per such bucket, as text or (`--json`) one JSON object
//! (`event` = `storm_forming`). On SIGINT or SIGTERM (or the end of standard
//! input) the full report is printed, and the exit status is the report's.

use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::time::Duration;

use serde_json::json;

use super::lines::Lines;
use super::parse::parse_line;
use super::stats::BUCKET_NS;
use super::time::format;
use super::{AnalyzeArgs, Analyzer, finish};
use crate::shared::error::{CliError, CliResult};
use crate::shared::events_out::json_line;

/// The rolling window of scheduled retries.
#[derive(Debug)]
pub(crate) struct Window {
    width_ns: i64,
    share: f64,
    min_tasks: u64,
    /// Retries per bucket of when they go out, oldest first.
    buckets: VecDeque<(i64, u32)>,
    /// Each retrying task's latest event time.
    tasks: HashMap<String, i64>,
    latest_ns: i64,
    alerted: Option<i64>,
    since_prune: u32,
}

/// A storm line's numbers.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Storm {
    /// The bucket's start, ns since the epoch.
    pub(crate) bucket_ns: i64,
    /// Retries going out in it.
    pub(crate) retries: u32,
    /// Tasks that retried within the window.
    pub(crate) tasks: usize,
}

impl Window {
    /// A window of `width` judging with `share` of at least `min_tasks` tasks.
    pub(crate) fn new(width: Duration, share: f64, min_tasks: u64) -> Window {
        Window {
            width_ns: i64::try_from(width.as_nanos()).unwrap_or(i64::MAX),
            share,
            min_tasks,
            buckets: VecDeque::new(),
            tasks: HashMap::new(),
            latest_ns: i64::MIN,
            alerted: None,
            since_prune: 0,
        }
    }

    /// Adds a retry scheduled at `t_ns` by `task`, going out at `at_ns`; a
    /// [`Storm`] when its bucket now crosses the share (once per bucket).
    pub(crate) fn retry(&mut self, task: &str, t_ns: i64, at_ns: i64) -> Option<Storm> {
        self.latest_ns = self.latest_ns.max(t_ns);
        let oldest = self.latest_ns.saturating_sub(self.width_ns);
        while self
            .buckets
            .front()
            .is_some_and(|(b, _)| b * BUCKET_NS < oldest)
        {
            self.buckets.pop_front();
        }
        self.since_prune += 1;
        if self.since_prune >= 1_024 {
            self.since_prune = 0;
            self.tasks.retain(|_, t| *t >= oldest);
        }
        *self.tasks.entry(task.to_owned()).or_insert(t_ns) = t_ns;
        let b = at_ns.div_euclid(BUCKET_NS);
        let count = match self.buckets.iter_mut().rev().find(|(x, _)| *x == b) {
            Some((_, c)) => {
                *c += 1;
                *c
            }
            None => {
                let pos = self
                    .buckets
                    .iter()
                    .position(|(x, _)| *x > b)
                    .unwrap_or(self.buckets.len());
                self.buckets.insert(pos, (b, 1));
                1
            }
        };
        // Tasks of the window (those older are pruned every 1,024 retries).
        let tasks = self.tasks.len();
        let storm = tasks as u64 >= self.min_tasks && f64::from(count) > self.share * tasks as f64;
        (storm && self.alerted != Some(b)).then(|| {
            self.alerted = Some(b);
            Storm {
                bucket_ns: b * BUCKET_NS,
                retries: count,
                tasks,
            }
        })
    }
}

fn say(storm: &Storm, args: &AnalyzeArgs) {
    let share = f64::from(storm.retries) / storm.tasks.max(1) as f64;
    let line = if args.json {
        json_line(json!({
            "event": "storm_forming",
            "bucket": format(storm.bucket_ns),
            "retries": storm.retries,
            "tasks": storm.tasks,
            "share": share,
            "limit": args.max_bucket_share,
        }))
    } else {
        format!(
            "herdless analyze: storm forming: {} retries go out in the 100 ms from {} = {:.0}% of the {} tasks \
             retrying in the last {} (limit {:.0}%)",
            storm.retries,
            format(storm.bucket_ns),
            share * 100.0,
            storm.tasks,
            humantime::format_duration(args.window),
            args.max_bucket_share * 100.0
        )
    };
    // A closed stdout ends the run like any write error (the report follows).
    let _ = crate::shared::output::print(&format!("{line}\n"));
}

/// Runs `--follow` until SIGINT, SIGTERM or the end of standard input.
///
/// # Errors
///
/// As [`super::run`].
pub(crate) fn run(args: &AnalyzeArgs, mut a: Analyzer) -> CliResult {
    let path = match args.files.as_slice() {
        [one] => one.clone(),
        [] => PathBuf::from("-"),
        _ => return Err(CliError::usage("--follow reads one file")),
    };
    if !(Duration::from_secs(1)..=Duration::from_secs(86_400)).contains(&args.window) {
        return Err(CliError::usage("--window must be within 1s..=1d"));
    }
    let mut w = Window::new(args.window, args.max_bucket_share, args.min_tasks);
    let mut lines = Lines::default();
    let mut on_line = |l: Option<&[u8]>, a: &mut Analyzer| {
        let rec = l.and_then(|l| parse_line(l, &a.fields));
        let task = rec
            .as_ref()
            .map(|r| r.task.as_deref().unwrap_or("").to_owned());
        let t = rec.as_ref().and_then(|r| r.time_ns);
        if let (Some(at), Some(task), Some(t)) = (a.stats.add(rec), task, t) {
            if let Some(storm) = w.retry(&task, t, at) {
                say(&storm, args);
            }
        }
    };
    let cannot = |e: io::Error| CliError::usage(format!("cannot read {}: {e}", path.display()));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::failure(format!("cannot start the runtime: {e}")))?;
    let mut buf = vec![0u8; 1 << 16];
    if path.as_os_str() == "-" {
        // Standard input: blocking reads, each chunk judged as it comes.
        let mut stdin = io::stdin().lock();
        loop {
            match stdin.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => lines.feed(&buf[..n], &mut |l| on_line(l, &mut a)),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(cannot(e)),
            }
        }
        lines.finish(&mut |l| on_line(l, &mut a));
        return finish(args, a);
    }
    let mut file = File::open(&path).map_err(cannot)?;
    let mut pos = 0u64;
    rt.block_on(async {
        use tokio::signal::unix::{SignalKind, signal};
        let mut int =
            signal(SignalKind::interrupt()).map_err(|e| CliError::failure(e.to_string()))?;
        let mut term =
            signal(SignalKind::terminate()).map_err(|e| CliError::failure(e.to_string()))?;
        loop {
            let len = file.metadata().map_err(cannot)?.len();
            if len < pos {
                file.seek(SeekFrom::Start(0)).map_err(cannot)?;
                pos = 0;
                lines = Lines::default();
            }
            loop {
                let n = file.read(&mut buf).map_err(cannot)?;
                if n == 0 {
                    break;
                }
                pos += n as u64;
                lines.feed(&buf[..n], &mut |l| on_line(l, &mut a));
            }
            tokio::select! {
                _ = int.recv() => break,
                _ = term.recv() => break,
                () = tokio::time::sleep(Duration::from_millis(100)) => {}
            }
        }
        Ok::<_, CliError>(())
    })?;
    lines.finish(&mut |l| on_line(l, &mut a));
    finish(args, a)
}
