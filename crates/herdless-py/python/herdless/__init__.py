"""herdless: retries without the thundering herd.

The Rust library's decision engine behind a decorator: bounded, classified,
jittered exponential backoff with an elapsed-time limit, Retry-After honored
but clamped, and the fleet guards (a shared retry budget, a breaker, an
adaptive throttle), with events through ``logging`` (logger ``herdless``).

Every retry decision is made by the engine (in the extension module
``herdless._herdless``); this module only calls your function and sleeps
(``time.sleep`` for functions and blocks, ``asyncio.sleep`` for coroutines).
See docs/python.md in the repository.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import logging
import os
from typing import (
    Any,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterator,
    Optional,
    Tuple,
    Type,
    TypeVar,
    Union,
)

from . import http
from ._herdless import (
    Attempt,
    Breaker,
    Budget,
    Classification,
    Policy,
    Throttle,
    __version__,
    _after_fork,
    _Attempts,
    _Retrier,
    is_testing,
    set_testing,
    simulate,
)

__all__ = [
    "Attempt",
    "Breaker",
    "Budget",
    "Classification",
    "JsonFormatter",
    "Policy",
    "RetryContext",
    "Throttle",
    "__version__",
    "http",
    "is_testing",
    "retry",
    "retry_context",
    "set_testing",
    "simulate",
]

# A library's logger: records reach the application's handlers (propagation),
# never Python's last-resort stderr handler when none is configured.
logging.getLogger("herdless").addHandler(logging.NullHandler())

# fork() copies the engine's per-thread seeds: a forked child (a pre-fork
# server's worker, a multiprocessing pool) draws new ones, so that no two
# workers sleep the same jitter or share task ids.
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)

F = TypeVar("F", bound=Callable[..., Any])

#: What ``on=`` takes: exception types, or a callable answering per exception
#: (only ``Exception`` instances are classified, so ``def on(e: Exception)``).
On = Union[
    Type[BaseException],
    Tuple[Type[BaseException], ...],
    Callable[[Exception], Any],
]

#: ``task_id=``: one id for every call, or a callable of the call's arguments.
TaskId = Union[str, int, Callable[..., Union[str, int]], None]

#: ``hook=``: called with each event's name and fields.
Hook = Callable[[str, "dict[str, Any]"], Any]


def retry(
    *,
    on: On,
    policy: Optional[Policy] = None,
    budget: Optional[Budget] = None,
    breaker: Optional[Breaker] = None,
    throttle: Optional[Throttle] = None,
    task_id: TaskId = None,
    hook: Optional[Hook] = None,
) -> Callable[[F], F]:
    """Retries the decorated function or coroutine function (or an object
    whose ``__call__`` is one).

    ``on`` is required: the exception types to retry (anything else is
    terminal), or a callable that answers per exception (see
    ``herdless.Classification``). When the engine gives up, the last
    exception is re-raised unchanged; when a budget ended the call (not a
    terminal error) it carries a note saying why. What a retry cannot
    re-run (a generator function, a plain function wrapping a coroutine
    function) is refused with a ``TypeError`` when the decorator is made.
    """
    retrier = _Retrier(
        on=on,
        policy=policy,
        budget=budget,
        breaker=breaker,
        throttle=throttle,
        task_id=task_id,
        hook=hook,
    )

    def decorate(fn: F) -> F:
        is_async = _is_async(fn)  # refuses what cannot be retried
        bound = retrier.bind(fn)  # the function's own: its events name it
        if is_async:
            return _wrap_async(bound, fn)  # type: ignore[return-value]
        call = bound.call

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return call(fn, args, kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate


def _is_async(fn: Callable[..., Any]) -> bool:
    """Whether calling ``fn`` returns a coroutine to retry by awaiting it.

    Refuses, with a ``TypeError``, what a retry cannot re-run: a generator
    or async generator function (its body runs when it is iterated, after
    the call has returned), and a plain function that wraps a coroutine
    function (``functools.wraps`` sets ``__wrapped__``), which herdless
    cannot tell from a function that runs the coroutine itself. An object
    whose ``__call__`` is a coroutine function is retried as a coroutine.
    """
    name = getattr(fn, "__qualname__", None) or type(fn).__qualname__
    if inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn):
        raise TypeError(
            f"herdless.retry cannot retry {name}: it is a generator function, whose body "
            "runs when the generator is iterated, after the call has returned; retry the "
            "call inside it that may fail, or a function that consumes the generator"
        )
    if inspect.iscoroutinefunction(fn):
        return True
    plain = (
        inspect.isfunction(fn)
        or inspect.ismethod(fn)
        or inspect.isbuiltin(fn)
        or isinstance(fn, (type, functools.partial))
    )
    if not plain:
        call = getattr(type(fn), "__call__", None)
        if inspect.isgeneratorfunction(call) or inspect.isasyncgenfunction(call):
            raise TypeError(
                f"herdless.retry cannot retry {name}: its __call__ is a generator function, "
                "whose body runs when the generator is iterated, after the call has returned"
            )
        if inspect.iscoroutinefunction(call):
            return True
    try:
        inner = inspect.unwrap(fn)
    except ValueError:  # a __wrapped__ cycle
        return False
    if inner is not fn and inspect.iscoroutinefunction(inner):
        raise TypeError(
            f"herdless.retry: {name} is a plain function that wraps a coroutine function "
            "(its __wrapped__), so herdless cannot tell whether calling it returns a "
            "coroutine, and would retry only the coroutine's creation. Put @herdless.retry "
            "directly above the async def (below the other decorator), or mark the wrapper "
            "with inspect.markcoroutinefunction (Python 3.12 and later)."
        )
    return False


def _wrap_async(
    retrier: _Retrier, fn: Callable[..., Awaitable[Any]]
) -> Callable[..., Awaitable[Any]]:
    @functools.wraps(fn)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        attempts = retrier.attempts(args, kwargs)
        try:
            while True:
                step = attempts.advance()
                if not isinstance(step, Attempt):
                    if step is None:  # over: never here, the loop returns or raises first
                        raise RuntimeError("herdless: the call is over")
                    await asyncio.sleep(step)  # the engine's wait
                    continue
                try:
                    result = await fn(*args, **kwargs)
                except BaseException as error:
                    if not attempts.exit(error):
                        raise
                else:
                    attempts.exit(None)
                    return result
        finally:
            attempts.cancel()

    return wrapper


class RetryContext:
    """Retries a block: ``for attempt in retry_context(on=...): with attempt: ...``.

    Each iteration (``for`` or ``async for``) is one retried call; the block
    runs once per attempt inside ``with attempt:``. A retried exception is
    swallowed and the loop sleeps the engine's delay; when the engine gives
    up, the last exception propagates unchanged from the ``with`` block (or,
    when a breaker's or throttle's wait would pass the elapsed limit, from
    the loop itself).
    """

    __slots__ = ("_retrier",)

    def __init__(self, retrier: _Retrier) -> None:
        self._retrier = retrier

    def __iter__(self) -> Iterator[Attempt]:
        return self._retrier.attempts()

    def __aiter__(self) -> AsyncIterator[Attempt]:
        return _AsyncAttempts(self._retrier.attempts())


class _AsyncAttempts:
    __slots__ = ("_attempts",)

    def __init__(self, attempts: _Attempts) -> None:
        self._attempts = attempts

    def __aiter__(self) -> "_AsyncAttempts":
        return self

    async def __anext__(self) -> Attempt:
        try:
            while True:
                step = self._attempts.advance()
                if step is None:
                    raise StopAsyncIteration
                if not isinstance(step, Attempt):
                    await asyncio.sleep(step)  # the engine's wait
                    continue
                return step
        except BaseException:
            self._attempts.cancel()
            raise


def retry_context(
    *,
    on: On,
    policy: Optional[Policy] = None,
    budget: Optional[Budget] = None,
    breaker: Optional[Breaker] = None,
    throttle: Optional[Throttle] = None,
    task_id: TaskId = None,
    hook: Optional[Hook] = None,
) -> RetryContext:
    """The attempts of a retried block (``for`` and ``async for``)."""
    return RetryContext(
        _Retrier(
            on=on,
            policy=policy,
            budget=budget,
            breaker=breaker,
            throttle=throttle,
            task_id=task_id,
            hook=hook,
        )
    )


#: The attributes every ``LogRecord`` has: what ``JsonFormatter`` leaves out.
_RECORD_KEYS = frozenset(
    logging.LogRecord("", 0, "", 0, "", (), None).__dict__.keys()
) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    """One JSON object per record, as ``herdless analyze`` reads it.

    ``timestamp`` (seconds since the epoch, the record's ``created``),
    ``level``, ``logger``, ``message``, and every ``extra`` field (the
    events' ``event``, ``task_id``, ``attempt``, ``sleep_s``, ...).
    """

    def format(self, record: logging.LogRecord) -> str:
        line = {
            "timestamp": record.created,
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in _RECORD_KEYS:
                line[key] = value
        if record.exc_info:
            line["exc_info"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)
