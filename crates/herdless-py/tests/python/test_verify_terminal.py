"""Verification 4: a terminal error makes exactly one attempt and logs
``retry_abandoned_terminal``; the error is the caller's, unchanged."""

import pytest

import herdless


def test_terminal_error_is_one_attempt(events, no_sleep):
    calls = []

    @herdless.retry(on=ConnectionError, task_id="scan-7")
    def upload():
        calls.append(1)
        raise PermissionError("401")

    with pytest.raises(PermissionError) as info:
        upload()
    assert len(calls) == 1
    assert no_sleep == []
    assert events.names() == ["retry_abandoned_terminal"]
    (e,) = events.named("retry_abandoned_terminal")
    assert e["task_id"] == "scan-7"
    assert e["attempt"] == 1
    assert e["classification"] == "terminal"
    assert e["levelname"] == "WARNING"  # the first attempt: the answer, not a storm
    # A terminal error carries no note: nothing was exhausted.
    assert not getattr(info.value, "__notes__", None)


def test_terminal_after_retries_is_logged_at_error(events, no_sleep):
    answers = iter([True, True, False])

    @herdless.retry(on=lambda e: next(answers))
    def flaky():
        raise RuntimeError("x")

    with pytest.raises(RuntimeError):
        flaky()
    assert events.names() == ["retry_scheduled", "retry_scheduled", "retry_abandoned_terminal"]
    (e,) = events.named("retry_abandoned_terminal")
    assert e["attempt"] == 3 and e["levelname"] == "ERROR"
