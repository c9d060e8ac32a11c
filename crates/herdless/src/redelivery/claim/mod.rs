//! Claim before run: which delivery of a task may run it, decided from the
//! task's records in a shared key-value store and the deciding worker's own
//! monotonic clock (sans-IO; the NATS adapter carries the bytes).
//!
//! # Why
//!
//! A broker that delivers at least once can hand out a second copy of a
//! task while the first is still running: the in-progress acks of the first
//! went to a stream leader that froze or was cut off, or a consumer leader
//! handing over re-sent a delivery its successor did not know of. A record
//! written *after* a success cannot stop that copy: it arrives before there
//! is anything to find. So a delivery first *claims* the task, and only the
//! holder of the claim runs it.
//!
//! # Turns, not a compare-and-set on one key
//!
//! The claim needs a write that exactly one of several concurrent writers
//! wins, whichever server each reached. A JetStream key-value store offers
//! two: a create (`Nats-Expected-Last-Subject-Sequence: 0`) and an update
//! at a revision. On `nats-server` 2.9.10 with three replicas only the
//! first holds (the server checks a create as each replica applies it, in
//! the log's order, and an update only at the leader before proposing it):
//! concurrent updates at one revision through different servers are often
//! all accepted (figures in docs/broker.md; `tests/nats_cluster.rs` keeps
//! the create half as a test and measures the update half). So a task's
//! records are a sequence of *turns*, each its
//! own key (`KEY.1`, `KEY.2`, …), each created once; after its create only
//! the turn's holder writes it, so no write needs a condition:
//!
//! | record (`record.rs`) | written by | means |
//! |---|---|---|
//! | running, with its lease | the create; the holder's renewals | a delivery holds the task and runs it |
//! | free | the holder, before its NAK | the attempt failed or was deferred; the redelivery takes the next turn |
//! | done | the holder, before its ack (past its lease: as the next turn's create) | the task succeeded: every later copy is acked without running |
//!
//! A delivery's decisions ([`Contender`]): a first delivery creates turn 1
//! at once; a redelivery reads the latest record first. Done: ack without
//! running. Free: create the next turn. Running, another's: wait (the copy
//! kept with in-progress acks, which spend no delivery) and read again;
//! done then acks, free or a later turn leaves the copy to the holder, and
//! the same revision standing for the lease and a margin lets this delivery
//! create the next turn (take over from a holder that died). A create that
//! fails means someone else created that turn: read again. The holder
//! ([`Lease`]) renews its turn while the attempt runs and stops the attempt
//! at its fence if no renewal was confirmed in time. An attempt that ended
//! in success but was seen only after the fence (its worker was stopped
//! meanwhile) is recorded by *creating* the next turn as `done`
//! ([`Closing`]): the create has one winner, so either the success is on
//! record before any takeover, or a takeover holds the task and this
//! success is left unrecorded (the task may run again).
//!
//! # What it guarantees, and what it cannot
//!
//! * Of two deliveries of one task, at most one holds a given turn (the
//!   create has one winner), and a turn after it is created only once its
//!   holder's lease has passed by the margin on every clock concerned (see
//!   `turns.rs`): so two attempts of one task never overlap, as long as the
//!   holder's timer and the margin hold.
//! * A task whose done record is stored is never run again while the
//!   record lives (its TTL).
//! * It cannot stop a second run when the holder finished but could not
//!   store its done record before the takeover: a worker cut off from every
//!   server with a quorum for longer than its lease and the margin after
//!   its last confirmed write (the broker's ack wait comes on top before a
//!   copy even reaches another worker).
//! * It trusts the store's reads: a server that lost its leadership without
//!   knowing yet can answer from its old state. An answer of "nothing" is
//!   therefore only believed twice, a second apart ([`EMPTY_TWICE`](turns::EMPTY_TWICE)), and a
//!   create is decided by the replicated log, never by a read; but a stale
//!   "running, same revision" read at the end of a lease would let a
//!   takeover start beside a holder whose renewal that server missed.
//! * A write the server accepted but never replicated (its leader died
//!   first) was never confirmed, so no decision rests on it: the holder
//!   counts a renewal only once confirmed, and a create whose confirmation
//!   was lost is found again by its holder's token.

mod record;
mod turns;

pub(crate) use record::{Record, Seen, State};
pub(crate) use turns::{Closing, Contender, LateSuccess, Lease, Step, late_success};
