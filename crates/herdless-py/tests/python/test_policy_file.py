"""`Policy.from_file(path, name)`: the `herdless.toml` the CLI reads; the
policy keys through the library's serde support, the CLI's other keys
accepted, anything else refused naming the file, the table and the key."""

import pytest

import herdless

FILE = """
[policy.nightly-mount]
jitter = "equal"
base = "2s"
cap = "2m"
max_attempts = 8
max_elapsed = "10m"
max_retry_after = "1m"
attempt_timeout = "45s"
recovery_time = "90s"
retry_on = "32"
timeout = "1m"

[policy.ingest]
base = 0.5
cap = "1m"
max_elapsed = "4m"
visibility_timeout = "5m"
workers = 40
seed = 7
task_id = "ingest"
terminal_on = [2, 3]
kill_after = "5s"
"""


def write(tmp_path, text):
    path = tmp_path / "herdless.toml"
    path.write_text(text)
    return path


def test_reads_a_named_policy(tmp_path):
    path = write(tmp_path, FILE)
    p = herdless.Policy.from_file(path, "nightly-mount")
    assert (p.jitter, p.base, p.cap, p.max_attempts) == ("equal", 2.0, 120.0, 8)
    assert (p.max_elapsed, p.max_retry_after, p.attempt_timeout) == (600.0, 60.0, 45.0)
    q = herdless.Policy.from_file(str(path), "ingest")
    assert (q.base, q.cap, q.max_elapsed, q.jitter) == (0.5, 60.0, 240.0, "full")
    assert q.max_attempts == herdless.Policy().max_attempts


@pytest.mark.parametrize(
    "text, words",
    [
        ('[policy.a]\ncapp = "1s"\n', "herdless.toml: policy.a.capp: unknown key (expected one of: jitter, base,"),
        ('[policy.a]\ncap = "soon"\n', "policy.a.cap: "),
        ('[policy.a]\nmax_attempts = 0\n', "policy.a.max_attempts: must be at least 1"),
        ('[policy.a]\nbase = "5s"\ncap = "1s"\n', "policy.a: invalid cap: 1s is below base 5s"),
        ('[policy.a]\njitter = "bogus"\n', "policy.a.jitter"),
        ('[policy.a]\nworkers = 0\n', "policy.a.workers: expected a whole number, at least 1"),
        ('[policy.a]\nrecovery_time = true\n', "policy.a.recovery_time"),
        ('[policy.a]\nretry_on = 3.5\n', "policy.a.retry_on: expected exit statuses"),
        ('[policy.b]\ncapp = 1\n[policy.a]\nbase = 1\n', "policy.b.capp: unknown key"),
        ("[other]\nx = 1\n", "other: unknown key (a policy file holds [policy.NAME] tables only)"),
        ("[policy.a\n", "herdless.toml: "),
        ('[policy.other]\nbase = 1\n', "policy.a: no such policy (the file defines: other)"),
    ],
)
def test_refusals_name_the_file_table_and_key(tmp_path, text, words):
    path = write(tmp_path, text)
    with pytest.raises(ValueError) as info:
        herdless.Policy.from_file(path, "a")
    assert str(path) in str(info.value)
    assert words in str(info.value)


def test_a_missing_file_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.toml"):
        herdless.Policy.from_file(tmp_path / "nope.toml", "a")


def test_a_huge_file_is_refused(tmp_path):
    path = write(tmp_path, "# " + "x" * (1 << 20) + "\n")
    with pytest.raises(ValueError, match="larger than 1024 KiB"):
        herdless.Policy.from_file(path, "a")
