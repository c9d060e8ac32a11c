//! Writing to stdout without panicking: a closed pipe (`herdless simulate |
//! head -1`) ends the command quietly, any other write error (a full disk,
//! `> /dev/full`) is one line on stderr; both exit 1. `print!` would panic on
//! either.

use std::io::{self, Write};

use crate::shared::error::CliError;

/// Writes `text` to stdout and flushes it.
///
/// # Errors
///
/// A quiet [`CliError`] (empty message, exit 1) when the reader is gone, a
/// [`CliError::failure`] naming the cause for any other write error.
pub(crate) fn print(text: &str) -> Result<(), CliError> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| write_error(&e))
}

/// The error for a failed write to stdout.
pub(crate) fn write_error(e: &io::Error) -> CliError {
    if e.kind() == io::ErrorKind::BrokenPipe {
        CliError::failure("")
    } else {
        CliError::failure(format!("cannot write to stdout: {e}"))
    }
}

/// The examples that were this file's doc tests (its items are private to
/// the crate, where doc tests cannot reach).
#[cfg(test)]
mod examples {
    #[allow(unused_imports)]
    use super::*;

    #[test]
    fn print_example() -> Result<(), Box<dyn std::error::Error>> {
        crate::shared::output::print("")?;
        Ok(())
    }

    #[test]
    fn write_error_example() -> Result<(), Box<dyn std::error::Error>> {
        use std::io;
        let closed =
            crate::shared::output::write_error(&io::Error::from(io::ErrorKind::BrokenPipe));
        assert_eq!((closed.code(), closed.message()), (1, ""));
        let full = crate::shared::output::write_error(&io::Error::from_raw_os_error(28));
        assert!(full.message().starts_with("cannot write to stdout"));
        Ok(())
    }
}
