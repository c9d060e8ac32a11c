"""Hostile input: a clear error naming the setting, never a crash, a hang or
a silent clamp; hostile server delays are clamped by the engine."""

import copy
import datetime
import math
import pickle
import re
import time

import pytest

import herdless
from conftest import slept_as_decided


@pytest.mark.parametrize(
    "kwargs, error, words",
    [
        ({"base": float("nan")}, ValueError, "base: NaN"),
        ({"base": -1}, ValueError, "base: -1"),
        ({"base": 1e300}, ValueError, "base: 1e300 s is beyond"),
        ({"cap": float("inf")}, ValueError, "cap"),
        ({"base": 0}, ValueError, "invalid base"),
        ({"base": 5, "cap": 1}, ValueError, "invalid cap: 1s is below base 5s"),
        ({"max_attempts": 0}, ValueError, "max_attempts"),
        ({"max_attempts": -3}, ValueError, "max_attempts"),
        ({"max_attempts": 2**70}, ValueError, "max_attempts"),
        ({"max_attempts": 2.5}, TypeError, "max_attempts"),
        ({"max_attempts": True}, TypeError, "max_attempts"),
        ({"multiplier": float("nan")}, ValueError, "multiplier"),
        ({"multiplier": 0.5}, ValueError, "invalid multiplier"),
        ({"max_elapsed": "soon"}, ValueError, "max_elapsed"),
        ({"max_elapsed": -0.1}, ValueError, "max_elapsed"),
        ({"max_retry_after": [1]}, TypeError, "max_retry_after"),
        ({"jitter": "bogus"}, ValueError, "jitter"),
        ({"jitter": 3}, TypeError, "jitter"),
        ({"retry_after_spread": 2.0}, ValueError, "retry_after_spread"),
    ],
)
def test_policy_refuses_with_the_field_named(kwargs, error, words):
    with pytest.raises(error, match=words.replace("+", r"\+")):
        herdless.Policy(**kwargs)


def test_policy_takes_seconds_timedeltas_and_strings():
    p = herdless.Policy(base=datetime.timedelta(milliseconds=250), cap="2m", max_elapsed=600, jitter="decorrelated_window")
    assert (p.base, p.cap, p.max_elapsed, p.jitter) == (0.25, 120.0, 600.0, "decorrelated-window")
    assert herdless.Policy() == herdless.Policy()
    assert "max_attempts=6" in repr(herdless.Policy())


def test_policy_arguments_are_keyword_only():
    with pytest.raises(TypeError):
        herdless.Policy(1.0)  # type: ignore[misc]
    with pytest.raises(TypeError):
        herdless.retry(OSError)  # type: ignore[misc]
    with pytest.raises(TypeError):
        herdless.retry()  # type: ignore[call-arg]


@pytest.mark.parametrize(
    "kwargs, error, words",
    [
        ({"on": 42}, TypeError, "on: expected an exception type"),
        ({"on": ()}, ValueError, "empty tuple"),
        ({"on": (OSError, "x")}, TypeError, "tuple of exception types"),
        ({"on": int}, TypeError, "on: expected"),
        ({"on": OSError, "task_id": 3.5}, TypeError, "task_id"),
        ({"on": OSError, "task_id": b"x"}, TypeError, "task_id"),
        ({"on": OSError, "policy": {"base": 1}}, TypeError, "policy"),
        ({"on": OSError, "budget": 10}, TypeError, "budget"),
        ({"on": OSError, "breaker": "x"}, TypeError, "breaker"),
        ({"on": OSError, "throttle": 1}, TypeError, "throttle"),
        ({"on": OSError, "hook": 1}, TypeError, "hook"),
    ],
)
def test_retry_refuses_bad_arguments_when_decorating(kwargs, error, words):
    with pytest.raises(error, match=words):
        herdless.retry(**kwargs)
    with pytest.raises(error, match=words):
        herdless.retry_context(**kwargs)


def test_integer_task_ids_are_their_digits(events, no_sleep):
    n = 0

    @herdless.retry(on=OSError, task_id=12)
    def f():
        nonlocal n
        n += 1
        if n < 2:
            raise OSError("x")

    f()
    assert events.named("retry_scheduled")[0]["task_id"] == "12"


def test_a_task_id_callable_must_answer_a_string(no_sleep):
    @herdless.retry(on=OSError, task_id=lambda: ["not", "an", "id"])
    def f():
        raise OSError("x")

    with pytest.raises(TypeError, match="task_id") as info:
        f()
    assert isinstance(info.value.__cause__, OSError)


def test_without_task_id_each_call_gets_its_own(events, no_sleep):
    @herdless.retry(on=OSError, policy=herdless.Policy(max_attempts=2))
    def f():
        raise OSError("x")

    for _ in range(3):
        with pytest.raises(OSError):
            f()
    ids = [e["task_id"] for e in events.named("retry_scheduled")]
    assert len(set(ids)) == 3 and all(len(i) == 16 for i in ids)


@pytest.mark.parametrize(
    "answer, honored",
    [
        (float("nan"), False),
        (-5, False),
        (0, False),
        (float("inf"), False),
        ("-5", False),
        ("soon", False),
        ("", False),
        ("\udcff", False),  # a lone surrogate
        (b"\xff\xfe", False),
        ("1" * 10_000, True),  # saturates, then clamped
        (1e300, True),
        (datetime.timedelta(days=3650), True),
        ("99999999999999999999", True),
        (10**400, True),  # beyond a float: saturates, then clamped
        (-(10**400), False),
    ],
)
def test_hostile_server_delays_are_clamped_or_ignored(answer, honored, events, no_sleep):
    policy = herdless.Policy(base=0.5, cap=2, max_retry_after=10, max_attempts=2)
    failed_at = []

    @herdless.retry(on=lambda e: answer, policy=policy)
    def f():
        failed_at.append(time.monotonic())
        raise OSError("503")

    with pytest.raises(OSError):
        f()
    (e,) = events.named("retry_scheduled")
    assert e["honored_retry_after"] is honored
    assert slept_as_decided(no_sleep, [e["sleep_s"]], failed_at)
    if honored:
        assert 10 <= e["sleep_s"] <= 10 * 1.1  # clamped to 10 s, then spread by up to 10 %
    else:
        assert e["sleep_s"] <= 0.5  # the computed jitter


def test_a_classifier_that_raises_stops_the_call(no_sleep):
    @herdless.retry(on=lambda e: 1 / 0)
    def f():
        raise OSError("x")

    with pytest.raises(ZeroDivisionError) as info:
        f()
    assert isinstance(info.value.__cause__, OSError)
    assert no_sleep == []


def test_a_classifier_answering_nonsense_is_a_type_error(no_sleep):
    raised = []

    @herdless.retry(on=lambda e: re.search("busy", str(e)))  # a re.Match
    def f():
        raised.append(OSError(16, "device busy"))
        raise raised[-1]

    with pytest.raises(TypeError, match="on= returned Match") as info:
        f()
    # The attempt's exception is not lost: it is the refusal's cause.
    assert info.value.__cause__ is raised[0]
    assert no_sleep == []


@pytest.mark.parametrize(
    "task_id, words",
    [
        (lambda: "scan", "positional argument"),  # the wrong arity
        (lambda page: None, "task_id"),  # not a str or an int
    ],
)
def test_a_failing_task_id_callable_keeps_the_attempts_exception(task_id, words, no_sleep):
    raised = []

    @herdless.retry(on=OSError, task_id=task_id)
    def scan(page):
        raised.append(OSError(16, "device busy"))
        raise raised[-1]

    with pytest.raises(TypeError, match=words) as info:
        scan(7)
    assert info.value.__cause__ is raised[0]


def test_the_retry_after_classification_saturates_huge_ints():
    c = herdless.Classification.retry_after(10**400)
    assert c.is_retryable and c.server_delay > 1e9
    assert herdless.Classification.retry_after(-(10**400)).server_delay is None


@pytest.mark.parametrize("status", [-1, 70000, 2**80])
def test_statuses_outside_u16_are_refused(status):
    with pytest.raises(ValueError, match="status"):
        herdless.http.classify_status(status)


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda: herdless.Budget(max_tokens=float("nan")), "max_tokens"),
        (lambda: herdless.Budget(max_tokens=-1), "max_tokens"),
        (lambda: herdless.Budget(max_tokens=1e300), "max_tokens"),
        (lambda: herdless.Budget.grpc(10, float("inf")), "token_ratio"),
        (lambda: herdless.Breaker(threshold=0), "threshold"),
        (lambda: herdless.Breaker(probe_wait=-1), "probe_wait"),
        (lambda: herdless.Breaker(probe_wait=0.0001), "probe_wait"),
        (lambda: herdless.Throttle(window=0), "window"),
        (lambda: herdless.Throttle(initial=0), "initial"),
        (lambda: herdless.Throttle(probe_min=5, probe_max=1), "probe_min"),
    ],
)
def test_guards_refuse_with_the_setting_named(make, words):
    with pytest.raises((ValueError, TypeError), match=words):
        make()


def test_huge_and_odd_values_never_crash():
    for v in (math.inf, -math.inf, math.nan, 2**200, -(2**200)):
        with pytest.raises((ValueError, TypeError)):
            herdless.Policy(max_elapsed=v)
        with pytest.raises((ValueError, TypeError)):
            herdless.Policy(max_attempts=v)
    c = herdless.Classification.retry_after(float("nan"))
    assert c.server_delay is None and c.is_retryable


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda: herdless.Policy(base=10**400), "base: infinite"),
        (lambda: herdless.Policy(max_elapsed=-(10**400)), "max_elapsed"),
        (lambda: herdless.Policy(multiplier=10**400), "multiplier: infinite"),
        (lambda: herdless.Budget(max_tokens=10**400), "max_tokens: infinite"),
        (lambda: herdless.Breaker(probe_wait=10**400), "probe_wait: infinite"),
    ],
)
def test_ints_beyond_a_float_are_value_errors_naming_the_setting(make, words):
    with pytest.raises(ValueError, match=words):
        make()


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda: herdless.set_testing(1), "flag: expected a bool, got int"),
        (lambda: herdless.Budget(refund_retry_cost=1), "refund_retry_cost: expected a bool, got int"),
    ],
)
def test_bool_parameters_name_themselves(call, words):
    with pytest.raises(TypeError, match=words):
        call()


def test_a_policy_copies_and_pickles():
    p = herdless.Policy(base="1ms", cap=3.000000001, max_attempts=9, jitter="decorrelated-window")
    assert copy.copy(p) is p and copy.deepcopy({"p": p})["p"] is p
    q = pickle.loads(pickle.dumps(p))
    assert q == p and repr(q) == repr(p)
    assert pickle.loads(pickle.dumps(herdless.Policy())) == herdless.Policy()


def test_simulate_refuses_the_attempts_the_cli_refuses():
    with pytest.raises(ValueError, match="1 to 4294967294"):
        herdless.simulate(max_attempts=4294967295, clients=10)
    report = herdless.simulate(max_attempts="unlimited", clients=10)
    assert report["parameters"]["policy"]["max_attempts"] is None  # as the CLI's --json
    report = herdless.simulate(max_attempts=4294967294, clients=10)
    assert report["parameters"]["policy"]["max_attempts"] == 4294967294


def test_exported_functions_carry_their_python_names():
    assert herdless.http.parse_retry_after.__name__ == "parse_retry_after"
    assert herdless.http.parse_retry_after_ms.__name__ == "parse_retry_after_ms"
