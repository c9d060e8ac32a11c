//! The turn decisions under an injected clock (plain `Duration`s since an
//! origin).

use std::time::Duration;

use super::super::record::{Record, Seen, State};
use super::*;

const LEASE: Duration = Duration::from_secs(8);
const ME: u64 = 0xaaaa;
const OTHER: u64 = 0xbbbb;

fn s(secs: f64) -> Duration {
    Duration::from_secs_f64(secs)
}

fn seen(turn: u32, revision: u64, state: State, by: u64) -> Option<Seen> {
    Some(Seen {
        turn,
        revision,
        record: Record { state, by },
    })
}

fn running(turn: u32, revision: u64, by: u64) -> Option<Seen> {
    seen(turn, revision, State::Running { lease: Some(LEASE) }, by)
}

#[test]
fn the_margin_is_a_quarter_of_the_lease_and_at_least_a_second() {
    assert_eq!(margin(LEASE), s(2.0));
    assert_eq!(margin(s(0.5)), s(1.0));
}

#[test]
fn a_first_delivery_creates_turn_one_and_a_redelivery_reads_first() {
    assert_eq!(Contender::new(ME, LEASE, true).1, Step::Create(1));
    assert_eq!(Contender::new(ME, LEASE, false).1, Step::ReadLatest);
}

#[test]
fn a_live_claim_is_waited_out_for_its_lease_and_the_margin() {
    let (mut c, _) = Contender::new(ME, LEASE, true);
    assert_eq!(c.exists(1), Step::ReadLatest);
    let lapse = s(3.0) + LEASE + margin(LEASE);
    assert_eq!(
        c.read(s(3.0), running(1, 10, OTHER), false),
        Step::Wait { lapses_at: lapse }
    );
    // The same revision, not yet a lease and a margin after it was seen.
    assert_eq!(
        c.read(lapse - s(0.001), running(1, 10, OTHER), false),
        Step::Wait { lapses_at: lapse }
    );
    assert_eq!(c.read(lapse, running(1, 10, OTHER), false), Step::Create(2));
}

#[test]
fn an_outage_of_the_bucket_starts_the_wait_again_at_its_next_answer() {
    let (mut c, _) = Contender::new(ME, LEASE, false);
    let lapse = LEASE + margin(LEASE);
    assert_eq!(
        c.read(s(0.0), running(1, 10, OTHER), false),
        Step::Wait { lapses_at: lapse }
    );
    // Reads fail from 3 s to past the lapse: the holder could not write
    // either. The first answer after it shows the same revision.
    c.unanswered();
    let back = lapse + s(0.5);
    assert_eq!(
        c.read(back, running(1, 10, OTHER), false),
        Step::Wait {
            lapses_at: back + lapse
        }
    );
    assert_eq!(
        c.read(back + lapse, running(1, 10, OTHER), false),
        Step::Create(2)
    );
}

#[test]
fn a_renewal_starts_the_wait_again() {
    let (mut c, _) = Contender::new(ME, LEASE, false);
    c.read(s(0.0), running(3, 10, OTHER), false);
    // Renewed (a new revision) just before it would have lapsed.
    let renewed = LEASE + margin(LEASE) - s(0.1);
    assert_eq!(
        c.read(renewed, running(3, 11, OTHER), false),
        Step::Wait {
            lapses_at: renewed + LEASE + margin(LEASE)
        }
    );
    assert!(matches!(
        c.read(renewed + s(5.0), running(3, 11, OTHER), false),
        Step::Wait { .. }
    ));
}

#[test]
fn a_done_turn_ends_the_delivery_whatever_else() {
    let (mut c, _) = Contender::new(ME, LEASE, false);
    c.read(s(0.0), running(2, 5, OTHER), false);
    // Even a late write of an older turn: the task succeeded.
    assert_eq!(
        c.read(s(1.0), seen(1, 6, State::Done, OTHER), false),
        Step::Completed
    );
}

#[test]
fn a_free_turn_is_taken_by_the_redelivery_and_left_by_a_stale_copy() {
    let (mut fresh, _) = Contender::new(ME, LEASE, false);
    assert_eq!(
        fresh.read(s(0.0), seen(2, 9, State::Free, OTHER), false),
        Step::Create(3)
    );
    // A copy that watched the holder run, then saw it hand the task back.
    let (mut copy, _) = Contender::new(ME, LEASE, true);
    copy.exists(1);
    copy.read(s(0.0), running(1, 4, OTHER), false);
    assert_eq!(
        copy.read(s(0.2), seen(1, 5, State::Free, OTHER), false),
        Step::Leave
    );
}

#[test]
fn a_takeover_by_another_delivery_leaves_this_copy_to_it() {
    let (mut c, _) = Contender::new(ME, LEASE, false);
    c.read(s(0.0), running(1, 4, OTHER), false);
    let lapse = LEASE + margin(LEASE);
    assert_eq!(c.read(lapse, running(1, 4, OTHER), false), Step::Create(2));
    // Someone else created turn 2 first.
    assert_eq!(c.exists(2), Step::ReadLatest);
    assert_eq!(
        c.read(lapse + s(0.01), running(2, 7, 0xcccc), false),
        Step::Leave
    );
}

#[test]
fn its_own_record_means_a_create_whose_confirmation_was_lost() {
    let (mut c, _) = Contender::new(ME, LEASE, true);
    c.exists(1);
    assert_eq!(c.read(s(0.0), running(1, 3, ME), false), Step::Hold(1));
}

#[test]
fn an_older_turn_or_a_stale_answer_is_checked_by_name() {
    let (mut c, _) = Contender::new(ME, LEASE, true);
    c.exists(1);
    c.read(s(0.0), running(3, 30, OTHER), false);
    // The latest read shows turn 2 (written late, or a stale leader).
    assert_eq!(
        c.read(s(0.5), seen(2, 31, State::Free, OTHER), false),
        Step::ReadTurn(3)
    );
    // A failed create proved turn 4 exists; the latest read misses it.
    c.exists(4);
    assert_eq!(c.read(s(0.6), None, false), Step::ReadTurn(4));
}

#[test]
fn no_record_creates_a_turn_only_when_found_twice_a_second_apart() {
    let (mut c, _) = Contender::new(ME, LEASE, false);
    assert_eq!(
        c.read(s(10.0), None, false),
        Step::Wait {
            lapses_at: s(10.0) + EMPTY_TWICE
        }
    );
    assert!(matches!(c.read(s(10.5), None, false), Step::Wait { .. }));
    assert_eq!(c.read(s(11.0), None, false), Step::Create(1));
    // A turn known to exist that reads as absent by name: the same rule.
    let (mut c, _) = Contender::new(ME, LEASE, true);
    c.exists(1);
    assert_eq!(c.read(s(0.0), None, false), Step::ReadTurn(1));
    assert!(matches!(c.read(s(0.0), None, true), Step::Wait { .. }));
    // A running claim seen in between is waited out, vanished or not.
    c.read(s(0.5), running(1, 2, OTHER), false);
    let lapse = s(0.5) + LEASE + margin(LEASE);
    assert_eq!(c.read(s(2.2), None, true), Step::Wait { lapses_at: lapse });
    assert_eq!(c.read(lapse, None, true), Step::Create(2));
}

#[test]
fn a_record_without_a_lease_is_given_this_workers() {
    let (mut c, _) = Contender::new(ME, LEASE, false);
    let odd = seen(1, 1, State::Running { lease: None }, 0);
    assert_eq!(
        c.read(s(0.0), odd, false),
        Step::Wait {
            lapses_at: LEASE + margin(LEASE)
        }
    );
}

#[test]
fn the_holders_lease_runs_from_the_send_of_its_last_confirmed_write() {
    let mut l = Lease::new(1, LEASE, s(100.0));
    assert_eq!(l.fence(), s(108.0));
    assert!(l.renewed(s(102.7), s(103.0)));
    assert_eq!(l.fence(), s(110.7));
    // An older write confirmed late does not move it back.
    assert!(l.renewed(s(101.0), s(104.0)));
    assert_eq!(l.fence(), s(110.7));
    assert!(!l.lapsed(s(110.6)) && l.lapsed(s(110.7)));
}

#[test]
fn a_confirmation_that_comes_after_the_fence_does_not_revive_the_lease() {
    let mut l = Lease::new(1, LEASE, s(0.0));
    // Sent in time, confirmed only once the lease had run out: a contender
    // may hold the next turn by now.
    assert!(!l.renewed(s(7.0), s(8.0)));
    assert_eq!(l.fence(), s(8.0));
    assert!(l.lapsed(s(8.0)));
}

/// The property the claim rests on: whatever the delays between the
/// holder's writes, their storing and a contender's reads, the contender
/// creates the next turn no sooner than the holder's fence plus the margin.
#[test]
fn a_takeover_never_comes_before_the_holders_fence_and_the_margin() {
    for (store_delay, read_delay, renewals) in [
        (0.0, 0.0, 0),
        (0.3, 0.0, 1),
        (0.0, 2.5, 2),
        (1.0, 7.9, 3),
        (0.01, 0.01, 5),
    ] {
        let mut lease = Lease::new(1, LEASE, s(0.0));
        let mut last_store = s(store_delay);
        for k in 1..=renewals {
            let sent = LEASE / 3 * k;
            assert!(lease.renewed(sent, sent + s(store_delay)));
            last_store = sent + s(store_delay);
        }
        // The contender first reads the last revision some time after it
        // was stored, and then again and again until it may create.
        let (mut c, _) = Contender::new(ME, LEASE, true);
        c.exists(1);
        let mut now = last_store + s(read_delay);
        let revision = u64::from(renewals) + 1;
        let created = loop {
            match c.read(now, running(1, revision, OTHER), false) {
                Step::Create(2) => break now,
                Step::Wait { lapses_at } => now = lapses_at,
                other => panic!("{other:?}"),
            }
        };
        assert!(
            created >= lease.fence() + margin(LEASE),
            "created at {created:?}, fence {:?}",
            lease.fence()
        );
    }
}

#[test]
fn a_success_past_the_lease_is_recorded_by_creating_the_next_turn() {
    let lease = Lease::new(3, s(6.0), s(10.0));
    assert_eq!(lease.closing(s(15.9)), Closing::Own(3));
    assert_eq!(lease.closing(s(16.0)), Closing::Next(4));
    assert_eq!(lease.closing(s(60.0)), Closing::Next(4));
    // The create won, or was stored under a lost confirmation.
    assert_eq!(late_success(7, true, None), LateSuccess::Recorded);
    let own = seen(4, 9, State::Done, 7);
    assert_eq!(late_success(7, false, own.as_ref()), LateSuccess::Recorded);
    // Another delivery created the turn first: running, done or free.
    for state in [State::Running { lease: None }, State::Done, State::Free] {
        let theirs = seen(4, 9, state, 8);
        assert_eq!(
            late_success(7, false, theirs.as_ref()),
            LateSuccess::TakenOver
        );
    }
    assert_eq!(late_success(7, false, None), LateSuccess::TakenOver);
}
