//! The policy flags shared by every retrying subcommand.
//!
//! Every field is optional so that values can be layered: a policy file, then
//! `HERDLESS_*` environment variables, then these flags (the last wins). A
//! subcommand passes its own default jitter (`exec` uses equal, fleet-facing
//! subcommands full).

use std::time::Duration;

use clap::{Args, ValueEnum};
use herdless::{Jitter, Policy, PolicyError};

/// A duration in human form: `500ms`, `2s`, `1m`, `1h 30m`; a bare number is seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    if t.is_empty() {
        return Err("empty duration".into());
    }
    if let Ok(secs) = t.parse::<f64>() {
        return Duration::try_from_secs_f64(secs)
            .map_err(|_| format!("{t:?} is not a non-negative number of seconds within range"));
    }
    humantime::parse_duration(t).map_err(|e| format!("{t:?}: {e} (examples: 500ms, 2s, 1m)"))
}

/// Parses a jitter mode name for clap.
pub fn parse_jitter(s: &str) -> Result<Jitter, String> {
    s.parse::<Jitter>().map_err(|e| e.to_string())
}

/// How retry events are written to stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum LogFormat {
    /// One human-readable line per event.
    #[default]
    Text,
    /// One JSON object per line, with the key `event`.
    Json,
}

/// Retry policy flags.
#[derive(Debug, Clone, Default, Args)]
pub struct PolicyArgs {
    /// Jitter mode: none, full, equal, decorrelated, decorrelated-window.
    #[arg(long, value_parser = parse_jitter, value_name = "MODE")]
    pub jitter: Option<Jitter>,
    /// Base delay: the first retry's ceiling [default: 500ms].
    #[arg(long, value_parser = parse_duration, value_name = "DUR")]
    pub base: Option<Duration>,
    /// Growth factor of the ceiling per retry [default: 2].
    #[arg(long, value_name = "X")]
    pub multiplier: Option<f64>,
    /// Cap on any single computed delay [default: 30s].
    #[arg(long, value_parser = parse_duration, value_name = "DUR")]
    pub cap: Option<Duration>,
    /// Maximum attempts, counting the first [default: 6].
    #[arg(long, value_name = "N")]
    pub max_attempts: Option<u32>,
    /// Total time budget across attempts [default: 120s].
    #[arg(long, value_parser = parse_duration, value_name = "DUR")]
    pub max_elapsed: Option<Duration>,
    /// Clamp on server-supplied delays (Retry-After) [default: 60s].
    #[arg(long, value_parser = parse_duration, value_name = "DUR")]
    pub max_retry_after: Option<Duration>,
    /// Seed for reproducible delays (default: OS entropy per retrier).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Task id carried by every retry event.
    #[arg(long, value_name = "ID")]
    pub task_id: Option<String>,
    /// Retry event format on stderr.
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

impl PolicyArgs {
    /// Builds the policy from the flags over the library defaults, with
    /// `default_jitter` when `--jitter` is absent.
    pub fn resolve(&self, default_jitter: Jitter) -> Result<Policy, PolicyError> {
        let mut b = Policy::builder().jitter(self.jitter.unwrap_or(default_jitter));
        if let Some(v) = self.base {
            b = b.base(v);
        }
        if let Some(v) = self.multiplier {
            b = b.multiplier(v);
        }
        if let Some(v) = self.cap {
            b = b.cap(v);
        }
        if let Some(v) = self.max_attempts {
            b = b.max_attempts(v);
        }
        if let Some(v) = self.max_elapsed {
            b = b.max_elapsed(v);
        }
        if let Some(v) = self.max_retry_after {
            b = b.max_retry_after(v);
        }
        b.build()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_in_human_form() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert!(parse_duration("-1").is_err());
        assert!(parse_duration("NaN").is_err());
        assert!(parse_duration("1e400").is_err());
        assert!(parse_duration("soon").is_err());
    }

    #[test]
    fn flags_override_defaults_and_errors_name_the_field() {
        let args = PolicyArgs {
            cap: Some(Duration::from_secs(5)),
            ..Default::default()
        };
        let p = args.resolve(Jitter::Equal).unwrap();
        assert_eq!(p.cap(), Duration::from_secs(5));
        assert_eq!(p.jitter(), Jitter::Equal);
        let bad = PolicyArgs {
            multiplier: Some(0.5),
            ..Default::default()
        };
        assert!(bad
            .resolve(Jitter::Full)
            .unwrap_err()
            .to_string()
            .contains("multiplier"));
    }
}
