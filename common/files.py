"""File helpers every stage's outputs go through.

Outputs are written to temporaries beside their destination and renamed into place, so a
failed or interrupted action never leaves a half-written artifact; `write_together` extends
that to an action's whole output set. Outputs get the permissions an ordinary `open()` would
give them (0666 less the umask), not mkstemp's 0600.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _temporary_beside(path: Path, data: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
        os.chmod(tmp, 0o666 & ~_umask())
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Path(tmp)


def atomic_write(path: str | Path, data: bytes | str) -> None:
    """Writes `data` to a temporary file beside `path`, then renames it over `path`."""
    write_together({path: data})


def write_together(outputs: dict[str | Path, bytes | str]) -> None:
    """Writes an action's output set all or nothing.

    Every file is first written to a temporary beside its destination; only when all of them
    are written are they renamed into place. If a write fails, no new file remains and the old
    ones are untouched. If a rename fails part-way (the destination directory vanished, say),
    the files already renamed are restored to their previous versions or removed.
    """
    staged: list[tuple[Path, Path]] = []
    try:
        for path, data in outputs.items():
            staged.append((Path(path), _temporary_beside(Path(path), data)))
    except BaseException:
        for _, tmp in staged:
            tmp.unlink(missing_ok=True)
        raise
    # The previous outputs are kept as hard links (no copy of a large vmfb) until every
    # rename has succeeded, so a rename failing part-way can put them back.
    previous: dict[Path, Path | None] = {}
    done: list[Path] = []
    try:
        for path, _ in staged:
            previous[path] = None
            if path.is_file():
                keep = path.with_name(f".{path.name}.previous.{os.getpid()}")
                keep.unlink(missing_ok=True)
                os.link(path, keep)
                previous[path] = keep
        for path, tmp in staged:
            os.replace(tmp, path)
            done.append(path)
    except BaseException:
        for path, tmp in staged:
            tmp.unlink(missing_ok=True)
        for path in done:
            if previous[path] is None:
                path.unlink(missing_ok=True)
            else:
                os.replace(previous[path], path)
        for keep in previous.values():
            if keep is not None:
                keep.unlink(missing_ok=True)
        raise
    for keep in previous.values():
        if keep is not None:
            keep.unlink(missing_ok=True)


def sha256_file(path: str | Path) -> str:
    """Hex sha256 of a file's bytes."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()
