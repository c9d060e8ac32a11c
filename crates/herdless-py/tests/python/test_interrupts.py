"""Ctrl-C and ``sys.exit()`` end a call wherever they are raised: in a hook
or a log handler (which plain ``logging`` lets out too), while a policy file
is read (a FIFO, a hung file system), during a simulation. The
process-level cases run in a child interpreter (``sys.executable``), killed
by its id if it outlives its time limit, which is how they fail."""

import logging
import subprocess
import sys
import textwrap

import pytest

import herdless


def test_ctrl_c_in_a_hook_ends_the_call_refunded(no_sleep):
    budget = herdless.Budget.aws()  # 500 tokens, 5 per retry
    calls = []

    def hook(name, fields):
        raise KeyboardInterrupt

    @herdless.retry(on=OSError, hook=hook, budget=budget)
    def f():
        calls.append(1)
        raise OSError("down")

    with pytest.raises(KeyboardInterrupt) as info:
        f()
    assert calls == [1] and no_sleep == []
    assert budget.tokens == 500.0  # the admitted retry was refunded
    assert isinstance(info.value.__context__, OSError)


def test_sys_exit_in_a_log_handler_ends_the_call(no_sleep):
    class Exits(logging.Handler):
        def emit(self, record):
            sys.exit(3)

    logger = logging.getLogger("herdless")
    handler, level = Exits(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    calls = []
    try:

        @herdless.retry(on=OSError)
        def f():
            calls.append(1)
            raise OSError("down")

        with pytest.raises(SystemExit) as info:
            f()
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    assert info.value.code == 3 and calls == [1]


def test_ctrl_c_in_a_hook_ends_a_block_and_a_coroutine(no_sleep):
    import asyncio

    def hook(name, fields):
        if name == "retry_scheduled":
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        for attempt in herdless.retry_context(on=OSError, hook=hook):
            with attempt:
                raise OSError("down")
    assert attempt.number == 1

    @herdless.retry(on=OSError, hook=hook)
    async def g():
        raise OSError("down")

    with pytest.raises(KeyboardInterrupt):
        asyncio.run(g())


def test_ctrl_c_after_a_success_is_not_swallowed(no_sleep):
    def hook(name, fields):
        if name == "retry_succeeded":
            raise KeyboardInterrupt

    n = []

    @herdless.retry(on=OSError, hook=hook)
    def f():
        n.append(1)
        if len(n) < 2:
            raise OSError("once")
        return "done"

    with pytest.raises(KeyboardInterrupt):
        f()


def child(script, timeout):
    """Runs `script` in a child interpreter; its output. A child that
    outlives `timeout` is killed (subprocess.run kills it by its id) and the
    test fails."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(script)],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"the child did not end within {timeout} s")
    assert done.returncode == 0, done.stderr
    return done.stdout


FIFO = """
    import os, signal, tempfile, threading, time
    import herdless
    fifo = os.path.join(tempfile.mkdtemp(), "herdless.toml")
    os.mkfifo(fifo)
"""


def test_reading_a_fifo_lets_other_threads_run():
    # The writer is another Python thread: it can only write while the
    # reader does not hold the GIL.
    out = child(
        FIFO
        + """
    def writer():
        time.sleep(0.3)  # the reader is waiting by then
        with open(fifo, "w") as w:
            w.write("[policy.a]\\nbase = '1s'\\n")
    threading.Thread(target=writer, daemon=True).start()
    print(herdless.Policy.from_file(fifo, "a").base)
    """,
        timeout=30,
    )
    assert out.strip() == "1.0"


def test_ctrl_c_interrupts_reading_a_file_that_never_answers():
    out = child(
        FIFO
        + """
    threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
    start = time.monotonic()
    try:
        herdless.Policy.from_file(fifo, "a")  # no writer, ever
    except KeyboardInterrupt:
        print(time.monotonic() - start)
    """,
        timeout=30,
    )
    assert float(out) < 5


def test_ctrl_c_interrupts_a_simulation():
    # Minutes of work in any build; the interrupt comes after 0.5 s.
    out = child(
        """
    import os, signal, threading, time
    import herdless
    threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
    start = time.monotonic()
    try:
        herdless.simulate(clients=10_000_000, jitter="full,none,equal")
        print("finished")
    except KeyboardInterrupt:
        print(time.monotonic() - start)
    """,
        timeout=60,
    )
    assert float(out) < 5
