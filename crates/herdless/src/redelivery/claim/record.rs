//! A turn's record: the value stored under `KEY.TURN` in the completion
//! bucket, written and read as one line of text.
//!
//! | state | value |
//! |---|---|
//! | running | `run;by=HOLDER;lease_ms=MS;task=STREAM:SEQUENCE;t=UNIX_MS` |
//! | released for a retry | `free;by=HOLDER;task=STREAM:SEQUENCE;t=UNIX_MS` |
//! | succeeded | `done;by=HOLDER;task=STREAM:SEQUENCE;a=ATTEMPT;t=UNIX_MS` |
//!
//! `HOLDER` is the claim's random token (16 hexadecimal digits): a new one
//! for every turn taken, so a worker recognises its own record (a write
//! whose confirmation was lost) and nobody else's. `t` is the writer's wall
//! clock, for people reading the bucket: no decision reads it (see
//! `turns.rs` for the clock the lease is judged by). A value this worker
//! cannot read counts as a running claim of unknown lease: it is waited out
//! like one, never taken for a completion (which would drop the task).

use std::fmt::Write as _;
use std::time::Duration;

/// What a turn's record says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    /// A delivery holds the task and runs it; the lease, when the value
    /// names one.
    Running { lease: Option<Duration> },
    /// The holder's attempt failed or was deferred, and the task went back
    /// to the broker: the next delivery takes the next turn.
    Free,
    /// The task succeeded.
    Done,
}

/// A turn's record: its state and its holder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Record {
    pub(crate) state: State,
    /// The holder's token (0 when the value does not name one).
    pub(crate) by: u64,
}

/// The longest lease a record may ask a contender to wait out: longer ones
/// (a value written by hand) are cut to it.
pub(crate) const MAX_LEASE: Duration = Duration::from_secs(3600);

impl Record {
    /// Reads a value. Never fails: what it cannot read is a running claim
    /// of unknown lease (see the module documentation).
    pub(crate) fn parse(value: &[u8]) -> Record {
        let text = std::str::from_utf8(value).unwrap_or("");
        let mut fields = text.split(';');
        let kind = fields.next().unwrap_or("");
        let (mut by, mut lease) = (0, None);
        for field in fields {
            match field.split_once('=') {
                Some(("by", v)) => by = u64::from_str_radix(v, 16).unwrap_or(0),
                Some(("lease_ms", v)) => {
                    lease = v
                        .parse::<u64>()
                        .ok()
                        .map(|ms| Duration::from_millis(ms).min(MAX_LEASE));
                }
                _ => {}
            }
        }
        let state = match kind {
            "done" => State::Done,
            "free" => State::Free,
            "run" => State::Running { lease },
            _ => State::Running { lease: None },
        };
        Record { state, by }
    }

    /// The value to store: the record, the task (`STREAM:SEQUENCE`), the
    /// attempt (for a success) and the writer's wall-clock time.
    pub(crate) fn value(&self, task: &str, attempt: Option<u32>, unix_ms: u128) -> String {
        let mut out = String::with_capacity(96);
        let kind = match self.state {
            State::Running { .. } => "run",
            State::Free => "free",
            State::Done => "done",
        };
        let _ = write!(out, "{kind};by={:016x}", self.by);
        if let State::Running { lease: Some(l) } = self.state {
            let _ = write!(out, ";lease_ms={}", l.as_millis());
        }
        let _ = write!(out, ";task={task}");
        if let Some(a) = attempt {
            let _ = write!(out, ";a={a}");
        }
        let _ = write!(out, ";t={unix_ms}");
        out
    }
}

/// One read of a task's records: the turn, its record and its revision
/// (the bucket's stream sequence of that value: it changes with every
/// write, a renewal included).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Seen {
    pub(crate) turn: u32,
    pub(crate) revision: u64,
    pub(crate) record: Record,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_reads_back_as_written() {
        let lease = Some(Duration::from_millis(8000));
        for state in [State::Running { lease }, State::Free, State::Done] {
            let r = Record { state, by: 0xfeed };
            let v = r.value("TASKS:7", Some(2), 1_700_000_000_000);
            assert_eq!(Record::parse(v.as_bytes()), r, "{v}");
        }
        let v = Record {
            state: State::Running { lease },
            by: 0xab,
        }
        .value("TASKS:7", None, 5);
        assert_eq!(v, "run;by=00000000000000ab;lease_ms=8000;task=TASKS:7;t=5");
    }

    #[test]
    fn what_cannot_be_read_is_a_claim_to_wait_out_never_a_completion() {
        for odd in [&b"forged"[..], b"", b"\xff\xfe", b"done", b"DONE;by=1"] {
            let r = Record::parse(odd);
            if odd == b"done" {
                assert_eq!(r.state, State::Done);
            } else {
                assert_eq!(r.state, State::Running { lease: None }, "{odd:?}");
            }
        }
        let r = Record::parse(b"run;by=zz;lease_ms=99999999999999");
        assert_eq!(r.by, 0);
        assert_eq!(
            r.state,
            State::Running {
                lease: Some(MAX_LEASE)
            }
        );
    }
}
