//! The status classifier: which HTTP statuses are worth another attempt.
//!
//! The sets are those of a shared device's transient and permanent answers,
//! and they **fail closed**:
//!
//! | status | verdict |
//! |---|---|
//! | below 400 | success (not an error at all) |
//! | 408, 425, 429, 500, 502, 503, 504 | retryable |
//! | 400, 401, 403, 404, 405, 501, 507 | terminal |
//! | any other status ≥ 400 | terminal (unknown: a novel error fails loudly instead of storming) |
//!
//! Both sets are configurable ([`StatusClassifier::retry`],
//! [`StatusClassifier::never_retry`]). A status is a plain `u16` so the
//! classifier needs no HTTP crate; every `u16` is accepted (values outside
//! 100..=999 are not HTTP statuses: ≥ 400 fails closed, below is success, as
//! for any other status).
//!
//! # Design
//!
//! A set is a 1024-bit bitmap ([`StatusSet`]): `Copy`, 128 bytes, a lookup is
//! a shift and a mask, and adding or removing a status can never fail or
//! allocate. The classifier is therefore `Copy` too and can be shared by every
//! worker of a fleet without an `Arc`.

use std::fmt;

/// What a status means for a retrier.
///
/// ```
/// use herdless::http::{StatusClass, StatusClassifier};
/// let c = StatusClassifier::default();
/// assert_eq!(c.classify(200), StatusClass::Success);
/// assert_eq!(c.classify(503), StatusClass::Retryable);
/// assert_eq!(c.classify(401), StatusClass::Terminal);
/// assert_eq!(c.classify(418), StatusClass::Unknown); // fails closed
/// assert!(!StatusClass::Unknown.is_retryable());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StatusClass {
    /// Below 400: not an error.
    Success,
    /// In the retryable set.
    Retryable,
    /// In the terminal set.
    Terminal,
    /// At least 400 and in neither set: treated as terminal (fail closed).
    Unknown,
}

impl StatusClass {
    /// Whether a retrier may try again.
    ///
    /// ```
    /// assert!(herdless::http::StatusClass::Retryable.is_retryable());
    /// ```
    pub const fn is_retryable(self) -> bool {
        matches!(self, StatusClass::Retryable)
    }

    /// Whether the status is an error (terminal, unknown or retryable).
    ///
    /// ```
    /// assert!(!herdless::http::StatusClass::Success.is_error());
    /// ```
    pub const fn is_error(self) -> bool {
        !matches!(self, StatusClass::Success)
    }
}

/// A set of status codes (any `u16` below 1024; larger values are never
/// members).
///
/// ```
/// use herdless::http::StatusSet;
/// let s = StatusSet::from_codes(&[429, 503]);
/// assert!(s.contains(503) && !s.contains(500));
/// assert_eq!(s.iter().collect::<Vec<_>>(), vec![429, 503]);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct StatusSet([u64; 16]);

impl StatusSet {
    /// The empty set.
    ///
    /// ```
    /// assert!(herdless::http::StatusSet::EMPTY.iter().next().is_none());
    /// ```
    pub const EMPTY: StatusSet = StatusSet([0; 16]);

    /// The set holding `codes` (codes of 1024 and above are ignored).
    ///
    /// ```
    /// assert!(herdless::http::StatusSet::from_codes(&[408]).contains(408));
    /// ```
    pub const fn from_codes(codes: &[u16]) -> Self {
        let mut set = Self::EMPTY;
        let mut i = 0;
        while i < codes.len() {
            set = set.with(codes[i]);
            i += 1;
        }
        set
    }

    /// This set plus `code` (unchanged when `code` ≥ 1024).
    ///
    /// ```
    /// assert!(herdless::http::StatusSet::EMPTY.with(500).contains(500));
    /// ```
    pub const fn with(mut self, code: u16) -> Self {
        if code < 1024 {
            self.0[(code / 64) as usize] |= 1 << (code % 64);
        }
        self
    }

    /// This set without `code`.
    ///
    /// ```
    /// assert!(!herdless::http::StatusSet::from_codes(&[500]).without(500).contains(500));
    /// ```
    pub const fn without(mut self, code: u16) -> Self {
        if code < 1024 {
            self.0[(code / 64) as usize] &= !(1 << (code % 64));
        }
        self
    }

    /// Whether `code` is a member.
    ///
    /// ```
    /// assert!(!herdless::http::StatusSet::EMPTY.contains(u16::MAX));
    /// ```
    pub const fn contains(&self, code: u16) -> bool {
        code < 1024 && self.0[(code / 64) as usize] & (1 << (code % 64)) != 0
    }

    /// The members, ascending.
    ///
    /// ```
    /// let s = herdless::http::StatusSet::from_codes(&[504, 408]);
    /// assert_eq!(s.iter().collect::<Vec<_>>(), vec![408, 504]);
    /// ```
    pub fn iter(&self) -> impl Iterator<Item = u16> + '_ {
        (0u16..1024).filter(move |c| self.contains(*c))
    }
}

impl fmt::Debug for StatusSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl FromIterator<u16> for StatusSet {
    fn from_iter<I: IntoIterator<Item = u16>>(iter: I) -> Self {
        iter.into_iter().fold(Self::EMPTY, StatusSet::with)
    }
}

/// Classifies HTTP statuses; see the [module documentation](self).
///
/// ```
/// use herdless::http::{StatusClass, StatusClassifier};
/// // A device that answers 409 while busy: retry it; never retry 503.
/// let c = StatusClassifier::default().retry(409).never_retry(503);
/// assert_eq!(c.classify(409), StatusClass::Retryable);
/// assert_eq!(c.classify(503), StatusClass::Terminal);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StatusClassifier {
    retryable: StatusSet,
    terminal: StatusSet,
}

impl Default for StatusClassifier {
    fn default() -> Self {
        Self::new()
    }
}

impl StatusClassifier {
    /// The retryable statuses: timeouts, rate limits and transient server errors.
    pub const RETRYABLE: StatusSet = StatusSet::from_codes(&[408, 425, 429, 500, 502, 503, 504]);
    /// The terminal statuses: errors that no retry can clear.
    pub const TERMINAL: StatusSet = StatusSet::from_codes(&[400, 401, 403, 404, 405, 501, 507]);

    /// The classifier with the default sets.
    ///
    /// ```
    /// let c = herdless::http::StatusClassifier::new();
    /// assert_eq!(c.retryable(), herdless::http::StatusClassifier::RETRYABLE);
    /// ```
    pub const fn new() -> Self {
        Self {
            retryable: Self::RETRYABLE,
            terminal: Self::TERMINAL,
        }
    }

    /// A classifier with explicit sets. A status in both is terminal.
    ///
    /// ```
    /// use herdless::http::{StatusClass, StatusClassifier, StatusSet};
    /// let c = StatusClassifier::with_sets(StatusSet::from_codes(&[503]), StatusSet::EMPTY);
    /// assert_eq!(c.classify(500), StatusClass::Unknown);
    /// ```
    pub const fn with_sets(retryable: StatusSet, terminal: StatusSet) -> Self {
        Self {
            retryable,
            terminal,
        }
    }

    /// Adds `code` to the retryable set (and removes it from the terminal set).
    ///
    /// ```
    /// let c = herdless::http::StatusClassifier::new().retry(404);
    /// assert!(c.classify(404).is_retryable());
    /// ```
    pub const fn retry(mut self, code: u16) -> Self {
        self.retryable = self.retryable.with(code);
        self.terminal = self.terminal.without(code);
        self
    }

    /// Adds `code` to the terminal set (and removes it from the retryable set).
    ///
    /// ```
    /// let c = herdless::http::StatusClassifier::new().never_retry(429);
    /// assert!(!c.classify(429).is_retryable());
    /// ```
    pub const fn never_retry(mut self, code: u16) -> Self {
        self.terminal = self.terminal.with(code);
        self.retryable = self.retryable.without(code);
        self
    }

    /// The retryable set.
    ///
    /// ```
    /// assert!(herdless::http::StatusClassifier::new().retryable().contains(429));
    /// ```
    pub const fn retryable(&self) -> StatusSet {
        self.retryable
    }

    /// The terminal set.
    ///
    /// ```
    /// assert!(herdless::http::StatusClassifier::new().terminal().contains(507));
    /// ```
    pub const fn terminal(&self) -> StatusSet {
        self.terminal
    }

    /// The verdict on `status`. Never panics, for every `u16`.
    ///
    /// ```
    /// use herdless::http::{StatusClass, StatusClassifier};
    /// assert_eq!(StatusClassifier::new().classify(304), StatusClass::Success);
    /// assert_eq!(StatusClassifier::new().classify(u16::MAX), StatusClass::Unknown);
    /// ```
    pub const fn classify(&self, status: u16) -> StatusClass {
        if status < 400 {
            StatusClass::Success
        } else if self.terminal.contains(status) {
            StatusClass::Terminal
        } else if self.retryable.contains(status) {
            StatusClass::Retryable
        } else {
            StatusClass::Unknown
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seed_sets_and_fail_closed() {
        let c = StatusClassifier::default();
        for s in [408, 425, 429, 500, 502, 503, 504] {
            assert_eq!(c.classify(s), StatusClass::Retryable, "{s}");
        }
        for s in [400, 401, 403, 404, 405, 501, 507] {
            assert_eq!(c.classify(s), StatusClass::Terminal, "{s}");
        }
        for s in 400..=u16::MAX {
            let class = c.classify(s);
            assert!(class.is_error());
            if !StatusClassifier::RETRYABLE.contains(s) {
                assert!(!class.is_retryable(), "{s} must fail closed");
            }
        }
        for s in 0..400 {
            assert_eq!(c.classify(s), StatusClass::Success);
        }
    }

    #[test]
    fn sets_are_configurable_and_terminal_wins() {
        let both = StatusSet::from_codes(&[500]);
        let c = StatusClassifier::with_sets(both, both);
        assert_eq!(c.classify(500), StatusClass::Terminal);
        let c = StatusClassifier::new()
            .retry(500)
            .never_retry(500)
            .retry(500);
        assert_eq!(c.classify(500), StatusClass::Retryable);
        let set: StatusSet = [1023, 1024, u16::MAX].into_iter().collect();
        assert_eq!(set.iter().collect::<Vec<_>>(), vec![1023]);
        assert_eq!(format!("{:?}", StatusSet::from_codes(&[429])), "{429}");
    }
}
