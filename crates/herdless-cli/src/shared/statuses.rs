//! Exit-status sets: `--retry-on` / `--terminal-on` values such as `75,111,200-210`.
//!
//! A [`ExitStatuses`] is a set of exit statuses `0..=255` written as a comma-separated
//! list of numbers and inclusive ranges. It is a 256-bit bitmap, so membership is
//! one shift and a mask, and parsing rejects everything that is not exactly such
//! a list (empty items, reversed ranges, numbers above 255) with an error that
//! quotes the offending item.

use std::fmt;
use std::str::FromStr;

/// A set of exit statuses (`0..=255`).
#[derive(Clone, Copy, Default)]
pub(crate) struct ExitStatuses {
    codes: [u64; 4],
    /// The statuses written as a single item (`126`), not within a range
    /// (`1-255`): a range may span statuses that a caller leaves out.
    singles: [u64; 4],
}

/// Two sets are equal when they hold the same statuses, however written.
impl PartialEq for ExitStatuses {
    fn eq(&self, other: &Self) -> bool {
        self.codes == other.codes
    }
}

impl Eq for ExitStatuses {}

fn bit(code: u8) -> (usize, u64) {
    (usize::from(code >> 6), 1 << (code & 63))
}

impl ExitStatuses {
    /// The empty set.
    pub(crate) const fn empty() -> Self {
        ExitStatuses {
            codes: [0; 4],
            singles: [0; 4],
        }
    }

    /// Adds `code`.
    pub(crate) fn insert(&mut self, code: u8) {
        let (i, b) = bit(code);
        self.codes[i] |= b;
    }

    /// Whether `status` is in the set (statuses outside `0..=255` never are).
    pub(crate) fn contains(&self, status: i32) -> bool {
        match u8::try_from(status) {
            Ok(code) => {
                let (i, b) = bit(code);
                self.codes[i] & b != 0
            }
            Err(_) => false,
        }
    }

    /// Whether the set is empty.
    pub(crate) fn is_empty(&self) -> bool {
        self.codes == [0; 4]
    }

    /// The statuses in both sets (those `self` listed alone stay so).
    pub(crate) fn intersection(&self, other: &ExitStatuses) -> ExitStatuses {
        let and = |a: [u64; 4], b: [u64; 4]| std::array::from_fn(|i| a[i] & b[i]);
        ExitStatuses {
            codes: and(self.codes, other.codes),
            singles: and(self.singles, other.codes),
        }
    }

    /// The statuses that were written as single items, not within a range.
    pub(crate) fn listed_alone(&self) -> ExitStatuses {
        ExitStatuses {
            codes: self.singles,
            singles: self.singles,
        }
    }

    /// The statuses in the set, ascending.
    pub(crate) fn iter(&self) -> impl Iterator<Item = u8> + '_ {
        (0..=255u8).filter(move |c| self.contains(i32::from(*c)))
    }
}

impl fmt::Debug for ExitStatuses {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ExitStatuses({self})")
    }
}

/// Formats as the shortest list of numbers and ranges (`1-3,7`).
impl fmt::Display for ExitStatuses {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let codes: Vec<u8> = self.iter().collect();
        let mut first = true;
        let mut i = 0;
        while i < codes.len() {
            let start = codes[i];
            let mut end = start;
            while i + 1 < codes.len() && codes[i + 1] == end.wrapping_add(1) {
                i += 1;
                end = codes[i];
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if start == end {
                write!(f, "{start}")?;
            } else {
                write!(f, "{start}-{end}")?;
            }
            i += 1;
        }
        Ok(())
    }
}

/// A malformed exit-status list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ParseStatusesError(String);

impl fmt::Display for ParseStatusesError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ParseStatusesError {}

fn code(item: &str, whole: &str) -> Result<u8, ParseStatusesError> {
    let t = item.trim();
    t.parse::<u8>().map_err(|_| {
        ParseStatusesError(format!(
            "{t:?} in {whole:?} is not an exit status (a whole number from 0 to 255)"
        ))
    })
}

impl FromStr for ExitStatuses {
    type Err = ParseStatusesError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let whole: String = s.chars().take(80).collect();
        if s.trim().is_empty() {
            return Err(ParseStatusesError(
                "empty exit-status list (expected e.g. 75,111,200-210)".into(),
            ));
        }
        let mut set = ExitStatuses::empty();
        for item in s.split(',') {
            if item.trim().is_empty() {
                return Err(ParseStatusesError(format!(
                    "empty item in {whole:?} (expected e.g. 75,111,200-210)"
                )));
            }
            match item.split_once('-') {
                Some((lo, hi)) => {
                    let (lo, hi) = (code(lo, &whole)?, code(hi, &whole)?);
                    if lo > hi {
                        return Err(ParseStatusesError(format!(
                            "range {lo}-{hi} in {whole:?} runs backwards"
                        )));
                    }
                    for c in lo..=hi {
                        set.insert(c);
                    }
                }
                None => {
                    let c = code(item, &whole)?;
                    set.insert(c);
                    let (i, b) = bit(c);
                    set.singles[i] |= b;
                }
            }
        }
        Ok(set)
    }
}

/// Parses a list for clap.
pub(crate) fn parse_statuses(s: &str) -> Result<ExitStatuses, String> {
    s.parse::<ExitStatuses>().map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_ranges() {
        let s: ExitStatuses = "75, 111,200-210,0".parse().unwrap();
        for c in [0, 75, 111, 200, 205, 210] {
            assert!(s.contains(c), "{c}");
        }
        for c in [1, 74, 76, 199, 211, 255, -1, 256, 1000] {
            assert!(!s.contains(c), "{c}");
        }
        assert_eq!(s.to_string(), "0,75,111,200-210");
        assert_eq!(
            "255"
                .parse::<ExitStatuses>()
                .unwrap()
                .iter()
                .collect::<Vec<_>>(),
            [255]
        );
        assert_eq!("0-255".parse::<ExitStatuses>().unwrap().iter().count(), 256);
    }

    #[test]
    fn malformed_lists_name_the_item() {
        for (input, needle) in [
            ("", "empty"),
            ("1,,2", "empty item"),
            ("256", "\"256\""),
            ("-1", "\"\""),
            ("9-3", "backwards"),
            ("abc", "\"abc\""),
            ("1-2-3", "\"2-3\""),
        ] {
            let err = input.parse::<ExitStatuses>().unwrap_err().to_string();
            assert!(err.contains(needle), "{input:?}: {err}");
        }
    }
}

/// The examples that were this file's doc tests (its items are private to
/// the crate, where doc tests cannot reach).
#[cfg(test)]
mod examples {
    #[allow(unused_imports)]
    use super::*;

    #[test]
    fn codeset_example() -> Result<(), Box<dyn std::error::Error>> {
        use crate::shared::statuses::ExitStatuses;
        let set: ExitStatuses = "75,111,200-210".parse()?;
        assert!(set.contains(75) && set.contains(205) && !set.contains(1));
        assert_eq!(set.to_string(), "75,111,200-210");
        Ok(())
    }

    #[test]
    fn listed_alone_example() -> Result<(), Box<dyn std::error::Error>> {
        let set: crate::shared::statuses::ExitStatuses = "75,120-130".parse()?;
        assert_eq!(set.listed_alone().to_string(), "75");
        Ok(())
    }
}
