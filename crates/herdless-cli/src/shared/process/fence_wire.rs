//! What `herdless worker` tells an attempt's supervisor (`herdless fence`)
//! over the supervisor's stdin, and how.
//!
//! ```text
//! LEN (u64, big-endian) PAYLOAD (LEN bytes)     the task's payload, once
//! MS (u64, big-endian)                          "you may run for MS more"
//! MS ...                                        each later extension
//! end of file                                   the worker is gone
//! ```
//!
//! The first `MS` comes with the payload, before the command starts;
//! [`UNFENCED`] says there is no claim, so no lease to outrun (only the
//! end of file then ends the attempt early). Each `MS` counts from when
//! the supervisor reads it, which is after the worker computed it: the
//! supervisor's deadline can only be later than the worker's fence by the
//! pipe's latency, which the takeover margin covers (see `cmd/fence`).

use std::io;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};

/// The first extension of an attempt without a claim: no deadline.
pub(crate) const UNFENCED: u64 = u64::MAX;

/// The largest payload the supervisor accepts (far above any NATS server's
/// `max_payload`, 64 MiB at most): anything longer is a broken stream.
pub(crate) const MAX_PAYLOAD: u64 = 1 << 30;

/// The payload's frame: its length, then its bytes.
pub(crate) fn payload_frame(payload: &[u8]) -> Vec<u8> {
    let mut frame = Vec::with_capacity(8 + payload.len());
    frame.extend_from_slice(&(payload.len() as u64).to_be_bytes());
    frame.extend_from_slice(payload);
    frame
}

/// An extension's frame: `left` (rounded down to the millisecond, so the
/// supervisor's deadline is never later than the fence by rounding), or
/// [`UNFENCED`] for `None`.
pub(crate) fn extension_frame(left: Option<Duration>) -> [u8; 8] {
    let ms = left.map_or(UNFENCED, |d| {
        u64::try_from(d.as_millis()).unwrap_or(UNFENCED - 1)
    });
    ms.to_be_bytes()
}

/// The next number on `r`; `None` at a clean end of file.
pub(crate) async fn read_u64(r: &mut (impl AsyncRead + Unpin)) -> io::Result<Option<u64>> {
    let mut buf = [0u8; 8];
    let mut got = 0;
    while got < buf.len() {
        let n = r.read(&mut buf[got..]).await?;
        if n == 0 {
            return if got == 0 {
                Ok(None)
            } else {
                Err(io::ErrorKind::UnexpectedEof.into())
            };
        }
        got += n;
    }
    Ok(Some(u64::from_be_bytes(buf)))
}

/// The payload frame on `r`.
pub(crate) async fn read_payload(r: &mut (impl AsyncRead + Unpin)) -> io::Result<Vec<u8>> {
    let len = read_u64(r).await?.ok_or(io::ErrorKind::UnexpectedEof)?;
    if len > MAX_PAYLOAD {
        return Err(io::Error::other(format!(
            "payload of {len} bytes announced (at most {MAX_PAYLOAD})"
        )));
    }
    let mut payload = vec![0; len as usize];
    r.read_exact(&mut payload).await?;
    Ok(payload)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn frames_read_back_and_end_of_file_is_none() {
        let mut wire = payload_frame(b"page-1");
        wire.extend_from_slice(&extension_frame(Some(Duration::from_micros(2_999_999))));
        wire.extend_from_slice(&extension_frame(None));
        let mut r = &wire[..];
        assert_eq!(read_payload(&mut r).await.unwrap(), b"page-1");
        assert_eq!(read_u64(&mut r).await.unwrap(), Some(2_999));
        assert_eq!(read_u64(&mut r).await.unwrap(), Some(UNFENCED));
        assert_eq!(read_u64(&mut r).await.unwrap(), None);
        let mut cut = &[0u8, 1, 2][..];
        assert!(read_u64(&mut cut).await.is_err());
        let huge = (MAX_PAYLOAD + 1).to_be_bytes();
        assert!(read_payload(&mut &huge[..]).await.is_err());
    }
}
