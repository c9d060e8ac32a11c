use super::*;

fn block(lines: &[&[u8]]) -> Vec<u8> {
    let mut out = b"NATS/1.0\r\n".to_vec();
    for l in lines {
        out.extend_from_slice(l);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out
}

fn pairs(d: &Decoded) -> Vec<(&str, &str)> {
    d.headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect()
}

#[test]
fn the_issues_poison_is_refused() {
    let poison = block(&[b"X-Origin: caf\xe9"]);
    assert_eq!(
        decode_message(b"tasks.a", Some(&poison)),
        Err(Undecodable::HeaderNotUtf8)
    );
}

#[test]
fn ordinary_headers_decode_in_order_with_repeats() {
    let b = block(&[b"Trace: t-1", b"A: 1", b"A: 2", b"Herdless-State: 1;a=1"]);
    let d = decode_message(b"tasks.a", Some(&b)).unwrap();
    assert_eq!(
        pairs(&d),
        [
            ("Trace", "t-1"),
            ("A", "1"),
            ("A", "2"),
            ("Herdless-State", "1;a=1")
        ]
    );
    assert_eq!((d.status, d.description), (None, None));
}

#[test]
fn each_rule_has_its_reason() {
    let cases: [(&[u8], &[u8], Undecodable); 9] = [
        (b"t.\xff", b"NATS/1.0\r\n\r\n", Undecodable::SubjectNotUtf8),
        (
            b"t.a\xc2\xa0b",
            b"NATS/1.0\r\n\r\n",
            Undecodable::SubjectWhitespace,
        ),
        (b"t", b"", Undecodable::NoVersionLine),
        (b"t", b"NATS/2.0\r\n\r\n", Undecodable::NoVersionLine),
        (b"t", b"HTTP/1.1 200\r\n\r\n", Undecodable::NoVersionLine),
        (b"t", b"NATS/1.0 abc\r\n\r\n", Undecodable::BadStatus),
        (b"t", b"NATS/1.0 0999\r\n\r\n", Undecodable::BadStatus),
        (
            b"t",
            b"NATS/1.0\r\nno colon here\r\n\r\n",
            Undecodable::NoColon,
        ),
        (
            b"t",
            b"NATS/1.0\r\nBad Name: v\r\n\r\n",
            Undecodable::BadName,
        ),
    ];
    for (subject, header, why) in cases {
        assert_eq!(
            decode_message(subject, Some(header)),
            Err(why),
            "{:?}",
            String::from_utf8_lossy(header)
        );
        assert!(!why.reason().is_empty() && why.to_string().contains("cannot decode"));
    }
}

#[test]
fn statuses_are_three_digits_not_starting_with_zero() {
    for (line, status) in [
        ("NATS/1.0 100", Some(100)),
        ("NATS/1.0 999", Some(999)),
        ("NATS/1.0 503 No Responders", Some(503)),
        ("NATS/1.0", None),
        ("NATS/1.0   ", None),
    ] {
        let b = format!("{line}\r\n\r\n");
        assert_eq!(
            decode_header_block(b.as_bytes()).unwrap().status,
            status,
            "{line}"
        );
    }
    for bad in [
        "NATS/1.0 099",
        "NATS/1.0 1000",
        "NATS/1.0 12",
        "NATS/1.0 1a3",
    ] {
        let b = format!("{bad}\r\n\r\n");
        assert_eq!(
            decode_header_block(b.as_bytes()),
            Err(Undecodable::BadStatus),
            "{bad}"
        );
    }
    let d = decode_header_block(b"NATS/1.0 408 Request Timeout\r\n\r\n").unwrap();
    assert_eq!(d.description.as_deref(), Some("Request Timeout"));
}

#[test]
fn names_are_judged_by_the_low_byte_of_each_character() {
    // U+0141 has low byte 0x41 ('A'): the client accepts it.
    let ok = block(&["\u{141}x: v".as_bytes()]);
    assert_eq!(
        pairs(&decode_header_block(&ok).unwrap()),
        [("\u{141}x", "v")]
    );
    // U+00E9 is 0xE9 itself: refused; so are control characters and DEL.
    for bad in ["caf\u{e9}: v", "a\u{1}: v", "a\u{7f}: v", "\tA: v"] {
        assert_eq!(
            decode_header_block(&block(&[bad.as_bytes()])),
            Err(Undecodable::BadName),
            "{bad:?}"
        );
    }
    // An empty name passes the client's test.
    assert_eq!(
        pairs(&decode_header_block(&block(&[b": v"])).unwrap()),
        [("", "v")]
    );
}

#[test]
fn values_are_trimmed_and_folded_lines_joined() {
    // Only the ends are trimmed: the spaces before a folded line stay.
    let b = block(&[b"A:   one  ", b" two", b"\tthree", b"B:"]);
    assert_eq!(
        pairs(&decode_header_block(&b).unwrap()),
        [("A", "one   two\tthree"), ("B", "")]
    );
    // A value may hold a colon; only the first one splits.
    let b = block(&[b"Url: http://x:1/"]);
    assert_eq!(
        pairs(&decode_header_block(&b).unwrap()),
        [("Url", "http://x:1/")]
    );
}

#[test]
fn bare_line_feeds_and_missing_terminators_are_read_as_the_client_reads_them() {
    // Lines end at \n alone too; the block need not end with an empty line.
    let d = decode_header_block(b"NATS/1.0\nA: 1\nB: 2").unwrap();
    assert_eq!(pairs(&d), [("A", "1"), ("B", "2")]);
    // A carriage return inside a line stays in it.
    let d = decode_header_block(b"NATS/1.0\r\nA: x\ry\r\n\r\n").unwrap();
    assert_eq!(pairs(&d), [("A", "x\ry")]);
}

#[test]
fn a_message_without_headers_needs_only_a_utf8_subject() {
    assert_eq!(
        decode_message("t.a\u{a0}b".as_bytes(), None),
        Ok(Decoded::default())
    );
    assert_eq!(
        decode_message(b"t.\xe9", None),
        Err(Undecodable::SubjectNotUtf8)
    );
}
