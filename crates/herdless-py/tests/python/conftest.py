"""Shared fixtures: testing mode is reset after every test, and the events
the engine logs (logger ``herdless``) are read back from pytest's caplog."""

import logging
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


#: How long a test's own event observers (a list append, pytest's log
#: capture) may take between the engine's decision and the wait: microseconds
#: here, 50 ms for a loaded machine.
OBSERVERS_S = 0.05


def slept_as_decided(waits: List[float], decided: List[float]) -> bool:
    """Whether each wait is what was left of the engine's delay (the event's
    ``sleep_s``) when the binding slept: the wait is counted from the
    decision, so the time the events' observers took is part of it."""
    return len(waits) == len(decided) and all(
        d - OBSERVERS_S < w <= d or (d == 0 and w == 0) for w, d in zip(waits, decided)
    )


@pytest.fixture
def no_sleep(monkeypatch: pytest.MonkeyPatch) -> List[float]:
    """Patches ``time.sleep`` out; returns the waits it was asked for."""
    waits: List[float] = []
    monkeypatch.setattr("time.sleep", waits.append)
    return waits
