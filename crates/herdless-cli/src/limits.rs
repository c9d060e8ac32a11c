//! Process limits a fleet needs: open file descriptors.
//!
//! Every worker of `herdless fleet` holds a socket, and so does every
//! connection the stub serves, so 10,000 workers need more than the usual soft
//! limit of 1,024 descriptors. The soft limit is raised to the hard limit at
//! start (no privilege needed); when the hard limit is still too low, `fleet`
//! warns and the excess connections fail as retryable errors (counted, never
//! lost). Raise the hard limit with `ulimit -Hn` / `LimitNOFILE=` if so.

/// Raises the soft `RLIMIT_NOFILE` to the hard limit; returns the soft limit in
/// force afterwards, or `None` where it cannot be read.
pub fn raise_nofile_limit() -> Option<u64> {
    rlimit::increase_nofile_limit(u64::MAX).ok()
}
