//! Fuzzes the travelling state's decoder: any bytes never panic, an accepted
//! header is canonical, and a resumed chain never starts below the broker's
//! delivery count.
#![no_main]

use std::time::Duration;

use herdless::redelivery::{Delivery, Resumed, TaskState};
use herdless::Policy;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (count, header) = data.split_at(data.len().min(1));
    let header = String::from_utf8_lossy(header);
    if let Ok(state) = TaskState::decode(&header) {
        assert_eq!(TaskState::decode(&state.encode()), Ok(state));
    }
    let delivered = u32::from(count.first().copied().unwrap_or(1));
    let stored_at = Duration::from_secs(1_000);
    let delivery = Delivery { delivered, stored_at, identity: 1 };
    let r = Resumed::new(&Policy::default(), Some(&*header), &delivery, None);
    assert!(r.attempt() >= delivered.max(1));
    assert!(r.engine.start() <= stored_at);
});
