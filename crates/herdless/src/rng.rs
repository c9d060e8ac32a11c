//! Randomness: one generator per retrier, seeded from OS entropy by default.
//!
//! One failure mode keeps a storm alive after the "fix": every client
//! seeding its randomness the same way, so the jittered
//! delays are identical across the fleet. tower's retry clones one RNG sequence
//! into every retrier; herdless gives each retrier ([`Backoff`](crate::backoff::Backoff),
//! each call of [`Retry`](crate::Retry)) a generator of its own
//! ([`Rng::fresh`]): its seed comes from a per-thread generator that was seeded
//! once from the operating system's entropy source (`getrandom`), so there is
//! one system call per thread, not one per failing call, and no two calls,
//! threads or processes share a sequence. An explicit seed makes a run
//! reproducible, which is what tests and the simulator use.
//!
//! `fork()` copies the per-thread generators into the child: without a word
//! from the child, every worker forked from one parent (a pre-fork server, a
//! `multiprocessing` pool) would draw its parent's next jitter and its
//! siblings' (the herd again) and derive the same idempotency keys. A child
//! calls [`after_fork`] (the Python package registers it with
//! `os.register_at_fork`), which forgets the seeds of the thread that forked
//! (the child's only thread): its next generator and key salt are drawn from
//! the OS. This costs nothing per call; detecting the fork unasked would: a
//! process id read at each [`Rng::fresh`] is a `getpid` system call, which
//! costs more than the rest of a retried call (docs/performance.md, "Fork
//! safety"), and being told of a fork (`pthread_atfork`) needs
//! `unsafe`, which this crate forbids.
//!
//! The generator is wyrand, as `fastrand` implements it (same constants, same
//! outputs for the same seed: a unit test holds the two together): 8 bytes of
//! state, a few nanoseconds a draw, statistically sound for jitter (not for
//! cryptography, which jitter does not need). The draws are written here rather
//! than called through `fastrand::Rng::u64(range)`, whose range-generic body
//! the compiler keeps out of line: a jitter draw is then a multiply, a compare
//! and a rarely taken branch, inside the engine's own code.

use std::fmt;

/// A small, fast pseudo-random generator owned by one retrier.
///
/// ```
/// use herdless::Rng;
/// let mut a = Rng::with_seed(1);
/// let mut b = Rng::with_seed(1);
/// assert_eq!(a.next_u64(), b.next_u64()); // reproducible
/// let mut c = Rng::fresh();                 // distinct per retrier
/// let _ = c.next_u64();
/// ```
#[derive(Clone)]
pub struct Rng(u64);

impl fmt::Debug for Rng {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Rng { .. }")
    }
}

impl Rng {
    /// A generator seeded from OS entropy. If the OS source fails (it does not
    /// on supported platforms), falls back to `fastrand`'s per-thread generator,
    /// which is itself seeded from the standard library's random hasher keys.
    ///
    /// ```
    /// let a = herdless::Rng::from_entropy().next_u64();
    /// let b = herdless::Rng::from_entropy().next_u64();
    /// assert_ne!(a, b); // a collision has probability 2⁻⁶⁴
    /// ```
    pub fn from_entropy() -> Self {
        let seed = getrandom::u64().unwrap_or_else(|_| fastrand::u64(..));
        Self(seed)
    }

    /// A generator of its own for one retrier (one call of
    /// [`Retry`](crate::Retry), one [`Backoff`](crate::backoff::Backoff)), without a
    /// system call: seeded by a per-thread generator that was itself seeded
    /// once from OS entropy (`getrandom`) when the thread first asked. Two
    /// calls, two threads or two processes never share a sequence (the
    /// per-thread seeds are independent OS draws, drawn again by a forked
    /// child that calls [`after_fork`], and each call takes the
    /// thread generator's next 64-bit output through SplitMix64); what is
    /// saved is one `getrandom` system call per failing call.
    ///
    /// ```
    /// let a = herdless::Rng::fresh().next_u64();
    /// let b = herdless::Rng::fresh().next_u64();
    /// assert_ne!(a, b); // distinct streams on one thread
    /// ```
    ///
    /// A process forked from one that used this calls [`after_fork`] in the
    /// child, which then draws new seeds (see the [module](crate::rng)).
    #[inline]
    pub fn fresh() -> Self {
        let state = THREAD_SEEDS.with(|cell| {
            let mut state = cell.get();
            if state == 0 {
                state = thread_seed();
            }
            // A Weyl sequence over the thread's seed: every call a new point,
            // scrambled by SplitMix64 (below) into an unrelated generator seed.
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15) | 1;
            cell.set(state);
            state
        });
        Self::with_seed(splitmix64(state))
    }

    /// A generator with an explicit seed: the same seed gives the same sequence.
    ///
    /// ```
    /// let mut r = herdless::Rng::with_seed(99);
    /// let first = r.next_u64();
    /// assert_eq!(herdless::Rng::with_seed(99).next_u64(), first);
    /// ```
    #[inline]
    pub fn with_seed(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    ///
    /// ```
    /// let _bits: u64 = herdless::Rng::with_seed(5).next_u64();
    /// ```
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        const WY_CONST_0: u64 = 0x2d35_8dcc_aa6c_78a5;
        const WY_CONST_1: u64 = 0x8bb8_4b93_962e_acc9;
        let s = self.0.wrapping_add(WY_CONST_0);
        self.0 = s;
        let t = u128::from(s) * u128::from(s ^ WY_CONST_1);
        (t as u64) ^ (t >> 64) as u64
    }

    /// A uniform draw in `[0, 1)`.
    ///
    /// ```
    /// let x = herdless::Rng::with_seed(5).unit_f64();
    /// assert!((0.0..1.0).contains(&x));
    /// ```
    #[inline]
    pub fn unit_f64(&mut self) -> f64 {
        // 63 random bits rounded to a double and scaled by 2⁻⁶³: the rounding
        // can reach 1.0 exactly, and such a draw is drawn again (as `fastrand`
        // does, so the values are its values).
        const SCALE: f64 = 1.0 / (1u64 << 63) as f64;
        loop {
            let x = (self.next_u64() >> 1) as f64 * SCALE;
            if x < 1.0 {
                return x;
            }
        }
    }

    /// A uniform draw in `[0, max]`.
    #[inline]
    pub(crate) fn below_or_eq(&mut self, max: u64) -> u64 {
        match max.checked_add(1) {
            Some(n) => self.below(n),
            None => self.next_u64(),
        }
    }

    /// A uniform draw in `[lo, hi]`; `lo` when `hi <= lo`.
    #[inline]
    pub(crate) fn between(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        match (hi - lo).checked_add(1) {
            Some(n) => lo + self.below(n),
            // lo = 0, hi = u64::MAX: every value.
            None => self.next_u64(),
        }
    }

    /// A uniform draw in `[0, n)`, `n > 0`: Lemire's multiply-and-reject (the
    /// high half of `r · n`, redrawn while the low half falls in the `2⁶⁴ mod n`
    /// values that would bias it). The division that finds that threshold runs
    /// only when the low half is below `n`, which for a delay in nanoseconds is
    /// about once in 2⁶⁴ / n draws.
    #[inline]
    fn below(&mut self, n: u64) -> u64 {
        let mut m = u128::from(self.next_u64()) * u128::from(n);
        if (m as u64) < n {
            self.reject_biased(n, &mut m);
        }
        (m >> 64) as u64
    }

    #[cold]
    #[inline(never)]
    fn reject_biased(&mut self, n: u64, m: &mut u128) {
        let threshold = n.wrapping_neg() % n;
        while (*m as u64) < threshold {
            *m = u128::from(self.next_u64()) * u128::from(n);
        }
    }

    /// Derives an independent generator (for per-call generators of a seeded
    /// [`Retry`](crate::Retry)): consumes one draw of this one.
    ///
    /// ```
    /// let mut parent = herdless::Rng::with_seed(1);
    /// let mut a = parent.fork();
    /// let mut b = parent.fork();
    /// assert_ne!(a.next_u64(), b.next_u64());
    /// ```
    pub fn fork(&mut self) -> Rng {
        Rng::with_seed(splitmix64(self.next_u64()))
    }
}

thread_local! {
    /// This thread's seed sequence for [`Rng::fresh`]; 0 = not yet seeded.
    static THREAD_SEEDS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// This thread's (salt, call counter) for idempotency keys; salt 0 = unset.
    static CALLS: std::cell::Cell<(u64, u64)> = const { std::cell::Cell::new((0, 0)) };
}

/// Tells herdless that this process is a child just forked from another:
/// call it in the child, in the thread that forked (the child's only
/// thread), before it retries anything; the Python package does, with
/// `os.register_at_fork`. `fork()` copies that thread's seeds (of
/// [`Rng::fresh`], of the idempotency keys, of
/// [`IdempotencyKey::random`]), so without it the child draws its parent's
/// and its siblings' jitter and keys; after it, the thread's next
/// generator and key salt are drawn from the OS. Harmless anywhere else (a
/// needless call costs one `getrandom`).
///
/// ```
/// let before = herdless::Rng::fresh().next_u64();
/// herdless::rng::after_fork();
/// assert_ne!(herdless::Rng::fresh().next_u64(), before);
/// ```
pub fn after_fork() {
    THREAD_SEEDS.with(|c| c.set(0));
    CALLS.with(|c| c.set((0, 0)));
    // The key salt and `IdempotencyKey::random` come from `fastrand`'s
    // per-thread generator, copied as well.
    fastrand::seed(thread_seed());
}

/// The first seed of this thread's [`Rng::fresh`] sequence, from OS entropy
/// (odd, so never the "not yet seeded" 0). Out of line and cold: once per
/// thread, and the per-call path that reads the thread-local stays small
/// enough for the compiler to inline.
#[cold]
#[inline(never)]
fn thread_seed() -> u64 {
    getrandom::u64().unwrap_or_else(|_| fastrand::u64(..)) | 1
}

/// A per-thread unique call id: a random per-thread salt (from `fastrand`'s
/// thread generator, itself seeded from OS entropy, and drawn again after
/// [`after_fork`]) and a counter. Costs a thread-local read and write; the
/// key is derived from it only when asked for.
#[inline]
pub(crate) fn next_call_id() -> u128 {
    CALLS.with(|c| {
        let (mut salt, n) = c.get();
        if salt == 0 {
            salt = fastrand::u64(..) | 1;
        }
        c.set((salt, n.wrapping_add(1)));
        (u128::from(salt) << 64) | u128::from(n)
    })
}

/// The seed of call `k`'s generator in a retrier seeded with `seed` (see
/// [`Retry::seed`](crate::Retry::seed)): unrelated streams for consecutive
/// calls. A driver that wants to replay call `k` of a seeded retrier seeds its
/// generator with this.
///
/// ```
/// use herdless::rng::call_seed;
/// assert_ne!(call_seed(7, 0), call_seed(7, 1));
/// assert_eq!(call_seed(7, 0), call_seed(7, 0));
/// ```
pub fn call_seed(seed: u64, k: u64) -> u64 {
    splitmix64(seed ^ splitmix64(k))
}

/// SplitMix64's finalizer: turns consecutive or related seeds into unrelated ones.
pub(crate) fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A per-call idempotency key: the same for every attempt of one logical call, so
/// a redelivered capture or checksum records the same outcome. Formats as a
/// UUID-v4-shaped string (`8-4-4-4-12` lowercase hex), suitable for an
/// `Idempotency-Key` header or the `HERDLESS_IDEMPOTENCY_KEY` variable.
///
/// [`IdempotencyKey::random`] draws from a per-thread generator seeded by the
/// standard library's random hasher keys (OS entropy). The executors derive a
/// call's key on demand from a per-thread salt and call counter, so a call whose
/// operation never asks for its key pays nothing for it.
///
/// ```
/// use herdless::IdempotencyKey;
/// let key = IdempotencyKey::random();
/// let text = key.to_string();
/// assert_eq!(text.len(), 36);
/// assert_eq!(text.parse::<IdempotencyKey>()?, key);
/// # Ok::<(), herdless::rng::ParseIdempotencyKeyError>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IdempotencyKey(u128);

impl IdempotencyKey {
    /// A fresh random key (UUID version 4 layout).
    ///
    /// ```
    /// assert_ne!(herdless::IdempotencyKey::random(), herdless::IdempotencyKey::random());
    /// ```
    pub fn random() -> Self {
        Self::from_bits(fastrand::u128(..))
    }

    /// A key from 128 bits (the version and variant bits are set to UUID v4's).
    ///
    /// ```
    /// let key = herdless::IdempotencyKey::from_bits(0);
    /// assert_eq!(key.to_string(), "00000000-0000-4000-8000-000000000000");
    /// ```
    pub const fn from_bits(bits: u128) -> Self {
        let v4 = (bits & !(0xF << 76) & !(0x3 << 62)) | (0x4 << 76) | (0x2 << 62);
        Self(v4)
    }

    /// The key for a call id from [`next_call_id`]: for one thread's salt the
    /// high half is a bijection of the counter, so a thread's keys do not repeat
    /// (but for the 6 fixed UUID bits), and salts differ between threads.
    pub(crate) fn from_call_id(id: u128) -> Self {
        let salt = (id >> 64) as u64;
        let n = id as u64;
        let hi = splitmix64(salt ^ n);
        let lo = splitmix64(salt.rotate_left(32) ^ splitmix64(n));
        Self::from_bits((u128::from(hi) << 64) | u128::from(lo))
    }

    /// The key's 128 bits.
    ///
    /// ```
    /// let key = herdless::IdempotencyKey::random();
    /// assert_eq!(herdless::IdempotencyKey::from_bits(key.as_u128()), key);
    /// ```
    pub const fn as_u128(self) -> u128 {
        self.0
    }
}

impl fmt::Display for IdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        write!(
            f,
            "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
            (b >> 96) as u32,
            (b >> 80) as u16,
            (b >> 64) as u16,
            (b >> 48) as u16,
            b & 0xFFFF_FFFF_FFFF
        )
    }
}

impl fmt::Debug for IdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "IdempotencyKey({self})")
    }
}

impl std::str::FromStr for IdempotencyKey {
    type Err = ParseIdempotencyKeyError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let hex: String = s.chars().filter(|&c| c != '-').collect();
        if hex.len() != 32 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(ParseIdempotencyKeyError(()));
        }
        u128::from_str_radix(&hex, 16)
            .map(Self::from_bits)
            .map_err(|_| ParseIdempotencyKeyError(()))
    }
}

/// A string that is not 32 hexadecimal digits (dashes allowed).
///
/// ```
/// assert!("not-a-key".parse::<herdless::IdempotencyKey>().is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseIdempotencyKeyError(());

impl fmt::Display for ParseIdempotencyKeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an idempotency key is 32 hexadecimal digits, dashes allowed")
    }
}

impl std::error::Error for ParseIdempotencyKeyError {}

#[cfg(test)]
mod tests;
