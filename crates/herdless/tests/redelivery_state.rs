//! The travelling state's decoder never panics and never grants more than
//! the policy: arbitrary, mutated and forged headers against the broker's
//! delivery count.

use std::time::Duration;

use herdless::engine::{Context, Gate};
use herdless::redelivery::{Delivery, Resumed, TaskState};
use herdless::{IdempotencyKey, Policy, Rng};
use proptest::prelude::*;

fn state() -> impl Strategy<Value = TaskState> {
    (
        any::<u32>(),
        proptest::option::of(0u64..=u64::MAX / 1_000_000),
        proptest::option::of(any::<u128>()),
        proptest::option::of(any::<u64>()),
    )
        .prop_map(|(attempts, t, k, s)| TaskState {
            attempts,
            first_attempt: t.map(Duration::from_millis),
            key: k.map(IdempotencyKey::from_bits),
            seed: s,
        })
}

/// Strings close to the format: its alphabet, its separators, digits.
fn near_format() -> impl Strategy<Value = String> {
    prop_oneof![
        "[0-9a-fk-t;=\\- ]{0,80}",
        "1(;[atks]=[0-9a-f\\-]{0,40}){0,6}",
        any::<String>(),
    ]
}

/// A valid header with one byte replaced, inserted or removed.
fn mutated() -> impl Strategy<Value = String> {
    (state(), any::<usize>(), any::<u8>(), 0u8..3).prop_map(|(s, at, byte, how)| {
        let mut bytes = s.encode().into_bytes();
        let i = at % (bytes.len() + 1);
        match how {
            0 if i < bytes.len() => bytes[i] = byte,
            1 => bytes.insert(i, byte),
            _ if i < bytes.len() => {
                bytes.remove(i);
            }
            _ => {}
        }
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

fn policy() -> impl Strategy<Value = Policy> {
    (1u32..12, 1u64..5_000).prop_map(|(max_attempts, elapsed_ms)| {
        Policy::builder()
            .base(Duration::from_millis(1))
            .max_attempts(max_attempts)
            .max_elapsed(Duration::from_millis(elapsed_ms))
            .build()
            .unwrap()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn encode_then_decode_is_the_identity(s in state()) {
        prop_assert_eq!(TaskState::decode(&s.encode()), Ok(s));
    }

    #[test]
    fn decode_never_panics_and_what_it_accepts_is_canonical(h in prop_oneof![near_format(), mutated()]) {
        if let Ok(s) = TaskState::decode(&h) {
            // Whatever was accepted means exactly one state.
            prop_assert_eq!(TaskState::decode(&s.encode()), Ok(s));
        }
    }

    /// Any header, any delivery: the attempt number is at least the delivery
    /// count, the start never later than the broker's timestamp, and over a
    /// message's whole life at most `max_attempts` attempts start and none
    /// after `max_elapsed`.
    #[test]
    fn no_header_grants_more_than_the_policy(
        h in proptest::option::of(prop_oneof![near_format(), mutated(), state().prop_map(|s| s.encode())]),
        p in policy(),
        stored_ms in 0u64..10_000,
        step_ms in 0u64..2_000,
    ) {
        let cx = Context::new(&p).trace(false);
        let stored_at = Duration::from_millis(stored_ms);
        let mut started = 0u32;
        for delivered in 1..=p.max_attempts() + 5 {
            let delivery = Delivery { delivered, stored_at, identity: 1 };
            let mut r = Resumed::new(&p, h.as_deref(), &delivery, None);
            prop_assert!(r.attempt() >= delivered);
            prop_assert!(r.engine.start() <= stored_at);
            let now = stored_at + Duration::from_millis(step_ms * u64::from(delivered));
            if r.engine.redelivered(&cx, now, &mut Rng::with_seed(1)) == Gate::Go {
                prop_assert!(r.attempt() <= p.max_attempts());
                prop_assert!(r.attempt() == 1 || r.engine.elapsed(now) <= p.max_elapsed());
                started += 1;
            }
        }
        prop_assert!(started <= p.max_attempts());
    }
}

#[test]
fn a_garbled_header_resumes_from_the_delivery_count() {
    let p = Policy::default();
    let d = Delivery {
        delivered: 4,
        stored_at: Duration::from_secs(5),
        identity: Delivery::identity_of(&[b"S", b"9"]),
    };
    let clean = Resumed::new(&p, None, &d, None);
    let garbled = Resumed::new(&p, Some("1;a=\u{0}"), &d, None);
    assert_eq!(garbled.refused.map(|e| e.reason()), Some("garbled"));
    assert_eq!(garbled.attempt(), 4);
    assert_eq!(
        garbled.key, clean.key,
        "the key still comes from the message"
    );
    assert_eq!(garbled.seed, clean.seed);
}

#[test]
fn a_valid_header_adds_to_the_count_and_keeps_its_key() {
    let p = Policy::default();
    let key = IdempotencyKey::from_bits(42);
    let header = TaskState {
        attempts: 1,
        first_attempt: Some(Duration::from_secs(3)),
        key: Some(key),
        seed: Some(5),
    }
    .encode();
    let d = Delivery {
        delivered: 2,
        stored_at: Duration::from_secs(4),
        identity: 9,
    };
    let r = Resumed::new(&p, Some(&header), &d, Some(77));
    assert_eq!(r.attempt(), 3, "one inline attempt, one earlier delivery");
    assert_eq!(r.engine.start(), Duration::from_secs(3));
    assert_eq!((r.key, r.seed), (key, 5));
    assert_eq!(r.state().attempts, 2);
}
