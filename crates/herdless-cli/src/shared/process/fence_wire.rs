//! What `herdless worker` tells an attempt's supervisor (`herdless fence`)
//! over the supervisor's stdin, and how.
//!
//! ```text
//! LEN (u64, big-endian) PAYLOAD (LEN bytes)     the task's payload, once
//! MS (u64, big-endian)                          "you may run until MS"
//! MS ...                                        each later extension
//! end of file                                   the worker is gone
//! ```
//!
//! The first `MS` comes with the payload, before the command starts;
//! [`UNFENCED`] says there is no claim, so no lease to outrun (only the
//! end of file then ends the attempt early). `MS` is a time on the
//! machine's `CLOCK_MONOTONIC` (milliseconds, rounded down), which the
//! worker and its supervisors share: "until", not "for D more", so that a
//! frame delayed in the pipe, or written late by a worker frozen between
//! reading its fence and writing, cannot move the deadline past the fence.
//! The worker reads the clock before the time left to its fence, so the
//! deadline it sends is never later than the fence.

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

/// The machine's monotonic clock (`CLOCK_MONOTONIC`), shared by every
/// process on it; zero if it cannot be read (a deadline then lies in the
/// past: the attempt is ended rather than left unbounded).
pub(crate) fn monotonic_now() -> Duration {
    use nix::time::{ClockId, clock_gettime};
    clock_gettime(ClockId::CLOCK_MONOTONIC).map_or(Duration::ZERO, Duration::from)
}

/// An extension's frame: the monotonic time at which `left` (read after
/// the clock) runs out, rounded down to the millisecond, or [`UNFENCED`]
/// when `left` gives `None`.
pub(crate) fn extension_frame(left: impl FnOnce() -> Option<Duration>) -> [u8; 8] {
    let now = monotonic_now();
    let ms = left().map_or(UNFENCED, |d| {
        u64::try_from((now + d).as_millis()).unwrap_or(UNFENCED - 1)
    });
    ms.to_be_bytes()
}

/// The time left until the frame `ms` (`None`: unfenced).
pub(crate) fn left_until(ms: u64) -> Option<Duration> {
    (ms != UNFENCED).then(|| Duration::from_millis(ms).saturating_sub(monotonic_now()))
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
        let before = monotonic_now();
        let mut wire = payload_frame(b"page-1");
        wire.extend_from_slice(&extension_frame(|| Some(Duration::from_secs(3))));
        wire.extend_from_slice(&extension_frame(|| None));
        let mut r = &wire[..];
        assert_eq!(read_payload(&mut r).await.unwrap(), b"page-1");
        let until = read_u64(&mut r).await.unwrap().unwrap();
        let after = monotonic_now();
        let secs = Duration::from_secs(3);
        assert!(until >= ((before + secs).as_millis() as u64).saturating_sub(1));
        assert!(until <= (after + secs).as_millis() as u64);
        let left = left_until(until).unwrap();
        assert!(left <= secs && left > Duration::from_secs(2), "{left:?}");
        assert_eq!(read_u64(&mut r).await.unwrap(), Some(UNFENCED));
        assert_eq!(left_until(UNFENCED), None);
        assert_eq!(read_u64(&mut r).await.unwrap(), None);
        let mut cut = &[0u8, 1, 2][..];
        assert!(read_u64(&mut cut).await.is_err());
        let huge = (MAX_PAYLOAD + 1).to_be_bytes();
        assert!(read_payload(&mut &huge[..]).await.is_err());
    }
}
