"""LLVM IR as text: IREE's, rewritten into the syntax of LLVM 19 (`downgrade_ir`; IREE's LLVM
is newer), and the surgery on a dispatch's IR that counting its loops needs: its workgroup count
read as 1 (`one_workgroup_ir`), a copy with the workgroup id a constant (`workgroup_copy`), the
functions' definitions and the blocks a branch on a constant leaves reachable."""

from __future__ import annotations

import re
import struct

from perf.code_model.errors import CodeCostError


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


# ---- a dispatch's IR -------------------------------------------------------------------------
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
