"""File helpers every stage's outputs go through.

Outputs are written to temporaries beside their destination and renamed into place, so a
failed or interrupted action never leaves a half-written artifact; `write_together` extends
that to an action's whole output set. Outputs get the permissions an ordinary `open()` would
give them (0666 less the umask), not mkstemp's 0600.

Outputs never alias inputs or each other (`check_outputs`, called by every CLI before it does
any work, and `write_together` itself), and a CLI never deletes what it did not create: a
directory it is asked to fill must be new or empty (`check_new_directory`). An output that
cannot be written is an `OutputError` naming it, one line like any other error.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Iterable

from common.errors import NamedError


class OutputError(NamedError, OSError):
    """An output cannot be written; the message names it and why."""


class OutputClash(NamedError, ValueError):
    """An output is the same file as an input or as another output, or a directory to fill is
    not new; the message names both paths."""


PathArg = str | Path | None


def _paths(value: PathArg | Iterable[PathArg]) -> list[str]:
    """The paths as given (messages quote what the user typed)."""
    if value is None:
        return []
    if isinstance(value, (str, Path)):
        return [str(value)]
    return [str(v) for v in value if v is not None]


def same_file(a: str | Path, b: str | Path) -> bool:
    """Whether two paths name one file: equal once resolved (symlinks, `..`, `./`), or one
    inode (hard links, bind mounts)."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def check_outputs(outputs: dict[str, PathArg | Iterable[PathArg]],
                  inputs: dict[str, PathArg | Iterable[PathArg]] | None = None) -> None:
    """Raises OutputClash when an output is the same file as an input (it would be overwritten)
    or two outputs are one file (one would be lost). Keys name the flags in the message:
    `{"--out": path}`; a value may be a list (a repeated flag) or None (not given)."""
    outs = [(flag, p) for flag, value in outputs.items() for p in _paths(value)]
    ins = [(flag, p) for flag, value in (inputs or {}).items() for p in _paths(value)]
    for i, (flag, out) in enumerate(outs):
        for in_flag, inp in ins:
            if same_file(out, inp):
                raise OutputClash(f"{flag} {out}: the same file as {in_flag} {inp}: an output never "
                                  "overwrites an input")
        for other_flag, other in outs[:i]:
            if same_file(out, other):
                raise OutputClash(f"{flag} {out}: the same file as {other_flag} {other}: two outputs "
                                  "cannot share a path")


def check_new_directory(path: str | Path, flag: str) -> None:
    """Raises OutputClash unless `path` is absent or an empty directory: a directory a command
    fills is its own, so nothing of anyone else's is ever overwritten or deleted there."""
    path = Path(path)
    if path.is_symlink() or path.exists():
        if not path.is_dir() or path.is_symlink():
            raise OutputClash(f"{flag} {path}: exists and is not a directory: refusing to replace it")
        if any(path.iterdir()):
            raise OutputClash(f"{flag} {path}: directory exists and is not empty: give a new or "
                              "empty one (nothing in it is overwritten or deleted)")


def _cannot_write(path: Path, err: OSError) -> OutputError:
    if isinstance(err, (NotADirectoryError, FileExistsError)) and not path.parent.is_dir():
        why = f"{path.parent} is not a directory"
    elif isinstance(err, IsADirectoryError) or path.is_dir():
        why = "is a directory"
    else:
        why = err.strerror or str(err)
    return OutputError(f"{path}: cannot write the output: {why}")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _temporary_beside(path: Path, data: bytes | str) -> Path:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_dir():
            raise IsADirectoryError(path)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    except OSError as err:
        raise _cannot_write(path, err) from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
        os.chmod(tmp, 0o666 & ~_umask())
    except OSError as err:
        Path(tmp).unlink(missing_ok=True)
        raise _cannot_write(path, err) from None
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
    the files already renamed are restored to their previous versions or removed. Two outputs
    that are one file (`a` and `./a`) are refused before anything is written; a failure is an
    OutputError naming the output.
    """
    paths = [Path(path) for path in outputs]
    for i, path in enumerate(paths):
        clash = next((other for other in paths[:i] if same_file(path, other)), None)
        if clash is not None:
            raise OutputClash(f"{path}: the same file as output {clash}: two outputs cannot share a path")
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
            try:
                os.replace(tmp, path)
            except OSError as err:
                raise _cannot_write(path, err) from None
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
