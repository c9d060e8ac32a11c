"""The HTTP helpers: the library's status sets and Retry-After parser."""

import email.utils
import time

import pytest

from herdless import Classification, http


def test_status_sets_fail_closed():
    assert http.RETRYABLE_STATUSES == {408, 425, 429, 500, 502, 503, 504}
    assert http.TERMINAL_STATUSES == {400, 401, 403, 404, 405, 501, 507}
    assert http.classify_status(200) is None
    assert http.classify_status(503) == Classification.retryable()
    assert http.classify_status(404) == Classification.terminal()
    assert http.classify_status(418).name == "unknown"
    assert not http.classify_status(418).is_retryable


def test_retry_after_both_forms():
    assert http.parse_retry_after("120") == 120.0
    date = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 28 <= http.parse_retry_after(date) <= 31
    assert http.parse_retry_after(email.utils.formatdate(time.time() - 30, usegmt=True)) is None
    for bad in ("", "-5", "1.5", "soon", "\u00e9", "x" * 100):
        assert http.parse_retry_after(bad) is None
    assert http.parse_retry_after("9" * 5000) > 1e18  # saturated; the policy clamps it
    assert http.parse_retry_after_ms("1250") == 1.25
    assert http.classify_status(503, "2", retry_after_ms="1250").server_delay == 1.25
    assert http.classify_status(401, "2").server_delay is None
    with pytest.raises(TypeError):
        http.parse_retry_after(5)
