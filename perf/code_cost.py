"""Static model cycles of compiled dispatches: a cost model of the generated code.

The tile-level cost model (analysis/cost_model.py) prices the counts the tiles imply; what a
candidate costs on RISC-V is mostly decided by what IREE's vectorizer makes of them (spills,
gathers, peeled remainders). This model reads the code instead, without running it:

1. IREE's optimized LLVM IR of every dispatch (`--iree-hal-dump-executable-intermediates-to`)
   is rewritten into the syntax of Debian's LLVM 19 (`downgrade_ir`; IREE's LLVM is newer).
2. `opt-19` names every block and prints each loop's backedge-taken count (scalar
   evolution). Counts that depend on an enclosing loop's induction variable (peeled
   remainders) are evaluated per iteration of that loop. The workgroup id is made a constant
   in a copy of the function per workgroup (`call_header_counts`): instsimplify then folds
   what it decides, a ragged last tile's trip counts and the guards that choose between a
   full-tile nest and a remainder nest, and a loop behind a branch never taken is not
   counted. Other counts that depend on run-time values take their constant maximum.
3. `llc-19` compiles the same IR with verbose assembly, which names the IR block each
   machine block starts, so each of its loops gets the trip count of its IR loop. IREE's own
   assembly (its .s dump) is costed when its loops, found from backward branches in layout
   order, line up with llc-19's one for one; otherwise llc-19's code is costed (`llc_code`).
4. The code is cut as qemu translates it (after every vsetvli, at most 512 instructions),
   because that is the unit perf.measure costs; each piece is costed by llvm-mca on the core
   model (`perf.mca.text_cycles`) with the LMUL/SEW of the preceding vsetvli in layout order,
   and counted as often as its innermost loop's header runs per call. A dispatch's cycles
   are that sum times its workgroup count (the axes it loops over counted inside the call:
   `one_workgroup_ir`).

The instruction set is the target's (`Isa`, from its triple): RISC-V as above; x86-64 (the
host) with x86 branches closing loops and each basic block one piece (no qemu), priced on a
named x86 core model (e.g. sapphirerapids, znver2).

What it ignores, beyond `common.core_models.MODEL_IGNORES`: branches inside a loop body that
no constant decides (every block of a loop is counted at its header's count, each arm of such
a branch too), a vtype set on another path than the layout-preceding one, and, where IREE's
loops do not line up, LLVM 19's code generation differing from IREE's (more spills in IREE's
code, typically).
"""

from __future__ import annotations

import math
import re
import struct
import subprocess
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from perf import mca

OPT = "opt"  # LLVM 19's, from --llvm-bin (perf.mca.tool)
LLC = "llc"
MAX_ENUMERATED_ITERATIONS = 200_000  # beyond this, dependent trip counts take their maximum
# A loop whose count is a run-time value (e.g. a push constant, as data-tiled dispatches' K
# loop) has a constant maximum set by its index type only (2^61 and the like): no cost.
MAX_CREDIBLE_BACKEDGES = 1 << 32


class CodeCostError(RuntimeError):
    """The code cannot be costed; the message names the culprit and the reason."""


class MissingCode(CodeCostError):
    """A build's code directory lacks what `codegen.compile --out-code` writes: a broken input,
    not code the model cannot price."""


class UncostableFunction(CodeCostError):
    """One function's code has no static count (the others of its module may)."""


def _tool(name: str) -> str:
    try:
        return mca.tool(name)  # the same --llvm-bin directory (@llvm19) as llvm-mca
    except mca.McaError as err:
        raise CodeCostError(str(err)) from None


# ---- LLVM IR of a newer LLVM, in LLVM 19's syntax -------------------------------------------
def _hex_float(m: re.Match) -> str:
    digits = m.group(1)
    if len(digits) == 16:
        return "0x" + digits
    if len(digits) == 8:  # f0x<float bits>: LLVM 19 writes floats as the double's bits
        (value,) = struct.unpack(">f", bytes.fromhex(digits))
        return "0x%016X" % struct.unpack(">Q", struct.pack(">d", value))[0]
    return "0xH" + digits


def _decimal_float(m: re.Match) -> str:
    # Newer LLVM prints the shortest decimal that round-trips as a float; 19 wants it exact.
    # Group 1 is what precedes the literal (its `float` type), group 2 the literal.
    (value,) = struct.unpack(">f", struct.pack(">f", float(m.group(2))))
    return m.group(1) + "0x%016X" % struct.unpack(">Q", struct.pack(">d", value))[0]


def _exact_f32(literal: str) -> bool:
    return struct.unpack(">f", struct.pack(">f", float(literal)))[0] == float(literal)


def _call_args(text: str, start: int) -> tuple[list[str], int]:
    """The arguments of the call whose '(' ends just before `start`, and the index of its ')'."""
    depth, args, current, i = 0, [], [], start
    while True:
        ch = text[i]
        if ch in "(<[{":
            depth += 1
        elif ch in ")>]}":
            if depth == 0:
                args.append("".join(current).strip())
                return args, i
            depth -= 1
        elif ch == "," and depth == 0:
            args.append("".join(current).strip())
            current = []
            i += 1
            continue
        current.append(ch)
        i += 1


# Masked memory intrinsics and the index of their pointer operand(s).
_MASKED_POINTER = {"load": 0, "store": 1, "gather": 0, "scatter": 1}
_MASKED = re.compile(r"(?:call|declare) [^@\n]*@llvm\.masked\.(load|store|gather|scatter)\.[\w.]+\(")


def _masked_alignment_operands(text: str) -> str:
    """LLVM >= 22 gives masked loads, stores, gathers and scatters their alignment as a pointer
    attribute; 19 as an i32 operand after the pointer(s)."""
    out, pos = [], 0
    for m in _MASKED.finditer(text):
        args, end = _call_args(text, m.end())
        ptr = _MASKED_POINTER[m.group(1)]
        if m.group(0).startswith("declare"):
            args.insert(ptr + 1, "i32 immarg")
        else:
            align = re.search(r"\balign (\d+) ", args[ptr])
            args[ptr] = re.sub(r"\balign \d+ ", "", args[ptr])
            args.insert(ptr + 1, f"i32 {align.group(1) if align else 1}")
        out.append(text[pos:m.end()] + ", ".join(args))
        pos = end
    out.append(text[pos:])
    return "".join(out)


def downgrade_ir(text: str) -> str:
    """IREE's LLVM IR text, rewritten so LLVM 19's tools parse it. Only syntax changes; the
    lifetime markers (whose signature changed) are dropped: they emit no code."""
    s = re.sub(r"f0x([0-9A-Fa-f]+)\b", _hex_float, text)
    s = re.sub(r"(\bfloat )(-?\d+\.\d+e[+-]\d+)", _decimal_float, s)
    # ... and as the second operand of a float instruction (`fcmp olt float %9, -8.78e+01`),
    # where only an inexact one needs it (LLVM 19 reads the others).
    s = re.sub(r"(\bfloat [%@][\w.\-]+, )(-?\d+\.\d+e[+-]\d+)",
               lambda m: m.group(0) if _exact_f32(m.group(2)) else _decimal_float(m), s)
    s = re.sub(r"(?<![\w.%@])-inf\b", "0xFFF0000000000000", s)
    s = re.sub(r"(?<![\w.%@])\+?inf\b", "0x7FF0000000000000", s)
    s = re.sub(r"(?<![\w.%@])-[qs]?nan\b", "0xFFF8000000000000", s)
    s = re.sub(r"(?<![\w.%@])\+?[qs]?nan\b", "0x7FF8000000000000", s)
    s = s.replace("captures(none)", "nocapture")
    s = re.sub(r"captures\([^)]*\)", "", s)
    s = s.replace("icmp samesign ", "icmp ")
    s = re.sub(r", target_mem\w*: \w+", "", s)
    s = s.replace(" nocreateundeforpoison", "")
    s = "\n".join(line for line in s.split("\n") if "llvm.lifetime." not in line)
    # Alias-scope domains gained an i1 operand; 19 takes (self, name) only.
    s = re.sub(r"(= distinct !\{!\d+), i1 (?:true|false)(, !\")", r"\1\2", s)
    return _masked_alignment_operands(s)


def is_dispatch_function(name: str) -> bool:
    """Whether an LLVM function of IREE's executable is a dispatch (not a helper or a libm
    routine linked beside it): IREE names them `<entry>_dispatch_<n>_<root op>`."""
    return "_dispatch_" in name


# The workgroup count's fields in IREE's iree_hal_executable_dispatch_state_v0_t, the second
# parameter of every dispatch function: byte offset -> axis (x, y, z).
_WORKGROUP_COUNT_OFFSETS = {12: 0, 16: 1, 20: 2}
_DEFINE = re.compile(r"^define [^@]*@\"?([\w.\-]+)\"?\((.*)\)[^(]*\{\s*$")


def _field_load(line: str, pointer: str, offsets: dict[int, int], fields: dict[str, int]) -> tuple[str, str, int] | None:
    """(result, type, axis) when `line` loads a field of the struct `pointer` points at
    (`offsets`: byte offset -> axis; offset 0 is `pointer` itself); a getelementptr to such a
    field is remembered in `fields` (value -> axis)."""
    if (g := re.match(rf"\s*(%[\w.\-]+) = getelementptr inbounds (?:nuw )?i8, ptr {re.escape(pointer)}, "
                      r"i64 (\d+)\b", line)) and int(g.group(2)) in offsets:
        fields[g.group(1)] = offsets[int(g.group(2))]
    elif ld := re.match(r"(\s*%[\w.\-]+) = load (i\d+), ptr (%[\w.\-]+),", line):
        axis = offsets.get(0) if ld.group(3) == pointer else fields.get(ld.group(3))
        if axis is not None:
            return ld.group(1), ld.group(2), axis
    return None


def one_workgroup_ir(named_ir: str) -> tuple[str, dict[str, set[int]]]:
    """(`named_ir` with every dispatch function's loads of its workgroup count replaced by 1,
    function -> the axes whose count it reads).

    IREE reads the workgroup count only to step the loops that distribute tiles over
    workgroups (`for (i = id * t; i < n; i += count * t)`, where it capped the count). With
    that axis' count at 1, one call runs every tile of the axis, so scalar evolution counts
    the whole axis and that call is the dispatch's work along it; an axis whose count is not
    read runs one tile per workgroup and is multiplied by its count. Work guarded by the
    workgroup id (`if (id < 16)`, a second, shorter loop fused into the dispatch) is then
    counted once, not once per workgroup. Only for counting: value and block names are kept,
    so the code compiled from the unchanged IR maps onto these loops."""
    out, fields, read = [], {}, {}
    function, state = None, None
    for line in named_ir.split("\n"):
        if m := _DEFINE.match(line):
            params = re.findall(r"(%[\w.\-]+)(?=\s*(?:,|$))", m.group(2))
            function = m.group(1) if is_dispatch_function(m.group(1)) and len(params) == 3 else None
            state, fields = (params[1] if function else None), {}
        elif line.startswith("}"):
            function = None
        elif function is not None and (load := _field_load(line, state, _WORKGROUP_COUNT_OFFSETS, fields)):
            result, type_, axis = load
            line = f"{result} = add {type_} 0, 1"
            read.setdefault(function, set()).add(axis)
        out.append(line)
    return "\n".join(out), read


# ---- scalar evolution expressions -----------------------------------------------------------
class UnknownTripCount(ValueError):
    """A backedge-taken count this module cannot evaluate (a run-time value, an unknown form)."""


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


# ---- integer IR values SCEV cannot express -------------------------------------------------
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


# ---- loops --------------------------------------------------------------------------------
@dataclass(eq=False)
class Loop:
    header: str
    depth: int
    blocks: set[str]
    children: list["Loop"] = field(default_factory=list)
    backedges: Scev | None = None  # backedge-taken count, when this module can evaluate it
    max_backedges: int | None = None  # SCEV's constant maximum
    backedges_printed: str | None = None  # opt's print of a count SCEV has but `backedges` lacks

    def walk(self):
        yield self
        for child in self.children:
            yield from child.walk()


# opt prints only the loops' counts, not every instruction's expression: _parse_loops reads no
# more, and printing them all (with their values at each loop exit) was most of opt's time.
_COUNTS_ONLY = "--scalar-evolution-classify-expressions=false"


def _printed_loops(ll: Path, first_passes: str, output: list[str]) -> dict[str, list[Loop]]:
    """The loop forests opt-19 prints for `ll` after `first_passes` ("" or "a,b,"), writing
    the module as `output` says (opt's own arguments)."""
    proc = subprocess.run([_tool(OPT), f"-passes={first_passes}print<loops>,print<scalar-evolution>",
                           _COUNTS_ONLY, *output, str(ll)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise CodeCostError(f"{OPT} cannot read {ll.name}: {_first_error(proc.stderr)}")
    forests = _parse_loops(proc.stderr)
    # The IR the counts were printed for: the passes' output when written, else the input.
    _resolve_ir_values(forests, Path(output[output.index("-o") + 1]) if "-o" in output else ll)
    return forests


def _resolve_ir_values(forests: dict[str, list[Loop]], ir: Path) -> None:
    """Reads each count SCEV left with a `%value` through the function's IR (IrValues); the
    IR is read only when some count needs it."""
    definitions = None
    for function, roots in forests.items():
        loops = [loop for root in roots for loop in root.walk()]
        pending = [loop for loop in loops if loop.backedges is None and loop.backedges_printed]
        if not pending:
            continue
        definitions = definitions if definitions is not None else function_definitions(ir.read_text())
        if function not in definitions:
            continue
        values = IrValues(definitions[function], {loop.header: loop.blocks for loop in loops})
        for loop in pending:
            try:
                loop.backedges = parse_scev(loop.backedges_printed, values)
            except ValueError:  # UnknownTripCount, or a phi of no single back edge
                pass  # a run-time value: the count stays unknown


def loop_forests(named_ll: Path) -> dict[str, list[Loop]]:
    """Function -> its outermost loops, with blocks and backedge-taken counts (opt-19)."""
    return _printed_loops(named_ll, "", ["-disable-output"])


def _parse_loops(printed: str) -> dict[str, list[Loop]]:
    """The loop forests of opt's `print<loops>,print<scalar-evolution>` output."""
    forests: dict[str, list[Loop]] = {}
    headers: dict[tuple[str, str], Loop] = {}
    function, stack, counted = None, [], None
    for line in printed.splitlines():
        if m := re.match(r"Loop info for function '(.+)':", line):
            function, stack = m.group(1), []
            forests[function] = []
        elif (m := re.match(r"\s*Loop at depth (\d+) containing: (.*)$", line)) and function:
            depth = int(m.group(1))
            blocks = [re.sub(r"<.*", "", b) for b in m.group(2).split(",")]
            header = next(re.sub(r"<.*", "", b) for b in m.group(2).split(",") if "<header>" in b)
            while stack and stack[-1].depth >= depth:
                stack.pop()
            loop = Loop(header, depth, set(blocks))
            (stack[-1].children if stack else forests[function]).append(loop)
            stack.append(loop)
            headers[(function, header)] = loop
        elif m := re.match(r"Determining loop execution counts for: @\"?([^\"]+)\"?$", line):
            counted = m.group(1)
        elif (m := re.match(r"Loop (%\S+): backedge-taken count is (.+)$", line)) and (counted, m.group(1)) in headers:
            try:
                headers[(counted, m.group(1))].backedges = parse_scev(m.group(2))
            except UnknownTripCount:
                headers[(counted, m.group(1))].backedges_printed = m.group(2)
        elif (m := re.match(r"Loop (%\S+): constant max backedge-taken count is i(\d+) (-?\d+)", line)) \
                and (counted, m.group(1)) in headers:
            # SCEV's maximum is unsigned; opt prints it signed (-1: the type's maximum).
            headers[(counted, m.group(1))].max_backedges = int(m.group(3)) % (1 << int(m.group(2)))
    return forests


def header_counts(roots: list[Loop]) -> dict[Loop, float]:
    """How often each loop's header runs in one call of its function."""
    counts: dict[Loop, float] = defaultdict(float)
    budget = [MAX_ENUMERATED_ITERATIONS]
    depends: dict[Loop, set[str]] = {}

    def loops_used(loop: Loop) -> set[str]:
        if loop not in depends:
            own = loop.backedges.loops() if loop.backedges is not None else set()
            depends[loop] = own.union(*(loops_used(c) for c in loop.children))
        return depends[loop]

    def trips(loop: Loop, iteration: dict[str, int]) -> int:
        if loop.backedges is not None and loop.backedges.loops() <= iteration.keys():
            try:
                n = max(loop.backedges.value(iteration) + 1, 0)
            except ZeroDivisionError:
                raise UncostableFunction(f"loop {loop.header}: its trip count divides by zero") from None
            # Unsigned arithmetic read as signed can overshoot; SCEV's maximum bounds it.
            return n if loop.max_backedges is None else min(n, loop.max_backedges + 1)
        if loop.max_backedges is not None:
            if loop.max_backedges < MAX_CREDIBLE_BACKEDGES:
                return loop.max_backedges + 1
            # bounded only by the index type: a run-time count
            raise UncostableFunction(f"loop {loop.header}: its trip count is a run-time value "
                                     f"(SCEV's maximum is {loop.max_backedges})")
        raise UncostableFunction(f"loop {loop.header}: no trip count and no constant maximum")

    def visit(loop: Loop, iteration: dict[str, int], times: float) -> None:
        n = trips(loop, iteration)
        counts[loop] += times * n
        for child in loop.children:
            if loop.header in loops_used(child) and budget[0] >= n:
                budget[0] -= n
                for i in range(n):
                    visit(child, {**iteration, loop.header: i}, times)
            else:
                visit(child, iteration, times * n)

    for root in roots:
        visit(root, {}, 1.0)
    return counts


def live_header_counts(roots: list[Loop], live: set[str]) -> dict[str, float]:
    """`header_counts` by header, of the loops whose header can be reached (`live`): a loop
    behind a branch that is never taken does not run, nor do the loops inside it."""
    def prune(loops: list[Loop]) -> list[Loop]:
        return [Loop(l.header, l.depth, l.blocks, prune(l.children), l.backedges, l.max_backedges)
                for l in loops if l.header in live]
    return {loop.header: n for loop, n in header_counts(prune(roots)).items()}


def reachable_blocks(ir: str) -> dict[str, set[str]]:
    """Function -> the blocks reachable from its entry, where a branch on a constant
    (`br i1 false, label %a, label %b`, as instsimplify leaves a guard it decided) takes only
    the target it names; every other branch may take each of its targets."""
    successors: dict[str, dict[str, set[str]]] = {}
    function, block = None, None
    for line in ir.split("\n"):
        if m := _DEFINE.match(line):
            function, block = m.group(1), None
            successors[function] = {}
        elif function is None:
            continue
        elif line.startswith("}"):
            function = None
        elif m := re.match(r"^([\w.\-]+):", line):
            block = "%" + m.group(1)
            successors[function][block] = set()
        elif line.strip() and not line.lstrip().startswith(";"):
            if block is None:  # an entry block without a label
                block = "%<entry>"
                successors[function][block] = set()
            if m := re.match(r"\s*br i1 (true|false), label (%[\w.\-]+), label (%[\w.\-]+)", line):
                successors[function][block].add(m.group(2) if m.group(1) == "true" else m.group(3))
            else:
                successors[function][block].update(re.findall(r"\blabel (%[\w.\-]+)", line))
    reachable = {}
    for function, succ in successors.items():
        entry = next(iter(succ), None)
        seen, todo = ({entry}, [entry]) if entry else (set(), [])
        while todo:
            for target in succ.get(todo.pop(), ()) - seen:
                seen.add(target)
                todo.append(target)
        reachable[function] = seen
    return reachable


# ---- workgroups one by one ------------------------------------------------------------------
# The workgroup id's fields in IREE's iree_hal_executable_workgroup_state_v0_t, the third
# parameter of every dispatch function: byte offset -> axis (x, y: 32 bits; z: 16 bits).
_WORKGROUP_ID_OFFSETS = {0: 0, 4: 1, 8: 2}
# A dispatch whose workgroups differ (a ragged last tile, a guard on the id) is costed one
# workgroup at a time up to this many; beyond, as its first workgroup for all but one and its
# last for the last (IREE's distribution leaves only the last tile of an axis ragged).
MAX_ENUMERATED_WORKGROUPS = 256
_DEBUG_ATTACHMENT = re.compile(r",? !dbg !\d+")


def function_definitions(ir: str) -> dict[str, str]:
    """Function -> the text of its definition (`define` to its closing brace)."""
    out = {}
    for m in re.finditer(r"^define [^\n]*$", ir, re.M):
        if d := _DEFINE.match(m.group(0)):
            out[d.group(1)] = ir[m.start():ir.index("\n}", m.start()) + 2]
    return out


def workgroup_copy_name(function: str, ids: tuple[int, int, int]) -> str:
    return f"{function}.wg.{ids[0]}_{ids[1]}_{ids[2]}"


def workgroup_copy(definition: str, function: str, ids: tuple[int, int, int]) -> str:
    """The function renamed `workgroup_copy_name(function, ids)`, its loads of the workgroup id
    replaced by `ids` (so instsimplify folds what the id decides: a ragged tile's bounds, a
    guard) and its debug info dropped (a subprogram belongs to one function)."""
    lines = definition.split("\n")
    params = re.findall(r"(%[\w.\-]+)(?=\s*(?:,|$))", _DEFINE.match(lines[0]).group(2))
    if len(params) != 3:
        raise CodeCostError(f"{function}: not a dispatch function (its parameters: {', '.join(params)})")
    state, fields = params[2], {}
    out = [re.sub(rf'@"?{re.escape(function)}"?\(', f"@{workgroup_copy_name(function, ids)}(",
                  _DEBUG_ATTACHMENT.sub("", lines[0]), count=1)]
    for line in lines[1:]:
        if "#dbg_" in line or "@llvm.dbg." in line:
            continue
        line = _DEBUG_ATTACHMENT.sub("", line)
        if load := _field_load(line, state, _WORKGROUP_ID_OFFSETS, fields):
            result, type_, axis = load
            line = f"{result} = add {type_} 0, {ids[axis]}"
        out.append(line)
    return "\n".join(out)


def _counted_loops(ir: str, path: Path) -> tuple[dict[str, list[Loop]], dict[str, set[str]]]:
    """(loop forests, reachable blocks) of every function of `ir` once instsimplify has folded
    what is constant in it (written to `path`, simplified beside it). instsimplify changes no
    block: names and loops stay those of the code compiled."""
    path.write_text(ir)
    simplified = path.with_name(path.stem + ".simplified.ll")
    forests = _printed_loops(path, "instsimplify,", ["-S", "-o", str(simplified)])
    return forests, reachable_blocks(simplified.read_text())


def _summed(counts: list[tuple[dict[str, float], float]]) -> dict[str, float]:
    """Σ weight x count, per header, of (header counts, weight) pairs."""
    total: dict[str, float] = defaultdict(float)
    for headers, weight in counts:
        for header, n in headers.items():
            total[header] += weight * n
    return dict(total)


def _stubbed(ir: str, definitions: dict[str, str], functions) -> str:
    """`ir` with each of `functions` defined as an empty stub: its copies stand for it, and a
    stub keeps what refers to it (the executable's table of dispatches) valid."""
    for f in functions:
        ir = ir.replace(definitions[f], f"define internal i32 @{f}() {{\n  ret i32 0\n}}", 1)
    return ir


def call_header_counts(counted_ir: str, functions: set[str], grids: dict[str, tuple[int, int, int]],
                       work: Path) -> tuple[dict[str, list[Loop]], dict[str, tuple[dict[str, float], int] | UncostableFunction]]:
    """(function -> its loop forest, function -> (how often each loop header runs, summed over
    the workgroups counted; how many workgroups that is), or why it cannot be counted).

    A function of `grids` (function -> workgroups per axis to count one by one; an axis the
    function loops over is 1) is counted as its first and its last workgroup (copies with the
    id a constant, `workgroup_copy`); when the two agree every workgroup is taken to run the
    same loops, else each workgroup is counted (up to MAX_ENUMERATED_WORKGROUPS). Any other
    function is counted as one call with the id unknown. The copies have the function's
    blocks and loops (instsimplify changes no block), so the first one's forest is its."""
    definitions = function_definitions(counted_ir)
    stubbed = _stubbed(counted_ir, definitions, grids)

    def analysed(copies: dict[str, list[tuple[int, int, int]]], name: str):
        text = stubbed + "".join(
            "\n" + workgroup_copy(definitions[f], f, ids) for f, all_ids in copies.items() for ids in all_ids)
        return _counted_loops(text, work / name)

    probes = {f: sorted({(0, 0, 0), tuple(n - 1 for n in grid)}) for f, grid in grids.items()}
    forests, live = analysed(probes, "counted.ll")
    structure = {f: forests[workgroup_copy_name(f, probes[f][0]) if f in grids else f] for f in functions}

    result: dict[str, tuple[dict[str, float], int] | UncostableFunction] = {}
    ragged: dict[str, list[tuple[int, int, int]]] = {}
    for f in sorted(functions):
        try:
            if f not in grids:
                result[f] = (live_header_counts(forests[f], live[f]), 1)
                continue
            first, last = (live_header_counts(forests[name], live[name])
                           for name in (workgroup_copy_name(f, probes[f][0]), workgroup_copy_name(f, probes[f][-1])))
        except UncostableFunction as err:
            result[f] = err
            continue
        workgroups = math.prod(grids[f])
        if first == last:
            result[f] = (_summed([(first, workgroups)]), workgroups)
        elif workgroups > MAX_ENUMERATED_WORKGROUPS:
            result[f] = (_summed([(first, workgroups - 1), (last, 1)]), workgroups)
        else:
            grid = grids[f]
            ragged[f] = [(x, y, z) for x in range(grid[0]) for y in range(grid[1]) for z in range(grid[2])]
    if ragged:
        forests, live = analysed(ragged, "workgroups.ll")
        for f, all_ids in ragged.items():
            try:
                result[f] = (_summed([(live_header_counts(forests[name], live[name]), 1)
                                      for name in (workgroup_copy_name(f, ids) for ids in all_ids)]), len(all_ids))
            except UncostableFunction as err:
                result[f] = err
    return structure, result


# ---- machine code ---------------------------------------------------------------------------
@dataclass
class MachineBlock:
    label: str | None  # .LBB<f>_<n> when it is a branch target
    ir_block: str | None  # the IR block llc's verbose comment names (our llc's code only)
    lines: list[str] = field(default_factory=list)
    named: bool = False  # ir_block is the comment's own, not inherited from the block before


_LABEL = re.compile(r"^(?:(\.LBB\d+_\d+):|# %bb\.\d+:)\s*(?:#\s+(%[\w.\-]+)\s*$)?")
QEMU_MAX_TB_INSNS = 512  # qemu's TCG_MAX_INSNS: no translation block is longer


@dataclass(frozen=True)
class Isa:
    """What the model needs of an instruction set: the triple llc-19 and llvm-mca take, the
    branches that close loops, and where the costed pieces end."""
    name: str
    triple: str
    mca_triple: str
    branch: re.Pattern
    # RVV: the vtype-setting instruction; a piece ends after it (qemu ends its translation
    # block there) and its LMUL/SEW instrument the pieces after it. None: no such instruction.
    vset: re.Pattern | None
    max_piece: int | None  # instructions per piece (qemu's TB limit); None: whole blocks
    # Instructions after which control does not fall through to the next block (unconditional
    # jumps, returns, tail calls).
    ends_flow: re.Pattern
    # How llvm-mca must read an instruction it has no scheduling class for: (pattern, its
    # replacement), the spelling the measurement's disassembly gives the same encoding.
    mca_spellings: tuple[tuple[re.Pattern, Callable[[re.Match], str]], ...] = ()

    def for_mca(self, line: str) -> str:
        for pattern, spelling in self.mca_spellings:
            line = pattern.sub(spelling, line)
        return line


RISCV64 = Isa("riscv64", "riscv64-unknown-linux-gnu", "riscv64",
              re.compile(r"^(?:j|beqz|bnez|blez|bgez|bltz|bgtz|beq|bne|blt|bge|bltu|bgeu|bgt|ble|bgtu|bleu)"
                         r"\s.*?(\.LBB\d+_\d+)\s*$"),
              re.compile(r"vset(?:i)?vli\s+\w+,\s*\w+,\s*(e\d+),\s*(mf?\d)"), QEMU_MAX_TB_INSNS,
              re.compile(r"^(?:(?:j|jr|tail)\s|ret\b)"),
              # Zicbop's prefetches (IREE's microkernels) are ORI hints to x0: the accelerator's
              # ISA string has no zicbop, so the perf stage's disassembly reads them as `ori`,
              # and llvm-mca-19's sifive-p670 has no scheduling class for `prefetch.*`.
              ((re.compile(r"^prefetch\.([irw])\s+(-?\d+)\((\w+)\)"),
                lambda m: f"ori zero, {m[3]}, {int(m[2]) + {'i': 0, 'r': 1, 'w': 3}[m[1]]}"),))
# Natively run code has no translation blocks: a basic block is one piece.
X86_64 = Isa("x86_64", "x86_64-unknown-linux-gnu", "x86_64",
             re.compile(r"^j[a-z]+\s+(\.LBB\d+_\d+)\s*$"), None, None,
             re.compile(r"^(?:jmp[a-z]*|ret[a-z]*|ud2)\b"))
ISAS = (RISCV64, X86_64)


def isa_of(triple: str) -> Isa:
    """The Isa of a target triple (its architecture, the part before the first '-')."""
    arch = triple.split("-", 1)[0]
    for isa in ISAS:
        if isa.name == arch:
            return isa
    raise CodeCostError(f"target triple {triple!r}: the code model knows {', '.join(i.name for i in ISAS)}, "
                        f"not {arch}")


def machine_blocks(asm: str, function: str, isa: Isa = RISCV64) -> list[MachineBlock]:
    """The function's basic blocks in layout order: a block starts at a label (or llc's
    `# %bb.N` comment) and after a block's branches."""
    parts = re.split(rf"\n{re.escape(function)}:[^\n]*\n", asm, maxsplit=1)
    if len(parts) != 2:
        raise CodeCostError(f"no code for {function} in the assembly")
    blocks = [MachineBlock(None, "%<entry>")]
    for raw in parts[1].split(".Lfunc_end", 1)[0].splitlines():
        if m := _LABEL.match(raw):
            blocks.append(MachineBlock(m.group(1), m.group(2) or blocks[-1].ir_block, named=bool(m.group(2))))
            continue
        line = raw.split("#", 1)[0].strip()
        if not line or line.startswith(".") or line.endswith(":"):
            continue
        last = blocks[-1].lines[-1] if blocks[-1].lines else ""
        if isa.branch.match(last) and not isa.branch.match(line):
            blocks.append(MachineBlock(None, blocks[-1].ir_block))
        blocks[-1].lines.append(line)
    return [b for b in blocks if b.lines or b.label]


def _successors(blocks: list[MachineBlock], at: dict[str, int], isa: Isa) -> list[set[int]]:
    """Each block's successors: its branch targets (`at`: label -> block index) and, unless it
    ends the flow, the next block."""
    out = []
    for i, block in enumerate(blocks):
        succ = {at[m.group(1)] for line in block.lines if (m := isa.branch.match(line)) and m.group(1) in at}
        if i + 1 < len(blocks) and not (block.lines and isa.ends_flow.match(block.lines[-1])):
            succ.add(i + 1)
        out.append(succ)
    return out


def _reaches(successors: list[set[int]], start: int, goal: int) -> bool:
    seen, todo = {start}, [start]
    while todo:
        k = todo.pop()
        if k == goal:
            return True
        for n in successors[k] - seen:
            seen.add(n)
            todo.append(n)
    return False


def layout_loops(blocks: list[MachineBlock], isa: Isa = RISCV64) -> list[tuple[int, int]]:
    """Loops as (first, last) block index, outer before inner: a branch back to an earlier
    label closes a loop (the block placement keeps loops contiguous) when that label leads
    back to the branch; a branch back to an exit (a block that returns, placed earlier) does not."""
    at = {b.label: i for i, b in enumerate(blocks) if b.label}
    successors = _successors(blocks, at, isa)
    last: dict[int, int] = {}
    for i, block in enumerate(blocks):
        for line in block.lines:
            if (m := isa.branch.match(line)) and m.group(1) in at and at[m.group(1)] <= i:
                first = at[m.group(1)]
                if _reaches(successors, first, i):
                    last[first] = max(last.get(first, i), i)
    return sorted(last.items(), key=lambda span: (span[0], -span[1]))


def _depths(loops: list[tuple[int, int]]) -> list[int]:
    return [sum(1 for a, b in loops if a <= first and last <= b) for first, last in loops]


def _innermost(loops: list[tuple[int, int]], index: int) -> int | None:
    inside = [k for k, (a, b) in enumerate(loops) if a <= index <= b]
    return max(inside, key=lambda k: loops[k][0]) if inside else None


def block_cycles(blocks: list[MachineBlock], counts: list[float], core: str, isa: Isa = RISCV64) -> float:
    """Sum of llvm-mca cycles x count, over the pieces of each block. RISC-V: the pieces qemu
    would translate (perf.measure's unit): a translation block ends after a vsetvli and after
    512 instructions. Elsewhere a basic block is one piece."""
    regions, times, vtype = [], [], None
    for block, count in zip(blocks, counts):
        piece: list[str] = []
        for line in block.lines:
            piece.append(isa.for_mca(line))
            vset = isa.vset.search(line) if isa.vset else None
            if vset or (isa.max_piece and len(piece) >= isa.max_piece):
                regions.append((piece, vtype))
                times.append(count)
                piece = []
            if vset:
                vtype = (vset.group(2).upper(), vset.group(1).upper())
        if piece:
            regions.append((piece, vtype))
            times.append(count)
    try:
        return sum(float(c) * n for c, n in zip(mca.text_cycles(regions, core, isa.mca_triple), times))
    except mca.McaError as err:
        raise CodeCostError(str(err)) from None


# ---- one module ---------------------------------------------------------------------------
@dataclass
class CallCycles:
    cycles: dict[str, float]  # dispatch function -> model cycles of one call
    llc_code: set[str]  # functions costed on llc-19's code: IREE's loops did not line up
    errors: dict[str, str] = field(default_factory=dict)  # functions that cannot be costed, why
    calls: dict[str, int] = field(default_factory=dict)  # dispatch -> calls per call of the model
    # function -> the workgroup axes it loops over, costed with their count at 1 (one_workgroup_ir)
    looped_axes: dict[str, set[int]] = field(default_factory=dict)
    # functions whose cycles are of all their workgroups (call_cycles' workgroup_counts)
    all_workgroups: set[str] = field(default_factory=set)

    def model_cycles(self) -> float:
        """One call of the model: each costed dispatch's cycles times its calls (initializers,
        which run once at load, are not counted)."""
        return sum(cycles * self.calls[name] for name, cycles in self.cycles.items())


def call_cycles(ir_text: str, iree_asm: str | None, core: str, cpu_features: list[str], work: Path,
                functions: set[str] | None = None, isa: Isa = RISCV64, cpu: str = "generic-rv64",
                workgroup_counts: dict[str, tuple[int, int, int]] | None = None) -> CallCycles:
    """Model cycles of each dispatch function (or of `functions`) in the module, with each
    workgroup-count axis the function reads at 1 (`one_workgroup_ir`; the axes are in
    `looped_axes`): of every workgroup of a function given its count in `workgroup_counts`
    (such functions are in `all_workgroups`; see `call_header_counts`), else of one call with
    the workgroup id unknown.

    The code costed is IREE's own (`iree_asm`, its .s), when its loops line up with those of
    llc-19's verbose assembly of the same IR (which names each block's IR block, hence each
    loop's trip count); otherwise llc-19's code, and the function is listed in `llc_code`.
    `isa` and `cpu` are the target's (llc-19 -mtriple/-mcpu); `core` is llvm-mca's -mcpu."""
    work.mkdir(parents=True, exist_ok=True)
    downgraded, named, asm_path = work / "module.ll", work / "named.ll", work / "module.s"
    downgraded.write_text(downgrade_ir(ir_text))
    proc = subprocess.run([_tool(OPT), "-passes=instnamer", "-S", str(downgraded), "-o", str(named)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise CodeCostError(f"{OPT} cannot read IREE's IR: {_first_error(proc.stderr)}")
    counted_ir, looped_axes = one_workgroup_ir(named.read_text())
    defined = set(function_definitions(counted_ir))
    wanted = functions if functions is not None else {f for f in defined if is_dispatch_function(f)}
    for function in sorted(wanted - defined):
        raise CodeCostError(f"{function}: not in the module's IR")
    grids = {f: workgroup_grid(count, looped_axes.get(f, set()))
             for f, count in (workgroup_counts or {}).items() if f in wanted}
    forests, counted = call_header_counts(counted_ir, wanted, grids, work)
    proc = subprocess.run([_tool(LLC), "-O3", f"-mtriple={isa.triple}", f"-mcpu={cpu}",
                           f"-mattr={','.join(cpu_features)}", str(named), "-o", str(asm_path)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise CodeCostError(f"{LLC} cannot compile IREE's IR: {_first_error(proc.stderr)}")
    ours_asm = asm_path.read_text()
    result = CallCycles({}, set())
    for function in sorted(wanted):
        try:  # one function's code, not the module's: the others stand
            if isinstance(counted[function], UncostableFunction):
                raise counted[function]
            headers, workgroups = counted[function]
            cycles, on_llc = _function_cycles(function, forests[function], headers, workgroups, ours_asm,
                                              iree_asm, core, isa)
        except UncostableFunction as err:
            result.errors[function] = str(err)
            continue
        result.cycles[function] = cycles
        if function in grids:
            result.all_workgroups.add(function)
        if function in looped_axes:
            result.looped_axes[function] = looped_axes[function]
        if on_llc:
            result.llc_code.add(function)
    return result


def _function_cycles(function: str, roots: list[Loop], headers: dict[str, float], workgroups: int,
                     ours_asm: str, iree_asm: str | None, core: str, isa: Isa) -> tuple[float, bool]:
    """(model cycles of `workgroups` workgroups whose loop headers run `headers` times in all,
    whether llc-19's code was costed instead of IREE's)."""
    innermost_ir: dict[str, Loop] = {}
    for loop in sorted((l for r in roots for l in r.walk()), key=lambda l: l.depth):
        for block in loop.blocks:
            innermost_ir[block] = loop
    ours = machine_blocks(ours_asm, function, isa)
    our_loops = layout_loops(ours, isa)
    loop_counts = []
    for first, last in our_loops:
        # The IR loop of a machine loop: the outermost of its named blocks' innermost IR loops
        # (a block codegen added has no IR block of its own: it takes its predecessor's
        # name, which may lie outside the loop). A loop behind a branch never taken runs 0 times.
        inside = [innermost_ir[b.ir_block] for b in ours[first:last + 1] if b.named and b.ir_block in innermost_ir]
        if not inside:  # e.g. a memcpy llc expanded into a loop: no trip count to take
            raise UncostableFunction(f"machine loop at {ours[first].label} is in no IR loop")
        loop_counts.append(headers.get(min(inside, key=lambda loop: loop.depth).header, 0.0))
    code, loops, on_llc = ours, our_loops, False
    if iree_asm is not None:
        theirs = machine_blocks(iree_asm, function, isa)
        their_loops = layout_loops(theirs, isa)
        if _depths(their_loops) == _depths(our_loops):
            code, loops = theirs, their_loops
        else:
            on_llc = True
    counts = []
    for i in range(len(code)):
        k = _innermost(loops, i)
        counts.append(float(workgroups) if k is None else loop_counts[k])
    return block_cycles(code, counts, core, isa), on_llc


def _first_error(stderr: str) -> str:
    lines = [l.strip() for l in stderr.splitlines() if l.strip()]
    return next((l for l in lines if "error" in l.lower()), lines[0] if lines else "(no message)")


def module_call_cycles(module: Path, analysis, target, core: str, work: Path) -> CallCycles:
    """Compiles `module` for `target` with `analysis`' tiles (as codegen does) and costs every
    dispatch of the result: model cycles of one call, all its workgroups (the count IREE
    materialized for the call site). Raises codegen's CompileError when IREE rejects a config."""
    from codegen import compile as cg

    tuned = cg.tuned_sources(module, analysis, target, work)
    cg.run_codegen(tuned, targets_ir=True, intermediates=True)
    return code_call_cycles(work / cg.TARGETS_IR, work / "inter", target, core, work / "cost")


def workgroup_grid(workgroup_count: tuple[int, int, int], looped_axes: set[int]) -> tuple[int, int, int]:
    """The workgroups to count along each axis: its count, or 1 along an axis the function
    loops over (one workgroup runs all its tiles: `one_workgroup_ir`)."""
    return tuple(1 if axis in looped_axes else n for axis, n in enumerate(workgroup_count))


def code_call_cycles(targets_ir: Path, intermediates: Path, target, core: str, work: Path) -> CallCycles:
    """`module_call_cycles` of a module already compiled: its executable-targets IR (the
    workgroup count of each call site) and the directory of IREE's `*.optimized.ll` and `.s`
    per executable (`codegen.compile --out-code` writes both)."""
    from codegen import compile as cg
    from runtime.hal_runner import check_dispatches as chk

    isa = isa_of(target.triple)
    if not Path(targets_ir).is_file():
        raise MissingCode(f"{targets_ir}: not found (codegen.compile --out-code writes it)")
    compiled = chk.CompiledTarget(target, Path(targets_ir).read_text(), [], [])
    total = CallCycles({}, set())
    lls = sorted(Path(intermediates).glob(f"*{cg.CODE_LLVM_IR}"))
    if not lls:
        raise MissingCode(f"{intermediates}: no {cg.CODE_LLVM_IR} of IREE's")
    counts = {name: d.workgroup_count for name, d in compiled.dispatches.items() if d.workgroup_count is not None}
    for ll in lls:
        asm = ll.with_name(ll.name.removesuffix(cg.CODE_LLVM_IR) + ".s")
        if not asm.exists():
            raise MissingCode(f"IREE wrote no assembly beside {ll.name}")
        costed = call_cycles(ll.read_text(), asm.read_text(), core, list(target.cpu_features), work,
                             isa=isa, cpu=target.cpu, workgroup_counts=counts)
        for name, cycles in costed.cycles.items():
            dispatch = compiled.dispatches.get(name)
            if name not in costed.all_workgroups:
                total.errors[name] = f"no workgroup count ({dispatch.error if dispatch else 'not dispatched'})"
                continue
            total.cycles[name] = cycles
            total.calls[name] = dispatch.calls
        total.llc_code |= costed.llc_code
        total.errors.update(costed.errors)
    return total
