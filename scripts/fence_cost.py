#!/usr/bin/env python3
"""What the attempt supervisor (`herdless fence`) adds to each task of
`herdless worker`: N starts of `true` alone against N starts of
`herdless fence -- true` fed as the worker feeds it (an empty payload, no
deadline, the pipe held open until it exits), interleaved, on this machine.

    python3 scripts/fence_cost.py target/release/herdless [N]

Prints the median and mean per start of each and their difference, and the
load average before and after.
"""
import os
import statistics
import subprocess
import sys
import time

FRAMES = (0).to_bytes(8, "big") + (2**64 - 1).to_bytes(8, "big")


def plain():
    t = time.perf_counter()
    subprocess.run(["true"], stdin=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t


def fenced(binary):
    t = time.perf_counter()
    p = subprocess.Popen([binary, "fence", "--", "true"], stdin=subprocess.PIPE)
    p.stdin.write(FRAMES)
    p.stdin.flush()
    status = p.wait()
    p.stdin.close()
    if status != 0:
        sys.exit(f"herdless fence -- true exited {status}")
    return time.perf_counter() - t


def main():
    binary = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    load = open("/proc/loadavg").read().strip()
    a, b = [], []
    for _ in range(n):
        a.append(plain())
        b.append(fenced(binary))
    ms = lambda xs, f: f(xs) * 1000
    print(f"load before: {load}; after: {open('/proc/loadavg').read().strip()}")
    print(f"true alone:            median {ms(a, statistics.median):.3f} ms, mean {ms(a, statistics.mean):.3f} ms")
    print(f"herdless fence -- true: median {ms(b, statistics.median):.3f} ms, mean {ms(b, statistics.mean):.3f} ms")
    print(f"supervisor per task:   median {ms(b, statistics.median) - ms(a, statistics.median):.3f} ms, "
          f"mean {ms(b, statistics.mean) - ms(a, statistics.mean):.3f} ms (n = {n} each)")


if __name__ == "__main__":
    os.environ.pop("RUST_LOG", None)
    main()
