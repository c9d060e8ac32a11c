"""A retried block."""

import herdless

attempts_seen: list[int] = []

for attempt in herdless.retry_context(on=OSError, policy=herdless.Policy(base=0.01)):
    with attempt:
        attempts_seen.append(attempt.number)
        if attempt.number < 3:
            raise BlockingIOError("mount point busy")

print(f"mounted after {attempts_seen[-1]} attempts")
