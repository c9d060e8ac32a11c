"""The annotations say what the package takes: an ``on=`` callable receives
an ``Exception`` (only those are classified), so ``def on(e: Exception) ->
bool`` type-checks; ``retry_context`` takes a ``task_id`` callable as
``retry`` does."""

import typing

import herdless


def test_on_callables_receive_exceptions():
    on = typing.get_type_hints(herdless.retry)["on"]
    callables = [a for a in typing.get_args(on) if typing.get_origin(a) is not None
                 and "Callable" in repr(typing.get_origin(a))]
    assert [typing.get_args(c)[0] for c in callables] == [[Exception]]


def test_retry_context_takes_what_retry_takes():
    retry = typing.get_type_hints(herdless.retry)
    block = typing.get_type_hints(herdless.retry_context)
    for name in ("on", "policy", "budget", "breaker", "throttle", "task_id", "hook"):
        assert block[name] == retry[name], name
