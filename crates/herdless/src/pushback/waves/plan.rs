//! [`WavePlan`]: the announcement, its cohort hash and its text (the
//! documentation is the type's).

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::rng::splitmix64;

#[allow(unused_imports)] // rustdoc links
use crate::pushback::allocator::caller_key;

/// The largest `waves`.
pub const MAX_WAVES: u32 = 1_000_000;
/// The longest `spacing`, milliseconds (1 h).
pub const MAX_SPACING_MS: u32 = 3_600_000;
/// The farthest `start`, either way, milliseconds (1 day).
pub const MAX_START_MS: i64 = 86_400_000;
/// Salts are below this (2⁴⁸): they fit a structured-field integer.
pub const SALT_LIMIT: u64 = 1 << 48;
/// The longest header value parsed, bytes.
const MAX_TEXT: usize = 256;

/// A plan of waves, as announced, and the cohort hash that puts each
/// caller in its wave.
///
/// A plan is four numbers: when the first wave begins (`start`, relative to
/// the answer that carries it, in milliseconds, negative once it has begun),
/// how many waves there are (`waves`, `K`), how far apart they begin
/// (`spacing`, `Δ`, milliseconds) and a `salt`. Wave `k` runs over
/// `[start + k·Δ, start + (k + 1)·Δ)`; the plan ends at `start + K·Δ`.
///
/// ## The cohort hash
///
/// A caller named by the bytes of its stable id (a worker id, a device
/// serial, an IP address) has the 64-bit key [`caller_key`] (FNV-1a, the
/// key a pushback layer's `key_header` already uses), and in a plan the
/// **position**
///
/// ```text
/// p = splitmix64(splitmix64(key ^ splitmix64(salt)) ^ rotl(salt, 32))
/// ```
///
/// a 64-bit number read as the fraction `u = p / 2⁶⁴`. Its wave is
/// `⌊u·K⌋` (computed exactly as `(p · K) >> 64`, Lemire's reduction) and
/// its **point**, where in the plan it falls, `start + u·K·Δ`: its wave's
/// start plus the fractional part of `u·K` of a spacing. `splitmix64` is
/// SplitMix64's finalizer (add `0x9E3779B97F4A7C15`, then
/// `z ^= z >> 30; z *= 0xBF58476D1CE4E5B9; z ^= z >> 27; z *= 0x94D049BB133111EB; z ^= z >> 31`),
/// so a client in any language computes the same wave from the same header.
///
/// **Why salted, and twice mixed.** Without a salt, or with the salt only
/// added, the same callers would come first in every plan, and the waves
/// would correlate with every other hash of the same ids (a load balancer's,
/// a feature flag's): a known failure of unsalted cohort hashes. Mixing the
/// key with the salt's own mix, then again with the rotated salt, makes the
/// waves of two plans with different salts independent; the property tests
/// (`tests/waves_hash.rs`) check balance (chi-square at 1 %) over sequential
/// ids, UUIDs and IPv4 and IPv6 strings, and independence between salts.
///
/// **Why the whole fraction.** Because a caller's position does not depend
/// on `K`, plans that disagree on `K` (two replicas that counted a slightly
/// different fleet) still put a caller at about the same fraction `u` of
/// the plan's span: its time moves by at most a wave, not anywhere.
///
/// ## On the wire
///
/// The `Herdless-Plan` header (and the gRPC trailer of the same name) is a
/// structured-field dictionary in the style of the IETF RateLimit headers:
///
/// ```text
/// Herdless-Plan: start=0.25, waves=5, spacing=0.842, salt=8812345678901
/// ```
///
/// `start` and `spacing` are decimals of seconds with at most three
/// fractional digits, `waves` and `salt` integers. [`from_str`](WavePlan::from_str)
/// also takes `;` between members (the same members written as parameters),
/// ignores members it does not know (a later version may add some), and
/// refuses anything out of range with a [`WavePlanError`] naming the member,
/// never a panic. Of a member given twice the last wins, and several header
/// lines are one value joined with `", "`
/// ([`from_headers`](WavePlan::from_headers)), as for any structured-field
/// dictionary (RFC 8941). Ranges: `start` within ±1 day, `waves` 1 to 1,000,000,
/// `spacing` 1 ms to 1 h, `salt` below 2⁴⁸ (a structured-field integer has
/// at most 15 digits); the text at most 256 bytes.
///
/// ## Example
///
/// ```
/// use herdless::pushback::waves::WavePlan;
/// use herdless::pushback::allocator::caller_key;
/// let plan: WavePlan = "start=0.25, waves=4, spacing=1.0, salt=42".parse()?;
/// let key = caller_key(b"worker-17");
/// let wave = plan.wave_of(key);
/// assert!(wave < 4);
/// let point = plan.point_ms(key);
/// assert!(point >= 250 + 1_000 * i64::from(wave) && point < 250 + 1_000 * i64::from(wave + 1));
/// assert_eq!(plan.to_string(), "start=0.25, waves=4, spacing=1.0, salt=42");
/// # Ok::<(), herdless::pushback::waves::WavePlanError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WavePlan {
    start_ms: i64,
    waves: u32,
    spacing_ms: u32,
    salt: u64,
}

impl WavePlan {
    /// A plan whose first wave begins `start_ms` milliseconds from now
    /// (negative: it began that long ago), of `waves` waves `spacing_ms`
    /// apart, hashed with `salt`.
    ///
    /// # Errors
    ///
    /// [`WavePlanError`] naming the value out of its range (see the [module
    /// documentation](WavePlan#on-the-wire)).
    ///
    /// ```
    /// use herdless::pushback::waves::WavePlan;
    /// assert!(WavePlan::new(0, 3, 500, 1).is_ok());
    /// assert!(WavePlan::new(0, 0, 500, 1).is_err());
    /// ```
    pub fn new(
        start_ms: i64,
        waves: u32,
        spacing_ms: u32,
        salt: u64,
    ) -> Result<Self, WavePlanError> {
        if !(-MAX_START_MS..=MAX_START_MS).contains(&start_ms) {
            return Err(WavePlanError::Range("start"));
        }
        if !(1..=MAX_WAVES).contains(&waves) {
            return Err(WavePlanError::Range("waves"));
        }
        if !(1..=MAX_SPACING_MS).contains(&spacing_ms) {
            return Err(WavePlanError::Range("spacing"));
        }
        if salt >= SALT_LIMIT {
            return Err(WavePlanError::Range("salt"));
        }
        Ok(WavePlan {
            start_ms,
            waves,
            spacing_ms,
            salt,
        })
    }

    /// Milliseconds from the answer that carried it to the first wave's
    /// start (negative once it has begun).
    pub fn start_ms(&self) -> i64 {
        self.start_ms
    }

    /// The number of waves, `K`.
    pub fn waves(&self) -> u32 {
        self.waves
    }

    /// The time between two waves' starts, `Δ`.
    ///
    /// ```
    /// let p = herdless::pushback::waves::WavePlan::new(0, 2, 750, 0)?;
    /// assert_eq!(p.spacing(), std::time::Duration::from_millis(750));
    /// # Ok::<(), herdless::pushback::waves::WavePlanError>(())
    /// ```
    pub fn spacing(&self) -> Duration {
        Duration::from_millis(u64::from(self.spacing_ms))
    }

    /// `Δ` in milliseconds.
    pub fn spacing_ms(&self) -> u32 {
        self.spacing_ms
    }

    /// The salt: a new one per plan.
    pub fn salt(&self) -> u64 {
        self.salt
    }

    /// Milliseconds from now to the plan's end, `start + K·Δ` (negative once
    /// it has ended).
    ///
    /// ```
    /// let p = herdless::pushback::waves::WavePlan::new(-500, 4, 250, 0)?;
    /// assert_eq!(p.end_ms(), 500);
    /// # Ok::<(), herdless::pushback::waves::WavePlanError>(())
    /// ```
    pub fn end_ms(&self) -> i64 {
        self.start_ms + i64::from(self.waves) * i64::from(self.spacing_ms)
    }

    /// The same plan seen `elapsed` later: its start that much nearer (an
    /// announcement kept until the caller acts on it).
    ///
    /// ```
    /// use std::time::Duration;
    /// let p = herdless::pushback::waves::WavePlan::new(1_000, 1, 100, 0)?;
    /// assert_eq!(p.later(Duration::from_millis(300)).start_ms(), 700);
    /// # Ok::<(), herdless::pushback::waves::WavePlanError>(())
    /// ```
    pub fn later(&self, elapsed: Duration) -> Self {
        let ms = i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX);
        WavePlan {
            start_ms: self.start_ms.saturating_sub(ms).max(-2 * MAX_START_MS),
            ..*self
        }
    }

    /// The caller's position in this plan: the salted cohort hash of its
    /// key (see the [module documentation](WavePlan#the-cohort-hash)).
    ///
    /// ```
    /// let a = herdless::pushback::waves::WavePlan::new(0, 4, 100, 1)?;
    /// let b = herdless::pushback::waves::WavePlan::new(0, 4, 100, 2)?;
    /// assert_ne!(a.position(7), b.position(7)); // another salt, another order
    /// # Ok::<(), herdless::pushback::waves::WavePlanError>(())
    /// ```
    pub fn position(&self, key: u64) -> u64 {
        position(key, self.salt)
    }

    /// The caller's wave, `0..K`.
    pub fn wave_of(&self, key: u64) -> u32 {
        wave(self.position(key), self.waves)
    }

    /// The caller's point: `start + u·K·Δ` in milliseconds from now, where
    /// the server tells a caller it can name to come back (its wave's start
    /// plus its own fraction of a spacing).
    pub fn point_ms(&self, key: u64) -> i64 {
        self.start_ms + point_offset_ms(self.position(key), self.waves, self.spacing_ms)
    }
}

/// The salted cohort hash (see the [module documentation](WavePlan#the-cohort-hash)).
pub(crate) fn position(key: u64, salt: u64) -> u64 {
    splitmix64(splitmix64(key ^ splitmix64(salt)) ^ salt.rotate_left(32))
}

/// `⌊u·K⌋` for position `p`.
pub(crate) fn wave(p: u64, waves: u32) -> u32 {
    ((u128::from(p) * u128::from(waves)) >> 64) as u32
}

/// `u·K` as a wave and the fraction of a wave past its start, `[0, 1)`.
pub(crate) fn fraction(p: u64, waves: u32) -> f64 {
    let scaled = u128::from(p) * u128::from(waves);
    (scaled as u64) as f64 / 2f64.powi(64)
}

/// `u·K·Δ` in milliseconds for position `p`.
pub(crate) fn point_offset_ms(p: u64, waves: u32, spacing_ms: u32) -> i64 {
    let scaled = u128::from(p) * u128::from(waves) * u128::from(spacing_ms);
    (scaled >> 64) as i64
}

/// What is wrong with a plan or its text.
///
/// ```
/// use herdless::pushback::waves::{WavePlan, WavePlanError};
/// assert_eq!("start=1.0, waves=2".parse::<WavePlan>(), Err(WavePlanError::Missing("spacing")));
/// assert_eq!("start=1.0, waves=0, spacing=1, salt=1".parse::<WavePlan>(), Err(WavePlanError::Range("waves")));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum WavePlanError {
    /// A member is out of its documented range.
    Range(&'static str),
    /// A required member is missing.
    Missing(&'static str),
    /// A member's value is not a number of its kind (or the text is longer
    /// than 256 bytes, or not `key=value` members).
    Syntax(&'static str),
}

impl fmt::Display for WavePlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WavePlanError::Range(m) => write!(
                f,
                "plan member `{m}` out of range (start within ±1 day, waves 1..=1000000, \
                 spacing 0.001..=3600 s, salt below 2^48)"
            ),
            WavePlanError::Missing(m) => write!(f, "plan member `{m}` is missing"),
            WavePlanError::Syntax(m) => write!(f, "plan member `{m}` is not well formed"),
        }
    }
}

impl std::error::Error for WavePlanError {}

/// Writes milliseconds as a structured-field decimal of seconds: at least
/// one fractional digit, trailing zeros dropped.
fn write_seconds(f: &mut fmt::Formatter<'_>, ms: i64) -> fmt::Result {
    let sign = if ms < 0 { "-" } else { "" };
    let abs = ms.unsigned_abs();
    let (s, frac) = (abs / 1_000, abs % 1_000);
    let digits = format!("{frac:03}");
    let trimmed = digits.trim_end_matches('0');
    write!(
        f,
        "{sign}{s}.{}",
        if trimmed.is_empty() { "0" } else { trimmed }
    )
}

impl fmt::Display for WavePlan {
    /// The header value (see the [module documentation](WavePlan#on-the-wire)).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("start=")?;
        write_seconds(f, self.start_ms)?;
        write!(f, ", waves={}, spacing=", self.waves)?;
        write_seconds(f, i64::from(self.spacing_ms))?;
        write!(f, ", salt={}", self.salt)
    }
}

/// A structured-field decimal of seconds (at most 12 integer and 3
/// fractional digits, optionally negative) as milliseconds.
fn parse_seconds(v: &str, member: &'static str) -> Result<i64, WavePlanError> {
    let bad = WavePlanError::Syntax(member);
    let (neg, digits) = match v.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, v),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if int.is_empty() || int.len() > 12 || frac.len() > 3 || !all_digits(int) || !all_digits(frac) {
        return Err(bad);
    }
    let whole: i64 = int.parse().map_err(|_| bad)?;
    let mut ms: i64 = 0;
    for (i, b) in frac.bytes().enumerate() {
        ms += i64::from(b - b'0') * [100, 10, 1][i];
    }
    let total = whole
        .checked_mul(1_000)
        .and_then(|w| w.checked_add(ms))
        .ok_or(bad)?;
    Ok(if neg { -total } else { total })
}

/// A structured-field integer (at most 15 digits, not negative).
fn parse_integer(v: &str, member: &'static str) -> Result<u64, WavePlanError> {
    if v.is_empty() || v.len() > 15 || !v.bytes().all(|b| b.is_ascii_digit()) {
        return Err(WavePlanError::Syntax(member));
    }
    v.parse().map_err(|_| WavePlanError::Syntax(member))
}

impl FromStr for WavePlan {
    type Err = WavePlanError;

    /// Parses a header value (see the [module documentation](WavePlan#on-the-wire)).
    ///
    /// ```
    /// use herdless::pushback::waves::WavePlan;
    /// let p: WavePlan = "start=-1.5; waves=3; spacing=0.5; salt=9; future=?1".parse()?;
    /// assert_eq!((p.start_ms(), p.waves(), p.spacing_ms(), p.salt()), (-1_500, 3, 500, 9));
    /// # Ok::<(), herdless::pushback::waves::WavePlanError>(())
    /// ```
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.len() > MAX_TEXT {
            return Err(WavePlanError::Syntax("the whole value"));
        }
        let (mut start, mut waves, mut spacing, mut salt) = (None, None, None, None);
        for member in s.split([',', ';']) {
            let member = member.trim_matches([' ', '\t']);
            if member.is_empty() {
                continue;
            }
            let Some((key, value)) = member.split_once('=') else {
                // A bare key (a boolean member, or the leading item of the
                // parameter form): nothing this version reads.
                continue;
            };
            match key.trim() {
                "start" => start = Some(parse_seconds(value.trim(), "start")?),
                "waves" => waves = Some(parse_integer(value.trim(), "waves")?),
                "spacing" => spacing = Some(parse_seconds(value.trim(), "spacing")?),
                "salt" => salt = Some(parse_integer(value.trim(), "salt")?),
                _ => {}
            }
        }
        let start = start.ok_or(WavePlanError::Missing("start"))?;
        let waves = waves.ok_or(WavePlanError::Missing("waves"))?;
        let spacing = spacing.ok_or(WavePlanError::Missing("spacing"))?;
        let salt = salt.ok_or(WavePlanError::Missing("salt"))?;
        let waves = u32::try_from(waves).map_err(|_| WavePlanError::Range("waves"))?;
        let spacing = u32::try_from(spacing).map_err(|_| WavePlanError::Range("spacing"))?;
        WavePlan::new(start, waves, spacing, salt)
    }
}

impl WavePlan {
    /// Parses a header's raw bytes (`None` for bytes that are not ASCII
    /// text or not a plan: an unusable announcement is no announcement).
    ///
    /// ```
    /// use herdless::pushback::waves::WavePlan;
    /// assert!(WavePlan::from_header(b"start=0.0, waves=1, spacing=0.1, salt=0").is_some());
    /// assert!(WavePlan::from_header(b"start=\xff").is_none());
    /// ```
    pub fn from_header(value: &[u8]) -> Option<Self> {
        std::str::from_utf8(value).ok()?.parse().ok()
    }

    /// Parses every line of the header an answer carried, as a
    /// structured-field dictionary is parsed: the lines joined with `", "`
    /// into one value, so that of a member given twice the last wins
    /// (RFC 8941, 4.2). `None` as [`from_header`](Self::from_header), and
    /// for no line at all; the joined text is held to the same 256 bytes.
    ///
    /// ```
    /// use herdless::pushback::waves::WavePlan;
    /// let lines: [&[u8]; 2] = [b"start=0.3, waves=1, spacing=0.1, salt=1", b"start=30"];
    /// assert_eq!(WavePlan::from_headers(lines).unwrap().start_ms(), 30_000);
    /// assert!(WavePlan::from_headers(std::iter::empty::<&[u8]>()).is_none());
    /// ```
    pub fn from_headers<'a>(lines: impl IntoIterator<Item = &'a [u8]>) -> Option<Self> {
        let mut joined = Vec::new();
        for line in lines {
            if !joined.is_empty() {
                joined.extend_from_slice(b", ");
            }
            joined.extend_from_slice(line);
            if joined.len() > MAX_TEXT {
                return None;
            }
        }
        if joined.is_empty() {
            return None;
        }
        Self::from_header(&joined)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_round_trips_and_refuses_what_it_cannot_read() {
        for (start, waves, spacing, salt) in [
            (0, 1, 1, 0),
            (-1_500, 7, 842, SALT_LIMIT - 1),
            (MAX_START_MS, MAX_WAVES, MAX_SPACING_MS, 12_345),
            (-MAX_START_MS, 2, 1_000, 1),
            (5, 3, 10, 77),
        ] {
            let p = WavePlan::new(start, waves, spacing, salt).unwrap();
            assert_eq!(p.to_string().parse::<WavePlan>(), Ok(p), "{p}");
        }
        for bad in [
            "",
            "start=1",
            "start=1.2345, waves=1, spacing=1, salt=1",
            "start=abc, waves=1, spacing=1, salt=1",
            "start=1, waves=-1, spacing=1, salt=1",
            "start=1, waves=1, spacing=0, salt=1",
            "start=1, waves=1, spacing=1, salt=281474976710656",
            "start=1, waves=99999999999999999999, spacing=1, salt=1",
            "start=1e3, waves=1, spacing=1, salt=1",
            "start=.5, waves=1, spacing=1, salt=1",
        ] {
            assert!(bad.parse::<WavePlan>().is_err(), "{bad:?}");
        }
        let long = format!("start=1, waves=1, spacing=1, salt=1, {}", "x".repeat(300));
        assert_eq!(
            long.parse::<WavePlan>(),
            Err(WavePlanError::Syntax("the whole value"))
        );
    }

    #[test]
    fn a_point_lies_in_its_wave_and_the_waves_cover_the_plan() {
        let p = WavePlan::new(100, 9, 333, 5).unwrap();
        for key in 0..10_000u64 {
            let w = i64::from(p.wave_of(key));
            let at = p.point_ms(key);
            assert!(at >= 100 + w * 333 && at < 100 + (w + 1) * 333, "{key}");
            let f = fraction(p.position(key), p.waves());
            assert!((0.0..1.0).contains(&f));
        }
        assert_eq!(wave(u64::MAX, 9), 8);
        assert_eq!(wave(0, 9), 0);
    }
}
