//! The sweep: messages the NATS client cannot decode, found and settled
//! without it.
//!
//! # Why, and how
//!
//! A message whose header block the client cannot parse never reaches the
//! worker: the client drops its connection instead (see
//! [`decode_message`](super::decode_message)), and the broker redelivers it
//! after the ack wait, forever. What the worker does see is the reconnect:
//! [`Worker::run`] watches the client's connection count, and after a
//! reconnect (or a pull that ends early: a message with a status line ends
//! it) it sweeps the consumer:
//!
//! 1. the candidates are the messages the consumer delivered and has not
//!    seen acknowledged: stream sequences above its ack floor, up to its
//!    last delivered one (`$JS.API.CONSUMER.INFO`), matching its filter;
//! 2. each is read through the JetStream API (`$JS.API.STREAM.MSG.GET`,
//!    `next_by_subj` = the filter, so deleted and acked messages of a
//!    work-queue stream are skipped), whose reply is JSON with the header
//!    block and payload in base64: the client parses no header of it;
//! 3. [`decode_message`](super::decode_message) judges the raw bytes with
//!    the client's own rules (and a status line in the header block counts
//!    as undecodable too: the client's pull reads it as a notice of the
//!    server's and drops the message); a message it refuses is dead-lettered with
//!    `Herdless-Reason: undecodable` (payload intact, or cut to the limit as
//!    any dead letter; the original header block in
//!    `Herdless-Headers-Base64`), then acknowledged;
//!    without a dead-letter subject it is terminated (`+TERM`), with an
//!    error in the log. Either way a warning names its stream sequence.
//!
//! The acknowledgement is published to the message's ack subject, which the
//! worker writes itself (the delivery that carried it never reached the
//! worker): see [`Site::ack_subject`]. Acknowledging, rather than deleting
//! the message from the stream, needs no permission beyond what a worker
//! has anyway (publish on `$JS.ACK.STREAM.CONSUMER.>`), leaves a
//! limits-retention stream's history alone, and is what any other give-up
//! does. The sweep itself needs `$JS.API.CONSUMER.INFO.STREAM.CONSUMER` and
//! `$JS.API.STREAM.MSG.GET.STREAM`.
//!
//! Candidates that decode are left alone: they are in flight on some worker
//! or were already acked. A sweep reads at most [`MAX_SWEEP`] messages and
//! says so when it stops there.

use async_nats::jetstream::{self, ErrorCode, consumer::PullConsumer, response::Response, stream};
use base64::Engine as _;
use bytes::Bytes;
use serde::{Deserialize, Serialize};

use super::dead_letter::{self, Sent};
use super::handle::{Outcome, key_only, where_from};
use super::{NatsError, Site, Undecodable, Worker, decode_message};

/// The most messages one sweep reads.
pub const MAX_SWEEP: u64 = 10_000;

/// The header carrying an undecodable message's original header block, in
/// standard base64.
pub const HEADERS_BASE64_HEADER: &str = "Herdless-Headers-Base64";

/// The header naming what the client could not decode
/// ([`Undecodable::reason`]).
pub const UNDECODABLE_HEADER: &str = "Herdless-Undecodable";

#[derive(Serialize)]
struct Get<'a> {
    seq: u64,
    next_by_subj: &'a str,
}

#[derive(Deserialize)]
struct Got {
    message: stream::RawMessage,
}

/// A stored message as the JetStream API gives it: raw bytes.
struct Stored {
    sequence: u64,
    subject: String,
    header: Option<Vec<u8>>,
    payload: Bytes,
}

/// Judges a stored message: the JSON API writes a subject's bytes that are
/// not UTF-8 as U+FFFD, so a subject holding U+FFFD counts as not UTF-8;
/// and a header block with a status line decodes, but the client's pull
/// takes it for a notice of the server's (`100` heartbeat, `408` expired,
/// `404`, others an error) and never hands the message over.
fn judge(stored: &Stored) -> Result<(), Undecodable> {
    if stored.subject.contains('\u{fffd}') {
        return Err(Undecodable::SubjectNotUtf8);
    }
    let decoded = decode_message(stored.subject.as_bytes(), stored.header.as_deref())?;
    match decoded.status {
        Some(_) => Err(Undecodable::Status),
        None => Ok(()),
    }
}

impl<C, N> Worker<C, N> {
    /// Sweeps the consumer for messages the client cannot decode and settles
    /// them (see the module documentation); returns one outcome per message
    /// found. Run by [`Worker::run`] after every reconnect.
    pub(super) async fn sweep(
        &self,
        js: &jetstream::Context,
        consumer: &PullConsumer,
        site: &Site,
    ) -> Result<Vec<Outcome>, NatsError> {
        let info = consumer
            .get_info()
            .await
            .map_err(|e| NatsError::broker("reading the consumer", e))?;
        let (floor, top) = (
            info.ack_floor.stream_sequence,
            info.delivered.stream_sequence,
        );
        let mut outcomes = Vec::new();
        let (mut seq, mut read) = (floor.saturating_add(1), 0u64);
        while seq <= top {
            if read == MAX_SWEEP {
                tracing::warn!(
                    target: "herdless",
                    from = seq,
                    to = top,
                    "sweep stopped after {MAX_SWEEP} messages: the rest waits for the next one"
                );
                break;
            }
            let Some(stored) = get(js, site, seq).await? else {
                break;
            };
            read += 1;
            if stored.sequence > top {
                break;
            }
            seq = stored.sequence.saturating_add(1);
            if let Err(why) = judge(&stored) {
                outcomes.push(self.settle_undecodable(js, site, stored, why).await?);
            }
        }
        Ok(outcomes)
    }

    async fn settle_undecodable(
        &self,
        js: &jetstream::Context,
        site: &Site,
        stored: Stored,
        why: Undecodable,
    ) -> Result<Outcome, NatsError> {
        let sequence = stored.sequence;
        tracing::warn!(
            target: "herdless",
            stream = %site.stream,
            sequence,
            reason = why.reason(),
            "{why}: settled without a delivery (dead letter reason undecodable)"
        );
        let ack = match &self.dead_letter {
            None => {
                tracing::error!(
                    target: "herdless",
                    stream = %site.stream,
                    sequence,
                    "undecodable message terminated (+TERM): no dead-letter subject keeps it"
                );
                "+TERM"
            }
            Some(subject) => {
                let identity = site.identity(sequence);
                let mut own = vec![
                    (crate::redelivery::STATE_HEADER, key_only(identity)),
                    ("Herdless-Reason", "undecodable".to_owned()),
                    (UNDECODABLE_HEADER, why.reason().to_owned()),
                    ("Herdless-Attempts", "0".to_owned()),
                ];
                own.extend(where_from(site, sequence, identity, &stored.subject));
                if let Some(h) = &stored.header {
                    let b64 = base64::engine::general_purpose::STANDARD.encode(h);
                    own.push((HEADERS_BASE64_HEADER, b64));
                }
                let task = async_nats::HeaderMap::new();
                match dead_letter::publish(js, site, subject, task, &own, stored.payload).await {
                    Sent::Stored => "+ACK",
                    Sent::TooLarge(limit) => {
                        tracing::error!(
                            target: "herdless",
                            sequence,
                            limit,
                            "no dead letter fits the server's limit: terminated (+TERM)"
                        );
                        "+TERM"
                    }
                    Sent::Failed(e) => {
                        tracing::error!(
                            target: "herdless",
                            sequence,
                            error = %e,
                            "dead letter not stored: the message is left to the ack wait"
                        );
                        return Ok(Outcome::Unsettled);
                    }
                }
            }
        };
        js.client()
            .request(
                site.ack_subject(sequence),
                Bytes::from_static(ack.as_bytes()),
            )
            .await
            .map_err(|e| NatsError::broker("acknowledging an undecodable message", e))?;
        Ok(Outcome::Undecodable { sequence, why })
    }
}

/// The first message of the site's filter at or after `seq`; `None` when
/// there is none.
async fn get(js: &jetstream::Context, site: &Site, seq: u64) -> Result<Option<Stored>, NatsError> {
    let request = Get {
        seq,
        next_by_subj: &site.filter,
    };
    let subject = format!("STREAM.MSG.GET.{}", site.stream);
    let reply: Response<Got> = js
        .request(subject, &request)
        .await
        .map_err(|e| NatsError::broker("reading a stored message", e))?;
    let raw = match reply {
        Response::Ok(got) => got.message,
        Response::Err { error } if error.error_code() == ErrorCode::NO_MESSAGE_FOUND => {
            return Ok(None);
        }
        Response::Err { error } => {
            return Err(NatsError::broker("reading a stored message", error));
        }
    };
    let b64 = base64::engine::general_purpose::STANDARD;
    let decode = |s: &str| {
        b64.decode(s)
            .map_err(|e| NatsError::broker("reading a stored message", e))
    };
    Ok(Some(Stored {
        sequence: raw.sequence,
        header: raw.headers.as_deref().map(decode).transpose()?,
        payload: decode(&raw.payload)?.into(),
        subject: raw.subject,
    }))
}
