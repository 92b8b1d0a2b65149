"""The code model's errors: the code cannot be costed, and the message says why."""

from __future__ import annotations


class CodeCostError(RuntimeError):
    """The code cannot be costed; the message names the culprit and the reason."""


class MissingCode(CodeCostError):
    """A build's code directory lacks what `codegen.compile --out-code` writes: a broken input,
    not code the model cannot price."""


class UnknownTripCount(ValueError):
    """A backedge-taken count the code model cannot evaluate (a run-time value, an unknown form)."""


class UncostableFunction(CodeCostError):
    """One function's code has no static count (the others of its module may)."""
