//! `herdless analyze --follow`: tail a growing log, say when a storm forms.
//!
//! A file is followed by name as `tail -F` follows it ([`tail`](super::tail):
//! polled every 100 ms; a rename or truncation, even one grown back within
//! a poll, is seen and the new content read from its start; a file that does
//! not exist yet is waited for); standard input,
//! a pipe or a FIFO is read as it comes, never seeked, to its end. Every line
//! goes into the tally as without `--follow`, and every scheduled retry into
//! a rolling window of `--window` (by the log's own clock: the latest event
//! time). A storm is forming when, in one 100 ms bucket of retries about to
//! go out, more retries that slept the same (within 2 %, as the `spread`
//! check counts them; without a sleep field, every retry of the bucket)
//! than `--max-bucket-share` of the tasks that retried within the window (at
//! least `--min-tasks` of them): that is visible in the log before the
//! retries reach the device, since each event says when its retry goes out
//! (time + `sleep_s`). Jitter's spread retries bunched by a short base do not
//! count: their sleeps differ. Sleeps written rounded (to 0.1 s, 0.01 s)
//! are counted as the `spread` check counts them at the log's
//! resolution: where its step cannot tell 2 %, a bucket needs the larger
//! share [`same_limit`] gives. One line is printed per such bucket, as text
//! or (`--json`) one JSON object (`event` = `storm_forming`). On SIGINT or
//! SIGTERM, or at the end of a stream, the full report is printed, once, and
//! the exit status is the report's.
//!
//! Linear in the lines: the window's buckets are a map ordered by time
//! (pruned from the front) and its tasks expire through a queue in the
//! order they were seen.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::json;

use super::lines::Lines;
use super::parse::parse_line;
use super::spread::{decimal_step, same_limit, sleep_bin};
use super::stats::BUCKET_NS;
use super::tail::{Change, Tail, is_stream, stream};
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
    /// Per bucket of when they go out: the retries by the bin of their
    /// sleep (`None`: no sleep logged).
    buckets: BTreeMap<i64, HashMap<Option<u16>, u32>>,
    /// Each retrying task's latest event time.
    tasks: HashMap<String, i64>,
    /// Tasks in the order they were seen, to expire them.
    seen: VecDeque<(i64, String)>,
    latest_ns: i64,
    alerted: Option<i64>,
    /// The coarsest decimal step every positive sleep seen is written on.
    step_ns: Option<u64>,
}

/// A storm line's numbers.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Storm {
    /// The bucket's start, ns since the epoch.
    pub(crate) bucket_ns: i64,
    /// Retries going out in it that slept the same (within 2 %; without a
    /// sleep field, all of them).
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
            buckets: BTreeMap::new(),
            tasks: HashMap::new(),
            seen: VecDeque::new(),
            latest_ns: i64::MIN,
            alerted: None,
            step_ns: None,
        }
    }

    /// Adds a retry scheduled at `t_ns` by `task`, going out at `at_ns`
    /// after sleeping `sleep_ns` (if logged); a [`Storm`] when its bucket
    /// now crosses the share (once per bucket).
    pub(crate) fn retry(
        &mut self,
        task: &str,
        t_ns: i64,
        at_ns: i64,
        sleep_ns: Option<i64>,
    ) -> Option<Storm> {
        self.latest_ns = self.latest_ns.max(t_ns);
        let oldest = self.latest_ns.saturating_sub(self.width_ns);
        while let Some((&b, _)) = self.buckets.first_key_value() {
            if b.saturating_mul(BUCKET_NS) >= oldest {
                break;
            }
            self.buckets.pop_first();
        }
        while let Some((t, _)) = self.seen.front() {
            if *t >= oldest {
                break;
            }
            if let Some((_, name)) = self.seen.pop_front() {
                // Expired unless seen again since.
                if self.tasks.get(&name).is_some_and(|last| *last < oldest) {
                    self.tasks.remove(&name);
                }
            }
        }
        if self
            .tasks
            .insert(task.to_owned(), t_ns)
            .is_none_or(|was| was != t_ns)
        {
            self.seen.push_back((t_ns, task.to_owned()));
        }
        let b = at_ns.div_euclid(BUCKET_NS);
        let bin = sleep_ns.map(sleep_bin);
        let bucket = self.buckets.entry(b).or_default();
        *bucket.entry(bin).or_default() += 1;
        // The retries of this bucket that slept as this one did (within 2 %).
        let count = match bin {
            None => bucket.get(&None).copied().unwrap_or(0),
            Some(k) => {
                let at =
                    |k: Option<u16>| k.and_then(|k| bucket.get(&Some(k))).copied().unwrap_or(0);
                let here = at(Some(k));
                here + at(k.checked_sub(1)).max(at(k.checked_add(1)))
            }
        };
        let share = match sleep_ns {
            Some(s) => {
                if s > 0 {
                    let step = decimal_step(s);
                    self.step_ns = Some(self.step_ns.map_or(step, |d| d.min(step)));
                }
                same_limit(self.step_ns, s.max(0) as f64, self.share)
            }
            None => self.share,
        };
        let tasks = self.tasks.len();
        let storm = tasks as u64 >= self.min_tasks && f64::from(count) > share * tasks as f64;
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
            "herdless analyze: storm forming: {} retries that slept the same go out in the 100 ms from {} = \
             {:.0}% of the {} tasks retrying in the last {} (limit {:.0}%)",
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

/// Runs `--follow` until SIGINT, SIGTERM or SIGHUP, or the end of a stream.
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
    let cannot = |e: io::Error| CliError::usage(format!("cannot read {}: {e}", path.display()));
    let mut w = Window::new(args.window, args.max_bucket_share, args.min_tasks);
    let mut lines = Lines::default();
    let mut on_line = |l: Option<&[u8]>, a: &mut Analyzer| {
        let rec = l.and_then(|l| parse_line(l, &a.fields));
        let task = rec
            .as_ref()
            .map(|r| r.task.as_deref().unwrap_or("").to_owned());
        let t = rec.as_ref().and_then(|r| r.time_ns);
        let sleep = rec
            .as_ref()
            .and_then(|r| r.sleep_s)
            .map(|s| (s * 1e9).round() as i64);
        if let (Some(at), Some(task), Some(t)) = (a.stats.add(rec), task, t) {
            if let Some(storm) = w.retry(&task, t, at, sleep) {
                say(&storm, args);
            }
        }
    };
    // A file not there yet is waited for, as `tail -F` does.
    let mut absent = false;
    let mut tail = if is_stream(&path) {
        None
    } else {
        match Tail::open(&path) {
            Ok(t) => Some(t),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                absent = true;
                None
            }
            Err(e) => return Err(cannot(e)),
        }
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::failure(format!("cannot start the runtime: {e}")))?;
    rt.block_on(async {
        use tokio::signal::unix::{SignalKind, signal};
        let mut int =
            signal(SignalKind::interrupt()).map_err(|e| CliError::failure(e.to_string()))?;
        let mut term =
            signal(SignalKind::terminate()).map_err(|e| CliError::failure(e.to_string()))?;
        // SIGHUP (the terminal closed) ends the run as SIGTERM does.
        let mut hup = signal(SignalKind::hangup()).map_err(|e| CliError::failure(e.to_string()))?;
        if absent {
            eprintln!(
                "herdless analyze: {} does not exist yet; waiting for it",
                path.display()
            );
            while tail.is_none() {
                tokio::select! {
                    _ = int.recv() => return Ok(()),
                    _ = term.recv() => return Ok(()),
                    _ = hup.recv() => return Ok(()),
                    () = tokio::time::sleep(Duration::from_millis(100)) => {}
                }
                match Tail::open(&path) {
                    Ok(t) => tail = Some(t),
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(e) => return Err(cannot(e)),
                }
            }
        }
        let Some(tail) = tail.as_mut() else {
            // A stream: each chunk as it comes, to its end or a signal.
            let mut chunks = stream(path.clone());
            loop {
                tokio::select! {
                    _ = int.recv() => break,
                    _ = term.recv() => break,
                    _ = hup.recv() => break,
                    chunk = chunks.recv() => match chunk {
                        Some(Ok(c)) => lines.feed(&c, &mut |l| on_line(l, &mut a)),
                        Some(Err(e)) => return Err(cannot(e)),
                        None => break,
                    },
                }
            }
            return Ok(());
        };
        loop {
            tail.poll(&mut |change, bytes| {
                match change {
                    Change::None => {}
                    // The old content's partial line goes with it.
                    Change::Truncated => lines = Lines::default(),
                    // The old file's unterminated last line ends with it.
                    Change::Rotated => lines.finish(&mut |l| on_line(l, &mut a)),
                }
                lines.feed(bytes, &mut |l| on_line(l, &mut a));
            })
            .map_err(cannot)?;
            tokio::select! {
                _ = int.recv() => break,
                _ = term.recv() => break,
                _ = hup.recv() => break,
                () = tokio::time::sleep(Duration::from_millis(100)) => {}
            }
        }
        Ok::<_, CliError>(())
    })?;
    lines.finish(&mut |l| on_line(l, &mut a));
    finish(args, a)
}
