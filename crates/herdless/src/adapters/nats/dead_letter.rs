//! A dead letter that fits: the server refuses a message (headers and
//! payload together) above its `max_payload`, and a dead-letter stream one
//! above its `max_msg_size`, so a letter that would pass the smaller of the
//! two is cut down before it is published, and says so.
//!
//! # Why cut rather than refuse
//!
//! A task near the limit was stored with its own headers; its dead letter
//! adds the `Herdless-*` headers (a few hundred bytes, up to 512 more for
//! `Herdless-Error`) and no longer fits. Published as it is, the server
//! drops the connection (`maximum payload exceeded`), the letter is never
//! stored, the task is not acked, and it comes back after every ack wait to
//! fail and be refused again: a terminal task that never ends. So the worker
//! knows the limit, and a letter that would pass it keeps every header and
//! the payload's first bytes, with `Herdless-Truncated: ORIGINAL_LENGTH`. If
//! the headers alone are too large, the task's own headers are dropped too
//! (`Herdless-Headers-Dropped: COUNT`). A limit too small even for the
//! worker's own headers cannot take a letter at all: the task is terminated
//! (`+TERM`) with an error naming it.

use async_nats::HeaderMap;
use async_nats::header::IntoHeaderName;
use async_nats::jetstream;
use bytes::Bytes;

use super::Site;

/// The header giving a cut payload's original length in bytes.
pub const TRUNCATED_HEADER: &str = "Herdless-Truncated";

/// The header giving how many of the task's own headers were dropped.
pub const HEADERS_DROPPED_HEADER: &str = "Herdless-Headers-Dropped";

/// The bytes `headers` take on the wire, as the client writes them:
/// `NATS/1.0\r\n`, `NAME: VALUE\r\n` for each value, `\r\n`.
pub(super) fn header_len(headers: &HeaderMap) -> usize {
    let mut n = b"NATS/1.0\r\n\r\n".len();
    for (name, values) in headers.iter() {
        for v in values {
            let name: &str = name.as_ref();
            n += name.len() + 2 + v.as_str().len() + 2;
        }
    }
    n
}

/// The letter to publish under `limit` bytes (headers and payload): as it
/// is when it fits, else cut as the module documentation says; `None` when
/// not even the worker's headers fit. `own` are the headers the worker
/// added (kept whatever happens); `task` the task's own.
pub(super) fn fit(
    task: HeaderMap,
    own: &[(&'static str, String)],
    payload: Bytes,
    limit: usize,
) -> Option<(HeaderMap, Bytes)> {
    let task = clean(&task);
    let build = |task: Option<&HeaderMap>, extra: &[(&'static str, String)]| {
        let mut h = task.cloned().unwrap_or_default();
        for (name, value) in own.iter().chain(extra) {
            h.insert(*name, value.as_str());
        }
        h
    };
    let whole = build(Some(&task), &[]);
    if header_len(&whole).saturating_add(payload.len()) <= limit {
        return Some((whole, payload));
    }
    let cut = [(TRUNCATED_HEADER, payload.len().to_string())];
    let kept = build(Some(&task), &cut);
    let headers = if header_len(&kept) <= limit {
        kept
    } else {
        let count: usize = task.iter().map(|(_, v)| v.len()).sum();
        let dropped = (HEADERS_DROPPED_HEADER, count.to_string());
        let bare = build(None, std::slice::from_ref(&dropped));
        if header_len(&bare).saturating_add(payload.len()) <= limit {
            return Some((bare, payload));
        }
        let bare = build(None, &[cut[0].clone(), dropped]);
        if header_len(&bare) > limit {
            return None;
        }
        bare
    };
    let room = limit - header_len(&headers);
    Some((headers, payload.slice(..room.min(payload.len()))))
}

/// The task's headers made safe to write again: every control character in
/// a value (a bare CR the client let through) as a space, since other
/// readers refuse such a value (the client's own `get_raw_message`) or take
/// a CR for a line break, which would let a task's header forge a
/// `Herdless-*` one; and a name that starts with whitespace the client
/// passed (U+205F: its low byte is `_`) prefixed with `_`, since written
/// after another header it would read as that one's folded value.
fn clean(task: &HeaderMap) -> HeaderMap {
    let mut out = HeaderMap::new();
    for (name, values) in task.iter() {
        let text: &str = name.as_ref();
        let name = if text.starts_with(char::is_whitespace) {
            format!("_{text}").into_header_name()
        } else {
            name.clone()
        };
        for v in values {
            let v: String = v
                .as_str()
                .chars()
                .map(|c| if c.is_control() { ' ' } else { c })
                .collect();
            out.append(name.clone(), v);
        }
    }
    out
}

/// What became of a dead letter.
pub(super) enum Sent {
    /// Stored, confirmed by the stream that holds it.
    Stored,
    /// Not even the worker's headers fit under the limit (in bytes).
    TooLarge(usize),
    /// Not stored: the server or the stream refused it, or did not answer.
    Failed(async_nats::Error),
}

/// Publishes a dead letter to `subject`, fitted under the site's limit, and
/// waits for the stream's confirmation.
pub(super) async fn publish(
    js: &jetstream::Context,
    site: &Site,
    subject: &str,
    task: HeaderMap,
    own: &[(&'static str, String)],
    payload: Bytes,
) -> Sent {
    let limit = site.letter_limit(js);
    let Some((headers, payload)) = fit(task, own, payload, limit) else {
        return Sent::TooLarge(limit);
    };
    let stored = match js
        .publish_with_headers(subject.to_owned(), headers, payload)
        .await
    {
        Ok(ack) => ack.await.map(|_| ()).map_err(async_nats::Error::from),
        Err(e) => Err(e.into()),
    };
    match stored {
        Ok(()) => Sent::Stored,
        Err(e) => Sent::Failed(e),
    }
}

/// [`publish`], asked again for up to `within` while the letter is not
/// stored (a dead-letter stream being elected, deleted and created again),
/// keeping the delivery with in-progress acks meanwhile: a terminal verdict
/// lives only in this delivery, and a task handed to its ack wait would run
/// again on its redelivery. Says once that it is asking again. The letter's
/// `Nats-Msg-Id` makes a second copy stored by a lost confirmation a
/// duplicate the stream drops.
pub(super) async fn publish_again(
    js: &jetstream::Context,
    site: &Site,
    subject: &str,
    (task, own, payload): (HeaderMap, &[(&'static str, String)], Bytes),
    message: &jetstream::Message,
    within: std::time::Duration,
) -> Sent {
    let deadline = tokio::time::Instant::now() + within;
    let mut pauses = super::confirm::pauses();
    let mut said = false;
    loop {
        let sent = publish(js, site, subject, task.clone(), own, payload.clone()).await;
        let Sent::Failed(e) = &sent else {
            return sent;
        };
        let wait = pauses.next_delay();
        if tokio::time::Instant::now() + wait >= deadline {
            return sent;
        }
        if !said {
            said = true;
            tracing::warn!(
                target: "herdless",
                subject = %subject,
                error = %e,
                "dead letter not stored yet: asking again (the task is kept, not run again)"
            );
        }
        let _ = message
            .ack_with(async_nats::jetstream::AckKind::Progress)
            .await;
        tokio::time::sleep(wait).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn own() -> Vec<(&'static str, String)> {
        vec![("Herdless-Reason", "terminal".to_owned())]
    }

    fn task() -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert("Trace", "t-1");
        h
    }

    #[test]
    fn control_characters_in_a_value_become_spaces() {
        let mut h = HeaderMap::new();
        h.insert("X-Note", "a\rHerdless-State: 1;a=99");
        let (h, _) = fit(h, &own(), Bytes::new(), 1 << 20).unwrap();
        assert_eq!(
            h.get("X-Note").unwrap().as_str(),
            "a Herdless-State: 1;a=99"
        );
    }

    #[test]
    fn header_len_counts_what_the_client_writes() {
        // NATS/1.0\r\n + Trace: t-1\r\n + \r\n
        assert_eq!(header_len(&task()), 10 + 12 + 2);
    }

    #[test]
    fn a_letter_that_fits_is_untouched() {
        let (h, p) = fit(task(), &own(), Bytes::from_static(b"abc"), 1 << 20).unwrap();
        assert_eq!(&p[..], b"abc");
        assert_eq!(h.get("Trace").unwrap().as_str(), "t-1");
        assert!(h.get(TRUNCATED_HEADER).is_none());
    }

    #[test]
    fn a_letter_too_large_is_cut_to_the_limit_and_says_so() {
        let payload = Bytes::from(vec![b'x'; 5000]);
        let (h, p) = fit(task(), &own(), payload, 1000).unwrap();
        assert_eq!(header_len(&h) + p.len(), 1000);
        assert_eq!(h.get(TRUNCATED_HEADER).unwrap().as_str(), "5000");
        assert_eq!(h.get("Trace").unwrap().as_str(), "t-1");
        assert!(p.iter().all(|&b| b == b'x'));
    }

    fn big_headers() -> HeaderMap {
        let mut big = HeaderMap::new();
        for i in 0..50 {
            big.append("Big", format!("{i:0>40}"));
        }
        big
    }

    #[test]
    fn headers_too_large_are_dropped_before_the_worker_gives_up() {
        let (h, p) = fit(big_headers(), &own(), Bytes::from_static(b"abc"), 300).unwrap();
        assert!(h.get("Big").is_none());
        assert_eq!(h.get(HEADERS_DROPPED_HEADER).unwrap().as_str(), "50");
        assert!(h.get(TRUNCATED_HEADER).is_none(), "the payload fits");
        assert_eq!(&p[..], b"abc");
        let (h, p) = fit(big_headers(), &own(), Bytes::from(vec![b'y'; 900]), 300).unwrap();
        assert_eq!(h.get(TRUNCATED_HEADER).unwrap().as_str(), "900");
        assert_eq!(header_len(&h) + p.len(), 300);
        assert!(fit(task(), &own(), Bytes::new(), 20).is_none());
    }
}
