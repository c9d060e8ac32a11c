"""Per-call overhead of a retried call: herdless against tenacity, stamina
and a hand-written loop, in one process, interleaved (each round times
every contender once; the best round counts).

Two paths: a first-try success, and 3 failures then a success. Sleeping is
patched out for every contender (``time.sleep``, which all four call, is a
no-op), and every contender logs one record per retry (the loggers have a
``NullHandler``: records are made and handled, nothing is written).

    python bench/overhead.py [--rounds N] [--number N]

needs ``pip install tenacity stamina`` beside herdless (docs/python.md,
"Overhead").
"""

import argparse
import logging
from importlib.metadata import version
import platform
import random
import sys
import time
import timeit

import stamina
import tenacity

import herdless

# Sleeping patched out, for all four contenders alike.
time.sleep = lambda seconds: None  # type: ignore[assignment]
logging.getLogger().addHandler(logging.NullHandler())
log = logging.getLogger("bench")

RETRY_ON = (ConnectionError, TimeoutError)
ATTEMPTS = 6


def ok() -> int:
    return 1


state = [0]


def flaky() -> int:
    """Fails 3 calls of every 4: each retried call is 3 failures, 1 success."""
    state[0] += 1
    if state[0] % 4:
        raise ConnectionResetError("controller busy")
    return 1


def hand_loop(fn):
    """The plain loop: range, random.uniform, time.sleep, a logging call."""

    def call():
        for attempt in range(ATTEMPTS):
            try:
                return fn()
            except RETRY_ON:
                if attempt == ATTEMPTS - 1:
                    raise
                delay = random.uniform(0, min(30.0, 0.5 * 2**attempt))
                log.warning(
                    "retry_scheduled",
                    extra={"task_id": "", "attempt": attempt + 1, "computed_jitter_s": delay,
                           "sleep_s": delay, "honored_retry_after": False, "elapsed_s": 0.0},
                )
                time.sleep(delay)

    return call


def herdless_(fn):
    return herdless.retry(on=RETRY_ON, policy=herdless.Policy(max_attempts=ATTEMPTS))(fn)


def tenacity_(fn):
    return tenacity.retry(
        retry=tenacity.retry_if_exception_type(RETRY_ON),
        wait=tenacity.wait_random_exponential(multiplier=0.5, max=30),
        stop=tenacity.stop_after_attempt(ATTEMPTS),
        before_sleep=tenacity.before_sleep_log(log, logging.WARNING),
        reraise=True,
    )(fn)


def stamina_(fn):
    return stamina.retry(on=RETRY_ON, attempts=ATTEMPTS)(fn)


CONTENDERS = {
    "plain call (no retry)": lambda fn: fn,
    "hand-written loop": hand_loop,
    "herdless": herdless_,
    "tenacity": tenacity_,
    "stamina": stamina_,
}


def measure(rounds: int, number: int):
    calls = {
        (path, name): wrap(fn)
        for path, fn in (("first-try success", ok), ("3 failures, then success", flaky))
        for name, wrap in CONTENDERS.items()
        if fn is ok or name != "plain call (no retry)"
    }
    for f in calls.values():
        assert f() == 1
    best = {key: float("inf") for key in calls}
    for _ in range(rounds):
        for key, f in calls.items():
            n = number if key[0] == "first-try success" else max(1, number // 10)
            best[key] = min(best[key], timeit.timeit(f, number=n) / n)
    return best


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--number", type=int, default=100_000)
    p.add_argument(
        "--quiet", action="store_true",
        help="loggers above WARNING: every contender still asks logging, no record is made",
    )
    args = p.parse_args()
    if args.quiet:
        for name in ("herdless", "bench", "stamina"):
            logging.getLogger(name).setLevel(logging.ERROR)
    best = measure(args.rounds, args.number)
    print(f"python {platform.python_version()}, herdless {herdless.__version__}, "
          f"tenacity {version('tenacity')}, "
          f"stamina {version('stamina')}; best of {args.rounds} rounds; "
          f"{'loggers quiet' if args.quiet else 'one record per retry'}; "
          f"loadavg {open('/proc/loadavg').read().split()[:3] if sys.platform == 'linux' else '?'}")
    for path in ("first-try success", "3 failures, then success"):
        hand = best[(path, "hand-written loop")]
        ten = best[(path, "tenacity")]
        print(f"\n{path}")
        print("| contender | µs per call | vs hand-written loop | tenacity / this |")
        print("|---|---:|---:|---:|")
        for name in CONTENDERS:
            t = best.get((path, name), float("inf"))
            if t == float("inf"):
                continue
            print(f"| {name} | {t * 1e6:.2f} | {(t - hand) * 1e6:+.2f} µs | {ten / t:.1f}x |")


if __name__ == "__main__":
    main()
