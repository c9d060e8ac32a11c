//! Fuzzes the worker's reading of a delivered message, without a server:
//! the subject and header block as the NATS client would decode them
//! (`decode_message`, the client's rules on raw bytes), then the
//! `Herdless-State` they carry as the worker resumes it. Any bytes: no
//! panic; a decoded block written out again decodes to the same thing; a
//! resumed chain never starts below the broker's delivery count.
#![no_main]

use std::time::Duration;

use herdless::adapters::nats::{decode_header_block, decode_message, Decoded};
use herdless::redelivery::{Delivery, Resumed, STATE_HEADER};
use herdless::Policy;
use libfuzzer_sys::fuzz_target;

/// The block the client would write for `d`.
fn encode(d: &Decoded) -> Vec<u8> {
    let mut out = b"NATS/1.0".to_vec();
    if let Some(s) = d.status {
        out.extend_from_slice(format!(" {s}").as_bytes());
        if let Some(desc) = &d.description {
            out.extend_from_slice(format!(" {desc}").as_bytes());
        }
    }
    out.extend_from_slice(b"\r\n");
    for (name, value) in &d.headers {
        out.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
    }
    out.extend_from_slice(b"\r\n");
    out
}

fuzz_target!(|data: &[u8]| {
    // Byte 0: the delivery count; byte 1: the subject's length; then the
    // subject, then the header block.
    let (delivered, rest) = data.split_first().map_or((1, data), |(d, r)| (*d, r));
    let (cut, rest) = rest.split_first().map_or((0, rest), |(c, r)| (*c, r));
    let (subject, header) = rest.split_at(usize::from(cut).min(rest.len()));
    let Ok(decoded) = decode_message(subject, Some(header)) else {
        return;
    };
    // A name may start with a character the client passes (its low byte is
    // printable) that is whitespace (U+205F): written out after another
    // header, it reads as that header's folded value (dead letters rename
    // it: see the worker's dead_letter module).
    let folds = decoded
        .headers
        .iter()
        .any(|(n, _)| n.starts_with(char::is_whitespace));
    if !folds {
        assert_eq!(decode_header_block(&encode(&decoded)).as_ref(), Ok(&decoded));
    }
    let delivery = Delivery {
        delivered: u32::from(delivered),
        stored_at: Duration::from_secs(1_000),
        identity: Delivery::identity_of(&[subject, b"1700000000000000000", b"1"]),
    };
    let state = decoded
        .headers
        .iter()
        .find(|(n, _)| n == STATE_HEADER)
        .map(|(_, v)| v.as_str());
    let r = Resumed::new(&Policy::default(), state, &delivery, None);
    assert!(r.attempt() >= u32::from(delivered).max(1));
    assert!(r.engine.start() <= delivery.stored_at);
});
