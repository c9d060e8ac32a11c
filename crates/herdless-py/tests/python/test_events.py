"""Events through `logging` (logger `herdless`): the names and `extra`
fields are a contract; hooks for metrics; a hook or handler that fails
never changes the call."""

import io
import json
import logging
import threading
import time

import pytest

import herdless

FIELDS = {
    "retry_scheduled": {"task_id", "attempt", "computed_jitter_s", "sleep_s", "honored_retry_after", "timed_out", "elapsed_s"},
    "retry_succeeded": {"task_id", "attempt", "elapsed_s"},
    "retry_abandoned_terminal": {"task_id", "attempt", "classification", "timed_out", "elapsed_s"},
    "retry_budget_exhausted": {"task_id", "attempt", "timed_out", "elapsed_s", "reason"},
}


def test_event_names_levels_and_fields(events, no_sleep):
    outcomes = iter([OSError("a"), OSError("b"), None])

    @herdless.retry(on=OSError, task_id="capture-0042")
    def ok():
        e = next(outcomes)
        if e:
            raise e
        return 1

    @herdless.retry(on=OSError, policy=herdless.Policy(max_attempts=2), task_id="capture-0043")
    def exhausted():
        raise OSError("busy")

    @herdless.retry(on=OSError, task_id="capture-0044")
    def terminal():
        raise ValueError("bad request")

    ok()
    for f, error in ((exhausted, OSError), (terminal, ValueError)):
        with pytest.raises(error):
            f()
    assert events.names() == [
        "retry_scheduled", "retry_scheduled", "retry_succeeded",
        "retry_scheduled", "retry_budget_exhausted",
        "retry_abandoned_terminal",
    ]
    levels = {"retry_scheduled": "WARNING", "retry_succeeded": "INFO", "retry_budget_exhausted": "ERROR", "retry_abandoned_terminal": "WARNING"}
    for r in events.records():
        name = r.getMessage()
        fields = {k for k in FIELDS[name] if hasattr(r, k)}
        assert fields == FIELDS[name], name
        assert r.event == name and r.levelname == levels[name]
        assert isinstance(r.elapsed_s, float) and r.elapsed_s >= 0
        assert isinstance(r.attempt, int)
    s = events.named("retry_scheduled")[0]
    assert s["task_id"] == "capture-0042" and s["attempt"] == 1
    assert s["computed_jitter_s"] == s["sleep_s"] and s["honored_retry_after"] is False
    assert events.named("retry_succeeded")[0]["attempt"] == 3
    assert events.named("retry_budget_exhausted")[0]["reason"] == "max_attempts"


def test_first_try_success_logs_nothing(events):
    @herdless.retry(on=OSError)
    def f():
        return 1

    assert f() == 1
    assert events.names() == []


def test_honored_retry_after_is_in_the_event(events, no_sleep):
    n = 0

    @herdless.retry(on=lambda e: herdless.http.classify_status(503, "3"))
    def f():
        nonlocal n
        n += 1
        if n < 2:
            raise OSError("503")

    f()
    (e,) = events.named("retry_scheduled")
    assert e["honored_retry_after"] is True
    assert 3.0 <= e["sleep_s"] <= 3.3


def test_json_formatter_writes_what_analyze_reads(no_sleep):
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(herdless.JsonFormatter())
    logger = logging.getLogger("herdless")
    logger.addHandler(handler)
    try:
        n = 0

        @herdless.retry(on=OSError, task_id="t-1")
        def f():
            nonlocal n
            n += 1
            if n < 2:
                raise OSError("x")

        before = time.time()
        f()
    finally:
        logger.removeHandler(handler)
    line = json.loads(stream.getvalue().splitlines()[0])
    assert line["event"] == line["message"] == "retry_scheduled"
    assert line["task_id"] == "t-1" and line["attempt"] == 1
    assert before - 1 <= line["timestamp"] <= time.time()
    assert set(FIELDS["retry_scheduled"]) <= set(line)


def test_hooks_receive_every_event(no_sleep):
    seen = []
    n = 0

    @herdless.retry(on=OSError, hook=lambda name, fields: seen.append((name, fields["attempt"])))
    def f():
        nonlocal n
        n += 1
        if n < 3:
            raise OSError("x")

    f()
    assert seen == [("retry_scheduled", 1), ("retry_scheduled", 2), ("retry_succeeded", 3)]


def test_a_failing_hook_does_not_change_the_call(no_sleep):
    unraisable = []
    import sys

    old = sys.unraisablehook
    sys.unraisablehook = unraisable.append
    try:
        n = 0

        def hook(name, fields):
            raise RuntimeError("metrics backend down")

        @herdless.retry(on=OSError, hook=hook)
        def f():
            nonlocal n
            n += 1
            if n < 2:
                raise OSError("x")
            return "done"

        assert f() == "done"
    finally:
        sys.unraisablehook = old
    assert len(unraisable) == 2  # retry_scheduled, retry_succeeded
    assert isinstance(unraisable[0].exc_value, RuntimeError)


def test_sleeping_releases_the_gil():
    policy = herdless.Policy(base=0.5, cap=0.5, jitter="none")
    failing = threading.Event()
    n = 0

    @herdless.retry(on=OSError, policy=policy)
    def f():
        nonlocal n
        n += 1
        if n < 2:
            failing.set()
            raise OSError("x")

    t = threading.Thread(target=f)
    start = time.monotonic()
    t.start()
    # The other thread fails, then waits 500 ms. This one wakes, naps 50 ms
    # and runs Python again: each step needs the GIL, which a wait that held
    # it would give back only at its end, 500 ms in.
    assert failing.wait(5)
    time.sleep(0.05)
    sum(range(1000))
    took = time.monotonic() - start
    t.join()
    assert n == 2
    assert time.monotonic() - start >= 0.5
    assert took < 0.3


def test_records_name_the_retried_function_as_their_caller(events, no_sleep):
    n = 0

    @herdless.retry(on=OSError)
    def read_block():
        nonlocal n
        n += 1
        if n < 2:
            raise OSError("x")

    read_block()
    (r,) = [r for r in events.records() if r.getMessage() == "retry_scheduled"]
    assert r.funcName == "read_block"
    assert r.pathname == __file__
    assert r.lineno == read_block.__wrapped__.__code__.co_firstlineno

    for attempt in herdless.retry_context(on=KeyError):
        with attempt:
            if attempt.number < 2:
                raise KeyError("x")
    r = [r for r in events.records() if r.getMessage() == "retry_scheduled"][-1]
    # A block has no function of its own: the record's caller is the block's frame.
    assert r.funcName == "test_records_name_the_retried_function_as_their_caller"
    assert r.pathname == __file__


def test_a_logger_class_with_its_own_make_record_makes_the_records(events, no_sleep, monkeypatch):
    made = []

    class Recording(logging.Logger):
        def makeRecord(self, *args, **kwargs):  # noqa: N802
            record = super().makeRecord(*args, **kwargs)
            made.append(record.getMessage())
            return record

    monkeypatch.setattr(logging.getLogger("herdless"), "__class__", Recording)
    n = 0

    @herdless.retry(on=OSError)
    def f():
        nonlocal n
        n += 1
        if n < 2:
            raise OSError("x")

    f()
    assert made == ["retry_scheduled", "retry_succeeded"]
    assert events.names() == ["retry_scheduled", "retry_succeeded"]
