"""Scratch directories a crash can leave behind but the next run removes.

A stage's temporaries live in one directory it holds an exclusive `flock` on for as long as it
runs. SIGINT, SIGTERM and SIGHUP remove it on the way out (common.errors); SIGKILL or a power cut
cannot, but they end the process and so release its lock. Before making its own, a run removes
every sibling of the same prefix that nobody holds any more: a crash costs disk until the next
run, never forever (issue 62: an interrupted `tools:tune -- all` left 53 MB in /tmp).
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

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
    for a prefix nothing else uses (perf.guest's run directories, whose path length is fixed)."""
    parent = Path(parent if parent is not None else tempfile.gettempdir())
    remove_stale(prefix, parent, suffix)
    path = Path(tempfile.mkdtemp(prefix=prefix, suffix=suffix, dir=parent))
    fd = _lock(path, blocking=True)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
        os.close(fd)


__all__ = ["remove_stale", "scratch_directory"]
