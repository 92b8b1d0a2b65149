"""The integer values of a function's IR that loop iterations decide but SCEV leaves as `%value`,
read by a small interpreter of the IR (`IrValues`)."""

from __future__ import annotations

import re

from perf.code_model.errors import UnknownTripCount


_INSTRUCTION = re.compile(r"\s*(%[\w.\-]+) = (.*)$")
_BLOCK = re.compile(r"^([\w.\-]+):")
_INT = r"(?:-?\d+|true|false)"
_BINARY = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "sdiv": lambda a, b: _truncated_div(a, b), "udiv": lambda a, b: a // b,
    "srem": lambda a, b: a - b * _truncated_div(a, b), "urem": lambda a, b: a % b,
    "shl": lambda a, b: a << b, "lshr": lambda a, b: a >> b, "ashr": lambda a, b: a >> b,
}
_PREDICATES = {
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b,
    "slt": lambda a, b: a < b, "sle": lambda a, b: a <= b, "sgt": lambda a, b: a > b, "sge": lambda a, b: a >= b,
    "ult": lambda a, b: a < b, "ule": lambda a, b: a <= b, "ugt": lambda a, b: a > b, "uge": lambda a, b: a >= b,
}
_MIN_MAX = {"smin": min, "umin": min, "smax": max, "umax": max}


def _truncated_div(a: int, b: int) -> int:
    """LLVM's sdiv: the quotient rounded toward zero (Python's // floors)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


class IrValues:
    """The integer values of one function's IR that loop iterations decide: what opt's SCEV
    leaves as `%value` when an expression is beyond it. IREE's tiles of a dimension that does
    not divide evenly count an inner loop as a ceiling division of `min(left, tile)`, written
    with a `select` between two `sdiv`s: SCEV gives up, while every operand is a constant or
    an enclosing loop's induction variable, so each iteration's value is plain arithmetic.
    Only integer arithmetic, comparisons, selects, min/max, casts and induction variables
    (`phi` of a start and `add` of a constant step, in a loop's header) are evaluated; a value
    reached through anything else (a load, an argument, a call) is a run-time value, refused
    as before. Values are exact integers: IREE's loop bounds are small and do not wrap."""

    def __init__(self, definition: str, headers: dict[str, set[str]]):
        """`definition`: the function's IR text; `headers`: each loop's header -> its blocks."""
        self.instructions: dict[str, tuple[str, str]] = {}  # value -> (its block, its right-hand side)
        block = "entry"
        for line in definition.splitlines():
            if m := _BLOCK.match(line):
                block = m.group(1)
            elif m := _INSTRUCTION.match(line):
                self.instructions[m.group(1)] = ("%" + block, m.group(2))
        self.headers = headers
        self._depends: dict[str, set[str]] = {}
        self._parsed: dict[str, tuple[str, list[str]]] = {}

    def _parts(self, name: str) -> tuple[str, list[str]]:
        """(operation, operands) of `name`'s instruction, refusing what is not evaluated."""
        if name not in self._parsed:  # read once: a count is evaluated at every iteration
            self._parsed[name] = self._read(name)
        return self._parsed[name]

    def _read(self, name: str) -> tuple[str, list[str]]:
        if name not in self.instructions:
            raise UnknownTripCount(f"run-time value {name} (not an instruction of the function)")
        block, rhs = self.instructions[name]
        rhs = re.sub(r"\b(nuw|nsw|exact|disjoint|samesign|tail)\b\s*", "", rhs).strip()
        if m := re.fullmatch(r"(add|sub|mul|sdiv|udiv|srem|urem|shl|lshr|ashr) i\d+ (\S+), (\S+)", rhs):
            return m.group(1), [m.group(2), m.group(3)]
        if m := re.fullmatch(r"icmp (\w+) i\d+ (\S+), (\S+)", rhs):
            return "icmp " + m.group(1), [m.group(2), m.group(3)]
        if m := re.fullmatch(r"select i1 (\S+), i\d+ (\S+), i\d+ (\S+)", rhs):
            return "select", [m.group(1), m.group(2), m.group(3)]
        if m := re.fullmatch(r"call i\d+ @llvm\.([su](?:min|max))\.i\d+\(i\d+ (\S+), i\d+ (\S+)\)", rhs):
            return m.group(1), [m.group(2), m.group(3)]
        if m := re.fullmatch(r"(?:zext|sext|trunc) i\d+ (\S+) to i\d+", rhs):
            return "cast", [m.group(1)]
        if m := re.fullmatch(r"phi i\d+ (.*)", rhs):
            incoming = re.findall(r"\[\s*(\S+),\s*(%[\w.\-]+)\s*\]", m.group(1))
            if len(incoming) == 1:
                return "cast", [incoming[0][0]]
            loop = self.headers.get(block)
            if loop is None or len(incoming) != 2:
                raise UnknownTripCount(f"run-time value {name} (a phi that is no loop's induction variable)")
            (back, _), = [(v, b) for v, b in incoming if b in loop]
            (start, _), = [(v, b) for v, b in incoming if b not in loop]
            op, (a, b) = self._parts(back)
            if op not in ("add", "sub") or name not in (a, b) or (op == "sub" and a != name):
                raise UnknownTripCount(f"run-time value {name} (not a constant-step induction variable)")
            step = b if a == name else a
            if not re.fullmatch(_INT, step):
                raise UnknownTripCount(f"run-time value {name} (a step that is not a constant)")
            return "induction", [start, str(int(step) if op == "add" else -int(step)), block]
        raise UnknownTripCount(f"run-time value {name} ({rhs.split()[0]})")

    def depends(self, name: str) -> set[str]:
        """The loop headers whose iteration `name` depends on; refuses a run-time value."""
        if not name.startswith("%"):
            if not re.fullmatch(_INT, name):
                raise UnknownTripCount(f"run-time value {name}")
            return set()
        if name not in self._depends:
            op, args = self._parts(name)
            if op == "induction":
                self._depends[name] = {args[2]} | self.depends(args[0])
            else:
                self._depends[name] = set().union(*(self.depends(a) for a in args))
        return self._depends[name]

    def value(self, name: str, iteration: dict[str, int]) -> int:
        if not name.startswith("%"):
            return int(name == "true") if name in ("true", "false") else int(name)
        op, args = self._parts(name)
        if op == "induction":
            return self.value(args[0], iteration) + int(args[1]) * iteration[args[2]]
        if op == "select":
            return self.value(args[1] if self.value(args[0], iteration) else args[2], iteration)
        values = [self.value(a, iteration) for a in args]
        if op == "cast":
            return values[0]
        if op.startswith("icmp "):
            return int(_PREDICATES[op.split()[1]](*values))
        if op in _MIN_MAX:
            return _MIN_MAX[op](values)
        return _BINARY[op](*values)
