"""Shared fixtures: testing mode is reset after every test, and the events
the engine logs (logger ``herdless``) are read back from pytest's caplog."""

import bisect
import logging
import time
from typing import Any, Dict, List

import pytest

import herdless


@pytest.fixture(autouse=True)
def _testing_off():
    herdless.set_testing(False)
    yield
    herdless.set_testing(False)


class Events:
    """The records of logger ``herdless``, as (name, fields) pairs."""

    def __init__(self, caplog: pytest.LogCaptureFixture) -> None:
        self._caplog = caplog

    def records(self) -> List[logging.LogRecord]:
        return [r for r in self._caplog.records if r.name == "herdless"]

    def named(self, name: str) -> List[Dict[str, Any]]:
        return [r.__dict__ for r in self.records() if r.getMessage() == name]

    def names(self) -> List[str]:
        return [r.getMessage() for r in self.records()]


@pytest.fixture
def events(caplog: pytest.LogCaptureFixture) -> Events:
    caplog.set_level(logging.DEBUG, logger="herdless")
    return Events(caplog)


class Waits(list):
    """The waits asked of ``time.sleep``, and when each was asked
    (``time.monotonic``, the clock the engine reads)."""

    def __init__(self) -> None:
        super().__init__()
        self.at: List[float] = []

    def __call__(self, seconds: float) -> None:
        self.at.append(time.monotonic())
        self.append(seconds)


def slept_as_decided(waits: Waits, decided: List[float], failed_at: List[float]) -> bool:
    """Whether each wait is the engine's delay (the event's ``sleep_s``) less
    the time from the decision to the sleep (the events' observers took
    part of it): at most ``sleep_s``, and at least ``sleep_s`` less the time
    from the failure before it to the sleep. ``failed_at``: when the attempts
    raised (``time.monotonic()``), each before its decision."""
    slack = 1e-9  # a nanosecond duration as float seconds

    def failed_before(t: float) -> float:
        return failed_at[bisect.bisect_right(failed_at, t) - 1]

    return len(waits) == len(decided) and all(
        d - (t - failed_before(t)) - slack <= w <= d + slack
        for w, d, t in zip(waits, decided, waits.at)
    )


@pytest.fixture
def no_sleep(monkeypatch: pytest.MonkeyPatch) -> Waits:
    """Patches ``time.sleep`` out; returns the waits it was asked for."""
    waits = Waits()
    monkeypatch.setattr("time.sleep", waits)
    return waits
