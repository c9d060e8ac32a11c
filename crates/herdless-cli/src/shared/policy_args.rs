//! The policy flags shared by every retrying subcommand, and their layering.
//!
//! A policy is resolved in layers, the last wins:
//!
//! 1. the library defaults (and the subcommand's default jitter: `exec` uses
//!    equal, fleet-facing subcommands full);
//! 2. the selected table of the policy file (`--policy NAME`, `--config PATH`,
//!    see [`config`]);
//! 3. `HERDLESS_*` environment variables (`HERDLESS_CAP=1m`, one per flag);
//! 4. command-line flags.
//!
//! Layers 3 and 4 are clap's own (`#[arg(env = ...)]`: a flag beats its variable,
//! and `--help` lists the variable next to the flag); [`PolicyArgs::resolve_layered`]
//! puts them over the file.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use herdless::{Jitter, Policy, PolicyError};

use crate::shared::config::{self, ConfigError, ConfigFile, FilePolicy};
use crate::shared::events_out::LogFormat;
use crate::shared::values::{parse_duration, parse_jitter, parse_seed};

/// Which flags were on the command line, before any `--`, alone (`--cap`)
/// or with their value (`--cap=1m`): read once from the arguments by
/// [`crate::cli`] and handed down in [`PolicyArgs::given`], so that a policy
/// error can name the layer that set the culprit.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FlagsGiven(Vec<String>);

impl FlagsGiven {
    /// The flags of `args` (the whole command line, program name first).
    pub(crate) fn from_args(args: &[OsString]) -> Self {
        FlagsGiven(
            args.iter()
                .skip(1)
                .take_while(|a| *a != "--")
                .filter_map(|a| a.to_str())
                .filter(|a| a.starts_with("--"))
                .map(|a| a.split_once('=').map_or(a, |(flag, _)| flag).to_owned())
                .collect(),
        )
    }

    /// Whether `flag` (`--cap`) was given.
    pub(crate) fn contains(&self, flag: &str) -> bool {
        self.0.iter().any(|f| f == flag)
    }
}

/// Retry policy flags.
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct PolicyArgs {
    /// Jitter mode: none, full, equal, decorrelated, decorrelated-window
    /// [default: full; exec: equal].
    #[arg(long, env = "HERDLESS_JITTER", value_parser = parse_jitter, value_name = "MODE")]
    pub(crate) jitter: Option<Jitter>,
    /// Base delay: the first retry's ceiling [default: 500ms].
    #[arg(long, env = "HERDLESS_BASE", value_parser = parse_duration, value_name = "DUR")]
    pub(crate) base: Option<Duration>,
    /// Growth factor of the ceiling per retry [default: 2].
    #[arg(long, env = "HERDLESS_MULTIPLIER", value_name = "X")]
    pub(crate) multiplier: Option<f64>,
    /// Cap on any single computed delay [default: 30s].
    #[arg(long, env = "HERDLESS_CAP", value_parser = parse_duration, value_name = "DUR")]
    pub(crate) cap: Option<Duration>,
    /// Maximum attempts, counting the first [default: 6].
    #[arg(long, env = "HERDLESS_MAX_ATTEMPTS", value_name = "N")]
    pub(crate) max_attempts: Option<u32>,
    /// Total time budget across attempts [default: 120s].
    #[arg(long, env = "HERDLESS_MAX_ELAPSED", value_parser = parse_duration, value_name = "DUR")]
    pub(crate) max_elapsed: Option<Duration>,
    /// Clamp on server-supplied delays (Retry-After) [default: 60s].
    #[arg(long, env = "HERDLESS_MAX_RETRY_AFTER", value_parser = parse_duration, value_name = "DUR")]
    pub(crate) max_retry_after: Option<Duration>,
    /// Seed for reproducible delays (default: OS entropy per retrier).
    #[arg(long, env = "HERDLESS_SEED", value_parser = parse_seed, value_name = "N")]
    pub(crate) seed: Option<u64>,
    /// Task id carried by every retry event.
    #[arg(long, env = "HERDLESS_TASK_ID", value_name = "ID")]
    pub(crate) task_id: Option<String>,
    /// Retry event format on stderr.
    #[arg(long, env = "HERDLESS_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub(crate) log_format: LogFormat,
    /// No retry events on stderr (results and errors are still printed).
    /// Without it, `RUST_LOG` filters them by level (e.g. `RUST_LOG=off`,
    /// `RUST_LOG=herdless=error`). HERDLESS_QUIET: true/false, yes/no,
    /// on/off, 1/0; empty is unset.
    #[arg(long, short = 'q', env = "HERDLESS_QUIET",
          value_parser = clap::builder::BoolishValueParser::new())]
    pub(crate) quiet: bool,
    /// Named policy from the policy file (default: its [policy.default], if any).
    #[arg(long, env = "HERDLESS_POLICY", value_name = "NAME")]
    pub(crate) policy: Option<String>,
    /// Policy file (`--help` names where it is looked for).
    #[arg(
        long,
        env = "HERDLESS_CONFIG",
        value_name = "PATH",
        help = "Policy file [default: ./herdless.toml, then <config dir>/herdless/herdless.toml]"
    )]
    pub(crate) config: Option<PathBuf>,
    /// The flags given on the command line (set by [`crate::cli`]; empty
    /// for flags built in code).
    #[arg(skip)]
    pub(crate) given: FlagsGiven,
}

impl PolicyArgs {
    /// The layered policy together with these flags completed by the layers
    /// (seed and task id may come from the policy file or the environment):
    /// what a retrying subcommand needs to start.
    ///
    /// # Errors
    ///
    /// As [`resolve_layered`](Self::resolve_layered).
    pub(crate) fn resolve_with_args(
        &self,
        default_jitter: Jitter,
    ) -> Result<(Policy, PolicyArgs), ConfigError> {
        let resolved = self.resolve_layered(default_jitter)?;
        Ok((resolved.policy, self.with_resolved(&resolved)))
    }

    /// These flags with the seed and task id that the layers resolved (a policy
    /// file may set them), for subcommands that read them from `PolicyArgs`.
    pub(crate) fn with_resolved(&self, resolved: &Resolved) -> PolicyArgs {
        PolicyArgs {
            seed: resolved.seed,
            task_id: resolved.task_id.clone(),
            ..self.clone()
        }
    }

    /// Resolves the full stack: library defaults (with `default_jitter`), the
    /// policy file's selected table, then `HERDLESS_*` variables and flags.
    ///
    /// # Errors
    ///
    /// The policy file cannot be found, read or parsed, the named policy does not
    /// exist, or the layered values do not make a valid policy; each error names
    /// the file, line and key (or the flag) responsible.
    pub(crate) fn resolve_layered(&self, default_jitter: Jitter) -> Result<Resolved, ConfigError> {
        let path = config::locate(self.config.as_deref())?;
        let file = path
            .as_deref()
            .map(ConfigFile::read)
            .transpose()
            .map_err(|mut e| {
                if self.config.is_none() && self.policy.is_none() {
                    // Found, not asked for: say why it was read at all.
                    e.message.push_str(
                        " (the policy file is read whenever it exists, even without --policy: \
                         fix it, or pass --config PATH to use another)",
                    );
                }
                e
            })?;
        let table = match (&self.policy, &file) {
            (Some(name), Some(f)) => Some(f.policy(name)?.clone()),
            (Some(name), None) => return Err(config::no_file_for(name)),
            (None, Some(f)) => f.policies.get(config::DEFAULT_POLICY).cloned(),
            (None, None) => None,
        };
        self.layer(default_jitter, file.map(|f| f.path), table)
    }

    /// Layers these flags over `table` (read from `file`) over the defaults.
    ///
    /// # Errors
    ///
    /// The layered values do not make a valid policy.
    pub(crate) fn layer(
        &self,
        default_jitter: Jitter,
        file: Option<PathBuf>,
        table: Option<FilePolicy>,
    ) -> Result<Resolved, ConfigError> {
        let t = table.clone().unwrap_or_default();
        let jitter = self
            .jitter
            .or(t.jitter.as_ref().map(|a| a.value))
            .unwrap_or(default_jitter);
        let mut b = Policy::builder().jitter(jitter);
        if let Some(v) = self.base.or(t.base.as_ref().map(|a| a.value)) {
            b = b.base(v);
        }
        if let Some(v) = self.multiplier.or(t.multiplier.as_ref().map(|a| a.value)) {
            b = b.multiplier(v);
        }
        if let Some(v) = self.cap.or(t.cap.as_ref().map(|a| a.value)) {
            b = b.cap(v);
        }
        if let Some(v) = self
            .max_attempts
            .or(t.max_attempts.as_ref().map(|a| a.value))
        {
            b = b.max_attempts(v);
        }
        if let Some(v) = self.max_elapsed.or(t.max_elapsed.as_ref().map(|a| a.value)) {
            b = b.max_elapsed(v);
        }
        let max_retry_after = self
            .max_retry_after
            .or(t.max_retry_after.as_ref().map(|a| a.value));
        if let Some(v) = max_retry_after {
            b = b.max_retry_after(v);
        }
        if let Some(v) = t.retry_after_spread.as_ref().map(|a| a.value) {
            b = b.retry_after_spread(v);
        }
        if let Some(v) = t.attempt_timeout.as_ref().map(|a| a.value) {
            b = b.attempt_timeout(v);
        }
        if let Some(v) = t.max_requeues.as_ref().map(|a| a.value) {
            b = b.max_requeues(v);
        }
        let policy = b
            .build()
            .map_err(|e| self.blame(e, file.as_ref(), table.as_ref()))?;
        Ok(Resolved {
            policy,
            name: table.as_ref().map(|t| t.name.clone()),
            file,
            jitter_declared: self.jitter.is_some() || t.jitter.is_some(),
            max_retry_after_declared: max_retry_after.is_some(),
            seed: self.seed.or(t.seed.as_ref().map(|a| a.value)),
            task_id: self
                .task_id
                .clone()
                .or(t.task_id.as_ref().map(|a| a.value.clone())),
            table: t,
        })
    }

    /// Points a policy error at the layer that introduced it: of the refused
    /// field and the field it conflicts with (a cap below the base), the one
    /// set by the higher layer (flag, then `HERDLESS_*` variable, then file,
    /// then default), naming where the other side came from too.
    fn blame(
        &self,
        e: PolicyError,
        file: Option<&PathBuf>,
        table: Option<&FilePolicy>,
    ) -> ConfigError {
        let key = e.field().as_str();
        let source = self.source_of(key, table);
        // The only rule across fields: the cap may not be below the base.
        let partner = (key == "cap").then(|| ("base", self.source_of("base", table)));
        let culprit = match &partner {
            Some((_, p)) if p.rank() > source.rank() => p,
            _ => &source,
        };
        if let (Source::File(_), Some(t)) = (culprit, table) {
            // Only the file (and defaults) took part: its line and key.
            let (key, line) = match (&source, &partner) {
                (Source::File(line), _) => (key, *line),
                (_, Some((k, Source::File(line)))) => (*k, *line),
                _ => (key, t.line),
            };
            return ConfigError {
                file: file.cloned(),
                line: Some(line),
                key: Some(format!("policy.{}.{key}", t.name)),
                message: e.to_string(),
            };
        }
        let at = |k: &str, s: &Source| s.describe(k, file, table);
        let message = match &partner {
            Some((pkey, psource)) if std::ptr::eq(culprit, psource) => format!(
                "{e} ({pkey} from {}; {key} from {})",
                at(pkey, psource),
                at(key, &source)
            ),
            Some((pkey, psource)) => format!(
                "{e} ({key} from {}; {pkey} from {})",
                at(key, &source),
                at(pkey, psource)
            ),
            None => format!("{e} (from {})", at(key, &source)),
        };
        ConfigError {
            file: None,
            line: None,
            key: None,
            message,
        }
    }

    /// Which layer set policy field `key`.
    fn source_of(&self, key: &str, table: Option<&FilePolicy>) -> Source {
        let set_here = match key {
            "base" => self.base.is_some(),
            "multiplier" => self.multiplier.is_some(),
            "cap" => self.cap.is_some(),
            "max_attempts" => self.max_attempts.is_some(),
            "max_elapsed" => self.max_elapsed.is_some(),
            "max_retry_after" => self.max_retry_after.is_some(),
            _ => false,
        };
        let flag = format!("--{}", key.replace('_', "-"));
        let var = format!("HERDLESS_{}", key.to_uppercase());
        if set_here {
            return if self.given.contains(&flag) {
                Source::Flag(flag)
            } else if std::env::var_os(&var).is_some() {
                Source::Env(var)
            } else {
                Source::FlagOrEnv(flag, var)
            };
        }
        match table.and_then(|t| t.line_of(key)) {
            Some(line) => Source::File(line),
            None => Source::Default,
        }
    }
}

/// Where a policy field's value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Source {
    Default,
    File(usize),
    Env(String),
    /// Set, but neither found on the command line nor in the environment
    /// (flags built in code).
    FlagOrEnv(String, String),
    Flag(String),
}

impl Source {
    fn rank(&self) -> u8 {
        match self {
            Source::Default => 0,
            Source::File(_) => 1,
            Source::Env(_) | Source::FlagOrEnv(..) => 2,
            Source::Flag(_) => 3,
        }
    }

    fn describe(&self, key: &str, file: Option<&PathBuf>, table: Option<&FilePolicy>) -> String {
        match self {
            Source::Default => "the default".into(),
            Source::File(line) => {
                let path = file.map(|p| p.display().to_string()).unwrap_or_default();
                let name = table.map(|t| t.name.as_str()).unwrap_or_default();
                format!("{path}:{line} (policy.{name}.{key})")
            }
            Source::Env(var) => var.clone(),
            Source::FlagOrEnv(flag, var) => format!("{flag} or {var}"),
            Source::Flag(flag) => flag.clone(),
        }
    }
}

/// A policy resolved from defaults, file, environment and flags, with what the
/// file declared beside it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Resolved {
    /// The validated policy.
    pub(crate) policy: Policy,
    /// The policy table's name, when one was used.
    pub(crate) name: Option<String>,
    /// The policy file, when one was read.
    pub(crate) file: Option<PathBuf>,
    /// Whether the jitter mode was set (file, env or flag) rather than defaulted.
    pub(crate) jitter_declared: bool,
    /// Whether `max_retry_after` was set rather than defaulted.
    pub(crate) max_retry_after_declared: bool,
    /// The seed (file, env or flag).
    pub(crate) seed: Option<u64>,
    /// The task id (file, env or flag).
    pub(crate) task_id: Option<String>,
    /// The file's table (empty when none): declared facts and `exec` keys.
    pub(crate) table: FilePolicy,
}

#[cfg(test)]
mod tests;
