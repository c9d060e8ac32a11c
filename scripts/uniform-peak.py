#!/usr/bin/env python3
"""The busiest 100 ms of arrivals placed uniformly at random, over the capacity.

    scripts/uniform-peak.py                      # 2,000 callers at 0.95 x 500/s
    scripts/uniform-peak.py --callers 40000 --capacity 10000 --runs 50

A plan of waves places each caller at a uniformly random time (its hash, then
its guard's draw within its wave), at `share` of the capacity. Even placed
perfectly at random, a 100 ms window's count varies: about its square root.
This draws `runs` such placements of `callers` over `callers / (share x
capacity)` seconds and reports the largest 100 ms window over `capacity / 10`,
sliding and on a fixed grid: the median and the 10th and 90th percentiles. It
is the floor under any measured peak of a plan at that scale (the real-socket
test's `--capacity 500 --waves 2000` is the default). Seeds 0..runs: the same
output on every run.
"""

import argparse
import bisect
import random


def peaks(callers, capacity, share, seed):
    rng = random.Random(seed)
    span = callers / (share * capacity)
    times = sorted(rng.uniform(0.0, span) for _ in range(callers))
    sliding = max(
        bisect.bisect_left(times, t + 0.1) - i for i, t in enumerate(times)
    )
    grid = [0] * (int(span * 10) + 1)
    for t in times:
        grid[int(t * 10)] += 1
    per_window = capacity / 10
    return sliding / per_window, max(grid) / per_window


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--callers", type=int, default=2000)
    p.add_argument("--capacity", type=float, default=500.0)
    p.add_argument("--share", type=float, default=0.95)
    p.add_argument("--runs", type=int, default=200)
    a = p.parse_args()
    runs = [peaks(a.callers, a.capacity, a.share, s) for s in range(a.runs)]
    for name, k in (("sliding", 0), ("fixed grid", 1)):
        v = sorted(r[k] for r in runs)
        q = lambda f: v[min(len(v) - 1, int(f * len(v)))]
        above = sum(x > 1.3 for x in v) / len(v)
        print(
            f"{name:>10}: median {q(0.5):.2f}x, p10 {q(0.1):.2f}x, p90 {q(0.9):.2f}x "
            f"the capacity; above 1.3x in {above:.0%} of {len(v)} runs"
        )


if __name__ == "__main__":
    main()
