"""HTTP knowledge for ``on=`` callables: the library's status sets and its
``Retry-After`` parser (both forms, hostile-input safe).

>>> from herdless import http
>>> http.classify_status(503, "2").server_delay
2.0
>>> http.classify_status(404).name
'terminal'
>>> http.classify_status(200) is None
True

Use it in an ``on=`` callable: a ``Classification`` answers for itself, and
a server's delay is clamped to the policy's ``max_retry_after`` and spread
by the engine.
"""

from ._herdless import (
    RETRYABLE_STATUSES,
    TERMINAL_STATUSES,
    classify_status,
    parse_retry_after,
    parse_retry_after_ms,
)

__all__ = [
    "RETRYABLE_STATUSES",
    "TERMINAL_STATUSES",
    "classify_status",
    "parse_retry_after",
    "parse_retry_after_ms",
]
