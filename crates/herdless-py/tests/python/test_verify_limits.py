"""Verification 3: perpetual transient errors raise within ``max_elapsed``,
after at most ``max_attempts``; the last error is re-raised unchanged, the
reason in the ``retry_budget_exhausted`` event and in a note."""

import asyncio
import sys
import time

import pytest

import herdless


def test_elapsed_limit_ends_the_call_in_time(events):
    policy = herdless.Policy(base=0.05, cap=0.2, max_attempts=1000, max_elapsed=0.6)
    attempts = []

    @herdless.retry(on=TimeoutError, policy=policy)
    def poll():
        attempts.append(time.monotonic())
        raise TimeoutError("controller busy")

    start = time.monotonic()
    with pytest.raises(TimeoutError):
        poll()
    took = time.monotonic() - start
    assert took <= 0.6 + 0.1  # the limit plus scheduling noise
    assert attempts[-1] - start <= 0.6  # no attempt starts after the limit
    assert 2 <= len(attempts) < 1000
    (e,) = events.named("retry_budget_exhausted")
    assert e["reason"] == "max_elapsed"
    assert e["attempt"] == len(attempts)
    assert e["timed_out"] is True  # a TimeoutError is a timeout


def test_attempt_limit_ends_the_call(events):
    policy = herdless.Policy(base=0.001, cap=0.004, max_attempts=5, max_elapsed=60)
    raised = []

    @herdless.retry(on=OSError, policy=policy)
    def mount():
        error = OSError(f"attempt {len(raised) + 1}")
        raised.append(error)
        raise error

    with pytest.raises(OSError) as info:
        mount()
    assert len(raised) == 5
    # The very exception the last attempt raised, unchanged.
    assert info.value is raised[-1]
    assert str(info.value) == "attempt 5"
    assert events.names() == ["retry_scheduled"] * 4 + ["retry_budget_exhausted"]
    (e,) = events.named("retry_budget_exhausted")
    assert e["reason"] == "max_attempts" and e["attempt"] == 5
    notes = getattr(info.value, "__notes__", [])
    assert len(notes) == 1 and "max_attempts" in notes[0] and "5 attempts" in notes[0]
    if sys.version_info >= (3, 11):
        assert "max_attempts" in "".join(__import__("traceback").format_exception(info.value))


def test_async_calls_keep_the_limits(events):
    policy = herdless.Policy(base=0.02, cap=0.05, max_attempts=100, max_elapsed=0.3)
    n = 0

    @herdless.retry(on=ConnectionError, policy=policy)
    async def fetch():
        nonlocal n
        n += 1
        raise ConnectionResetError("reset")

    start = time.monotonic()
    with pytest.raises(ConnectionResetError):
        asyncio.run(fetch())
    assert time.monotonic() - start <= 0.3 + 0.1
    assert 2 <= n < 100
    assert events.named("retry_budget_exhausted")[0]["reason"] == "max_elapsed"


def test_a_slow_observer_never_starts_a_retry_after_the_limit():
    # Each event's hook takes 0.3 s (a slow metrics push); the delays are
    # 1 ms. The second retry is decided at about 0.3 s, within the 0.5 s
    # limit, but its hook ends past it: it must not start.
    starts = []

    @herdless.retry(
        on=OSError,
        policy=herdless.Policy(base=0.001, cap=0.001, max_attempts=100, max_elapsed=0.5),
        hook=lambda name, fields: time.sleep(0.3),
    )
    def f():
        starts.append(time.monotonic())
        raise OSError("down")

    start = time.monotonic()
    with pytest.raises(OSError) as info:
        f()
    assert all(s - start <= 0.5 for s in starts), [s - start for s in starts]
    assert len(starts) <= 2  # (one, if a loaded machine made the first hook pass the limit)
    assert "max_elapsed" in info.value.__notes__[0]


def test_the_wait_counts_the_observers_time(monkeypatch):
    # A 0.3 s delay decided at t; its event's hook takes 0.2 s: the binding
    # sleeps what is left (about 0.1 s), so the retry starts when the
    # engine scheduled it.
    real_sleep = time.sleep
    waits = []
    monkeypatch.setattr(time, "sleep", waits.append)
    n = []

    @herdless.retry(
        on=OSError,
        policy=herdless.Policy(base=0.3, cap=0.3, jitter="none"),
        hook=lambda name, fields: real_sleep(0.2) if name == "retry_scheduled" else None,
    )
    def f():
        n.append(1)
        if len(n) < 2:
            raise OSError("once")

    f()
    (wait,) = waits
    assert wait <= 0.3 - 0.2  # what is left of the delay (zero if the hook took it all)
