//! The status-code classifier: which gRPC codes are worth another attempt.
//!
//! It follows the gRPC retry design (proposal A6): a call is retried only on
//! the codes a service configures as retryable, and nothing else. The default
//! set is the one code every gRPC client library treats as transient:
//!
//! | code | verdict |
//! |---|---|
//! | 0 `OK` | success (not an error at all) |
//! | 14 `UNAVAILABLE` | retryable |
//! | 1 to 16, except 14 | terminal (configurable: [`CodeClassifier::retry`]) |
//! | any other number (negative, 17 and above) | unknown: terminal (fail closed) |
//!
//! `RESOURCE_EXHAUSTED` (8) is the usual extra code for a server that sheds
//! load with it; `DEADLINE_EXCEEDED` (4) and `ABORTED` (10) are retryable only
//! when the method is idempotent, so none of them is in the default set.
//!
//! A code is a plain `i32` (what `tonic::Code as i32` and the `grpc-status`
//! header carry), so the classifier needs no gRPC crate. A [`CodeSet`] is a
//! 32-bit mask: `Copy`, 4 bytes, a lookup is a shift and a mask, and adding or
//! removing a code never fails or allocates.

use std::fmt;

/// The canonical names of the codes 0 to 16, indexed by code.
const NAMES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

/// The canonical name of a gRPC status code, or `None` for a number that is
/// not one (negative, 17 and above).
///
/// ```
/// use herdless::grpc::code_name;
/// assert_eq!(code_name(14), Some("UNAVAILABLE"));
/// assert_eq!(code_name(17), None);
/// assert_eq!(code_name(-1), None);
/// ```
pub fn code_name(code: i32) -> Option<&'static str> {
    usize::try_from(code)
        .ok()
        .and_then(|i| NAMES.get(i).copied())
}

/// What a status code means for a retrier.
///
/// ```
/// use herdless::grpc::{CodeClass, CodeClassifier};
/// let c = CodeClassifier::default();
/// assert_eq!(c.classify(0), CodeClass::Ok);
/// assert_eq!(c.classify(14), CodeClass::Retryable);
/// assert_eq!(c.classify(8), CodeClass::Terminal);
/// assert_eq!(c.classify(99), CodeClass::Unknown); // fails closed
/// assert!(!CodeClass::Unknown.is_retryable());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CodeClass {
    /// `OK` (0): not an error.
    Ok,
    /// In the retryable set.
    Retryable,
    /// A gRPC code (1 to 16) outside the retryable set.
    Terminal,
    /// Not a gRPC code: treated as terminal (fail closed).
    Unknown,
}

impl CodeClass {
    /// Whether a retrier may try again.
    ///
    /// ```
    /// assert!(herdless::grpc::CodeClass::Retryable.is_retryable());
    /// ```
    pub const fn is_retryable(self) -> bool {
        matches!(self, CodeClass::Retryable)
    }
}

/// A set of status codes 0 to 31 (other numbers are never members).
///
/// ```
/// use herdless::grpc::CodeSet;
/// let s = CodeSet::from_codes(&[14, 8]);
/// assert!(s.contains(8) && !s.contains(4));
/// assert_eq!(s.iter().collect::<Vec<_>>(), vec![8, 14]);
/// assert_eq!(format!("{s:?}"), "{RESOURCE_EXHAUSTED, UNAVAILABLE}");
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CodeSet(u32);

impl CodeSet {
    /// The empty set.
    ///
    /// ```
    /// assert!(herdless::grpc::CodeSet::EMPTY.iter().next().is_none());
    /// ```
    pub const EMPTY: CodeSet = CodeSet(0);

    /// The set holding `codes` (numbers outside 0 to 31 are ignored).
    ///
    /// ```
    /// assert!(herdless::grpc::CodeSet::from_codes(&[14]).contains(14));
    /// ```
    pub const fn from_codes(codes: &[i32]) -> Self {
        let mut set = Self::EMPTY;
        let mut i = 0;
        while i < codes.len() {
            set = set.with(codes[i]);
            i += 1;
        }
        set
    }

    /// This set plus `code` (unchanged when `code` is outside 0 to 31).
    ///
    /// ```
    /// assert!(herdless::grpc::CodeSet::EMPTY.with(8).contains(8));
    /// ```
    pub const fn with(self, code: i32) -> Self {
        if 0 <= code && code < 32 {
            CodeSet(self.0 | 1 << code)
        } else {
            self
        }
    }

    /// This set without `code`.
    ///
    /// ```
    /// assert!(!herdless::grpc::CodeSet::from_codes(&[14]).without(14).contains(14));
    /// ```
    pub const fn without(self, code: i32) -> Self {
        if 0 <= code && code < 32 {
            CodeSet(self.0 & !(1 << code))
        } else {
            self
        }
    }

    /// Whether `code` is a member.
    ///
    /// ```
    /// assert!(!herdless::grpc::CodeSet::from_codes(&[14]).contains(i32::MIN));
    /// ```
    pub const fn contains(&self, code: i32) -> bool {
        0 <= code && code < 32 && self.0 & (1 << code) != 0
    }

    /// The members, ascending.
    ///
    /// ```
    /// let s = herdless::grpc::CodeSet::from_codes(&[14, 4]);
    /// assert_eq!(s.iter().collect::<Vec<_>>(), vec![4, 14]);
    /// ```
    pub fn iter(&self) -> impl Iterator<Item = i32> + '_ {
        (0..32).filter(move |c| self.contains(*c))
    }
}

impl fmt::Debug for CodeSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        struct Code(i32);
        impl fmt::Debug for Code {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match code_name(self.0) {
                    Some(name) => f.write_str(name),
                    None => write!(f, "{}", self.0),
                }
            }
        }
        f.debug_set().entries(self.iter().map(Code)).finish()
    }
}

impl FromIterator<i32> for CodeSet {
    fn from_iter<I: IntoIterator<Item = i32>>(iter: I) -> Self {
        iter.into_iter().fold(Self::EMPTY, CodeSet::with)
    }
}

/// Classifies gRPC status codes; see the [module documentation](self).
///
/// ```
/// use herdless::grpc::{CodeClass, CodeClassifier};
/// // A server that sheds load with RESOURCE_EXHAUSTED: retry it too.
/// let c = CodeClassifier::new().retry(8);
/// assert_eq!(c.classify(8), CodeClass::Retryable);
/// assert_eq!(c.classify(14), CodeClass::Retryable);
/// assert_eq!(c.classify(13), CodeClass::Terminal);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CodeClassifier {
    retryable: CodeSet,
}

impl Default for CodeClassifier {
    fn default() -> Self {
        Self::new()
    }
}

impl CodeClassifier {
    /// The default retryable set: `UNAVAILABLE` (14) only.
    pub const RETRYABLE: CodeSet = CodeSet::from_codes(&[14]);

    /// The classifier with the default set.
    ///
    /// ```
    /// use herdless::grpc::CodeClassifier;
    /// assert_eq!(CodeClassifier::new().retryable(), CodeClassifier::RETRYABLE);
    /// ```
    pub const fn new() -> Self {
        Self::with_set(Self::RETRYABLE)
    }

    /// A classifier retrying exactly `retryable` (`OK` is a success whatever
    /// the set says).
    ///
    /// ```
    /// use herdless::grpc::{CodeClass, CodeClassifier, CodeSet};
    /// let c = CodeClassifier::with_set(CodeSet::from_codes(&[8, 14]));
    /// assert_eq!(c.classify(8), CodeClass::Retryable);
    /// assert_eq!(c.classify(0), CodeClass::Ok);
    /// ```
    pub const fn with_set(retryable: CodeSet) -> Self {
        Self { retryable }
    }

    /// Adds `code` to the retryable set (numbers outside 0 to 31 are ignored).
    ///
    /// ```
    /// assert!(herdless::grpc::CodeClassifier::new().retry(8).classify(8).is_retryable());
    /// ```
    pub const fn retry(self, code: i32) -> Self {
        Self::with_set(self.retryable.with(code))
    }

    /// Removes `code` from the retryable set.
    ///
    /// ```
    /// assert!(!herdless::grpc::CodeClassifier::new().never_retry(14).classify(14).is_retryable());
    /// ```
    pub const fn never_retry(self, code: i32) -> Self {
        Self::with_set(self.retryable.without(code))
    }

    /// The retryable set.
    ///
    /// ```
    /// assert!(herdless::grpc::CodeClassifier::new().retryable().contains(14));
    /// ```
    pub const fn retryable(&self) -> CodeSet {
        self.retryable
    }

    /// The verdict on `code`. Never panics, for every `i32`.
    ///
    /// ```
    /// use herdless::grpc::{CodeClass, CodeClassifier};
    /// assert_eq!(CodeClassifier::new().classify(16), CodeClass::Terminal);
    /// assert_eq!(CodeClassifier::new().classify(-14), CodeClass::Unknown);
    /// ```
    pub const fn classify(&self, code: i32) -> CodeClass {
        if code == 0 {
            CodeClass::Ok
        } else if self.retryable.contains(code) {
            CodeClass::Retryable
        } else if 0 < code && code < NAMES.len() as i32 {
            CodeClass::Terminal
        } else {
            CodeClass::Unknown
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_default_set_and_fail_closed() {
        let c = CodeClassifier::default();
        assert_eq!(c.classify(0), CodeClass::Ok);
        assert_eq!(c.classify(14), CodeClass::Retryable);
        for code in (1..=16).filter(|&c| c != 14) {
            assert_eq!(c.classify(code), CodeClass::Terminal, "{code}");
        }
        for code in [-1, 17, 31, 32, 1000, i32::MIN, i32::MAX] {
            assert_eq!(c.classify(code), CodeClass::Unknown, "{code}");
        }
    }

    #[test]
    fn extra_codes_are_configurable() {
        let c = CodeClassifier::new().retry(8).retry(40).never_retry(14);
        assert_eq!(c.retryable(), CodeSet::from_codes(&[8]));
        assert_eq!(c.classify(14), CodeClass::Terminal);
        assert_eq!(c.classify(40), CodeClass::Unknown); // not a member: ignored
        // An explicit opt-in beyond 16 is honored; OK stays a success.
        let c = CodeClassifier::with_set(CodeSet::from_codes(&[0, 20]));
        assert_eq!(c.classify(20), CodeClass::Retryable);
        assert_eq!(c.classify(0), CodeClass::Ok);
        let set: CodeSet = [31, 32, -1].into_iter().collect();
        assert_eq!(format!("{set:?}"), "{31}");
    }

    proptest! {
        /// Every `i32`: never panics, retryable exactly for the set's members
        /// (but OK), and every non-code fails closed.
        #[test]
        fn every_code_is_classified(code in any::<i32>(), mask in any::<u32>()) {
            let set = CodeSet(mask);
            let class = CodeClassifier::with_set(set).classify(code);
            prop_assert_eq!(class.is_retryable(), code != 0 && set.contains(code));
            if code_name(code).is_none() && !set.contains(code) {
                prop_assert_eq!(class, CodeClass::Unknown);
            }
            let default = CodeClassifier::new().classify(code);
            prop_assert_eq!(default.is_retryable(), code == 14);
        }
    }
}
