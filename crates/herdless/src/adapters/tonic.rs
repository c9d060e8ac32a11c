//! tonic (feature `tonic`): `tonic::Status` as a [`Retryable`] error, by the
//! gRPC retry rules of [`grpc`].
//!
//! A status is classified by [`grpc::classify_status`] with the default
//! [`CodeClassifier`] (`UNAVAILABLE` retryable, every other code terminal) and
//! its `grpc-retry-pushback-ms` metadata: a valid pushback is the server's
//! delay (clamped and spread by the policy), a negative or unparseable one
//! stops the call ([`GiveUp::DoNotRetry`](crate::GiveUp::DoNotRetry)).
//! `DEADLINE_EXCEEDED` is terminal by default (the gRPC design: a retry cannot
//! meet a deadline that has passed) and is the timeout a shared budget may
//! charge more for. To retry other codes, classify with
//! [`grpc::classify_status`] and your own [`CodeClassifier`] instead.
//!
//! A plan of waves travels as the pushback does, in the status's metadata
//! (a trailer): `herdless-plan`, read by [`Retryable::plan`] for a
//! [`WaveGuard`](crate::guard::waves::WaveGuard) (several values read as
//! one, an unreadable one as none).
//!
//! ```
//! use herdless::Retryable;
//! let busy = tonic::Status::unavailable("draining");
//! assert!(busy.classification().is_retryable());
//! assert!(!tonic::Status::permission_denied("no").classification().is_retryable());
//! let mut stop = tonic::Status::unavailable("overloaded");
//! stop.metadata_mut().insert("grpc-retry-pushback-ms", "-1".parse().unwrap());
//! assert_eq!(stop.classification(), herdless::Classification::DoNotRetry);
//! ```

use crate::classify::{Classification, Retryable};
use crate::grpc::{self, CodeClassifier, PUSHBACK_HEADER};
use crate::pushback::waves::WavePlan;

impl Retryable for tonic::Status {
    fn classification(&self) -> Classification {
        let pushback = self.metadata().get(PUSHBACK_HEADER).map(|v| v.as_bytes());
        // `OK` is not an error: an `Err(Status)` that says OK is a bug of the
        // callee's, and unknown (fail closed).
        grpc::classify_status(&CodeClassifier::default(), self.code() as i32, pushback)
            .unwrap_or(Classification::Unknown)
    }

    fn is_timeout(&self) -> bool {
        self.code() == tonic::Code::DeadlineExceeded
    }

    /// The status's `herdless-plan` metadata, if readable.
    ///
    /// ```
    /// use herdless::Retryable;
    /// let mut busy = tonic::Status::unavailable("draining");
    /// assert_eq!(busy.plan(), None);
    /// busy.metadata_mut().insert("herdless-plan", "start=2, waves=3, spacing=1, salt=9".parse().unwrap());
    /// assert_eq!(busy.plan().map(|p| (p.start_ms(), p.waves())), Some((2_000, 3)));
    /// ```
    fn plan(&self) -> Option<WavePlan> {
        let lines = self.metadata().get_all(PLAN_METADATA);
        WavePlan::from_headers(lines.iter().map(|v| v.as_encoded_bytes()))
    }
}

/// The metadata key of a plan of waves (the HTTP header's name).
const PLAN_METADATA: &str = "herdless-plan";

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use crate::guard::waves::WaveGuard;
    use crate::{ManualTimer, Retry};

    /// A status carrying a plan in its metadata: the retry waits for the
    /// client's wave (the plan's one wave, 2 s to 2.5 s away), not the
    /// status's pushback (50 ms) or the jitter.
    #[test]
    #[allow(clippy::result_large_err)] // tonic's own error, as a client gets it
    fn a_status_with_a_plan_in_its_metadata_waits_for_the_wave() {
        let timer = ManualTimer::new();
        let retry = Retry::builder()
            .timer(timer.clone())
            .waves(Arc::new(WaveGuard::new("worker-5")))
            .build();
        let busy = || {
            let mut s = tonic::Status::unavailable("draining");
            let m = s.metadata_mut();
            m.insert("grpc-retry-pushback-ms", "50".parse().unwrap());
            m.insert(
                "herdless-plan",
                "start=2, waves=1, spacing=0.5, salt=4".parse().unwrap(),
            );
            s
        };
        let out = retry.call(|a| if a.number() < 2 { Err(busy()) } else { Ok(()) });
        assert!(out.is_ok());
        let slept = timer.sleeps()[0];
        assert!(
            slept >= Duration::from_secs(2) && slept < Duration::from_millis(2_500),
            "{slept:?}"
        );
    }
}
