"""File helpers every stage's outputs go through.

Outputs are written to temporaries beside their destination and renamed into place, so a
failed or interrupted action never leaves a half-written artifact; `write_together` extends
that to an action's whole output set. Outputs get the permissions an ordinary `open()` would
give them (0666 less the umask), not mkstemp's 0600.

Outputs never alias inputs or each other (`check_outputs`, called by every CLI before it does
any work, and `write_together` itself), and a CLI never deletes what it did not create: a
directory it is asked to fill must be new or empty (`check_new_directory`). An output that
cannot be written is an `OutputError` naming it, one line like any other error.

An output replaces only a regular file: an existing FIFO, device node or socket at an output's
path is refused (renaming over it would delete it; as root, `--out /dev/null` replaced the
system's /dev/null: issue 62). The path is followed through symlinks: a symlink to a regular
file (or a dangling one) is replaced by the new file as before, a symlink to a FIFO or device is
refused like the node itself. An input read whole is checked the same way (`check_input`): a
FIFO would block the reader forever, and "not found" misnames a directory or a device.

JSON inputs are read strictly (`read_json`, `check_json_text`): a key given twice in one object
is refused like a YAML key given twice (json.loads and pydantic keep the last value silently: an
analysis.json with `target` twice compiled for the second, a manifest with `entry_points` twice
ran the second), and so are NaN and Infinity, which are not JSON (no producer writes them).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Iterable

from common.errors import NamedError


class OutputError(NamedError, OSError):
    """An output cannot be written; the message names it and why."""


class OutputClash(NamedError, ValueError):
    """An output is the same file as an input or as another output, or a directory to fill is
    not new; the message names both paths."""


class InputError(NamedError, OSError):
    """An input is missing or not a regular file; the message names it and what it is."""


PathArg = str | Path | None

# What a path is when it is not a regular file, by the file type bits of its mode.
_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _kind(mode: int) -> str | None:
    """What a non-regular file is ("a FIFO", "a directory", ...); None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    return next((kind for is_kind, kind in _KINDS if is_kind(mode)), "not a regular file")


def check_input(path: str | Path, what: str) -> Path:
    """`path` as a Path, or InputError "<path>: <what> not found" / "<path>: is a directory, not
    a <what>" / "<path>: is a FIFO, not a regular file" (a device or a socket likewise). Called
    before reading: a FIFO would block the read forever. Symlinks are followed."""
    path = Path(path)
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise InputError(f"{path}: {what} not found") from None
    except OSError as err:
        raise InputError(f"{path}: cannot read the {what}: {err.strerror or err}") from None
    kind = _kind(mode)
    if kind == "a directory":
        article = "an" if what[:1].lower() in "aeiou" else "a"
        raise InputError(f"{path}: is a directory, not {article} {what}")
    if kind is not None:
        raise InputError(f"{path}: is {kind}, not a regular file")
    return path


def _not_replaceable(path: str | Path) -> str | None:
    """Why an output at `path` must not be replaced ("is a FIFO, ...") or None: an existing path
    that is neither a regular file nor a directory (a directory is refused by the write itself,
    or filled by a CLI that checked it with check_new_directory)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None  # absent, a dangling symlink, or under a non-directory: the write names it
    kind = _kind(mode)
    if kind is None or kind == "a directory":
        return None
    return f"is {kind}, not a regular file: refusing to replace it"


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
    for flag, out in outs:
        # Before any work: write_together would refuse it only once everything is computed.
        why = _not_replaceable(out)
        if why:
            raise OutputError(f"{flag} {out}: {why}")
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
    why = _not_replaceable(path)
    if why:
        raise OutputError(f"{path}: {why}")
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
    OutputError naming the output. An existing FIFO, device or socket at an output's path is
    refused before anything is written: it is never replaced.
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


class _DuplicateKey(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, object]]) -> dict:
    obj: dict = {}
    for key, value in pairs:
        if key in obj:
            raise _DuplicateKey(key)
        obj[key] = value
    return obj


def _no_constant(name: str) -> object:
    raise json.JSONDecodeError(f"{name} is not a JSON number", name, 0)


def parse_json(text: str, path: str | Path, what: str, bad: str | None = None) -> object:
    """The JSON value of `text` (read from `path`), or InputError "<path>: not a <what>: <why>"
    (`bad` in place of "not a <what>"): not JSON (its line and column), a key given twice in one
    object, NaN or Infinity."""
    bad = bad or f"not a {what}"
    try:
        return json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constant)
    except _DuplicateKey as err:
        raise InputError(f"{path}: {bad}: key '{err}' given twice in one object: which one is meant?") from None
    except json.JSONDecodeError as err:
        where = f" (line {err.lineno}, column {err.colno})" if err.pos else ""
        raise InputError(f"{path}: {bad}: not JSON: {err.msg}{where}") from None
    except RecursionError:
        raise InputError(f"{path}: {bad}: nested too deeply") from None


def read_json_text(path: str | Path, what: str, bad: str | None = None) -> str:
    """The text of the JSON file `path` once checked by `parse_json` (for a pydantic
    model_validate_json), or InputError naming it: not found, not a regular file, not UTF-8."""
    path = check_input(path, what)
    bad = bad or f"not a {what}"
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise InputError(f"{path}: {bad}: not UTF-8 text (byte {err.start})") from None
    except OSError as err:
        raise InputError(f"{path}: cannot read the {what}: {err.strerror or err}") from None
    parse_json(text, path, what, bad)
    return text


_JSON_TYPES = {dict: "an object", list: "an array", str: "a string", bool: "true or false", int: "a number",
               float: "a number", type(None): "null"}


def read_json(path: str | Path, what: str, bad: str | None = None, kind: type | None = None) -> object:
    """The JSON value in `path`, read strictly (`read_json_text`, `parse_json`); with `kind`
    (dict, list), InputError "<path>: not a <what>: an array, not an object" unless the value is
    one (a reader indexing it otherwise failed with a traceback: issue 80)."""
    value = parse_json(read_json_text(path, what, bad), path, what, bad)
    if kind is not None and not isinstance(value, kind):
        raise InputError(f"{path}: {bad or f'not a {what}'}: {_JSON_TYPES.get(type(value), type(value).__name__)}, "
                         f"not {_JSON_TYPES.get(kind, kind.__name__)}")
    return value
