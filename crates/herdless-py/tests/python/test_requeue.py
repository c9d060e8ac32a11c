"""The requeue answer: a server that held a request and put it back
unprocessed (``Herdless-Requeue``) is not an attempt; ``Prefer: wait``."""

import pytest

import herdless
from herdless import Classification, http


def test_classify_headers_reads_the_requeue_answer():
    c = http.classify_headers(503, {"Retry-After": "5", "Herdless-Requeue": "1"})
    assert c.name == "requeued" and c.is_requeue and c.is_retryable
    assert c.server_delay == 5.0
    assert c == Classification.requeued(5)
    # Names without case, pairs as well as mappings, Retry-After-Ms first.
    pairs = [(b"HERDLESS-REQUEUE", b"1"), ("retry-after-ms", "1500"), ("Retry-After", "9")]
    assert http.classify_headers(429, pairs).server_delay == 1.5
    # No delay: a plain retryable answer; a terminal status: terminal.
    assert http.classify_headers(503, {"Herdless-Requeue": "1"}) == Classification.retryable()
    assert http.classify_headers(401, {"Herdless-Requeue": "1", "Retry-After": "2"}) == Classification.terminal()
    # Without the header: the server's delay, an attempt.
    plain = http.classify_headers(503, {"Retry-After": "5"})
    assert not plain.is_requeue and plain.server_delay == 5.0
    assert http.classify_headers(200, {"Herdless-Requeue": "1"}) is None
    # A name or value that is no header is ignored, not an error.
    assert http.classify_headers(503, {"bad name": "1", "Retry-After": "\n"}) == Classification.retryable()
    for bad in (5, [("only-a-name",)], [5]):
        with pytest.raises(TypeError):
            http.classify_headers(503, bad)
    assert Classification.requeued(float("nan")) == Classification.retryable()
    assert repr(Classification.requeued(2)) == "Classification.requeued(2.0)"


def test_prefer_wait_value_is_whole_seconds_at_most_a_day():
    assert (http.PREFER, http.REQUEUE) == ("prefer", "herdless-requeue")
    assert http.prefer_wait_value(50.9) == "wait=50"
    assert http.prefer_wait_value(0) == "wait=0"
    assert http.prefer_wait_value(-3) == "wait=0"
    assert http.prefer_wait_value(1e12) == "wait=86400"
    with pytest.raises((TypeError, ValueError)):
        http.prefer_wait_value("soon")


def test_requeues_are_not_attempts_and_are_logged(events):
    herdless.set_testing(True, attempts=5)  # the policy's own limit applies
    answers = iter(["requeue", "requeue", "requeue", "fail", "ok"])

    class Held(Exception):
        pass

    def on(e):
        return Classification.requeued(1) if str(e) == "requeue" else True

    @herdless.retry(on=on, policy=herdless.Policy(max_attempts=2), task_id="held-1")
    def call():
        a = next(answers)
        if a != "ok":
            raise Held(a)
        return "done"

    assert call() == "done"
    names = events.names()
    assert names.count("retry_requeued") == 3, names
    assert names[-1] == "retry_succeeded"
    r = events.named("retry_requeued")[0]
    assert r["task_id"] == "held-1" and r["attempt"] == 1


def test_requeues_are_bounded_by_max_requeues(events):
    herdless.set_testing(True, attempts=5)  # the policy's own limit applies

    class Held(Exception):
        pass

    calls = []

    @herdless.retry(on=lambda e: Classification.requeued(1), policy=herdless.Policy(max_attempts=2, max_requeues=2))
    def call():
        calls.append(1)
        raise Held("requeue")

    with pytest.raises(Held):
        call()
    # Two requeues free, then each counts as an attempt: 2 + 2 calls.
    assert len(calls) == 4, len(calls)
    assert events.names()[-1] == "retry_budget_exhausted"


def test_classify_headers_takes_more_headers_than_a_header_map_holds():
    # 200,000 distinct names (an HTTP header map holds 32,768): only the
    # three headers the answer needs are kept, so this is no panic.
    many = [(f"x-{i}", "v") for i in range(200_000)]
    many += [("Retry-After", "5"), ("Herdless-Requeue", "1")]
    assert http.classify_headers(503, many) == Classification.requeued(5)
    # As many copies of one header: the first ones are read.
    same = [("Retry-After", "4")] * 100_000 + [("Herdless-Requeue", "1")]
    assert http.classify_headers(503, same) == Classification.requeued(4)
