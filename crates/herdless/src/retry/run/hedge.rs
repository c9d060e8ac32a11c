//! A hedged call's steps on [`Run`]: its rounds, its hedges, a copy's
//! failure and the winning copy (the loop is `retry/hedged.rs`).

use super::*;

impl<C, T: Clock, N: Notify, K: Reading<T>> Run<'_, C, T, N, K> {
    /// A hedged call's round: its first copy.
    pub(crate) fn round(&mut self, hedging: &mut Hedging) -> Attempt {
        let number = hedging.round(&mut self.engine);
        self.attempt_numbered(number)
    }

    /// A hedge is due: the engine decides; the copy's attempt if it is sent.
    pub(crate) fn hedge(
        &mut self,
        hedging: &mut Hedging,
        cx: &Context<'_, N>,
        hedge: &Hedge,
        idempotent: bool,
    ) -> Option<Attempt> {
        let now = self.now();
        let retry = self.retry;
        let rng = self.rng.get_or_insert_with(|| new_rng(retry));
        let at = Duration::from_nanos(now);
        match hedging.send(&mut self.engine, cx, hedge, at, idempotent, rng) {
            HedgeGate::Send { attempt } => Some(self.attempt_at(attempt, now)),
            HedgeGate::Stop(_) => None,
        }
    }

    /// A hedged call's copy failed: what the engine makes of it, and the
    /// failure's cause (a cut copy is a timeout).
    pub(crate) fn copy_failed<E>(
        &mut self,
        hedging: &mut Hedging,
        cx: &Context<'_, N>,
        error: &E,
        timed_out: bool,
    ) -> (CopyFailed, RetryCause)
    where
        C: Classify<E>,
    {
        let (classification, cause) = self.classify(error, timed_out);
        let now = Duration::from_nanos(self.now());
        (hedging.failed(cx, now, classification), cause)
    }

    /// A hedged call's copy `number`, started at `started`, won.
    pub(crate) fn hedge_won(
        &mut self,
        hedging: &mut Hedging,
        cx: &Context<'_, N>,
        hedge: &Hedge,
        number: u32,
        started: Duration,
    ) {
        let now = Duration::from_nanos(self.now());
        hedging.won(&mut self.engine, cx, hedge, now, number, started);
    }
}
