//! Unit tests of `queue`.

use super::*;
use proptest::prelude::*;

proptest! {
    /// Interleaved pushes (never into the past) and pops come out in time
    /// order, every event exactly once.
    #[test]
    fn pops_in_nondecreasing_order(ops in proptest::collection::vec((0u64..1 << 40, any::<bool>()), 1..500)) {
        let mut q = EventQueue::new();
        let mut now = 0u64;
        let mut pushed = 0usize;
        let mut popped = 0usize;
        for (i, (delta, pop)) in ops.iter().enumerate() {
            if *pop {
                if let Some(e) = q.pop() {
                    prop_assert!(e.at_ns >= now);
                    now = e.at_ns;
                    popped += 1;
                }
            } else {
                q.push(now + delta, i as u32);
                pushed += 1;
            }
        }
        while let Some(e) = q.pop() {
            prop_assert!(e.at_ns >= now);
            now = e.at_ns;
            popped += 1;
        }
        prop_assert_eq!(pushed, popped);
        prop_assert!(q.is_empty());
    }
}

#[test]
fn matches_a_sorted_reference() {
    let mut rng = herdless::Rng::with_seed(4);
    let mut q = EventQueue::new();
    let mut reference = Vec::new();
    for c in 0..10_000u32 {
        let t = rng.next_u64() >> 20;
        q.push(t, c);
        reference.push(t);
    }
    reference.sort_unstable();
    let got: Vec<u64> = std::iter::from_fn(|| q.pop()).map(|e| e.at_ns).collect();
    assert_eq!(got, reference);
}

#[test]
fn equal_times_pop_first_in_first_out_across_the_side_list() {
    let mut q = EventQueue::new();
    for c in 0..3 {
        q.push(100, c);
    }
    q.push(50, 9);
    assert_eq!(q.pop().unwrap().client, 9);
    // Slot 0 is being drained: these go to the side list.
    q.push(100, 3);
    q.push(100, 4);
    q.push(70, 5);
    let order: Vec<u32> = std::iter::from_fn(|| q.pop()).map(|e| e.client).collect();
    assert_eq!(order, vec![5, 0, 1, 2, 3, 4]);
}

#[test]
fn periods_and_their_buckets_keep_every_event_in_order() {
    // Events across many periods and beyond the horizon, pushed while popping.
    let mut rng = herdless::Rng::with_seed(9);
    let mut q = EventQueue::new();
    let mut now = 0u64;
    let mut pending = 0usize;
    for c in 0..50_000u32 {
        q.push(now + (rng.next_u64() % 80_000_000_000), c);
        pending += 1;
        if c % 3 == 0 {
            let e = q.pop().unwrap();
            assert!(e.at_ns >= now);
            now = e.at_ns;
            pending -= 1;
        }
    }
    while let Some(e) = q.pop() {
        assert!(e.at_ns >= now);
        now = e.at_ns;
        pending -= 1;
    }
    assert_eq!(pending, 0);
}

#[test]
fn a_push_into_the_past_is_clamped_not_reordered() {
    let mut q = EventQueue::new();
    q.push(100, 0);
    assert_eq!(q.pop().unwrap().at_ns, 100);
    q.push(50, 1);
    assert_eq!(
        q.pop(),
        Some(Event {
            at_ns: 100,
            client: 1
        })
    );
}
