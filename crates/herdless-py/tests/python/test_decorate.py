"""What ``herdless.retry`` decorates is retried, or refused when it is made:
no callable is accepted and then silently called once."""

import asyncio
import functools

import pytest

import herdless

FAST = herdless.Policy(base=0.001, cap=0.001, max_attempts=3)


def test_an_object_with_an_async_call_is_retried_as_a_coroutine(no_sleep):
    class Client:
        calls = 0

        async def __call__(self, x):
            Client.calls += 1
            if Client.calls < 3:
                raise OSError("down")
            return x

    fetch = herdless.retry(on=OSError, policy=FAST)(Client())
    assert asyncio.run(fetch(7)) == 7
    assert Client.calls == 3


def test_an_object_with_a_plain_call_is_retried(no_sleep):
    class Client:
        calls = 0

        def __call__(self):
            Client.calls += 1
            if Client.calls < 2:
                raise OSError("down")
            return "ok"

    assert herdless.retry(on=OSError, policy=FAST)(Client())() == "ok"
    assert Client.calls == 2


def test_a_partial_of_a_coroutine_function_is_retried(no_sleep):
    calls = []

    async def fetch(x):
        calls.append(x)
        if len(calls) < 2:
            raise OSError("down")
        return x

    retried = herdless.retry(on=OSError, policy=FAST)(functools.partial(fetch, 5))
    assert asyncio.run(retried()) == 5 and calls == [5, 5]


def logged(fn):
    """An ordinary decorator: a plain function that returns what `fn` does."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)

    return wrapper


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda: logged(_coroutine), "wraps a coroutine function"),
        (lambda: _generator, "generator function"),
        (lambda: _async_generator, "generator function"),
        (lambda: _GeneratorCall(), "__call__ is a generator function"),
    ],
)
def test_what_cannot_be_retried_is_refused_when_decorated(make, words):
    with pytest.raises(TypeError, match=words):
        herdless.retry(on=OSError)(make())


async def _coroutine():
    raise OSError("down")


def _generator():
    yield 1


async def _async_generator():
    yield 1


class _GeneratorCall:
    def __call__(self):
        yield 1


def test_the_coroutine_under_a_plain_decorator_is_retried_when_decorated_first(no_sleep):
    calls = []

    @logged
    @herdless.retry(on=OSError, policy=FAST)
    async def fetch():
        calls.append(1)
        if len(calls) < 3:
            raise OSError("down")
        return "ok"

    assert asyncio.run(fetch()) == "ok" and len(calls) == 3
