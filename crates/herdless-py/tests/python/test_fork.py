"""Forked workers (a pre-fork server, a ``multiprocessing`` pool started with
``fork``) never draw their parent's or their siblings' jitter and task ids:
``fork()`` copies the engine's per-thread seeds, and the package has the
library draw new ones in the child (``os.register_at_fork``)."""

import json
import os
import time

import pytest

import herdless

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork here")

CHILDREN = 4


def retried_call(waits, ids):
    @herdless.retry(
        on=OSError,
        policy=herdless.Policy(max_attempts=4),
        hook=lambda name, f: ids.append(f["task_id"]) if name == "retry_scheduled" else None,
    )
    def connect():
        raise OSError("device down")

    with pytest.raises(OSError):
        connect()


def test_forked_children_draw_their_own_jitter_and_task_ids(monkeypatch):
    waits, ids = [], []
    monkeypatch.setattr(time, "sleep", waits.append)
    retried_call(waits, ids)  # the parent retried once before forking
    assert len(waits) == 3
    read, write = os.pipe()
    pids = []
    for _ in range(CHILDREN):
        pid = os.fork()
        if pid == 0:  # the child: report and leave, whatever happens
            code = 1
            try:
                waits.clear()
                ids.clear()
                retried_call(waits, ids)
                os.write(write, (json.dumps({"waits": waits, "id": ids[0]}) + "\n").encode())
                code = 0
            finally:
                os._exit(code)
        pids.append(pid)
    os.close(write)
    for pid in pids:
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    with os.fdopen(read) as r:
        children = [json.loads(line) for line in r]
    waits.clear()
    ids.clear()
    retried_call(waits, ids)  # the parent's next call
    parent = {"waits": waits, "id": ids[0]}
    seen = children + [parent]
    assert len(children) == CHILDREN
    assert len({json.dumps(s["waits"]) for s in seen}) == CHILDREN + 1
    assert len({s["id"] for s in seen}) == CHILDREN + 1
