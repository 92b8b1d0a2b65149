"""Scratch directories a crash can leave behind but the next run removes.

A stage's temporaries live in one directory it holds an exclusive `flock` on for as long as it
runs. SIGINT, SIGTERM and SIGHUP remove it on the way out (common.errors); SIGKILL or a power cut
cannot, but they end the process and so release its lock. Before making its own, a run removes
every sibling of the same prefix that nobody holds any more: a crash costs disk until the next
run, never forever (issue 62: an interrupted `tools:tune -- all` left 53 MB in /tmp).

TMPDIR, when set, is checked before anything is made: a missing, non-directory or read-only one
is refused in one line naming it (issue 80: Python's tempfile quietly fell back to /tmp, and the
first tool started with that TMPDIR, iree-compile, crashed asking to "report issues").
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from common.errors import NamedError

# A directory younger than this is never taken for stale: between mkdtemp and flock its
# owner holds no lock yet.
_GRACE_SECONDS = 60.0


def _lock(path: Path, blocking: bool) -> int | None:
    """An fd holding an exclusive flock on directory `path`, or None when someone else holds it."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


class ScratchError(NamedError):
    """Scratch directories cannot be made where they go (TMPDIR or the given parent); the message
    names it, its value and why."""


def _shown(text: str) -> str:
    # A value with a newline or an escape sequence would break (or repaint) the one line.
    return text if text.isprintable() else repr(text)


def _unusable(path: Path) -> str | None:
    """Why no scratch directory can be made in `path`, or None."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return "does not exist"
    except OSError as err:
        return f"cannot be read ({err.strerror})"
    if not stat.S_ISDIR(mode):
        return "is not a directory"
    if not os.access(path, os.W_OK | os.X_OK):  # a read-only file system too (EROFS), even for root
        return "is not writable"
    return None


def check_base(parent: Path | str | None = None) -> Path:
    """The directory scratch directories go in (`parent`, default TMPDIR's), checked up front: a
    TMPDIR that is set is checked whatever `parent` is, since the tools a stage starts inherit it.
    ScratchError naming the variable (or `parent`), its value and why otherwise."""
    value = os.environ.get("TMPDIR")
    if value:  # unset or empty: Python and IREE's tools both take the system's default (/tmp)
        why = _unusable(Path(value))
        if why:
            raise ScratchError(f"TMPDIR={_shown(value)}: {why}: this run's temporaries and those of the tools it "
                               "starts (iree-compile, qemu) go there; point TMPDIR at a writable directory or "
                               "unset it")
    if parent is None:
        return Path(tempfile.gettempdir())
    why = _unusable(Path(parent))
    if why:
        raise ScratchError(f"{_shown(str(parent))}: {why}: scratch directories are made there")
    return Path(parent)


# Marks a directory as one of these, so that a plain temporary directory whose name happens to
# start with the same prefix (bench's "analysis_time_" beside "analysis_") is never removed.
SUFFIX = ".scratch"


def remove_stale(prefix: str, parent: Path | str, suffix: str = SUFFIX) -> list[Path]:
    """Removes the directories `parent`/`prefix`*`suffix` that no live run holds; returns them."""
    removed = []
    parent = Path(parent)
    try:
        entries = sorted(parent.glob(f"{glob.escape(prefix)}*{glob.escape(suffix)}"))
    except OSError:
        return removed
    for path in entries:
        try:
            if not path.is_dir() or path.is_symlink() or time.time() - path.stat().st_mtime < _GRACE_SECONDS:
                continue
            fd = _lock(path, blocking=False)
        except OSError:
            continue
        if fd is None:
            continue  # a live run's
        try:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
        finally:
            os.close(fd)
    return removed


@contextlib.contextmanager
def scratch_directory(prefix: str, parent: Path | str | None = None, suffix: str = SUFFIX) -> Iterator[Path]:
    """A fresh directory `parent`/`prefix`XXXXXXXX`suffix` (mkdtemp's name, so a fixed length;
    `parent` defaults to TMPDIR), held for the duration and removed after; stale siblings of
    earlier runs that died without removing theirs are removed first. An empty `suffix` only
    for a prefix nothing else uses (perf.guest's run directories, whose path length is fixed).
    ScratchError, before anything is made, when TMPDIR or `parent` cannot hold it (check_base)."""
    parent = check_base(parent)
    remove_stale(prefix, parent, suffix)
    path = Path(tempfile.mkdtemp(prefix=prefix, suffix=suffix, dir=parent))
    fd = _lock(path, blocking=True)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
        os.close(fd)


__all__ = ["ScratchError", "check_base", "remove_stale", "scratch_directory"]
