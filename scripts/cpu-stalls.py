#!/usr/bin/env python3
"""How often this machine stops a CPU (docs/performance.md, "Server side").

A thread pinned to one CPU reads the clock in a loop for SECS seconds and counts
the gaps between two reads longer than 100 us: time the CPU was taken from it
(another thread, an interrupt, or, on a virtual machine, the host). A latency
percentile that falls among requests caught in such gaps measures the machine,
not the service.

    scripts/cpu-stalls.py [CPU] [SECS]     # CPU 0, 10 s
"""

import os
import sys
import time

cpu = int(sys.argv[1]) if len(sys.argv) > 1 else 0
secs = float(sys.argv[2]) if len(sys.argv) > 2 else 10.0
os.sched_setaffinity(0, {cpu})
end = time.perf_counter_ns() + int(secs * 1e9)
last = time.perf_counter_ns()
gaps = []
while last < end:
    t = time.perf_counter_ns()
    if t - last > 100_000:
        gaps.append(t - last)
    last = t
gaps.sort()
over_ms = sum(g > 1_000_000 for g in gaps)
median = gaps[len(gaps) // 2] / 1e3 if gaps else 0
longest = gaps[-1] / 1e3 if gaps else 0
print(
    f"cpu {cpu}: {len(gaps)} gaps over 100 us in {secs:g} s ({over_ms} over 1 ms), "
    f"{sum(gaps) / 1e6:.1f} ms in all, median {median:.0f} us, longest {longest:.0f} us"
)
