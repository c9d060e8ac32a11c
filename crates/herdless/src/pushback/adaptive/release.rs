//! The driver's side of the hold: when to ask, what comes out, and what the
//! service said about a released request.
//!
//! Sans-IO like the rest of the allocator: the driver asks
//! [`next_release`](AdaptiveAllocator::next_release) when it should call
//! again, then calls [`release`](AdaptiveAllocator::release) at (or after)
//! that time until it returns `None`. Each [`Released`] is either an
//! admission (send the held request to the service) or a slot (answer it
//! `503`: its hold ran out). A released request the service refused goes
//! back to the front of the queue while the hold has room
//! ([`refused_held`](AdaptiveAllocator::refused_held)): its caller sees
//! nothing; on a full hold it is answered unprocessed, as one whose hold ran
//! out.

use std::time::Duration;

use super::{AdaptiveAllocator, Mode};
use crate::pushback::{Allotment, Released, Ticket, ns};

impl AdaptiveAllocator {
    /// When the hold next has something to do (since the epoch): a release
    /// at the current rate, the next probe while the service is down, the
    /// known end of an outage, or the first held request's `hold_for`
    /// running out. `None` when nothing is held (or there is no hold).
    ///
    /// ```
    /// use std::time::Duration;
    /// let mut a = herdless::pushback::AdaptiveAllocator::builder()
    ///     .estimate(100.0).hold_for(Duration::from_secs(3)).build()?.outage();
    /// assert_eq!(a.next_release(), None);
    /// assert!(a.decide(Duration::ZERO).is_admit()); // a probe
    /// assert!(a.decide(Duration::ZERO).is_hold());
    /// // The next probe, 50 ms on, is the held request.
    /// assert_eq!(a.next_release(), Some(Duration::from_millis(50)));
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn next_release(&self) -> Option<Duration> {
        let hold = self.hold.as_ref()?;
        let expiry = hold.next_expiry()?;
        let turn = match self.mode {
            Mode::Up => {
                let i = self.interval();
                self.schedule.promised().saturating_sub(self.tolerance(i))
            }
            Mode::Down { until: Some(u), .. } => u,
            Mode::Down {
                until: None,
                next_probe,
                ..
            } => next_probe,
        };
        Some(Duration::from_nanos(expiry.min(turn)))
    }

    /// The next held request whose turn has come at `now`, if any: call
    /// until `None`, then again at [`next_release`](Self::next_release).
    /// While the service is up, held requests are let through at the
    /// estimate (after an outage, from `RELEASE_START` of it, growing while the service
    /// refuses nothing); while it is down with an unknown end, the first of
    /// them is the probe, one per `probe_interval`; a request held for
    /// `hold_for` is answered with a slot.
    ///
    /// ```
    /// use std::time::Duration;
    /// use herdless::pushback::{AdaptiveAllocator, Allotment};
    /// let mut a = AdaptiveAllocator::builder().estimate(10.0).hold().build()?
    ///     .outage_until(Duration::from_secs(1));
    /// let t = a.decide(Duration::ZERO).ticket().unwrap();
    /// let r = a.release(Duration::from_secs(1)).unwrap();
    /// assert_eq!((r.ticket, r.allotment), (t, Allotment::Admit));
    /// assert_eq!(a.release(Duration::from_secs(1)), None);
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn release(&mut self, now: Duration) -> Option<Released> {
        let now = ns(now);
        self.tick(now);
        if let Some(head) = self.hold.as_mut()?.pop_expired(now) {
            self.counts.expired += 1;
            self.counts.rejected += 1;
            let allotment = self
                .reject(now, head.caller(), None, false, None)
                .requeued();
            return Some(Released {
                ticket: head,
                allotment,
            });
        }
        self.hold.as_mut()?.front()?;
        let admit = match &mut self.mode {
            Mode::Up => {
                let i = self.interval();
                let tolerance = self.tolerance(i);
                self.schedule.try_admit(now, i, tolerance)
            }
            Mode::Down {
                until: None,
                next_probe,
                ..
            } if now >= *next_probe => {
                *next_probe = now.saturating_add(self.probe_ns);
                self.counts.probes += 1;
                true
            }
            Mode::Down { .. } => false,
        };
        if !admit {
            return None;
        }
        let ticket = self.hold.as_mut()?.pop_front()?;
        self.counts.admitted += 1;
        self.counts.released += 1;
        if let Some(k) = ticket.caller() {
            self.clients.remove(k);
        }
        Some(Released {
            ticket,
            allotment: Allotment::Admit,
        })
    }

    /// The service refused a request [`release`](Self::release) let through
    /// (a 503 or 429 of its own, at `now`). It goes back to the front of the
    /// queue ([`Allotment::Hold`] with the same ticket: keep it parked) and
    /// the refusal teaches the estimate as any other; a request whose
    /// `hold_for` has run out is answered unprocessed instead
    /// ([`Allotment::Requeue`]), and so is one that finds the hold full (new
    /// arrivals took its place while it was at the service): the hold never
    /// holds more than `hold_max`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use herdless::pushback::{AdaptiveAllocator, Allotment};
    /// let mut a = AdaptiveAllocator::builder().estimate(10.0).hold().build()?
    ///     .outage_until(Duration::from_secs(1));
    /// let t = a.decide(Duration::ZERO).ticket().unwrap();
    /// let r = a.release(Duration::from_secs(1)).unwrap();
    /// assert_eq!(a.refused_held(Duration::from_secs(1), r.ticket), Allotment::Hold { ticket: t });
    /// assert_eq!(a.held(), 1);
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn refused_held(&mut self, now: Duration, ticket: Ticket) -> Allotment {
        let now = ns(now);
        self.tick(now);
        self.counts.refused += 1;
        self.note_refusal(now);
        let expiry = match &self.hold {
            Some(h) => h.expiry(&ticket),
            None => return self.reject(now, ticket.caller(), None, false, None),
        };
        if now >= expiry {
            self.counts.expired += 1;
            return self
                .reject(now, ticket.caller(), None, false, None)
                .requeued();
        }
        // The hold may have filled while it was at the service: it never
        // holds more than `hold_max`, so the request is answered as an
        // expired one is.
        match self.hold.as_mut() {
            Some(h) if h.has_room() => h.push_front(ticket),
            _ => {
                return self
                    .reject(now, ticket.caller(), None, false, None)
                    .requeued();
            }
        }
        self.counts.put_back += 1;
        Allotment::Hold { ticket }
    }

    /// Forgets a held request whose caller is gone (it hung up, its future
    /// was dropped). Call it only for a ticket still held (not released).
    ///
    /// ```
    /// use std::time::Duration;
    /// let mut a = herdless::pushback::AdaptiveAllocator::builder().estimate(10.0).hold().build()?
    ///     .outage_until(Duration::from_secs(1));
    /// let t = a.decide(Duration::ZERO).ticket().unwrap();
    /// a.cancel(t);
    /// assert_eq!((a.held(), a.release(Duration::from_secs(1))), (0, None));
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn cancel(&mut self, ticket: Ticket) {
        if let Some(h) = self.hold.as_mut() {
            h.cancel(ticket.id());
            self.counts.cancelled += 1;
        }
    }

    /// Answers a held request unprocessed, whatever its turn: the front end
    /// is going away (a shutdown, a restart) and must answer every request it
    /// holds. Call until `None`; each comes out first in, first out, as a
    /// [`Allotment::Requeue`] with a slot booked as for any caller turned away
    /// now, so the requests come back spread at the estimate (to this
    /// replica, or another) instead of all at once.
    ///
    /// ```
    /// use std::time::Duration;
    /// use herdless::pushback::AdaptiveAllocator;
    /// let mut a = AdaptiveAllocator::builder().estimate(10.0).hold().build()?.outage();
    /// let _probe = a.decide(Duration::ZERO);
    /// let (x, y) = (a.decide(Duration::ZERO), a.decide(Duration::ZERO));
    /// assert!(x.is_hold() && y.is_hold());
    /// let first = a.evict(Duration::from_secs(1)).unwrap();
    /// let second = a.evict(Duration::from_secs(1)).unwrap();
    /// assert!(first.allotment.is_requeue());
    /// assert!(second.allotment.retry_after() > first.allotment.retry_after(), "spread, not together");
    /// assert_eq!((a.evict(Duration::from_secs(1)), a.held()), (None, 0));
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn evict(&mut self, now: Duration) -> Option<Released> {
        let now = ns(now);
        self.tick(now);
        let ticket = self.hold.as_mut()?.pop_any()?;
        self.counts.evicted += 1;
        self.counts.rejected += 1;
        let allotment = self
            .reject(now, ticket.caller(), None, false, None)
            .requeued();
        Some(Released { ticket, allotment })
    }

    /// Requests held now.
    ///
    /// ```
    /// assert_eq!(herdless::pushback::AdaptiveAllocator::builder().build()?.held(), 0);
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn held(&self) -> usize {
        self.hold.as_ref().map_or(0, |h| h.len())
    }

    /// The most requests held at once so far.
    ///
    /// ```
    /// assert_eq!(herdless::pushback::AdaptiveAllocator::builder().build()?.max_held(), 0);
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn max_held(&self) -> usize {
        self.hold.as_ref().map_or(0, |h| h.max_held())
    }

    /// The hold's bound and time limit, if the allocator holds requests.
    ///
    /// ```
    /// use std::time::Duration;
    /// let a = herdless::pushback::AdaptiveAllocator::builder().estimate(10_000.0).hold().build()?;
    /// assert_eq!(a.hold_settings(), Some((120_000, Duration::from_secs(10))));
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn hold_settings(&self) -> Option<(usize, Duration)> {
        self.hold
            .as_ref()
            .map(|h| (h.max, Duration::from_nanos(h.for_ns)))
    }

    /// The longest a request whose caller says it waits longer is held
    /// ([`hold_for_max`](super::AdaptiveBuilder::hold_for_max)), if the
    /// allocator holds requests.
    ///
    /// ```
    /// let a = herdless::pushback::AdaptiveAllocator::builder().hold().build()?;
    /// assert_eq!(a.hold_for_max(), Some(std::time::Duration::from_secs(50)));
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn hold_for_max(&self) -> Option<Duration> {
        self.hold
            .as_ref()
            .map(|h| Duration::from_nanos(h.patient_ns))
    }
}
