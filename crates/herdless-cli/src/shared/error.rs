//! One error type for every subcommand: a message for stderr and an exit code.
//!
//! A subcommand's `run` returns [`CliResult`]: `Ok(code)` when it ran to an
//! outcome (0 on success, or the outcome's documented code: 3 terminal, 4
//! exhausted, `exec`'s child status…), `Err(CliError)` when it could not (bad
//! input, a port it cannot bind, a stdout it cannot write). [`cli::run`]
//! prints the error once, as `herdless <subcommand>: <message>`, and exits with
//! its code; no subcommand prints its own usage errors.
//!
//! [`cli::run`]: crate::cli::run

use std::fmt;

use crate::shared::exit;

/// What a subcommand returns: its exit code, or why it could not run.
pub(crate) type CliResult = Result<i32, CliError>;

/// Why a subcommand could not run: the message and the exit code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CliError {
    code: i32,
    message: String,
}

impl CliError {
    /// An error with an explicit exit code.
    pub(crate) fn new(code: i32, message: impl Into<String>) -> Self {
        CliError {
            code,
            message: message.into(),
        }
    }

    /// Bad command-line input or configuration: exit 2.
    pub(crate) fn usage(message: impl Into<String>) -> Self {
        Self::new(exit::USAGE, message)
    }

    /// A failure outside the retry outcome (runtime, port, stdout): exit 1.
    pub(crate) fn failure(message: impl Into<String>) -> Self {
        Self::new(exit::FAILURE, message)
    }

    /// The exit code.
    pub(crate) fn code(&self) -> i32 {
        self.code
    }

    /// The message (without the `herdless <subcommand>:` prefix).
    pub(crate) fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CliError {}

/// The examples that were this file's doc tests (its items are private to
/// the crate, where doc tests cannot reach).
#[cfg(test)]
mod examples {
    #[allow(unused_imports)]
    use super::*;

    #[test]
    fn clierror_example() -> Result<(), Box<dyn std::error::Error>> {
        use crate::shared::error::CliError;
        let e = CliError::usage("--workers must be at least 1");
        assert_eq!(e.code(), 2);
        assert_eq!(e.to_string(), "--workers must be at least 1");
        Ok(())
    }

    #[test]
    fn new_example() -> Result<(), Box<dyn std::error::Error>> {
        let e = crate::shared::error::CliError::new(125, "bad policy file");
        assert_eq!(e.code(), 125);
        Ok(())
    }

    #[test]
    fn usage_example() -> Result<(), Box<dyn std::error::Error>> {
        assert_eq!(crate::shared::error::CliError::usage("x").code(), 2);
        Ok(())
    }

    #[test]
    fn failure_example() -> Result<(), Box<dyn std::error::Error>> {
        assert_eq!(crate::shared::error::CliError::failure("x").code(), 1);
        Ok(())
    }

    #[test]
    fn code_example() -> Result<(), Box<dyn std::error::Error>> {
        assert_eq!(crate::shared::error::CliError::failure("x").code(), 1);
        Ok(())
    }

    #[test]
    fn message_example() -> Result<(), Box<dyn std::error::Error>> {
        assert_eq!(
            crate::shared::error::CliError::failure("no port").message(),
            "no port"
        );
        Ok(())
    }
}
