//! Process limits: open file descriptors.
//!
//! Every worker of `herdless fleet` holds a socket, and so does every
//! connection the stub serves, so 10,000 workers need more than the usual soft
//! limit of 1,024 descriptors. The soft limit is raised to the hard limit at
//! start (no privilege needed); when the hard limit is still too low, `fleet`
//! warns and the excess connections fail as retryable errors (counted, never
//! lost). Raise the hard limit with `ulimit -Hn` / `LimitNOFILE=` if so.
//!
//! Running out of descriptors (`EMFILE`, `ENFILE`: "too many open files") is a
//! local, transient shortage, so it is retryable wherever herdless classifies
//! an error: the HTTP classifier's transport errors, and a child `exec` could
//! not start ([`is_out_of_descriptors`]).
//!
//! At very small limits the tokio runtime itself cannot start: its signal
//! driver needs a socket pair, and tokio panics when it cannot create one.
//! [`build_runtime`] turns that panic into an error, so every subcommand fails
//! with one clear line instead of a panic (exit 101).

use std::io;
use std::panic::{self, AssertUnwindSafe};

use tokio::runtime::{Builder, Runtime};

/// Raises the soft `RLIMIT_NOFILE` to the hard limit; returns the soft limit in
/// force afterwards, or `None` where it cannot be read.
pub(crate) fn raise_nofile_limit() -> Option<u64> {
    rlimit::increase_nofile_limit(u64::MAX).ok()
}

/// The soft open-file limit in force, where it can be read.
pub(crate) fn nofile_limit() -> Option<u64> {
    rlimit::getrlimit(rlimit::Resource::NOFILE)
        .ok()
        .map(|(soft, _)| soft)
}

/// Whether `error` is `EMFILE` (this process is out of file descriptors) or
/// `ENFILE` (the system is).
pub(crate) fn is_out_of_descriptors(error: &io::Error) -> bool {
    use nix::errno::Errno;
    error
        .raw_os_error()
        .is_some_and(|c| c == Errno::EMFILE as i32 || c == Errno::ENFILE as i32)
}

/// Builds the runtime `builder` describes; a panic while building it (tokio
/// panics when its signal driver cannot get descriptors) becomes an error
/// naming what failed and the open-file limit.
///
/// Stub's `run` uses it as
/// `limits::build_runtime(tokio::runtime::Builder::new_multi_thread().enable_all())`.
///
/// # Errors
///
/// The runtime could not be built.
pub(crate) fn build_runtime(builder: &mut Builder) -> io::Result<Runtime> {
    // Silence the default hook for the duration: the panic becomes an error.
    let hook = panic::take_hook();
    panic::set_hook(Box::new(|_| {}));
    let built = panic::catch_unwind(AssertUnwindSafe(|| builder.build()));
    panic::set_hook(hook);
    let error = match built {
        Ok(Ok(rt)) => return Ok(rt),
        Ok(Err(e)) => e,
        Err(payload) => {
            let text = payload
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| payload.downcast_ref::<&str>().copied())
                .unwrap_or("the runtime panicked");
            from_panic(text)
        }
    };
    Err(with_limit(error))
}

/// `failed to create UnixStream: Os { code: 24, kind: …, message: "…" }` →
/// `failed to create UnixStream: Too many open files (os error 24)`.
fn from_panic(text: &str) -> io::Error {
    const OS: &str = "Os { code: ";
    let parsed = text.find(OS).and_then(|at| {
        let rest = &text[at + OS.len()..];
        let code: i32 = rest[..rest.find(',')?].parse().ok()?;
        Some((text[..at].trim_end_matches([':', ' ']), code))
    });
    match parsed {
        Some((what, code)) => {
            let os = io::Error::from_raw_os_error(code);
            io::Error::new(
                os.kind(),
                OsError {
                    what: what.into(),
                    os,
                },
            )
        }
        None => io::Error::other(text.to_owned()),
    }
}

/// An OS error with what was being done; keeps the raw code reachable.
#[derive(Debug)]
struct OsError {
    what: String,
    os: io::Error,
}

impl std::fmt::Display for OsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.what.is_empty() {
            write!(f, "{}", self.os)
        } else {
            write!(f, "{}: {}", self.what, self.os)
        }
    }
}

impl std::error::Error for OsError {}

/// Adds the open-file limit to an out-of-descriptors error.
fn with_limit(error: io::Error) -> io::Error {
    let out = is_out_of_descriptors(&error)
        || error
            .get_ref()
            .and_then(|e| e.downcast_ref::<OsError>())
            .is_some_and(|e| is_out_of_descriptors(&e.os));
    match nofile_limit() {
        Some(limit) if out => io::Error::new(
            error.kind(),
            format!("{error} (the open-file limit, ulimit -n, is {limit})"),
        ),
        _ => error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runtime_panic_becomes_an_os_error_message() {
        let e = from_panic(
            "failed to create UnixStream: Os { code: 24, kind: Uncategorized, message: \"Too many open files\" }",
        );
        let text = with_limit(e).to_string();
        assert!(
            text.starts_with("failed to create UnixStream: Too many open files (os error 24)"),
            "{text}"
        );
        assert!(text.contains("ulimit -n"), "{text}");
        assert_eq!(from_panic("boom").to_string(), "boom");
    }
}

/// The examples that were this file's doc tests (its items are private to
/// the crate, where doc tests cannot reach).
#[cfg(test)]
mod examples {
    #[allow(unused_imports)]
    use super::*;

    #[test]
    fn is_out_of_descriptors_example() -> Result<(), Box<dyn std::error::Error>> {
        use crate::shared::descriptors::is_out_of_descriptors;
        assert!(is_out_of_descriptors(&std::io::Error::from_raw_os_error(
            24
        )));
        assert!(!is_out_of_descriptors(&std::io::Error::from(
            std::io::ErrorKind::NotFound
        )));
        Ok(())
    }

    #[test]
    fn build_runtime_example() -> Result<(), Box<dyn std::error::Error>> {
        let rt = crate::shared::descriptors::build_runtime(
            tokio::runtime::Builder::new_current_thread().enable_all(),
        )?;
        assert_eq!(rt.block_on(async { 1 + 1 }), 2);
        Ok(())
    }
}
