"""Coroutines: the engine's waits are `asyncio.sleep` (the loop runs other
tasks meanwhile), cancellation during a wait ends the call cleanly (a retry
the budget admitted is refunded), `async for` blocks."""

import asyncio
import time

import pytest

import herdless


def test_retrying_coroutines_do_not_block_the_loop():
    policy = herdless.Policy(base=0.2, cap=0.2, jitter="none")
    counts = {}

    @herdless.retry(on=OSError, policy=policy)
    async def fetch(i):
        counts[i] = counts.get(i, 0) + 1
        if counts[i] < 2:
            raise OSError("busy")
        return i

    async def main():
        return await asyncio.gather(*(fetch(i) for i in range(50)))

    start = time.monotonic()
    assert asyncio.run(main()) == list(range(50))
    # 50 waits of 200 ms, concurrently: about 0.2 s, not 10 s.
    assert time.monotonic() - start < 1.5
    assert set(counts.values()) == {2}


def test_cancellation_during_the_wait_refunds_the_budget(events):
    budget = herdless.Budget.aws()  # 500 tokens, 5 per retry
    policy = herdless.Policy(base=30, cap=30, jitter="none", max_elapsed=120)

    @herdless.retry(on=OSError, policy=policy, budget=budget)
    async def fetch():
        raise OSError("busy")

    async def main():
        task = asyncio.create_task(fetch())
        for _ in range(100):
            await asyncio.sleep(0.01)
            if events.named("retry_scheduled"):
                break
        assert budget.tokens == 495  # the retry is admitted, the wait begun
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    start = time.monotonic()
    asyncio.run(main())
    assert time.monotonic() - start < 5  # not the 30 s wait
    assert budget.tokens == 500  # refunded: the retry never began
    assert events.names() == ["retry_scheduled"]


def test_cancellation_inside_the_attempt_is_not_retried():
    calls = 0

    @herdless.retry(on=Exception)
    async def slow():
        nonlocal calls
        calls += 1
        await asyncio.sleep(60)

    async def main():
        task = asyncio.create_task(slow())
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert calls == 1


def test_async_for_retries_a_block(events):
    async def main():
        seen = []
        async for attempt in herdless.retry_context(on=KeyError, policy=herdless.Policy(base=0.01)):
            with attempt:
                seen.append(attempt.number)
                if attempt.number < 3:
                    raise KeyError("not yet")
        return seen

    assert asyncio.run(main()) == [1, 2, 3]
    assert events.names() == ["retry_scheduled", "retry_scheduled", "retry_succeeded"]


def test_async_for_reraises_the_last_error():
    async def main():
        async for attempt in herdless.retry_context(
            on=KeyError, policy=herdless.Policy(base=0.001, max_attempts=2)
        ):
            with attempt:
                raise KeyError(f"attempt {attempt.number}")

    with pytest.raises(KeyError, match="attempt 2"):
        asyncio.run(main())


def test_decorated_coroutine_keeps_its_metadata():
    @herdless.retry(on=OSError)
    async def fetch_page(url: str) -> str:
        """Fetches."""
        return url

    assert fetch_page.__name__ == "fetch_page"
    assert fetch_page.__doc__ == "Fetches."
    assert asyncio.iscoroutinefunction(fetch_page)
    assert asyncio.run(fetch_page("x")) == "x"
