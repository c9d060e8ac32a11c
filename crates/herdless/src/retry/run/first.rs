//! [`First`]: a blocking call before its first attempt has ended.

use super::*;

/// A blocking call before its first attempt has ended: the clock origin and
/// the key, all a first attempt reads. The engine's state ([`Run`]) is made
/// only if that attempt fails ([`Run::after_first`]): a first-try success
/// builds no more than it reads, and the attempt runs with no state of the
/// call's to settle should it panic (a fresh call has none).
pub(crate) struct First {
    pub(super) origin: u64,
    pub(super) key: CallKey,
}

impl First {
    /// A call whose clock starts now, on `K`.
    #[inline]
    pub(crate) fn start<C, T: Clock, N, K: Reading<T>>(retry: &Retry<C, T, N>) -> Self {
        First {
            origin: K::now_ns(&retry.timer),
            key: call_key(retry),
        }
    }

    /// The first attempt (unthrottled: it starts at the origin).
    #[inline]
    pub(crate) fn attempt<C, T, N>(&self, retry: &Retry<C, T, N>) -> Attempt {
        attempt(retry, 1, 0, self.key)
    }

    /// The first attempt succeeded: what a [`Run`]'s
    /// [`succeeded`](Run::succeeded) does for a first attempt (`cx`: the
    /// retrier's [context](Retry::context); an unthrottled call's is its
    /// run's).
    #[inline(always)]
    pub(crate) fn succeeded<C, T: Clock, N: Notify, K: Reading<T>>(
        &self,
        retry: &Retry<C, T, N>,
        cx: &Context<'_, N>,
    ) {
        let mut engine = Engine::new(Duration::ZERO);
        engine.begin();
        // Read only if the engine needs the time (a breaker).
        engine.succeeded_ns(cx, || K::now_ns(&retry.timer).saturating_sub(self.origin));
    }
}
