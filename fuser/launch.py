"""`fuser-launch`: run a multi-GPU fuser program, one process per GPU.

    fuser-launch -n N [--timeout S] script.py [args...]      (also: python -m fuser.launch ...)

Starts N processes `python script.py args...` on this machine, rank i on GPU i, with the
variables `TorchCommunicator.from_environment` reads (`RANK`, `LOCAL_RANK`, `WORLD_SIZE`,
`LOCAL_WORLD_SIZE`, `MASTER_ADDR=127.0.0.1`, `MASTER_PORT`, a free port) and NVLink multicast
forced off (`fuser.runtime.communicator.MULTICAST_OFF`, whatever the caller's environment says).

Each line a rank writes comes out on the launcher's stdout or stderr, as the rank wrote it,
after `[rank i] ` (lines are read from pipes, so ranks' lines never interleave mid-line; the
ranks run with `PYTHONUNBUFFERED=1`, so lines come as they are printed and are not lost when a
rank is stopped).

When a rank exits non-zero or is killed by a signal, the launcher says which on stderr, stops
the others (SIGTERM, then SIGKILL after a grace period) and exits with the rank's code (128 + N
for signal N): one failed rank never leaves the others hanging in a collective. `--timeout S`
stops the whole run after S seconds (exit 124); Ctrl-C or SIGTERM stops every rank (exit 130 or
143). A mistake on the command line is one `fuser-launch: error: ...` line, exit 2.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from typing import IO, NoReturn

from fuser.runtime.communicator import turn_off_multicast

PROG = "fuser-launch"
GRACE_S = 5.0
"""How long a stopped rank has between SIGTERM and SIGKILL."""
POLL_S = 0.05
EXIT_USAGE = 2
EXIT_TIMEOUT = 124


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        """One line, not argparse's usage block."""
        self.exit(EXIT_USAGE, f"{PROG}: error: {message} (see {PROG} --help)\n")


def _count(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of processes") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {n}")
    return n


def _seconds(text: str) -> float:
    try:
        s = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not s > 0:
        raise argparse.ArgumentTypeError(f"must be positive, not {text}")
    return s


def _parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog=PROG,
        description="Run a multi-GPU fuser program: one process per GPU, on this machine.",
    )
    p.add_argument("-n", "--nproc", type=_count, required=True, help="number of processes")
    p.add_argument(
        "--timeout", type=_seconds, metavar="S", help="stop every rank after S seconds (exit 124)"
    )
    p.add_argument("script", help="the Python script each rank runs")
    p.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")
    return p


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nobody listens on (now)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rank_environment(base: dict[str, str], rank: int, n: int, port: int) -> dict[str, str]:
    """The environment of rank `rank` of `n` on this machine."""
    env = dict(base)
    env.update(
        RANK=str(rank),
        LOCAL_RANK=str(rank),
        WORLD_SIZE=str(n),
        LOCAL_WORLD_SIZE=str(n),
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        PYTHONUNBUFFERED="1",
    )
    turn_off_multicast(env)
    return env


_output_lock = threading.Lock()


def _relay(pipe: IO[bytes], out: IO[str], prefix: str) -> None:
    """Copy `pipe` to `out` line by line, each after `prefix`, until the rank closes it."""
    with pipe:
        for raw in iter(pipe.readline, b""):
            line = raw.decode("utf-8", errors="replace")
            with _output_lock:
                try:
                    out.write(prefix + (line if line.endswith("\n") else line + "\n"))
                    out.flush()
                except (OSError, ValueError):
                    pass  # our reader went away: keep draining so the rank never blocks


class _Stopped(Exception):
    """SIGTERM reached the launcher."""


def _on_sigterm(signum: int, frame: object) -> NoReturn:
    raise _Stopped


def _describe(code: int) -> tuple[str, int]:
    """How a rank ended, and the launcher's exit code for it."""
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"was killed by {name}", 128 - code
    return f"exited with code {code}", code


def _ranks(ranks: Sequence[int]) -> str:
    """`rank 1`, `ranks 0, 2`."""
    return f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {', '.join(map(str, ranks))}"


class Run:
    """The ranks of one launch and the threads that relay their output."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen[bytes]] = []
        self.relays: list[threading.Thread] = []

    def start(self, script: str, args: Sequence[str], n: int) -> None:
        port = free_port()
        for rank in range(n):
            proc = subprocess.Popen(
                [sys.executable, script, *args],
                env=rank_environment(dict(os.environ), rank, n, port),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            self.procs.append(proc)
            for pipe, out in ((proc.stdout, sys.stdout), (proc.stderr, sys.stderr)):
                assert pipe is not None
                relay = threading.Thread(
                    target=_relay, args=(pipe, out, f"[rank {rank}] "), daemon=True
                )
                relay.start()
                self.relays.append(relay)

    def running(self) -> list[int]:
        return [r for r, p in enumerate(self.procs) if p.poll() is None]

    def stop(self, message: str) -> None:
        """Say `message` (with the ranks it stops) and stop every rank still running."""
        running = self.running()
        _say(f"{message}; stopping {_ranks(running)}" if running else message)
        for r in running:
            self.procs[r].terminate()
        deadline = time.monotonic() + GRACE_S
        for r in running:
            try:
                self.procs[r].wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.procs[r].kill()
                self.procs[r].wait()

    def finish(self) -> None:
        """Let the relays copy what the ranks wrote last (a rank's child may hold a pipe)."""
        for relay in self.relays:
            relay.join(timeout=1.0)

    def supervise(self, timeout_s: float | None) -> int:
        """Wait for every rank; stop them all at the first failure or at the timeout."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            for rank, proc in enumerate(self.procs):
                code = proc.poll()
                if code is not None and code != 0:
                    how, exit_code = _describe(code)
                    self.stop(f"{PROG}: rank {rank} {how}")
                    return exit_code
            if not self.running():
                return 0
            if deadline is not None and time.monotonic() >= deadline:
                self.stop(f"{PROG}: timed out after {timeout_s:g} s")
                return EXIT_TIMEOUT
            time.sleep(POLL_S)


def _say(line: str) -> None:
    with _output_lock:
        print(line, file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    """The `fuser-launch` command; returns the exit status (see the module docstring)."""
    args = _parser().parse_args(argv)
    if not os.path.isfile(args.script):
        _say(f"{PROG}: error: no such script: {args.script}")
        return EXIT_USAGE
    previous = {signal.SIGINT: signal.getsignal(signal.SIGINT)}
    previous[signal.SIGTERM] = signal.signal(signal.SIGTERM, _on_sigterm)
    run = Run()
    stopping: str | None = None
    try:
        run.start(args.script, args.args, args.nproc)
        code = run.supervise(args.timeout)
    except KeyboardInterrupt:
        code, stopping = 128 + signal.SIGINT, f"{PROG}: interrupted"
    except _Stopped:
        code, stopping = 128 + signal.SIGTERM, f"{PROG}: terminated"
    except OSError as e:  # a rank could not be started
        code, stopping = EXIT_USAGE, f"{PROG}: error: cannot start {sys.executable}: {e.strerror}"
    if stopping is not None:
        for signum in previous:  # a second Ctrl-C does not cut the stopping short
            signal.signal(signum, signal.SIG_IGN)
        run.stop(stopping)
    for signum, handler in previous.items():
        if handler is not None:
            signal.signal(signum, handler)
    run.finish()
    return code


if __name__ == "__main__":
    sys.exit(main())
