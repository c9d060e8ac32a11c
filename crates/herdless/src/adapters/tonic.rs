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
}
