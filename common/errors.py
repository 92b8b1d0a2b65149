"""One-line error text, shared by every stage's CLI (each ends any error with one line)."""

from __future__ import annotations

import sys


def first_line(text, limit: int = 300) -> str:
    """The first non-empty line of an error message, shortened."""
    for line in str(text).splitlines():
        line = line.strip()
        if line:
            return line if len(line) <= limit else line[: limit - 3] + "..."
    return "(no message)"


def last_line(text, limit: int = 300) -> str:
    """The last non-empty line of a crashed tool's stderr (qemu warns first and says why it
    aborted last), shortened."""
    return first_line("\n".join(reversed(str(text).splitlines())), limit)


def validation_error_where(err) -> tuple[str, str]:
    """(where, why) of a pydantic ValidationError's first error: the dotted field path
    ("(top level)" for the whole document) and pydantic's message without its "Value error, "
    prefix (a validator's own text)."""
    first = err.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "(top level)"
    return where, first["msg"].removeprefix("Value error, ")


class OneLineErrors:
    """A CLI's body in `with OneLineErrors(prog, culprit, expected) as cli:`; afterwards
    `cli.failed` says whether it raised. An `expected` error names its own culprit and prints as
    `<prog>: <message>`; any other exception is one line too, `<prog>: <culprit>: <Type>:
    <first line>`, never a traceback. KeyboardInterrupt and SystemExit pass through."""

    def __init__(self, prog: str, culprit: object, expected: tuple[type[Exception], ...] = ()):
        self.prog, self.culprit, self.expected = prog, culprit, expected
        self.failed = False

    def __enter__(self) -> OneLineErrors:
        return self

    def __exit__(self, kind, err, traceback) -> bool:
        if not isinstance(err, Exception):
            return False
        if isinstance(err, self.expected):
            print(f"{self.prog}: {err}", file=sys.stderr)
        else:
            print(f"{self.prog}: {self.culprit}: {type(err).__name__}: {first_line(err)}", file=sys.stderr)
        self.failed = True
        return True
