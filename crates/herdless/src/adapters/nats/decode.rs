//! Whether the NATS client can decode a message the server delivers: the
//! rules of `async-nats`'s protocol parser, applied to raw bytes.
//!
//! # Why a second decoder
//!
//! `async-nats` (0.46, and as of 0.51 still) reads a delivered message's
//! header block inside its connection task. A block it cannot read is an
//! I/O error there: the client drops its connection and reconnects, the
//! message is never handed to the worker, and after the consumer's ack wait
//! the broker redelivers it, which drops the connection again, forever; the
//! other messages of the same pull are lost with the connection each time.
//! A subject that is not UTF-8 is worse: the parser panics and the client is
//! gone. The worker cannot fix the client's parser; it finds such messages
//! through the JetStream API instead, which carries them as base64 in a JSON
//! reply (see `poison.rs`), and needs to know which of the bytes it finds
//! the client would refuse. [`decode_message`] is that knowledge: the same
//! steps as the client's `HMSG` branch, on bytes, returning what the client
//! would hand over, or why it would fail. It never panics.
//!
//! The rules, in the client's order:
//!
//! 1. the subject is UTF-8 (else the client panics), and, for a message with
//!    headers, holds no Unicode whitespace (the client splits the `HMSG`
//!    line on any, so such a subject makes a line with too many arguments);
//! 2. the header block is UTF-8;
//! 3. its first line (lines end at `\n`, a `\r` before it dropped) starts
//!    with `NATS/1.0`; the rest, trimmed, is an optional status (exactly
//!    three digits, the first not `0`) and description;
//! 4. every other non-empty line holds a `:`; the name before it has no
//!    character whose low byte (`c as u8`) is outside 33..=126; the value is
//!    trimmed, and lines that follow starting with whitespace are appended
//!    to it (folded headers).

use std::fmt;

/// The header block's first bytes in every version of the protocol.
const VERSION: &str = "NATS/1.0";

/// What the client would make of a message: its status line and headers.
///
/// ```
/// use herdless::adapters::nats::decode_message;
/// let m = decode_message(b"tasks.a", Some(b"NATS/1.0\r\nTrace: t-1\r\n\r\n"))?;
/// assert_eq!(m.headers, [("Trace".to_owned(), "t-1".to_owned())]);
/// assert_eq!(m.status, None);
/// # Ok::<(), herdless::adapters::nats::Undecodable>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Decoded {
    /// The status code of the version line (`NATS/1.0 503`), if any.
    pub status: Option<u16>,
    /// The description after the status, if any.
    pub description: Option<String>,
    /// The headers in order, names as written.
    pub headers: Vec<(String, String)>,
}

/// Why the client cannot decode a message.
///
/// ```
/// use herdless::adapters::nats::{decode_message, Undecodable};
/// let poison = decode_message(b"tasks.a", Some(b"NATS/1.0\r\nX-Origin: caf\xe9\r\n\r\n"));
/// assert_eq!(poison, Err(Undecodable::HeaderNotUtf8));
/// assert_eq!(Undecodable::HeaderNotUtf8.reason(), "header_not_utf8");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Undecodable {
    /// The subject is not UTF-8 (the client panics).
    SubjectNotUtf8,
    /// The subject holds Unicode whitespace (a message with headers only).
    SubjectWhitespace,
    /// The header block is not UTF-8.
    HeaderNotUtf8,
    /// The header block is empty or does not start with `NATS/1.0`.
    NoVersionLine,
    /// The version line's status is not three digits.
    BadStatus,
    /// A header line without a `:`.
    NoColon,
    /// A header name with a byte outside 33..=126.
    BadName,
    /// A status line (`NATS/1.0 503`): the client decodes it, but its pull
    /// takes the message for a notice of the server's and drops it (never
    /// returned by [`decode_message`]; the worker's sweep judges it so).
    Status,
}

impl Undecodable {
    /// A short name for logs and the `Herdless-Undecodable` header:
    /// `subject_not_utf8`, `subject_whitespace`, `header_not_utf8`,
    /// `no_version_line`, `bad_status`, `no_colon`, `bad_name`, `status`.
    pub const fn reason(self) -> &'static str {
        match self {
            Undecodable::SubjectNotUtf8 => "subject_not_utf8",
            Undecodable::SubjectWhitespace => "subject_whitespace",
            Undecodable::HeaderNotUtf8 => "header_not_utf8",
            Undecodable::NoVersionLine => "no_version_line",
            Undecodable::BadStatus => "bad_status",
            Undecodable::NoColon => "no_colon",
            Undecodable::BadName => "bad_name",
            Undecodable::Status => "status",
        }
    }
}

impl fmt::Display for Undecodable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self {
            Undecodable::SubjectNotUtf8 => "its subject is not UTF-8",
            Undecodable::SubjectWhitespace => "its subject holds Unicode whitespace",
            Undecodable::HeaderNotUtf8 => "its header block is not UTF-8",
            Undecodable::NoVersionLine => "its header block does not start with NATS/1.0",
            Undecodable::BadStatus => "its header status is not three digits",
            Undecodable::NoColon => "a header line has no ':'",
            Undecodable::BadName => "a header name has a byte outside 33..=126",
            Undecodable::Status => "its header block has a status line (read as the server's)",
        };
        write!(f, "the NATS client cannot decode the message: {what}")
    }
}

impl std::error::Error for Undecodable {}

/// Decodes a delivered message's subject and header block (`None`: a
/// message without headers) as the NATS client (async-nats) does, and
/// never panics. The rules, in the client's order:
///
/// 1. the subject is UTF-8 (else the client panics), and, for a message with
///    headers, holds no Unicode whitespace (the client splits the `HMSG`
///    line on any);
/// 2. the header block is UTF-8;
/// 3. its first line (lines end at `\n`, a `\r` before it dropped) starts
///    with `NATS/1.0`; the rest, trimmed, is an optional status (three
///    digits, the first not `0`) and description;
/// 4. every other non-empty line holds a `:`; the name before it has no
///    character whose low byte (`c as u8`) is outside 33..=126; the value is
///    trimmed, and the lines after it that start with whitespace are
///    appended to it (folded headers).
///
/// ```
/// use herdless::adapters::nats::{decode_message, Undecodable};
/// assert_eq!(decode_message(b"tasks.caf\xe9", None), Err(Undecodable::SubjectNotUtf8));
/// assert_eq!(decode_message(b"t", Some(b"NATS/1.0\r\nno colon\r\n\r\n")), Err(Undecodable::NoColon));
/// assert_eq!(decode_message(b"t", Some(b"NATS/1.0 503\r\n\r\n"))?.status, Some(503));
/// # Ok::<(), Undecodable>(())
/// ```
///
/// # Errors
///
/// [`Undecodable`]: the first rule the message breaks.
pub fn decode_message(subject: &[u8], header: Option<&[u8]>) -> Result<Decoded, Undecodable> {
    let subject = std::str::from_utf8(subject).map_err(|_| Undecodable::SubjectNotUtf8)?;
    let Some(header) = header else {
        return Ok(Decoded::default());
    };
    if subject.contains(char::is_whitespace) {
        return Err(Undecodable::SubjectWhitespace);
    }
    decode_header_block(header)
}

/// Decodes a header block alone (rules 2 to 4 of [`decode_message`]).
///
/// ```
/// use herdless::adapters::nats::{decode_header_block, Undecodable};
/// let folded = decode_header_block(b"NATS/1.0\r\nA:  one\r\n two \r\n\r\n")?;
/// assert_eq!(folded.headers, [("A".to_owned(), "one two".to_owned())]);
/// assert_eq!(decode_header_block(b""), Err(Undecodable::NoVersionLine));
/// # Ok::<(), Undecodable>(())
/// ```
///
/// # Errors
///
/// [`Undecodable`]: the first rule the block breaks.
pub fn decode_header_block(block: &[u8]) -> Result<Decoded, Undecodable> {
    let text = std::str::from_utf8(block).map_err(|_| Undecodable::HeaderNotUtf8)?;
    let mut lines = text.lines().peekable();
    let version = lines.next().ok_or(Undecodable::NoVersionLine)?;
    let suffix = version
        .strip_prefix(VERSION)
        .map(str::trim)
        .ok_or(Undecodable::NoVersionLine)?;
    let (status, description) = suffix
        .split_once(' ')
        .map(|(s, d)| (s.trim(), d.trim()))
        .unwrap_or((suffix, ""));
    let mut out = Decoded {
        status: if status.is_empty() {
            None
        } else {
            Some(parse_status(status)?)
        },
        description: (!description.is_empty()).then(|| description.to_owned()),
        headers: Vec::new(),
    };
    while let Some(line) = lines.next() {
        if line.is_empty() {
            continue;
        }
        let (name, value) = line.split_once(':').ok_or(Undecodable::NoColon)?;
        // The client's test: the low byte of each character (a character
        // above U+00FF passes when its low byte is printable ASCII).
        if name
            .chars()
            .any(|c| c == ':' || (c as u8) < 33 || (c as u8) > 126)
        {
            return Err(Undecodable::BadName);
        }
        let mut value = value.trim_start().to_owned();
        while let Some(more) = lines.next_if(|s| s.starts_with(char::is_whitespace)) {
            value.push_str(more);
        }
        value.truncate(value.trim_end().len());
        out.headers.push((name.to_owned(), value));
    }
    Ok(out)
}

/// Three ASCII digits, the first not `0`.
fn parse_status(s: &str) -> Result<u16, Undecodable> {
    match s.as_bytes() {
        [a @ b'1'..=b'9', b @ b'0'..=b'9', c @ b'0'..=b'9'] => {
            Ok(u16::from(a - b'0') * 100 + u16::from(b - b'0') * 10 + u16::from(c - b'0'))
        }
        _ => Err(Undecodable::BadStatus),
    }
}

#[cfg(test)]
mod tests;
