"""`for attempt in retry_context(on=...)`: blocks retried by the engine."""

import pytest

import herdless


def test_a_block_is_retried_until_it_succeeds(events, no_sleep):
    numbers = []
    for attempt in herdless.retry_context(on=ConnectionError, task_id="block-1"):
        with attempt:
            numbers.append(attempt.number)
            if attempt.number < 3:
                raise ConnectionResetError("reset")
    assert numbers == [1, 2, 3]
    assert len(no_sleep) == 2
    assert [e["task_id"] for e in events.named("retry_scheduled")] == ["block-1", "block-1"]
    assert events.named("retry_succeeded")[0]["attempt"] == 3


def test_the_last_error_propagates_from_the_block(no_sleep):
    raised = []
    with pytest.raises(KeyError) as info:
        for attempt in herdless.retry_context(on=KeyError, policy=herdless.Policy(max_attempts=3)):
            with attempt:
                raised.append(KeyError(attempt.number))
                raise raised[-1]
    assert info.value is raised[-1] and len(raised) == 3
    assert "max_attempts" in info.value.__notes__[0]


def test_a_terminal_error_leaves_at_once(no_sleep):
    n = 0
    with pytest.raises(ValueError):
        for attempt in herdless.retry_context(on=KeyError):
            with attempt:
                n += 1
                raise ValueError("bad")
    assert n == 1 and no_sleep == []


def test_each_iteration_is_a_new_call(no_sleep):
    ctx = herdless.retry_context(on=KeyError)
    for _ in range(2):
        for attempt in ctx:
            with attempt:
                if attempt.number < 2:
                    raise KeyError("x")
        assert attempt.number == 2


def test_an_attempt_used_without_with_is_an_error(no_sleep):
    with pytest.raises(RuntimeError, match="with attempt"):
        for attempt in herdless.retry_context(on=KeyError):
            pass  # never entered: the next iteration cannot know how it ended


def test_breaking_out_refunds_an_admitted_retry(no_sleep):
    budget = herdless.Budget.aws()
    it = iter(herdless.retry_context(on=KeyError, budget=budget))
    attempt = next(it)
    with attempt:
        raise KeyError("x")  # swallowed: the engine retries, the budget paid 5
    assert budget.tokens == 495
    it.cancel()  # what dropping the iterator does (`break`, garbage collection)
    assert budget.tokens == 500
    del it
    it2 = iter(herdless.retry_context(on=KeyError, budget=budget))
    with next(it2):
        raise KeyError("y")
    assert budget.tokens == 495
    del it2  # collected: settled
    assert budget.tokens == 500


def test_an_ended_attempt_cannot_end_twice(no_sleep):
    for attempt in herdless.retry_context(on=KeyError):
        with attempt:
            pass
    with pytest.raises(RuntimeError, match="already ended"):
        attempt.__exit__(None, None, None)


def test_an_interrupt_during_the_wait_ends_the_call_and_refunds(monkeypatch):
    budget = herdless.Budget.aws()

    def interrupted(seconds):
        assert budget.tokens == 495  # the retry was admitted before the wait
        raise KeyboardInterrupt

    monkeypatch.setattr("time.sleep", interrupted)
    calls = 0

    @herdless.retry(on=OSError, budget=budget)
    def f():
        nonlocal calls
        calls += 1
        raise OSError("busy")

    with pytest.raises(KeyboardInterrupt):
        f()
    assert calls == 1
    assert budget.tokens == 500


def test_methods_are_bound(no_sleep):
    import asyncio

    class Scanner:
        def __init__(self):
            self.calls = 0

        @herdless.retry(on=OSError)
        def scan(self, page):
            self.calls += 1
            if self.calls < 2:
                raise OSError("busy")
            return (self, page)

        @herdless.retry(on=OSError)
        async def scan_async(self, page):
            return (self, page)

    s = Scanner()
    assert s.scan(3) == (s, 3)
    assert asyncio.run(s.scan_async(4)) == (s, 4)
