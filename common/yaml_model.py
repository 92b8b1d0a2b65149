"""Loads a YAML file into a pydantic model with one-line errors naming the file and field.

Shared by the pipeline's description files (IREE targets, hardware descriptions). Loading is
bounded: a description file is small, so the file size is capped, and the document's node
graph is measured with aliases (and merge keys) expanded before anything is constructed, which
stops "billion laughs" files (20 nested `<<: [*m, *m]` levels expand to a million nodes from
1.4 KB) and recursive aliases before they cost memory. A key given twice in one mapping is
refused (PyYAML would keep the last value silently); a merge key's (`<<`) values may still be
overridden, as YAML defines.

Only a regular file is read (common/files.py `check_input`): a FIFO would block the read
forever. A YAML error names its line and column. PyYAML reads YAML 1.1, where `1e30` and
`3.2768e4` are strings (a float needs a dot and a signed exponent): a number field given such a
string says so and how to write the number.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from common.errors import validation_error_where
from common.files import InputError, check_input

M = TypeVar("M", bound=BaseModel)

MAX_FILE_BYTES = 1 << 20
MAX_EXPANDED_NODES = 100_000


class _Bounded(Exception):
    pass


def _expanded_nodes(root: yaml.Node) -> int:
    """Number of nodes the constructed document would have (aliased nodes counted at every
    use); raises _Bounded on a recursive alias or past MAX_EXPANDED_NODES."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()

    def size(node: yaml.Node) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in open_nodes:
            raise _Bounded("recursive alias")
        open_nodes.add(key)
        if isinstance(node, yaml.MappingNode):
            total = 1 + sum(size(k) + size(v) for k, v in node.value)
        elif isinstance(node, yaml.SequenceNode):
            total = 1 + sum(size(v) for v in node.value)
        else:
            total = 1
        open_nodes.discard(key)
        if total > MAX_EXPANDED_NODES:
            raise _Bounded(f"more than {MAX_EXPANDED_NODES} nodes once aliases are expanded")
        sizes[key] = total
        return total

    return size(root)


_MERGE = "tag:yaml.org,2002:merge"


def _check_unique_keys(root: yaml.Node) -> None:
    """Raises yaml.YAMLError at the first mapping that names a scalar key twice."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            keys: dict[tuple[str, str], yaml.Node] = {}
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode) and key.tag != _MERGE:
                    if (key.tag, key.value) in keys:
                        first = keys[(key.tag, key.value)].start_mark.line + 1
                        raise yaml.YAMLError(f"key '{key.value}' given twice (lines {first} and "
                                             f"{key.start_mark.line + 1}): which one is meant?")
                    keys[(key.tag, key.value)] = key
                stack += [key, value]
        elif isinstance(node, yaml.SequenceNode):
            stack += node.value


def bounded_safe_load(text: str) -> object:
    """yaml.safe_load for small description files; raises yaml.YAMLError past the bounds or on
    a key given twice."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        try:
            _expanded_nodes(node)
        except _Bounded as err:
            raise yaml.YAMLError(str(err)) from None
        except RecursionError:
            raise yaml.YAMLError("nested too deeply") from None
        _check_unique_keys(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _yaml_error(err: yaml.YAMLError) -> str:
    """PyYAML's reason with its line and column ("line 12, column 1: found character '\\t' that
    cannot start any token"): its first line alone ("while scanning for the next token") named
    neither."""
    if isinstance(err, yaml.MarkedYAMLError) and err.problem:
        mark = err.problem_mark or err.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        context = f" ({err.context})" if err.context else ""
        return f"{where}{err.problem}{context}"
    return str(err).splitlines()[0]


def _yaml11_number(text: str) -> str | None:
    """How to write `text` so YAML 1.1 reads it as the number it looks like ("1e30" -> "1.0e+30",
    "3.2768e4" -> "32768"), or None when it is no finite number."""
    try:
        value = float(text.replace("_", ""))
    except ValueError:
        return None
    if not math.isfinite(value):
        return None
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    mantissa, _, exponent = repr(value).partition("e")
    if not exponent:
        return mantissa  # "5e-1" -> "0.5"
    if "." not in mantissa:
        mantissa += ".0"
    return f"{mantissa}e{'' if exponent[0] in '+-' else '+'}{exponent}"


def _number_read_as_string(err: ValidationError) -> str | None:
    """The message for a number field given a string that looks like a number, else None."""
    first = err.errors()[0]
    value = first.get("input")
    if not isinstance(value, str) or not first["type"].startswith(("int_", "float_")):
        return None
    written = _yaml11_number(value)
    if written is None:
        return None
    return f"YAML 1.1 reads {value} as a string, not a number: write {written}"


def load_yaml_model(path: str | Path, model: type[M], what: str, error: type[Exception]) -> M:
    """`model` validated from the YAML mapping in `path`; raises `error("<path>: ...")`.

    `what` names the kind of file in messages (e.g. "target", "hardware").
    """
    path = Path(path)
    try:
        check_input(path, f"{what} file")  # before reading: a FIFO would block forever
    except InputError as err:
        raise error(str(err)) from None
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise error(f"{path}: {what} file larger than {MAX_FILE_BYTES} bytes")
        data = bounded_safe_load(path.read_text())
    except FileNotFoundError:
        raise error(f"{path}: {what} file not found") from None
    except IsADirectoryError:
        raise error(f"{path}: is a directory, not a {what} file") from None
    except UnicodeDecodeError:
        raise error(f"{path}: not a text file") from None
    except OSError as err:
        raise error(f"{path}: cannot read {what} file: {err.strerror}") from None
    except yaml.YAMLError as err:
        raise error(f"{path}: not valid YAML: {_yaml_error(err)}") from None
    if not isinstance(data, dict):
        raise error(f"{path}: expected a mapping of {what} fields")
    try:
        return model(**data)
    except ValidationError as err:
        field, why = validation_error_where(err)
        why = _number_read_as_string(err) or why
        raise error(f"{path}: field '{field}': {why}") from None
    except TypeError as err:  # non-string keys
        raise error(f"{path}: {what} fields must be named by strings: {err}") from None
