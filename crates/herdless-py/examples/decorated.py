"""A decorated function retried on a set of exceptions."""

import random

import herdless

policy = herdless.Policy(base=0.05, cap=1.0, max_attempts=5, max_elapsed=10)


@herdless.retry(on=(ConnectionError, TimeoutError), policy=policy, task_id=lambda page: f"scan-{page}")
def scan(page: int) -> str:
    if random.random() < 0.5:
        raise ConnectionResetError("controller reset the connection")
    return f"page {page}"


if __name__ == "__main__":
    herdless.set_testing(True, attempts=20)  # no sleeping in this demo
    pages: list[str] = [scan(p) for p in range(3)]
    print(pages)
