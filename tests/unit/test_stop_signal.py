"""StopSignal (workers/scheduler.py), what every worker's main thread waits in
for SIGINT/SIGTERM: a signal handled at any point of ``wait()`` ends the wait.

Python runs a signal handler in the main thread between two bytecodes of
whatever that thread was doing. The handler once set a ``threading.Event``
while ``wait()`` sat in ``Event.wait``: a signal handled on one of the lines
where ``Event.wait`` holds the event's own (non-reentrant) lock made the
handler wait for that lock forever, and the worker never stopped (issue 20,
seen under CPU load). The child process below delivers the signal on each
line of the wait path in turn, with a trace function, so every such window is
hit deterministically rather than by luck of timing.
"""

from __future__ import annotations

import subprocess
import sys

#: Each case: a fresh StopSignal, a wait() during which SIGTERM is raised (and
#: so handled) on the k-th line the main thread executes, k = 1 .. the lines
#: of one unbroken wait; a thread sends SIGTERM 0.1 s in as a backstop in case k
#: lies past the point where wait() blocks. Prints one line per case.
CHILD = r"""
import os, signal, sys, threading
from txnq.workers.scheduler import StopSignal

def wait_with_signal_at(k):
    count = 0
    raised = False

    def tracer(frame, event, arg):
        nonlocal count, raised
        if event == "line" and not raised:
            count += 1
            if count == k:
                raised = True
                signal.raise_signal(signal.SIGTERM)  # handled here, before it returns
        return tracer

    with StopSignal() as stop:
        backstop = threading.Timer(0.1, os.kill, (os.getpid(), signal.SIGTERM))
        backstop.start()
        sys.settrace(tracer)
        try:
            received = stop.wait()
        finally:
            sys.settrace(None)
            backstop.cancel()
            backstop.join()
    return received, count, raised

# How many lines one wait() runs when only the backstop ends it: the cases.
_, lines, _ = wait_with_signal_at(0)
print("lines", lines, flush=True)
for k in range(1, lines + 1):
    received, _, raised = wait_with_signal_at(k)
    print("case", k, received, raised, flush=True)
print("done", flush=True)
"""


def test_a_signal_handled_on_any_line_of_the_wait_ends_it() -> None:
    try:
        result = subprocess.run(
            [sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=30
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        last = out.strip().splitlines()[-1:] or ["nothing"]
        raise AssertionError(
            f"StopSignal.wait() never returned: the signal handler deadlocked after {last[0]!r}"
        ) from None
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[-1] == "done", result.stdout
    cases = [line.split() for line in lines if line.startswith("case")]
    assert cases, result.stdout
    # Every case ended by SIGTERM, and at least one had the signal raised
    # inside the wait path itself (not only by the backstop).
    assert all(case[2] == "SIGTERM" for case in cases), result.stdout
    assert any(case[3] == "True" for case in cases), result.stdout
