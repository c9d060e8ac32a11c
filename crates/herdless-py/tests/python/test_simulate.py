"""`herdless.simulate(**flags)`: the simulator's JSON report as a dict."""

import pytest

import herdless


def test_simulate_returns_the_report():
    r = herdless.simulate(scenario="spread", workers=50, failures=2, jitter=["none", "full"], seed=3)
    assert r["scenario"] == "spread"
    names = [s["strategy"] for s in r["strategies"]]
    assert names == ["none", "full"]
    assert r == herdless.simulate(scenario="spread", workers=50, failures=2, jitter="none,full", seed=3)


def test_simulate_takes_durations_in_every_form():
    r = herdless.simulate(scenario="outage", clients=500, capacity=200, outage="2s", base=0.5, cap=5, jitter="full")
    assert r["scenario"] == "outage"


@pytest.mark.parametrize(
    "flags, error, words",
    [
        ({"bogus": 1}, TypeError, "unexpected keyword argument 'bogus'"),
        ({"scenario": "nope"}, ValueError, "scenario"),
        ({"scenario": "spread", "clients": 5}, ValueError, "clients applies to scenario"),
        ({"scenario": "spread", "workers": -1}, ValueError, "workers"),
        ({"scenario": "spread", "base": float("nan")}, ValueError, "base"),
        ({"scenario": "spread", "jitter": "warp"}, ValueError, "jitter"),
        ({"scenario": "spread", "jitter": 3}, TypeError, "jitter"),
        ({"scenario": "spread", "base": 10, "cap": 1}, ValueError, "invalid cap"),
    ],
)
def test_simulate_refuses_bad_flags(flags, error, words):
    with pytest.raises(error, match=words):
        herdless.simulate(**flags)


def test_simulate_runs_the_reactivation_scenario_as_the_cli_does():
    flags = dict(scenario="reactivation", clients=600, capacity=200, jitter="full,full+waves", seed=5)
    r = herdless.simulate(plan="unannounced", **flags)
    assert r["scenario"] == "reactivation"
    assert r != herdless.simulate(**flags)
    assert r == herdless.simulate(plan="unannounced", **flags)
    with pytest.raises(ValueError, match="plan"):
        herdless.simulate(plan="sometimes", **flags)
    with pytest.raises(ValueError, match="plan applies to scenario reactivation"):
        herdless.simulate(scenario="outage", plan="announced")


def test_field_scenario_reports_every_cell_and_refuses_jitter():
    r = herdless.simulate(scenario="field", clients=400, capacity=100, seed=1)
    assert len(r["cells"]) == 6 * 2 * (7 * 2 + 2)
    assert {c["verdict"] for c in r["cells"]} <= {"met", "missed", "baseline"}
    assert {(m["strategy"], m["coordination"]) for m in r["met"]} == {
        ("full+hold", "none"), ("full+hold", "shared"), ("full+throttle", "none"),
    }
    with pytest.raises(ValueError, match="jitter"):
        herdless.simulate(scenario="field", jitter="full")
    with pytest.raises(ValueError, match="outage"):
        herdless.simulate(scenario="field", outage=5)
