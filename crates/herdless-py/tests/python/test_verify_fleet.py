"""Verification 2: 200 threads against a stub that fails each client's
first three calls, the retry times histogrammed in 100 ms buckets. Full
jitter: no bucket holds more than a small share; no jitter: three spikes.
The same runs' JSON logs are then read by `herdless analyze` with no
field-name flags (the CLI the workspace builds, `HERDLESS_BIN`)."""

import json
import os
import subprocess

import pytest

import herdless
from fleet import FAILURES, histogram, run_fleet

CLIENTS = 200
RETRIES = CLIENTS * FAILURES
POLICY = dict(base=1.5, cap=4.0, multiplier=2.0, max_attempts=6, max_elapsed=60)


@pytest.fixture(scope="module")
def fleets(tmp_path_factory):
    out = {}
    for jitter in ("full", "none"):
        log = str(tmp_path_factory.mktemp(jitter) / "fleet.jsonl")
        policy = herdless.Policy(jitter=jitter, **POLICY)
        out[jitter] = (run_fleet(CLIENTS, policy, log), log)
    return out


def test_every_client_succeeds_after_three_retries(fleets):
    for result, _ in fleets.values():
        assert result["errors"] == []
        assert set(result["calls"].values()) == {FAILURES + 1}
        assert len(result["retries"]) == RETRIES


def test_full_jitter_spreads_the_retries(fleets):
    result, _ = fleets["full"]
    buckets = histogram(result["retries"])
    largest = max(buckets.values())
    # Uniform first retries over 1.5 s put about 13 retries in a bucket
    # (with the second retries, about 20 at most on average); a synchronized
    # fleet puts 200 there.
    assert largest / RETRIES <= 0.08, sorted(buckets.items())
    assert len(buckets) >= 40


def test_no_jitter_makes_three_spikes(fleets):
    result, _ = fleets["none"]
    buckets = histogram(result["retries"])
    # The ceilings 1.5 s, 3 s, 4 s: every client retries at 1.5 s, 4.5 s and 8.5 s.
    # Scheduling may split a spike across two neighbouring buckets.
    spikes = []
    for b in sorted(buckets):
        if spikes and b == spikes[-1][-1] + 1:
            spikes[-1].append(b)
        else:
            spikes.append([b])
    assert len(spikes) == 3, sorted(buckets.items())
    for spike, at in zip(spikes, (1.5, 4.5, 8.5)):
        assert sum(buckets[b] for b in spike) == CLIENTS
        assert abs(spike[0] / 10 - at) <= 0.3


def analyze(log):
    binary = os.environ.get("HERDLESS_BIN")
    if not binary:
        pytest.skip("HERDLESS_BIN is not set (cargo test --workspace builds the CLI and sets it)")
    run = subprocess.run([binary, "analyze", "--json", log], capture_output=True, text=True, timeout=60)
    assert run.returncode in (0, 1), run.stderr
    return run.returncode, json.loads(run.stdout)


def check(report, name):
    (c,) = [c for c in report["checks"] if c["check"] == name]
    return c


def test_analyze_reads_a_python_fleet_log(fleets):
    _, log = fleets["full"]
    code, report = analyze(log)
    assert report["skipped"] == 0
    assert report["tasks"] == CLIENTS
    assert report["retrying_tasks"] == CLIENTS
    assert report["succeeded"] == CLIENTS
    assert report["retries"] == RETRIES
    assert report["attempts_per_task"] == {str(FAILURES + 1): CLIENTS}
    assert check(report, "spread")["verdict"] == "pass"
    assert check(report, "lockstep")["verdict"] == "pass"
    assert report["passed"] is True and code == 0


def test_analyze_finds_the_synchronized_fleet(fleets):
    _, log = fleets["none"]
    code, report = analyze(log)
    assert report["tasks"] == CLIENTS and report["retries"] == RETRIES
    spread = check(report, "spread")
    assert spread["verdict"] == "fail"
    # Every client retries at once: one 100 ms bucket (or two, when the
    # spike straddles a bucket's edge) holds them all.
    assert spread["value"] >= 0.5
    assert report["passed"] is False and code == 1
