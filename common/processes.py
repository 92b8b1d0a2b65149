"""Child processes an interrupted CLI takes down with it.

`run` is `subprocess.run` for the tools the stages start (iree-compile, qemu, llvm-mca, opt),
from any thread. While a CLI runs in `common.errors.OneLineErrors`, SIGINT, SIGTERM and SIGHUP call
`kill_all`: every child started here is killed at once (qemu runs in worker threads, where no
KeyboardInterrupt ever arrives), and none is started afterwards, so a CLI ends with its
children gone instead of leaving them re-parented to init. So are their own children
(iree-compile's linker) and a child whose `Popen` had not returned when the signal came: the
CLI's whole process tree is killed, not only what `run` registered.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Iterator

_live: set[subprocess.Popen] = set()
_lock = threading.RLock()  # kill_all runs in a signal handler, maybe inside run's own hold
_stopping = threading.Event()


class Stopped(RuntimeError):
    """A child was to be started after the CLI was interrupted."""


def run(args, *, input=None, capture_output: bool = False, text: bool | None = None,
        **kwargs) -> subprocess.CompletedProcess:
    """subprocess.run(args, input=, capture_output=, text=, **kwargs), the child killed by
    `kill_all` or when the caller is interrupted. Raises Stopped after `kill_all`."""
    if capture_output:
        kwargs["stdout"] = kwargs["stderr"] = subprocess.PIPE
    if input is not None:
        kwargs["stdin"] = subprocess.PIPE
    with _lock:
        if _stopping.is_set():
            raise Stopped(f"{args[0]}: not started: interrupted")
        proc = subprocess.Popen(args, text=text, **kwargs)
        _live.add(proc)
    try:
        with proc:
            try:
                stdout, stderr = proc.communicate(input)
            except BaseException:
                proc.kill()
                raise
    finally:
        with _lock:
            _live.discard(proc)
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def descendants(pid: int) -> list[int]:
    """Live (not zombie) descendants of `pid`, from /proc, parents before their children."""
    parent: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue  # ended while listed
            fields = stat.rsplit(")", 1)[1].split()
            if fields[0] != "Z":
                parent[int(entry.name)] = int(fields[1])
    out, frontier = [], [pid]
    while frontier:
        p = frontier.pop(0)
        kids = [c for c, pp in parent.items() if pp == p]
        out += kids
        frontier += kids
    return out


def kill_all() -> None:
    """Kills every live child started by `run` and every other descendant of this process;
    `run` starts none afterwards (until `reset`). A signal can arrive after a child was forked
    and before `run` registered it (the probe's SIGINT case met that under load: iree-compile
    outlived the CLI), and a child's own children (iree-compile's iree-lld) are not `run`'s."""
    with _lock:
        _stopping.set()
        tree = descendants(os.getpid())  # before any dies: its children would leave the tree
        for proc in list(_live):
            try:
                proc.kill()
            except OSError:
                pass
        for pid in tree:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass  # ended meanwhile


def reset() -> None:
    """Children may be started again (a CLI called in-process, after the previous one ended)."""
    _stopping.clear()


@contextlib.contextmanager
def fd2_into(sink: IO) -> Iterator[None]:
    """File descriptor 2 into the open file `sink` for the block, restored after: native code
    (MLIR, torch's C++, Ray) writes there past sys.stderr, so this is what keeps a CLI's stderr
    to its one line."""
    sys.stderr.flush()
    saved = os.dup(2)
    os.dup2(sink.fileno(), 2)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
