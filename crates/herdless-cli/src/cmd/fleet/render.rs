//! The fleet's report as text (the default output of `herdless fleet`).

use herdless_sim::metrics::BUCKET;

use super::report::FleetReport;

/// The report as text.
pub(crate) fn render_text(r: &FleetReport) -> String {
    let mut s = String::new();
    let pct = |x: f64| x * 100.0;
    if r.interrupted {
        s.push_str(&format!(
            "interrupted: partial report ({} of {} workers' calls were still running)\n",
            r.interrupted_workers, r.workers
        ));
    }
    for (i, u) in r.urls.iter().enumerate() {
        let label = if i == 0 { "url" } else { "" };
        s.push_str(&format!("{label:<12} {} ({} calls)\n", u.url, u.calls));
    }
    s.push_str(&format!("workers      {}\n", r.workers));
    s.push_str(&format!("succeeded    {}\n", r.succeeded));
    s.push_str(&format!("terminal     {}\n", r.terminal));
    s.push_str(&format!("exhausted    {}\n", r.exhausted));
    if r.interrupted {
        s.push_str(&format!("interrupted  {}\n", r.interrupted_workers));
    }
    s.push_str(&format!(
        "calls        {} ({} retries)\n",
        r.calls, r.retries
    ));
    s.push_str(&format!(
        "timeouts     {} attempts ended by --timeout\n",
        r.timed_out_attempts
    ));
    s.push_str(&format!(
        "per worker   {:.2} calls (max {})\n",
        r.calls_per_worker, r.max_calls_per_worker
    ));
    s.push_str(&format!("duration     {:.3} s\n", r.duration_s));
    if let Some(d) = r.drain_s {
        s.push_str(&format!("drained      {d:.3} s (last success)\n"));
    }
    s.push_str(&format!(
        "give-ups     terminal {}, max_attempts {}, max_elapsed {}, retry_budget {}\n",
        r.give_ups.terminal,
        r.give_ups.max_attempts,
        r.give_ups.max_elapsed,
        r.give_ups.retry_budget
    ));
    if let Some(t) = r.budget_tokens_left {
        s.push_str(&format!(
            "budget       {:?}: {} denials, {t:.1} tokens left\n",
            r.strategy.retry_budget, r.budget_denials
        ));
    }
    s.push_str(&format!("attempts/s   {:.1}\n", r.attempts_per_s));
    s.push_str(&format!(
        "peak 100 ms  {} attempts = {:.1}% of all attempts, {:.1}% of the fleet, at {:.3} s\n",
        r.peak_100ms.attempts,
        pct(r.peak_100ms.share_of_attempts),
        pct(r.peak_100ms.share_of_fleet),
        r.peak_100ms.start_s
    ));
    s.push_str(&format!(
        "peak retries {} retries = {:.1}% of all retries, {:.1}% of the fleet, at {:.3} s\n",
        r.peak_100ms_retries.attempts,
        pct(r.peak_100ms_retries.share_of_attempts),
        pct(r.peak_100ms_retries.share_of_fleet),
        r.peak_100ms_retries.start_s
    ));
    // At most 40 lines: merge 100 ms buckets when the run is long.
    let merge = r.histogram.len().div_ceil(40).max(1);
    let rows: Vec<(f64, u64)> = r
        .histogram
        .chunks(merge)
        .map(|c| (c[0].start_s, c.iter().map(|b| b.attempts).sum()))
        .collect();
    let top = rows.iter().map(|r| r.1).max().unwrap_or(0).max(1);
    s.push_str(&format!(
        "attempts per {} ms:\n",
        BUCKET.as_millis() * merge as u128
    ));
    for (start, n) in rows {
        let bar = "#".repeat(((n * 50).div_ceil(top)) as usize);
        s.push_str(&format!("{start:>8.1} s {n:>7} {bar}\n"));
    }
    s
}
