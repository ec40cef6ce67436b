"""The guard: the one process between a replica's actor and its model server.

``python -m taguru_ray.engine.replicas.guard PARENT GRACE -- ARGV…`` starts ARGV in
a process group of its own and stays until it ends. The server goes with its
whole group — vLLM's engine-core and tensor-parallel workers are children of
the process started, and ending that one alone would leave them holding the
GPU — when any of these happens:

- the guard is told to stop (SIGTERM, SIGINT, SIGHUP: the actor's `stop`): SIGTERM
  to the group, GRACE seconds to finish what is in flight, then SIGKILL;
- the actor is gone (its parent id changes: Ray killed it, its driver died, its
  node's raylet went): the same, at once — so a SIGKILLed driver leaves no server
  running once Ray has reaped the driver's actors;
- the server ends by itself: what is left of its group is killed, and the guard
  exits with the server's code (128 + N for a signal N), which the actor reads.

A parent-death signal is not enough on its own: it fires when the *thread*
that started the child ends (an actor's threads come and go), and it reaches
only that child, not the server's own children. The guard polls its parent
id five times a second, costing nothing measurable. The server itself gets
SIGKILL if the guard is killed outright (a parent-death signal from a
single-threaded parent is reliable).

Standard library only: it starts in a few milliseconds on any node.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from types import FrameType

POLL_S = 0.2
PREFIX = "taguru-ray: engine: "
EXIT_NOT_STARTED = 127  # as a shell says for a command it cannot run


def die_with_parent(sig: int) -> Callable[[], None] | None:
    """A `preexec_fn` that has the child sent `sig` when its parent ends (Linux only)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None

    def arm() -> None:
        prctl(1, sig, 0, 0, 0)  # PR_SET_PDEATHSIG

    return arm


class Guard:
    def __init__(self, parent: int, grace: float, argv: list[str]) -> None:
        self.parent = parent
        self.grace = grace
        self.argv = argv
        self.stopping = False

    def on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.stopping = True

    def run(self) -> int:
        for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(number, self.on_signal)
        try:
            server = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # its own group: what `_end` kills is the server's
                preexec_fn=die_with_parent(signal.SIGKILL),
            )
        except OSError as error:
            why = error.strerror or str(error)
            say(
                f"cannot start {self.argv[0]!r} ({why}) — is it installed on this node, "
                "on the PATH Ray's workers see?"
            )
            return EXIT_NOT_STARTED
        say(f"started pid {server.pid}: {' '.join(self.argv)}")
        while True:
            code = server.poll()
            if code is not None:
                _kill_group(server.pid, signal.SIGKILL)  # its children, if any stayed
                return code if code >= 0 else 128 - code
            if self.stopping or os.getppid() != self.parent:
                if not self.stopping:
                    say("the replica's actor is gone — stopping the server")
                return self._end(server)
            time.sleep(POLL_S)

    def _end(self, server: subprocess.Popen[bytes]) -> int:
        """SIGTERM to the server's group, GRACE seconds, then SIGKILL to what is left."""
        _kill_group(server.pid, signal.SIGTERM)
        deadline = time.monotonic() + self.grace
        while server.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        _kill_group(server.pid, signal.SIGKILL)
        code = server.wait()
        return code if code >= 0 else 128 - code


def _kill_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def say(line: str) -> None:
    """A line of the guard's own, in the replica's log (its stdout)."""
    print(f"{PREFIX}{line}", flush=True)


def main(argv: list[str]) -> int:
    try:
        split = argv.index("--")
        parent, grace = int(argv[0]), float(argv[1])
    except (ValueError, IndexError):
        print("usage: guard PARENT_PID GRACE_S -- ARGV…", file=sys.stderr)
        return 2
    command = argv[split + 1 :]
    if not command:
        print("usage: guard PARENT_PID GRACE_S -- ARGV…", file=sys.stderr)
        return 2
    return Guard(parent, grace, command).run()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
