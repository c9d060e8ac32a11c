//! [`Resumed`]: a task's retry chain rebuilt at one delivery from what the
//! broker vouches for ([`Delivery`]) and what the message says
//! ([`TaskState`]), never granting more than the policy.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::engine::Engine;
use crate::policy::Policy;
use crate::redelivery::state::{StateError, TaskState};
use crate::rng::{IdempotencyKey, Rng, call_seed, splitmix64};

/// What the broker vouches for about one delivery of a task.
///
/// ```
/// use std::time::Duration;
/// use herdless::redelivery::Delivery;
/// // The stream's name, its creation time (ns since the epoch), the sequence.
/// let id = |created: &[u8], seq: &[u8]| Delivery::identity_of(&[b"TASKS", created, seq]);
/// let d = Delivery {
///     delivered: 2,
///     stored_at: Duration::from_secs(1_700_000_000),
///     identity: id(b"1700000000000000000", b"42"),
/// };
/// assert_eq!(d.identity, id(b"1700000000000000000", b"42"));
/// assert_ne!(d.identity, id(b"1700000000000000000", b"43"));
/// // The same name and sequence in a stream created at another time.
/// assert_ne!(d.identity, id(b"1700000000000000001", b"42"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delivery {
    /// How many times the broker has delivered this message, this delivery
    /// included (JetStream's `num_delivered`); 0 is read as 1.
    pub delivered: u32,
    /// When the broker stored the message, since the Unix epoch (the
    /// broker's clock; JetStream's message timestamp).
    pub stored_at: Duration,
    /// A stable identity of the stored message, the same on every delivery
    /// (see [`identity_of`](Self::identity_of)): the idempotency key and the
    /// seed are derived from it when the state carries none.
    pub identity: u128,
}

impl Delivery {
    /// A stable 128-bit identity of a stored message from its parts. The
    /// derivation is part of the format: the same parts give the same
    /// identity in every build, so a task keeps its key across workers of
    /// different versions.
    ///
    /// For JetStream the parts are, in order: the stream's name, the
    /// stream's creation time (nanoseconds since the Unix epoch, decimal, from
    /// the stream's info `created`) and the stream sequence (decimal). The
    /// creation time is what keeps two tasks apart that share a name and a
    /// sequence: streams of the same name on two brokers, or a stream
    /// deleted and created again (it restarts at sequence 1).
    pub fn identity_of(parts: &[&[u8]]) -> u128 {
        // FNV-1a over the parts (each followed by a 0xff separator, a byte
        // UTF-8 never holds), twice with different offsets, then SplitMix64.
        let fnv = |offset: u64| {
            let mut h = offset;
            for part in parts {
                for &b in part.iter().chain(&[0xff]) {
                    h ^= u64::from(b);
                    h = h.wrapping_mul(0x0000_0100_0000_01b3);
                }
            }
            splitmix64(h)
        };
        (u128::from(fnv(0xcbf2_9ce4_8422_2325)) << 64) | u128::from(fnv(0x6c62_272e_07bb_0142))
    }
}

/// The wall clock as the engine's time in a broker driver: since the Unix
/// epoch (a clock every machine and the broker share, unlike a monotonic
/// one). Zero if the clock reads before 1970.
///
/// ```
/// assert!(herdless::redelivery::unix_now().as_secs() > 1_600_000_000);
/// ```
pub fn unix_now() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

/// The generator that decides after attempt `attempt` of the task seeded
/// `seed`: a pure function of both, so a task's delays are reproducible and
/// its schedule can be replayed by any worker without generator state in
/// the message.
///
/// ```
/// use herdless::redelivery::rng_for;
/// assert_eq!(rng_for(9, 2).next_u64(), rng_for(9, 2).next_u64());
/// assert_ne!(rng_for(9, 2).next_u64(), rng_for(9, 3).next_u64());
/// ```
pub fn rng_for(seed: u64, attempt: u32) -> Rng {
    Rng::with_seed(call_seed(seed, u64::from(attempt)))
}

/// A task's retry chain at one delivery: the engine resumed, the task's key
/// and seed, and whether the message's state was refused.
///
/// * attempts made = the state's `a` + the deliveries before this one: the
///   broker's count is a floor a message cannot lower, and a worker killed
///   mid-attempt leaves a delivery behind, so its attempt counts;
/// * the first attempt's time = the earlier of the state's `t` and the
///   broker's timestamp: a `t` in the future grants nothing;
/// * the key = the state's `k` (the publisher's: it wins), else derived
///   from the message's identity ([`Delivery::identity_of`]: for JetStream
///   the stream's name, creation time and sequence), so the same on every
///   delivery and different for every other task;
///   the seed = the state's `s`, else derived from the key (and the worker's
///   seed, when it has one).
///
/// A refused state counts as none (the caller reports `retry_state_invalid`
/// with [`Engine::state_invalid`]).
///
/// ```
/// use std::time::Duration;
/// use herdless::redelivery::{Delivery, Resumed};
/// use herdless::Policy;
/// let policy = Policy::default();
/// let delivery = Delivery { delivered: 3, stored_at: Duration::from_secs(100), identity: 7 };
/// let r = Resumed::new(&policy, Some("1;a=0;t=999999999999"), &delivery, None);
/// assert_eq!(r.attempt(), 3); // two deliveries before this one
/// assert_eq!(r.engine.start(), Duration::from_secs(100)); // the future `t` is ignored
/// let garbled = Resumed::new(&policy, Some("1;a=zero"), &delivery, None);
/// assert!(garbled.refused.is_some());
/// assert_eq!(garbled.attempt(), 3);
/// ```
#[derive(Debug, PartialEq, Eq)]
pub struct Resumed {
    /// The call, resumed: its attempts made so far, its start, its schedule.
    pub engine: Engine,
    /// The task's idempotency key, the same on every delivery.
    pub key: IdempotencyKey,
    /// The task's seed (see [`rng_for`]).
    pub seed: u64,
    /// Why the message's state was refused, if it was.
    pub refused: Option<StateError>,
}

impl Resumed {
    /// Rebuilds the chain from the message's state header (if any), the
    /// broker's facts and the worker's seed (if any).
    pub fn new(
        policy: &Policy,
        header: Option<&str>,
        delivery: &Delivery,
        worker_seed: Option<u64>,
    ) -> Self {
        let (state, refused) = match header.map(TaskState::decode) {
            Some(Ok(state)) => (state, None),
            Some(Err(e)) => (TaskState::default(), Some(e)),
            None => (TaskState::default(), None),
        };
        let before = delivery.delivered.max(1) - 1;
        let attempts = state.attempts.saturating_add(before);
        let start = match state.first_attempt {
            Some(t) => t.min(delivery.stored_at),
            None => delivery.stored_at,
        };
        let key = state
            .key
            .unwrap_or_else(|| IdempotencyKey::from_bits(delivery.identity));
        let bits = key.as_u128();
        let from_key = splitmix64((bits >> 64) as u64 ^ splitmix64(bits as u64));
        let seed = state.seed.unwrap_or(match worker_seed {
            Some(s) => call_seed(s, from_key),
            None => from_key,
        });
        Resumed {
            engine: Engine::replay(policy, start, attempts, |n| rng_for(seed, n)),
            key,
            seed,
            refused,
        }
    }

    /// The number of the attempt this delivery runs (1-based).
    pub fn attempt(&self) -> u32 {
        self.engine.attempts().saturating_add(1)
    }

    /// The generator for the decision after the current attempt (call after
    /// [`Engine::begin`]): [`rng_for`] of the task's seed and the attempt.
    pub fn rng(&self) -> Rng {
        rng_for(self.seed, self.engine.attempts())
    }

    /// The state to carry onward (into a dead letter, to a re-drive):
    /// attempts made, first attempt, key and seed.
    pub fn state(&self) -> TaskState {
        TaskState {
            attempts: self.engine.attempts(),
            first_attempt: Some(self.engine.start()),
            key: Some(self.key),
            seed: Some(self.seed),
        }
    }
}
