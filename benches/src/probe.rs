//! What the server bench's probe (`benches/server.rs`, `probe` and
//! `hold-h2`) reads and reports, apart from its sockets, so that it is
//! tested (`cargo test -p herdless-benches`): its flags' ranges, how an
//! answer is counted, and the line it prints.

/// `value` of the flag `name` if it is within `[0.001, max]` (a rate, a
/// duration, a count): a clear error otherwise (zero, negative, not a
/// number, infinite, or past `max`).
///
/// ```
/// use herdless_benches::probe::in_range;
/// assert_eq!(in_range("--rate", 5000.0, 1e7), Ok(5000.0));
/// assert!(in_range("--rate", 0.0, 1e7).is_err());
/// ```
pub fn in_range(name: &str, value: f64, max: f64) -> Result<f64, String> {
    if (1e-3..=max).contains(&value) {
        Ok(value)
    } else {
        Err(format!("{name}: {value} is outside [0.001, {max}]"))
    }
}

/// How an answer counts: served (`200`), refused (`503` or `429`: the
/// service's or its limiter's refusal) or failed (no answer, or any other
/// status).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// `200`.
    Served,
    /// `503` or `429`.
    Refused,
    /// No answer, or another status.
    Failed,
}

/// Counts an answer by its status (`None`: no answer).
///
/// ```
/// use herdless_benches::probe::{Answer, classify};
/// assert_eq!(classify(Some(429)), Answer::Refused);
/// assert_eq!(classify(Some(404)), Answer::Failed);
/// ```
pub fn classify(status: Option<u16>) -> Answer {
    match status {
        Some(200) => Answer::Served,
        Some(503 | 429) => Answer::Refused,
        _ => Answer::Failed,
    }
}

/// The value at quantile `q` of `sorted` (ascending), 0 when it is empty.
///
/// ```
/// assert_eq!(herdless_benches::probe::percentile(&[], 0.99), 0);
/// ```
pub fn percentile(sorted: &[u64], q: f64) -> u64 {
    sorted
        .get(((sorted.len() as f64 * q) as usize).min(sorted.len().saturating_sub(1)))
        .copied()
        .unwrap_or(0)
}

/// What one URL answered the probe.
#[derive(Debug, Default)]
pub struct Tally {
    /// Latencies of the served requests, in microseconds.
    pub served: Vec<u64>,
    /// Refusals (`503`, `429`).
    pub refused: u64,
    /// No answer, or another status.
    pub failed: u64,
}

impl Tally {
    /// Counts one answer (`us`: its latency).
    pub fn count(&mut self, status: Option<u16>, us: u64) {
        match classify(status) {
            Answer::Served => self.served.push(us),
            Answer::Refused => self.refused += 1,
            Answer::Failed => self.failed += 1,
        }
    }

    /// The probe's line: the counts, the served latency's percentiles, then
    /// `lag` (how late the requests went out) and the URL, if any.
    pub fn line(mut self, lag: &str, url: &str) -> String {
        self.served.sort_unstable();
        let s = &self.served;
        let line = format!(
            "probe served {} refused {} failed {} p50_us {} p99_us {} p999_us {} {lag}",
            s.len(),
            self.refused,
            self.failed,
            percentile(s, 0.50),
            percentile(s, 0.99),
            percentile(s, 0.999)
        );
        if url.is_empty() {
            line
        } else {
            format!("{line} url {url}")
        }
    }
}

/// The lag fields of the probe's line, from how late each request went out
/// (microseconds, any order): its p99 and its worst.
pub fn lag_fields(lags: &mut [u64]) -> String {
    lags.sort_unstable();
    format!(
        "lag_p99_us {} lag_max_us {}",
        percentile(lags, 0.99),
        lags.last().copied().unwrap_or(0)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flag_outside_its_range_is_an_error_not_a_hang_or_a_silent_zero() {
        for bad in [0.0, -100.0, f64::NAN, f64::INFINITY, 1e12, 5e-4] {
            let err = in_range("--rate", bad, 1e7).unwrap_err();
            assert!(err.starts_with("--rate: "), "{err}");
        }
        assert_eq!(in_range("--conns", 1e-3, 10.0), Ok(1e-3));
        assert_eq!(in_range("--conns", 10.0, 10.0), Ok(10.0));
    }

    #[test]
    fn refusals_and_failures_are_counted_apart() {
        let mut t = Tally::default();
        for (status, us) in [
            (Some(200), 7),
            (Some(503), 1),
            (Some(429), 1),
            (Some(404), 1),
            (Some(500), 1),
            (None, 0),
            (Some(200), 3),
        ] {
            t.count(status, us);
        }
        assert_eq!((t.served.len(), t.refused, t.failed), (2, 2, 3));
        let line = t.line("lag_p99_us 1 lag_max_us 2", "http://h/");
        assert_eq!(
            line,
            "probe served 2 refused 2 failed 3 p50_us 7 p99_us 7 p999_us 7 \
             lag_p99_us 1 lag_max_us 2 url http://h/"
        );
    }

    #[test]
    fn percentiles_and_lag_are_read_from_the_sorted_values() {
        let v: Vec<u64> = (1..=1000).collect();
        assert_eq!(percentile(&v, 0.5), 501);
        assert_eq!(percentile(&v, 0.99), 991);
        assert_eq!(percentile(&v, 0.999), 1000);
        let mut lags = vec![5, 900, 1, 3];
        assert_eq!(lag_fields(&mut lags), "lag_p99_us 900 lag_max_us 900");
        assert_eq!(lag_fields(&mut []), "lag_p99_us 0 lag_max_us 0");
    }
}
