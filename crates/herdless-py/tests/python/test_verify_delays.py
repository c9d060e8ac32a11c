"""Verification 1: every delay within its ceiling, over thousands of draws
per attempt, for every jitter mode; the binding sleeps what the engine
decided (the ``sleep_s`` of its ``retry_scheduled`` event), counted from the
decision."""

import statistics
import time

import pytest

import herdless
from conftest import slept_as_decided

CALLS = 2000
RETRIES = 5


def draws(jitter, no_sleep, events=None):
    policy = herdless.Policy(
        base=0.1, cap=1.0, multiplier=2.0, max_attempts=RETRIES + 1,
        max_elapsed=1e6, jitter=jitter,
    )
    seen = []
    failed_at = []

    @herdless.retry(on=OSError, policy=policy, hook=lambda name, f: seen.append((name, f)))
    def always_fails():
        failed_at.append(time.monotonic())
        raise OSError("device busy")

    for _ in range(CALLS):
        with pytest.raises(OSError):
            always_fails()
    assert len(no_sleep) == CALLS * RETRIES
    scheduled = [f for name, f in seen if name == "retry_scheduled"]
    assert slept_as_decided(no_sleep, [f["sleep_s"] for f in scheduled], failed_at)
    per_retry = {n: [] for n in range(RETRIES)}
    for f in scheduled:
        per_retry[f["attempt"] - 1].append(f["sleep_s"])
    return policy, per_retry


@pytest.mark.parametrize("jitter", ["full", "equal", "none"])
def test_every_delay_within_its_ceiling(jitter, no_sleep):
    policy, per_retry = draws(jitter, no_sleep)
    for n, sleeps in per_retry.items():
        assert len(sleeps) == CALLS
        ceiling = policy.ceiling(n)
        assert ceiling == pytest.approx(min(1.0, 0.1 * 2**n))
        assert max(sleeps) <= ceiling
        if jitter == "full":
            assert min(sleeps) >= 0.0
            # Uniform over [0, c]: the mean is c/2 and the draws reach the top.
            assert statistics.mean(sleeps) == pytest.approx(ceiling / 2, rel=0.06)
            assert max(sleeps) > 0.98 * ceiling
        elif jitter == "equal":
            assert min(sleeps) >= ceiling / 2
            assert statistics.mean(sleeps) == pytest.approx(0.75 * ceiling, rel=0.03)
        else:
            assert set(sleeps) == {ceiling}


@pytest.mark.parametrize("jitter", ["decorrelated", "decorrelated-window"])
def test_decorrelated_delays_stay_between_base_and_cap(jitter, no_sleep):
    policy, per_retry = draws(jitter, no_sleep)
    for n, sleeps in per_retry.items():
        assert min(sleeps) >= policy.base
        assert max(sleeps) <= policy.cap
        # The mode's own bound (the library's Jitter::ceiling): the window
        # triples from 3 * base until it meets the cap; the draws come near it.
        ceiling = policy.ceiling(n)
        assert ceiling == pytest.approx(min(1.0, 0.1 * 3 ** (n + 1)))
        assert max(sleeps) <= ceiling
        if n == 0:
            assert max(sleeps) > 0.95 * ceiling
