"""What a call holds is let go when the call is over, without waiting for
the garbage collector: the retried exception (and through its traceback the
frames and arguments), a breaker's probe, the budget's tokens. A call that
is left early (an exception between the loop and ``with attempt:``, a
``break``) is settled when its loop lets go of it. What cycles remain
possible are visible to the collector."""

import asyncio
import gc
import weakref

import pytest

import herdless

FAST = herdless.Policy(base=0.001, cap=0.001, jitter="none")


class Transient(OSError):
    """An OSError that records every instance (weakly)."""

    made = []

    def __init__(self, *args):
        super().__init__(*args)
        Transient.made.append(weakref.ref(self))


@pytest.fixture
def no_collector():
    """The garbage collector off: what is freed is freed by reference counts."""
    Transient.made.clear()
    gc.collect()
    gc.disable()
    yield
    gc.enable()


def alive():
    return [r for r in Transient.made if r() is not None]


def test_a_retried_coroutine_lets_its_exception_go(no_sleep, no_collector):
    attempts = []

    @herdless.retry(on=OSError, policy=FAST)
    async def fetch(payload):
        attempts.append(1)
        if len(attempts) % 2:  # the first attempt of each call
            raise Transient("transient")
        return len(payload)

    async def main():
        for _ in range(20):
            assert await fetch(bytes(1000)) == 1000

    asyncio.run(main())
    assert len(Transient.made) == 20
    assert alive() == []


def test_a_retried_block_lets_its_exception_go(no_sleep, no_collector):
    def block():
        for attempt in herdless.retry_context(on=OSError, policy=FAST):
            with attempt:
                if attempt.number == 1:
                    raise Transient("transient")
                return attempt.number

    for _ in range(20):
        assert block() == 2
    assert len(Transient.made) == 20
    assert alive() == []


def test_an_async_block_lets_its_exception_go(no_sleep, no_collector):
    async def block():
        async for attempt in herdless.retry_context(on=OSError, policy=FAST):
            with attempt:
                if attempt.number == 1:
                    raise Transient("transient")
                return attempt.number

    for _ in range(5):
        assert asyncio.run(block()) == 2
    assert alive() == []


def test_a_block_left_by_an_exception_releases_the_breakers_probe(no_collector):
    herdless.set_testing(True, attempts=10)  # waits skipped: the call's clock moves on
    breaker = herdless.Breaker(threshold=1, probe_wait=0.05)
    policy = herdless.Policy(base=0.001, cap=0.002, max_attempts=5, max_elapsed=2)

    def block():
        for attempt in herdless.retry_context(on=OSError, policy=policy, breaker=breaker):
            if attempt.number == 2:  # this call holds the probe
                raise RuntimeError("a bug between the loop and `with attempt:`")
            with attempt:
                raise Transient("device down")

    with pytest.raises(RuntimeError):
        block()
    calls = []

    @herdless.retry(on=OSError, policy=policy, breaker=breaker)
    def other():
        calls.append(1)
        if len(calls) == 1:
            raise OSError("blip")
        return "ok"

    # With the probe still out, `other` would wait behind it until its
    # elapsed limit and give up.
    assert other() == "ok"
    assert len(calls) == 2


def test_breaking_out_after_a_swallowed_failure_refunds_at_once(no_sleep, no_collector):
    budget = herdless.Budget(max_tokens=10, retry_cost=1, failure_cost=0, threshold=0, spread=0)
    for attempt in herdless.retry_context(on=OSError, policy=FAST, budget=budget):
        with attempt:
            raise Transient("down")
        break  # the retry the engine just admitted never begins
    assert budget.tokens == 10.0
    assert alive() == []


def test_an_attempt_outliving_its_loop_says_so(no_sleep):
    for attempt in herdless.retry_context(on=OSError):
        with attempt:
            pass
    with pytest.raises(RuntimeError, match="already ended"):
        with attempt:
            pass


def test_cycles_through_a_retrier_are_collected():
    class Client:
        def __init__(self):
            # The hook is the client's method: client -> wrapper -> retrier -> hook -> client.
            self.fetch = herdless.retry(on=OSError, hook=self.on_event)(self._fetch)

        def on_event(self, name, fields):
            pass

        def _fetch(self):
            return 1

    client = Client()
    assert client.fetch() == 1
    ref = weakref.ref(client)
    del client
    gc.collect()
    assert ref() is None


def test_the_collector_sees_what_a_call_holds():
    retrier = herdless._Retrier(on=OSError)
    args, kwargs = (object(),), {"k": object()}
    attempts = retrier.attempts(args, kwargs)
    held = gc.get_referents(attempts)
    assert any(o is args for o in held) and any(o is kwargs for o in held)
    assert any(o is retrier for o in held)
