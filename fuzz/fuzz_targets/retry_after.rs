//! Fuzzes the Retry-After parser: any bytes, any clock; never panics, and an
//! accepted delay stays within the policy's clamp once honored.
#![no_main]

use std::time::{Duration, UNIX_EPOCH};

use herdless::http::parse_retry_after;
use herdless::{Policy, Rng};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (clock, value) = data.split_at(data.len().min(8));
    let mut secs = [0u8; 8];
    secs[..clock.len()].copy_from_slice(clock);
    let now_s = u64::from_le_bytes(secs);
    let now = UNIX_EPOCH
        .checked_add(Duration::from_secs(now_s))
        .unwrap_or(UNIX_EPOCH);
    if let Ok(delay) = parse_retry_after(value, now) {
        let policy = Policy::default();
        let sleep = policy.server_delay(delay, &mut Rng::with_seed(now_s));
        assert!(sleep <= policy.max_retry_after());
    }
});
