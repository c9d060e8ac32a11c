"""Events as JSON lines that `herdless analyze` reads with no flags."""

import logging
import sys

import herdless

handler = logging.StreamHandler(sys.stdout)
handler.setFormatter(herdless.JsonFormatter())
logging.getLogger("herdless").addHandler(handler)
logging.getLogger("herdless").setLevel(logging.INFO)

calls = 0


@herdless.retry(on=OSError, policy=herdless.Policy(base=0.01), task_id="ingest-1")
def ingest() -> int:
    global calls
    calls += 1
    if calls < 3:
        raise OSError("array busy")
    return calls


if __name__ == "__main__":
    ingest()
