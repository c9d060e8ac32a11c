"""HTTP knowledge for ``on=`` callables: the library's status sets and its
``Retry-After`` parser (both forms, hostile-input safe).

>>> from herdless import http
>>> http.classify_status(503, "2").server_delay
2.0
>>> http.classify_status(404).name
'terminal'
>>> http.classify_status(200) is None
True
>>> http.classify_headers(503, {"Retry-After": "5", "Herdless-Requeue": "1"}).name
'requeued'
>>> http.prefer_wait_value(50.9)
'wait=50'

Use it in an ``on=`` callable: a ``Classification`` answers for itself, and
a server's delay is clamped to the policy's ``max_retry_after`` and spread
by the engine. ``classify_headers`` reads a whole response's headers: a
retryable answer carrying ``Herdless-Requeue`` (the server held the request
and put it back unprocessed) is ``requeued``, which is not an attempt. Send
``Prefer: wait=N`` (``prefer_wait_value``) with the patience you have left,
and a server running herdless's hold keeps your request that long.
"""

from ._herdless import (
    PREFER,
    REQUEUE,
    RETRYABLE_STATUSES,
    TERMINAL_STATUSES,
    classify_headers,
    classify_status,
    parse_retry_after,
    prefer_wait_value,
    parse_retry_after_ms,
)

__all__ = [
    "PREFER",
    "REQUEUE",
    "RETRYABLE_STATUSES",
    "TERMINAL_STATUSES",
    "classify_headers",
    "classify_status",
    "parse_retry_after",
    "prefer_wait_value",
    "parse_retry_after_ms",
]
