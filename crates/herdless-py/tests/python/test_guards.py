"""The breaker and the throttle, shared by decorated functions."""

import threading
import time

import pytest

import herdless


def test_breaker_opens_and_holds_retries_behind_one_probe(events, no_sleep):
    breaker = herdless.Breaker(threshold=2, probe_wait=0.05)
    policy = herdless.Policy(base=0.001, cap=0.001, max_attempts=3, max_elapsed=1)

    @herdless.retry(on=OSError, breaker=breaker, policy=policy)
    def down():
        raise OSError("503")

    with pytest.raises(OSError):
        down()
    assert breaker.is_open and breaker.consecutive_failures == 3

    @herdless.retry(on=OSError, breaker=breaker, policy=policy)
    def up():
        return "ok"

    assert up() == "ok"
    assert not breaker.is_open


def test_retries_wait_behind_the_probe_until_the_elapsed_limit(events):
    breaker = herdless.Breaker(threshold=1, probe_wait=0.2)
    release = threading.Event()
    in_probe = threading.Event()
    n = 0

    @herdless.retry(on=OSError, breaker=breaker, policy=herdless.Policy(base=0.001, cap=0.001, max_elapsed=10))
    def prober():
        nonlocal n
        n += 1
        if n == 1:
            raise OSError("503")  # opens the breaker
        in_probe.set()  # this retry is the probe: hold it
        release.wait(5)
        return "ok"

    t = threading.Thread(target=prober)
    t.start()
    assert in_probe.wait(5)
    attempts = 0

    @herdless.retry(on=OSError, breaker=breaker, policy=herdless.Policy(base=0.001, cap=0.001, max_elapsed=0.5))
    def waiter():
        nonlocal attempts
        attempts += 1
        raise OSError("503")

    start = time.monotonic()
    try:
        with pytest.raises(OSError):
            waiter()
        took = time.monotonic() - start
    finally:
        release.set()
        t.join()
    # One attempt, then jittered waits behind the probe until the next
    # would pass max_elapsed: a give-up, not a retry.
    assert attempts == 1
    assert took <= 0.5 + 0.15
    (e,) = events.named("retry_budget_exhausted")
    assert e["reason"] == "max_elapsed" and e["attempt"] == 1
    assert not breaker.is_open  # the probe succeeded


def test_throttle_paces_first_attempts_when_the_endpoint_is_down(no_sleep):
    throttle = herdless.Throttle()

    @herdless.retry(on=OSError, throttle=throttle, policy=herdless.Policy(max_attempts=1))
    def down():
        raise OSError("503")

    with pytest.raises(OSError):
        down()
    assert throttle.is_probing
    # The next call waits for the probe interval before its first attempt.
    with pytest.raises(OSError):
        down()
    assert no_sleep and 0 < no_sleep[0] <= 0.5


def test_a_first_attempt_whose_turn_comes_too_late_is_not_made(events, no_sleep):
    throttle = herdless.Throttle(probe_min=5, probe_max=5)
    policy = herdless.Policy(max_attempts=1, max_elapsed=0.01)
    calls = []

    @herdless.retry(on=OSError, throttle=throttle, policy=policy)
    def down():
        calls.append(1)
        raise OSError("503")

    with pytest.raises(OSError):
        down()
    assert throttle.is_probing
    # The next turn is seconds away, past the 10 ms limit: no attempt.
    with pytest.raises(TimeoutError, match="before its first attempt") as info:
        down()
    assert calls == [1] and no_sleep == []
    assert "gave up after 0 attempts" in info.value.__notes__[0]
    e = events.named("retry_budget_exhausted")[-1]
    assert e["reason"] == "max_elapsed" and e["attempt"] == 0
    # The same for a block.
    with pytest.raises(TimeoutError, match="before its first attempt"):
        for attempt in herdless.retry_context(on=OSError, throttle=throttle, policy=policy):
            with attempt:
                calls.append(2)
    assert calls == [1]


def test_guards_show_their_state():
    assert "tokens=500" in repr(herdless.Budget.aws())
    assert herdless.Budget().max_tokens == 10
    assert "is_open=False" in repr(herdless.Breaker())
    assert herdless.Throttle(initial=20).rate > 0
