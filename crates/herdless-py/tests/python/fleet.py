"""A fleet of threads against a stub that fails each client's first three
calls (shared by the fleet verification and the `herdless analyze`
end-to-end test).

The stub is in-process (a counter under a lock): it answers in
microseconds, so the times it records are herdless's schedule and not a
server's queue (an HTTP stub on 127.0.0.1 served by the same interpreter
takes about half a second to answer a wave of 200 first calls, which
bunches the retries that fall due meanwhile).
"""

import logging
import threading
import time
from collections import Counter
from typing import Dict, List

import herdless

FAILURES = 3


class Unavailable(Exception):
    """What the stub raises: a 503."""

    status = 503


class Stub:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.calls: Counter = Counter()
        self.retries: List[float] = []  # monotonic times of retried calls

    def call(self, client: int) -> str:
        now = time.monotonic()
        with self.lock:
            self.calls[client] += 1
            n = self.calls[client]
            if n > 1:
                self.retries.append(now)
        if n <= FAILURES:
            raise Unavailable(f"503 for client {client}, call {n}")
        return "ok"


def on(error: BaseException) -> object:
    status = getattr(error, "status", None)
    if status is not None:
        return herdless.http.classify_status(status)
    return isinstance(error, OSError)


def run_fleet(clients: int, policy: herdless.Policy, log_path: str) -> Dict[str, object]:
    """Runs the fleet with its events logged as JSON lines to `log_path`;
    the retry times (seconds since the fleet started)."""
    stub = Stub()
    logger = logging.getLogger("herdless")
    handler = logging.FileHandler(log_path)
    handler.setFormatter(herdless.JsonFormatter())
    logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.INFO)

    @herdless.retry(on=on, policy=policy, task_id=lambda client: f"client-{client}")
    def fetch(client: int) -> str:
        return stub.call(client)

    start = threading.Barrier(clients + 1)
    errors: List[BaseException] = []

    def worker(client: int) -> None:
        start.wait()
        try:
            fetch(client)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    started = time.monotonic()
    start.wait()
    try:
        for t in threads:
            t.join()
    finally:
        logger.removeHandler(handler)
        handler.close()
        logger.setLevel(level)
    return {
        "errors": errors,
        "calls": dict(stub.calls),
        "retries": [t - started for t in stub.retries],
    }


def histogram(times: List[float], bucket: float = 0.1) -> Counter:
    return Counter(int(t / bucket) for t in times)
