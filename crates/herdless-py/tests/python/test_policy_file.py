"""`Policy.from_file(path, name)`: the `herdless.toml` the CLI reads; the
policy keys through the library's serde support, the CLI's other keys
accepted, anything else refused naming the file, the table and the key."""

import os
import pickle
import subprocess

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
        ('[policy.a]\ncapp = "1s"\n', "herdless.toml:2: policy.a.capp: unknown key (expected one of: jitter, base,"),
        ('[policy.a]\ncap = "soon"\n', 'herdless.toml:2: policy.a.cap: "soon": expected number'),
        ('[policy.a]\nmax_attempts = 0\n', "herdless.toml:2: policy.a.max_attempts: must be at least 1"),
        ('[policy.a]\nbase = "5s"\ncap = "1s"\n', "herdless.toml:3: policy.a.cap: invalid cap: 1s is below base 5s"),
        ('[policy.a]\n\nbase = "40s"\n', "herdless.toml:3: policy.a.base: invalid cap: 30s is below base 40s"),
        ('[policy.a]\njitter = "bogus"\n', "policy.a.jitter"),
        ('[policy.a]\nworkers = 0\n', "herdless.toml:2: policy.a.workers: 0 is out of range (expected 1 to"),
        ('[policy.a]\nrecovery_time = true\n', "herdless.toml:2: policy.a.recovery_time: expected a duration"),
        ('[policy.a]\nretry_on = 3.5\n', "herdless.toml:2: policy.a.retry_on: expected exit statuses"),
        ('[policy.a]\ntimeout = "forever"\n', 'herdless.toml:2: policy.a.timeout: "forever": expected number at 0 (examples: 500ms, 2s, 1m)'),
        ('[policy.b]\ncapp = 1\n[policy.a]\nbase = 1\n', "herdless.toml:2: policy.b.capp: unknown key"),
        ('[policy.a]\nbase = "1s"\n\n[policy.a]\ncap = "2s"\n', "herdless.toml:4: duplicate key"),
        ("[other]\nx = 1\n", "herdless.toml:1: unknown field `other`, expected `policy` (a policy file holds [policy.NAME] tables only)"),
        ("[policy.a\n", "herdless.toml:1: unclosed table"),
        ('[policy.other]\nbase = 1\n', "herdless.toml: policy.a: no such policy (the file defines: other)"),
    ],
)
def test_refusals_name_the_file_table_and_key(tmp_path, text, words):
    path = write(tmp_path, text)
    with pytest.raises(ValueError) as info:
        herdless.Policy.from_file(path, "a")
    assert str(info.value).startswith(str(path.parent) + "/")
    assert words in str(info.value)
    assert not str(info.value).endswith("\n")


def test_a_missing_file_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.toml"):
        herdless.Policy.from_file(tmp_path / "nope.toml", "a")


def test_a_huge_file_is_refused(tmp_path):
    path = write(tmp_path, "# " + "x" * (1 << 20) + "\n")
    with pytest.raises(ValueError, match="larger than 1024 KiB"):
        herdless.Policy.from_file(path, "a")


def test_a_directory_is_is_a_directory_error(tmp_path):
    with pytest.raises(IsADirectoryError, match="is a directory, not a policy file") as info:
        herdless.Policy.from_file(tmp_path, "a")
    assert os.fspath(info.value.filename) == str(tmp_path)


def test_a_policy_from_a_file_pickles_with_its_attempt_timeout(tmp_path):
    p = herdless.Policy.from_file(write(tmp_path, FILE), "nightly-mount")
    q = pickle.loads(pickle.dumps(p))
    assert q == p and q.attempt_timeout == 45.0


#: Files both readers refuse: Python's message is the CLI's, line included.
AGREED = [
    '[policy.a]\ncapp = "1s"\n',
    '[policy.a]\ncap = "soon"\n',
    "[policy.a]\nmax_attempts = 0\n",
    '[policy.a]\nbase = "5s"\ncap = "1s"\n',
    '[policy.a]\nbase = "40s"\n',
    '[policy.a]\njitter = "bogus"\n',
    "[policy.a]\nworkers = 0\n",
    "[policy.a]\nrecovery_time = true\n",
    '[policy.a]\nrecovery_time = "1000000000000h"\n',
    "[policy.a]\ntask_id = 3\n",
    '[policy.a]\ntimeout = "forever"\n',
    "[policy.a]\nretry_on = [1, 300]\n",
    '[policy.b]\ncapp = 1\n[policy.a]\nbase = 1\n',
    "[policy.a]\nbase = '1s'\n\n[policy.a]\ncap = '2s'\n",
    "[policy.a\n",
    '[policy.other]\nbase = 1\n',
]


@pytest.mark.parametrize("text", AGREED)
def test_python_refuses_as_the_cli_does(tmp_path, text):
    binary = os.environ.get("HERDLESS_BIN")
    if not binary:
        pytest.skip("HERDLESS_BIN is not set (cargo test --workspace builds the CLI and sets it)")
    path = write(tmp_path, text)
    cli = subprocess.run(
        [binary, "check", "--config", str(path), "--policy", "a"],
        capture_output=True, text=True, timeout=60,
    )
    assert cli.returncode == 2, cli.stdout
    said = cli.stderr.strip().removeprefix("herdless check: ")
    with pytest.raises(ValueError) as info:
        herdless.Policy.from_file(path, "a")
    assert str(info.value) == said
