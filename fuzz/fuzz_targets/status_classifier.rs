//! Fuzzes the status classifier and `classify_response`: arbitrary statuses,
//! arbitrary configured sets, arbitrary Retry-After bytes.
#![no_main]

use std::time::{Duration, UNIX_EPOCH};

use herdless::http::{classify_response, StatusClass, StatusClassifier};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() < 4 {
        return;
    }
    let status = u16::from_le_bytes([data[0], data[1]]);
    let n = usize::from(data[2] % 16);
    let rest = &data[3..];
    // Up to 16 status codes to move between the sets.
    let mut classifier = StatusClassifier::new();
    for pair in rest.chunks_exact(2).take(n) {
        let code = u16::from_le_bytes([pair[0], pair[1]]);
        if code % 2 == 0 {
            classifier = classifier.retry(code);
        } else {
            classifier = classifier.never_retry(code);
        }
    }
    let header = &rest[(2 * n).min(rest.len())..];
    let class = classifier.classify(status);
    assert_eq!(class == StatusClass::Success, status < 400);
    if status >= 400 && !classifier.retryable().contains(status) {
        assert!(!class.is_retryable(), "fails closed");
    }
    let now = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let c = classify_response(&classifier, status, Some(header), now);
    assert_eq!(c.is_none(), status < 400);
    if let Some(c) = c {
        assert_eq!(c.is_retryable(), class.is_retryable());
    }
});
