"""Scalar evolution expressions (SCEV) as opt-19 prints them, parsed (`parse_scev`) and evaluated
with each loop they depend on at a given iteration (`Scev.value`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from perf.code_model.errors import UnknownTripCount

if TYPE_CHECKING:
    from perf.code_model.ir_values import IrValues

__all__ = ["Scev", "UnknownTripCount", "parse_scev"]


_TOKEN = re.compile(r"\s*(\{|\}|\(|\)|,|<%[\w.\-]+>|<[a-z]+>|/u|[+*]|-?\d+|%[\w.\-]+|[A-Za-z_]\w*)")
_OPS = ("+", "*", "/u", "umin", "umax", "smin", "smax")


@dataclass(frozen=True)
class Scev:
    """A parsed SCEV: ("const", n) | ("cast", x) | ("rec", start, step, loop) | (op, *args)."""
    node: tuple

    def loops(self) -> set[str]:
        return _loops(self.node)

    def value(self, iteration: dict[str, int]) -> int:
        """The expression's value with each loop (by header) at the given iteration."""
        return _value(self.node, iteration)


def parse_scev(text: str, values: "IrValues | None" = None) -> Scev:
    """`text` (opt's print of a SCEV) parsed; a `%value` SCEV could not express (a division of
    a select, say) is read through `values`, the function's IR, when given, else refused."""
    tokens, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            if not text[pos:].strip():
                break
            raise UnknownTripCount(f"cannot read {text[pos:]!r}")
        tokens.append(m.group(1))
        pos = m.end()
    parser = _ScevParser(tokens, values)
    node = parser.expr()
    if parser.peek() is not None:
        raise UnknownTripCount(f"cannot read {' '.join(tokens[parser.at:])!r}")
    return Scev(node)


class _ScevParser:
    def __init__(self, tokens: list[str], values: "IrValues | None" = None):
        self.tokens, self.at, self.values = tokens, 0, values

    def peek(self) -> str | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def take(self, want: str | None = None) -> str:
        tok = self.peek()
        if tok is None or (want is not None and tok != want):
            raise UnknownTripCount(f"expected {want or 'more'}, got {tok}")
        self.at += 1
        return tok

    def wrap_flags(self) -> None:
        while (self.peek() or "") in ("<nuw>", "<nsw>", "<nw>"):
            self.take()

    def atom(self) -> tuple:
        tok = self.take()
        if re.fullmatch(r"i\d+", tok):  # a type before a constant
            return self.atom()
        if re.fullmatch(r"-?\d+", tok):
            return ("const", int(tok))
        if tok in ("true", "false"):  # an i1 count (`i1 false`: no backedge taken)
            return ("const", int(tok == "true"))
        if tok == "(":
            if self.peek() in ("zext", "sext", "trunc"):
                self.take()
                self.take()  # source type
                inner = self.expr()
                self.take("to")
                self.take()
                self.take(")")
                self.wrap_flags()
                return ("cast", inner)
            inner = self.expr()
            self.take(")")
            self.wrap_flags()
            return inner
        if tok == "{":
            start = self.expr()
            self.take(",")
            self.take("+")
            self.take(",")
            step = self.expr()
            self.take("}")
            self.wrap_flags()
            loop = self.take()
            if not loop.startswith("<%"):
                raise UnknownTripCount(f"recurrence without a loop: {loop}")
            return ("rec", start, step, loop[1:-1])
        if tok.startswith("%") and self.values is not None:
            self.values.depends(tok)  # refuses a value no loop iteration decides
            return ("value", tok, self.values)
        raise UnknownTripCount(f"run-time value {tok}")

    def expr(self) -> tuple:
        args, op = [self.atom()], None
        while self.peek() in _OPS:
            this = self.take()
            if op is not None and this != op:
                raise UnknownTripCount(f"mixed operators {op} and {this}")
            op = this
            args.append(self.atom())
        return args[0] if op is None else (op, *args)


def _loops(node: tuple) -> set[str]:
    if node[0] == "const":
        return set()
    if node[0] == "value":
        return node[2].depends(node[1])
    if node[0] == "cast":
        return _loops(node[1])
    if node[0] == "rec":
        return {node[3]} | _loops(node[1]) | _loops(node[2])
    return set().union(*(_loops(arg) for arg in node[1:]))


def _value(node: tuple, iteration: dict[str, int]) -> int:
    kind = node[0]
    if kind == "const":
        return node[1]
    if kind == "value":
        return node[2].value(node[1], iteration)
    if kind == "cast":
        return _value(node[1], iteration)
    if kind == "rec":
        return _value(node[1], iteration) + _value(node[2], iteration) * iteration[node[3]]
    args = [_value(arg, iteration) for arg in node[1:]]
    if kind == "+":
        return sum(args)
    if kind == "*":
        product = 1
        for a in args:
            product *= a
        return product
    if kind == "/u":
        return args[0] // args[1]
    return min(args) if kind in ("umin", "smin") else max(args)
