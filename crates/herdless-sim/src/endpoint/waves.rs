//! The outage endpoint behind the library's wave planner: a plan of waves
//! announced with every rejection.
//!
//! [`WaveEndpoint`] puts a
//! [`WavePlanner`] where a pushback
//! tower layer sits, in front of the same capacity-limited handler as every
//! other strategy ([`OutageEndpoint`]): it admits up to its estimate, reports
//! the handler's answer to every admitted call (`served` / `refused`), and
//! answers a caller it turns away with [`Reply::Planned`]: the plan it was
//! placed in (as the `Herdless-Plan` header carries it, its start rounded up
//! to the millisecond) and its own point in it as the Retry-After (rounded
//! up to the millisecond, as `Retry-After-Ms`). Each client is named by its
//! index (its key: the `X-Worker-Id` of the real stub), so under a plan of
//! the whole population the planner computes a caller's wave as the caller
//! does. While the service is down with an unknown end the answers are plain
//! slots ([`Reply::Rejected`]): no plan can begin before the end is seen.

use std::time::Duration;

use herdless::pushback::Allotment;
use herdless::pushback::waves::WavePlanner;

use super::{Endpoint, OutageEnd, OutageEndpoint};
use crate::error::SimError;
use crate::metrics::Histogram;
use crate::strategy::Reply;

/// The outage endpoint behind a [`WavePlanner`] (see the [module
/// documentation](self)).
///
/// ```
/// use std::time::Duration;
/// use herdless_sim::endpoint::{Endpoint, OutageEnd, WaveEndpoint};
/// use herdless_sim::Reply;
/// // Down 5 s (told), then 10/s; the planner counts who it turns away.
/// let mut e = WaveEndpoint::new(Duration::from_secs(5), 10, 1, 10.0, OutageEnd::Known, None, 0)?;
/// let Reply::Planned { plan, retry_after } = e.call(1_000_000_000, 0, 1) else { panic!() };
/// assert_eq!(plan.start_ms(), 4_000); // plans begin at the known end
/// assert!(retry_after.unwrap() >= Duration::from_secs(4));
/// # Ok::<(), herdless_sim::SimError>(())
/// ```
#[derive(Debug, Clone)]
pub struct WaveEndpoint {
    planner: WavePlanner,
    handler: OutageEndpoint,
}

impl WaveEndpoint {
    /// An endpoint down for `outage` (told its end or not), then serving
    /// `capacity` calls per second (bucket of `burst`), behind a planner
    /// told a capacity of `told` calls per second (not learned) and
    /// `population` (or counting), its salts mixed with `seed`.
    ///
    /// # Errors
    ///
    /// [`SimError::Invalid`] when the planner refuses a setting.
    ///
    /// ```
    /// use std::time::Duration;
    /// use herdless_sim::endpoint::{OutageEnd, WaveEndpoint};
    /// assert!(WaveEndpoint::new(Duration::ZERO, 10, 1, 0.0, OutageEnd::Unknown, None, 0).is_err());
    /// ```
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        outage: Duration,
        capacity: u32,
        burst: u32,
        told: f64,
        end: OutageEnd,
        population: Option<u64>,
        seed: u64,
    ) -> Result<Self, SimError> {
        let mut b = WavePlanner::builder().capacity(told).seed(seed);
        if let Some(n) = population {
            b = b.population(n);
        }
        let planner = b
            .build()
            .map_err(|e| SimError::Invalid(format!("waves: {e}")))?;
        let planner = match end {
            _ if outage.is_zero() => planner,
            OutageEnd::Known => planner.outage_until(outage),
            OutageEnd::Unknown => planner,
        };
        Ok(Self {
            planner,
            handler: OutageEndpoint::new(outage, capacity, burst),
        })
    }

    /// The planner (its plans and counts).
    pub fn planner(&self) -> &WavePlanner {
        &self.planner
    }

    /// The planner, to announce a plan before the first call.
    pub fn planner_mut(&mut self) -> &mut WavePlanner {
        &mut self.planner
    }

    fn reply(&self, now: Duration, decision: Allotment) -> Reply {
        let retry_after = decision.retry_after_ms().map(Duration::from_millis);
        match self.planner.plan(now) {
            Some(plan) => Reply::Planned { retry_after, plan },
            None => Reply::Rejected { retry_after },
        }
    }
}

impl Endpoint for WaveEndpoint {
    #[inline]
    fn call(&mut self, now_ns: u64, client: u32, attempt: u32) -> Reply {
        let now = Duration::from_nanos(now_ns);
        let key = u64::from(client);
        match self.planner.decide_for(now, key) {
            Allotment::Admit => match self.handler.call(now_ns, client, attempt) {
                Reply::Ok => {
                    self.planner.served(now);
                    Reply::Ok
                }
                _ => {
                    let d = self.planner.refused(now, Some(key));
                    self.reply(now, d)
                }
            },
            rejected => self.reply(now, rejected),
        }
    }

    fn service_load(&self) -> Option<&Histogram> {
        self.handler.service_load()
    }
}
