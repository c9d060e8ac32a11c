"""`herdless.set_testing(True)`: no sleeping, attempts capped, every other
decision (events, budget) unchanged."""

import asyncio
import time

import pytest

import herdless
from conftest import slept_as_decided


def forbid_sleeping(monkeypatch):
    def boom(*_):
        raise AssertionError("slept in testing mode")

    monkeypatch.setattr("time.sleep", boom)
    monkeypatch.setattr(asyncio, "sleep", boom)


def test_testing_mode_caps_attempts_at_one_by_default(monkeypatch, events):
    forbid_sleeping(monkeypatch)
    herdless.set_testing(True)
    assert herdless.is_testing()
    calls = []

    @herdless.retry(on=OSError)
    def f():
        calls.append(1)
        raise OSError("x")

    with pytest.raises(OSError):
        f()
    assert len(calls) == 1
    assert events.named("retry_budget_exhausted")[0]["reason"] == "max_attempts"


def test_testing_mode_retries_without_sleeping(monkeypatch, events):
    forbid_sleeping(monkeypatch)
    herdless.set_testing(True, attempts=3)
    # Waits of up to an hour pass at once, and count against max_elapsed.
    policy = herdless.Policy(base=3600, cap=3600, jitter="none", max_attempts=10, max_elapsed=3 * 3600)
    n = 0

    @herdless.retry(on=OSError, policy=policy)
    def f():
        nonlocal n
        n += 1
        if n < 3:
            raise OSError("x")
        return n

    assert f() == 3
    assert [e["sleep_s"] for e in events.named("retry_scheduled")] == [3600.0, 3600.0]

    async def g():
        async for attempt in herdless.retry_context(on=KeyError, policy=policy):
            with attempt:
                if attempt.number < 3:
                    raise KeyError("x")
        return attempt.number

    assert asyncio.run(g()) == 3
    for attempt in herdless.retry_context(on=KeyError, policy=policy):
        with attempt:
            if attempt.number < 3:
                raise KeyError("x")
    assert attempt.number == 3


def test_testing_mode_keeps_the_elapsed_limit(monkeypatch, events):
    forbid_sleeping(monkeypatch)
    herdless.set_testing(True, attempts=100)
    policy = herdless.Policy(base=10, cap=10, jitter="none", max_attempts=100, max_elapsed=35)

    @herdless.retry(on=OSError, policy=policy)
    def f():
        raise OSError("x")

    with pytest.raises(OSError):
        f()
    # Skipped waits move the clock: 3 waits of 10 s fit in 35 s, a 4th does not.
    assert len(events.named("retry_scheduled")) == 3
    assert events.named("retry_budget_exhausted")[0]["reason"] == "max_elapsed"


def test_testing_mode_off_sleeps_again(no_sleep):
    herdless.set_testing(True)
    herdless.set_testing(False)
    assert not herdless.is_testing()
    n = 0
    failed_at = []

    @herdless.retry(on=OSError, policy=herdless.Policy(base=0.5, jitter="none"))
    def f():
        nonlocal n
        n += 1
        if n < 2:
            failed_at.append(time.monotonic())
            raise OSError("x")

    f()
    assert slept_as_decided(no_sleep, [0.5], failed_at)


def test_set_testing_refuses_a_zero_cap():
    with pytest.raises(ValueError, match="attempts"):
        herdless.set_testing(True, attempts=0)
