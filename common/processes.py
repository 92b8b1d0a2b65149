"""Child processes an interrupted CLI takes down with it.

`run` is `subprocess.run` for the tools the stages start (iree-compile, qemu, llvm-mca, opt),
from any thread. While a CLI runs in `common.errors.OneLineErrors`, SIGINT, SIGTERM and SIGHUP call
`kill_all`: every child started here is killed at once (qemu runs in worker threads, where no
KeyboardInterrupt ever arrives), and none is started afterwards, so a CLI ends with its
children gone instead of leaving them re-parented to init.
"""

from __future__ import annotations

import subprocess
import threading

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


def kill_all() -> None:
    """Kills every live child started by `run`; `run` starts none afterwards (until `reset`)."""
    with _lock:
        _stopping.set()
        for proc in list(_live):
            try:
                proc.kill()
            except OSError:
                pass


def reset() -> None:
    """Children may be started again (a CLI called in-process, after the previous one ended)."""
    _stopping.clear()
