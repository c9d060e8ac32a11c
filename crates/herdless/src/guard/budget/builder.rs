//! [`RetryBudgetBuilder`]: the presets (gRPC, AWS) and one knob per method,
//! validated into a [`RetryBudget`] or a [`RetryBudgetError`].

use std::fmt;

use std::sync::atomic::AtomicU64;

use super::{Config, MAX_TOKENS, RetryBudget, SCALE};

/// Configures a [`RetryBudget`]. Starts from the gRPC preset for 10 tokens and a
/// 0.1 ratio; [`grpc`](Self::grpc) and [`aws`](Self::aws) reset every knob to a
/// preset, the other methods then adjust one knob each. Amounts are in tokens,
/// kept to three decimals.
///
/// ```
/// use herdless::RetryBudget;
/// let b = RetryBudget::builder()
///     .aws()
///     .max_tokens(50.0)   // a smaller quota
///     .spread(0.0)        // AWS's exact cliff
///     .build()?;
/// assert_eq!(b.max_tokens(), 50.0);
/// # Ok::<(), herdless::guard::RetryBudgetError>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct RetryBudgetBuilder {
    max_tokens: f64,
    initial: Option<f64>,
    failure_cost: f64,
    retry_cost: f64,
    timeout_cost: f64,
    success_refund: f64,
    refund_retry_cost: bool,
    threshold: Threshold,
    spread: Option<f64>,
}

#[derive(Debug, Clone, Copy)]
enum Threshold {
    HalfOfMax,
    Tokens(f64),
}

impl Default for RetryBudgetBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl RetryBudgetBuilder {
    /// The gRPC preset for 10 tokens and a 0.1 ratio.
    ///
    /// ```
    /// assert!(herdless::guard::RetryBudgetBuilder::new().build().is_ok());
    /// ```
    pub fn new() -> Self {
        RetryBudgetBuilder {
            max_tokens: 10.0,
            initial: None,
            failure_cost: 0.0,
            retry_cost: 0.0,
            timeout_cost: 0.0,
            success_refund: 0.0,
            refund_retry_cost: false,
            threshold: Threshold::HalfOfMax,
            spread: None,
        }
        .grpc(10.0, 0.1)
    }

    /// gRPC retry throttling: capacity `max_tokens`, failure cost 1, no retry
    /// cost, success refund `token_ratio`, threshold half the capacity.
    ///
    /// ```
    /// let b = herdless::RetryBudget::builder().grpc(6.0, 0.2).spread(0.0).build()?;
    /// assert!(b.try_retry(herdless::RetryCause::Timeout, 0.0).is_ok()); // 5 > 3
    /// # Ok::<(), herdless::guard::RetryBudgetError>(())
    /// ```
    pub fn grpc(self, max_tokens: f64, token_ratio: f64) -> Self {
        RetryBudgetBuilder {
            max_tokens,
            initial: None,
            failure_cost: 1.0,
            retry_cost: 0.0,
            timeout_cost: 0.0,
            success_refund: token_ratio,
            refund_retry_cost: false,
            threshold: Threshold::HalfOfMax,
            spread: None,
        }
    }

    /// The AWS SDKs' standard retry quota: capacity 500, retry cost 5, timeout
    /// cost 10, first-try success refund 1, retry cost returned on success,
    /// threshold 0.
    ///
    /// ```
    /// let b = herdless::RetryBudget::builder().aws().build()?;
    /// assert_eq!(b.max_tokens(), 500.0);
    /// # Ok::<(), herdless::guard::RetryBudgetError>(())
    /// ```
    pub fn aws(self) -> Self {
        RetryBudgetBuilder {
            max_tokens: 500.0,
            initial: None,
            failure_cost: 0.0,
            retry_cost: 5.0,
            timeout_cost: 10.0,
            success_refund: 1.0,
            refund_retry_cost: true,
            threshold: Threshold::Tokens(0.0),
            spread: None,
        }
    }

    /// The capacity (and, unless [`initial_tokens`](Self::initial_tokens) is
    /// set, the starting level). In `(0, 1e12]`.
    ///
    /// ```
    /// let b = herdless::RetryBudget::builder().max_tokens(3.0).build()?;
    /// assert_eq!(b.tokens(), 3.0);
    /// # Ok::<(), herdless::guard::RetryBudgetError>(())
    /// ```
    pub fn max_tokens(mut self, max_tokens: f64) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// The starting level (default: full). In `[0, max_tokens]`.
    ///
    /// ```
    /// let b = herdless::RetryBudget::builder().initial_tokens(1.5).build()?;
    /// assert_eq!(b.tokens(), 1.5);
    /// # Ok::<(), herdless::guard::RetryBudgetError>(())
    /// ```
    pub fn initial_tokens(mut self, tokens: f64) -> Self {
        self.initial = Some(tokens);
        self
    }

    /// Charged on every retryable failure, admitted or not (gRPC: 1).
    ///
    /// ```
    /// let b = herdless::RetryBudget::builder().failure_cost(2.0).build()?;
    /// b.record_failure();
    /// assert_eq!(b.tokens(), 8.0);
    /// # Ok::<(), herdless::guard::RetryBudgetError>(())
    /// ```
    pub fn failure_cost(mut self, tokens: f64) -> Self {
        self.failure_cost = tokens;
        self
    }

    /// Withdrawn when a retry is admitted after a non-timeout error (AWS: 5).
    ///
    /// ```
    /// let b = herdless::RetryBudget::builder().aws().retry_cost(2.0).build()?;
    /// assert_eq!(b.try_retry(herdless::RetryCause::Error, 0.0).unwrap().tokens(), 2.0);
    /// # Ok::<(), herdless::guard::RetryBudgetError>(())
    /// ```
    pub fn retry_cost(mut self, tokens: f64) -> Self {
        self.retry_cost = tokens;
        self
    }

    /// Withdrawn when a retry is admitted after a timeout (AWS: 10).
    ///
    /// ```
    /// let b = herdless::RetryBudget::builder().aws().timeout_cost(7.0).build()?;
    /// assert_eq!(b.try_retry(herdless::RetryCause::Timeout, 0.0).unwrap().tokens(), 7.0);
    /// # Ok::<(), herdless::guard::RetryBudgetError>(())
    /// ```
    pub fn timeout_cost(mut self, tokens: f64) -> Self {
        self.timeout_cost = tokens;
        self
    }

    /// Added on a success (gRPC: `tokenRatio` on every success; AWS: 1 on a
    /// first-try success).
    ///
    /// ```
    /// let b = herdless::RetryBudget::builder().initial_tokens(0.0).success_refund(0.25).build()?;
    /// b.record_success(None);
    /// assert_eq!(b.tokens(), 0.25);
    /// # Ok::<(), herdless::guard::RetryBudgetError>(())
    /// ```
    pub fn success_refund(mut self, tokens: f64) -> Self {
        self.success_refund = tokens;
        self
    }

    /// Whether a success after an admitted retry returns that retry's cost
    /// (instead of [`success_refund`](Self::success_refund)), as the AWS quota
    /// does.
    ///
    /// ```
    /// let b = herdless::RetryBudget::builder().aws().refund_retry_cost(false).build()?;
    /// let s = b.try_retry(herdless::RetryCause::Error, 0.0).unwrap();
    /// b.record_success(Some(s));
    /// assert_eq!(b.tokens(), 496.0); // 500 - 5 + 1
    /// # Ok::<(), herdless::guard::RetryBudgetError>(())
    /// ```
    pub fn refund_retry_cost(mut self, yes: bool) -> Self {
        self.refund_retry_cost = yes;
        self
    }

    /// Retries are admitted only while the level (after the failure cost) is
    /// strictly above this many tokens (gRPC: half the capacity; AWS: 0). In
    /// `[0, max_tokens)`.
    ///
    /// ```
    /// let b = herdless::RetryBudget::builder().threshold(9.5).spread(0.0).build()?;
    /// assert!(b.try_retry(herdless::RetryCause::Error, 0.0).is_err()); // 9 ≤ 9.5
    /// # Ok::<(), herdless::guard::RetryBudgetError>(())
    /// ```
    pub fn threshold(mut self, tokens: f64) -> Self {
        self.threshold = Threshold::Tokens(tokens);
        self
    }

    /// The width, in tokens, of the band above the threshold over which calls
    /// drop out one by one (each call's threshold is `threshold + u · spread`
    /// for its own uniform `u`). Default: half of `max_tokens − threshold`;
    /// `0.0` gives the exact gRPC/AWS cliff. See the [module
    /// documentation](crate::guard::budget).
    ///
    /// ```
    /// let b = herdless::RetryBudget::builder().grpc(10.0, 0.1).spread(4.0).build()?;
    /// // the level after the failure is 9: u = 0.9 gives a threshold of 8.6, u = 1.0 of 9
    /// assert!(b.try_retry(herdless::RetryCause::Error, 0.9).is_ok());
    /// assert!(b.try_retry(herdless::RetryCause::Error, 1.0).is_err()); // 9 - 1 = 8 ≤ 9
    /// # Ok::<(), herdless::guard::RetryBudgetError>(())
    /// ```
    pub fn spread(mut self, tokens: f64) -> Self {
        self.spread = Some(tokens);
        self
    }

    /// Validates and builds.
    ///
    /// # Errors
    ///
    /// [`RetryBudgetError`] naming the first invalid knob: a negative or
    /// non-finite amount, a capacity outside `(0, 1e12]`, an initial level above
    /// the capacity, or a threshold at or above the capacity.
    ///
    /// ```
    /// let err = herdless::RetryBudget::builder().retry_cost(f64::NAN).build().unwrap_err();
    /// assert_eq!(err.field(), "retry_cost");
    /// ```
    pub fn build(self) -> Result<RetryBudget, RetryBudgetError> {
        let tokens = |field: &'static str, v: f64| -> Result<u64, RetryBudgetError> {
            if v.is_finite() && (0.0..=MAX_TOKENS).contains(&v) {
                Ok((v * SCALE).round() as u64)
            } else {
                Err(RetryBudgetError {
                    field,
                    reason: "must be a finite number of tokens in [0, 1e12]",
                })
            }
        };
        let max = tokens("max_tokens", self.max_tokens)?;
        if max == 0 {
            return Err(RetryBudgetError {
                field: "max_tokens",
                reason: "must be positive",
            });
        }
        let initial = match self.initial {
            Some(v) => tokens("initial_tokens", v)?,
            None => max,
        };
        if initial > max {
            return Err(RetryBudgetError {
                field: "initial_tokens",
                reason: "must not exceed max_tokens",
            });
        }
        let threshold = match self.threshold {
            Threshold::HalfOfMax => max / 2,
            Threshold::Tokens(v) => tokens("threshold", v)?,
        };
        if threshold >= max {
            return Err(RetryBudgetError {
                field: "threshold",
                reason: "must be below max_tokens",
            });
        }
        let spread = match self.spread {
            Some(v) => tokens("spread", v)?,
            None => (max - threshold) / 2,
        };
        let cfg = Config {
            max,
            failure_cost: tokens("failure_cost", self.failure_cost)?,
            retry_cost: tokens("retry_cost", self.retry_cost)?,
            timeout_cost: tokens("timeout_cost", self.timeout_cost)?,
            success_refund: tokens("success_refund", self.success_refund)?,
            refund_retry_cost: self.refund_retry_cost,
            threshold,
            spread,
        };
        Ok(RetryBudget {
            level: AtomicU64::new(initial),
            cfg,
        })
    }
}

/// An invalid [`RetryBudgetBuilder`] knob.
///
/// ```
/// let err = herdless::RetryBudget::builder().max_tokens(0.0).build().unwrap_err();
/// assert_eq!(err.to_string(), "invalid retry budget max_tokens: must be positive");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryBudgetError {
    field: &'static str,
    reason: &'static str,
}

impl RetryBudgetError {
    /// The knob's name (`max_tokens`, `initial_tokens`, `failure_cost`,
    /// `retry_cost`, `timeout_cost`, `success_refund`, `threshold`, `spread`).
    ///
    /// ```
    /// let err = herdless::RetryBudget::builder().spread(-1.0).build().unwrap_err();
    /// assert_eq!(err.field(), "spread");
    /// ```
    pub fn field(&self) -> &'static str {
        self.field
    }
}

impl fmt::Display for RetryBudgetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid retry budget {}: {}", self.field, self.reason)
    }
}

impl std::error::Error for RetryBudgetError {}
