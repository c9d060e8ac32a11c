"""A shared budget under 32 threads: every admission is one atomic
decision, so the admitted retries are exactly what the bucket allows."""

import threading

import pytest

import herdless

THREADS = 32
CALLS_PER_THREAD = 20


def test_shared_budget_admits_exactly_its_tokens(no_sleep):
    # 100 tokens, each failure costs 1, a retry is admitted only while more
    # than 50 remain after the failure's charge, no ramp: 49 retries in all,
    # whatever the interleaving (levels 99 down to 51).
    budget = herdless.Budget(max_tokens=100, failure_cost=1, retry_cost=0, success_refund=0, spread=0)
    assert budget.tokens == 100
    lock = threading.Lock()
    seen = {"retry_scheduled": 0, "retry_budget_exhausted": 0}
    reasons = set()

    def hook(name, fields):
        with lock:
            seen[name] += 1
            if name == "retry_budget_exhausted":
                reasons.add(fields["reason"])

    policy = herdless.Policy(base=0.001, cap=0.001, max_attempts=10_000, max_elapsed=600)

    @herdless.retry(on=OSError, policy=policy, budget=budget, hook=hook)
    def call():
        raise OSError("503")

    barrier = threading.Barrier(THREADS)

    def worker():
        barrier.wait()
        for _ in range(CALLS_PER_THREAD):
            with pytest.raises(OSError):
                call()

    threads = [threading.Thread(target=worker) for _ in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    calls = THREADS * CALLS_PER_THREAD
    assert seen["retry_scheduled"] == 49
    assert seen["retry_budget_exhausted"] == calls
    assert reasons == {"retry_budget"}
    assert len(no_sleep) == 49
    assert budget.tokens == 0


def test_budget_refills_on_success(no_sleep):
    budget = herdless.Budget.grpc(10, 0.5)
    outcomes = iter([OSError("x"), OSError("y"), None])

    @herdless.retry(on=OSError, budget=budget)
    def call():
        e = next(outcomes)
        if e:
            raise e
        return "ok"

    assert call() == "ok"
    assert budget.tokens == pytest.approx(8.5)  # 10 - 2 failures + 0.5
