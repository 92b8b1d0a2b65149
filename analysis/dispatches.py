"""Reads every dispatch of a module as codegen sees it and extracts its root op's loop nest.

Recipe (see /work/shared/notes/toolchain-facts.md): `iree-compile --compile-to=executable-sources`
with the target's compile flags; parse with IREE's own bindings; run `linalg-generalize-named-ops`
nested in hal.executable/variant/module/func; print each dispatch's func.func alone in generic
form and parse it with xDSL. The root op is chosen like IREE's CPU codegen (KernelDispatch.cpp,
`getRootOperation`): walking the compute ops backwards, the last linalg op that is not all-parallel
or the last other TilingInterface op (softmax, ...) except pad/pack/unpack; failing that, the last
linalg op (elementwise); a dispatch without a compute op is a copy.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

# Ops whose iteration domain IREE takes as a root (TilingInterface) without being linalg ops.
_TILING_NON_LINALG = ("linalg.softmax", "iree_linalg_ext.")
_NOT_ROOT = ("tensor.pad", "linalg.pack", "linalg.unpack", "tensor.pack", "tensor.unpack")
_CONTRACTION_NAMES = ("linalg.matmul", "linalg.batch_matmul", "linalg.matvec", "linalg.vecmat",
                      "linalg.batch_matvec", "linalg.contract", "linalg.matmul_transpose_b",
                      "linalg.batch_matmul_transpose_b")


class AnalysisInputError(ValueError):
    """Bad input (module, target): one line naming the culprit."""


@dataclasses.dataclass(frozen=True)
class LoopNest:
    loops: tuple[tuple[str, int, str], ...]  # (name, bound, "parallel"|"reduction")
    operands: tuple[tuple[str, str, str, tuple[int, ...]], ...]  # (role, map, elt type, shape)
    body_ops: tuple[str, ...]  # op names in the generic's body (arith.mulf, ...)
    # Per operand, per result expression: ((loop index, coefficient), ...) (+ constants dropped).
    terms: tuple[tuple[tuple[tuple[int, int], ...], ...], ...] = ()

    def operand_dims(self, i: int) -> set[int]:
        return {d for expr in self.terms[i] for d, _ in expr}

    def is_strided(self, i: int) -> bool:
        return any(len(expr) > 1 or any(c != 1 for _, c in expr) for expr in self.terms[i])


@dataclasses.dataclass(frozen=True)
class DispatchInfo:
    name: str
    executable: str
    root_op: str  # named op before generalisation, e.g. "linalg.matmul"
    kind: str
    nest: LoopNest
    compute_ops: tuple[str, ...]  # all compute ops of the dispatch (named), in order

    def signature(self) -> str:
        payload = json.dumps([self.kind, self.nest.loops, self.nest.operands, self.nest.body_ops],
                             sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()[:16]


def compile_to_executable_sources(module_path: Path, flags: list[str], workdir: Path) -> Path:
    out = workdir / "executable_sources.mlir"
    cmd = [_iree_compile(), str(module_path), "--compile-to=executable-sources",
           "--mlir-print-debuginfo=false", *flags, "-o", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["(no message)"])[0]
        raise AnalysisInputError(f"{module_path}: iree-compile failed: {last}")
    return out


def _iree_compile() -> str:
    from iree.compiler.tools import binaries

    return binaries.find_tool("iree-compile")


def _is_linalg(name: str) -> bool:
    return name.startswith("linalg.") and name not in _NOT_ROOT and name != "linalg.yield" \
        and name != "linalg.index" and name != "linalg.softmax"


def _is_compute(name: str) -> bool:
    return _is_linalg(name) or name.startswith(_TILING_NON_LINALG) or name in _NOT_ROOT


def pick_root(ops: list[tuple[str, bool]]) -> int | None:
    """Index of the root among top-level ops given as (name, all_parallel); None: no compute op."""
    for i in range(len(ops) - 1, -1, -1):
        name, all_parallel = ops[i]
        if _is_linalg(name):
            if not all_parallel:
                return i
        elif name.startswith(_TILING_NON_LINALG) and name not in _NOT_ROOT:
            return i
    for i in range(len(ops) - 1, -1, -1):
        if _is_linalg(ops[i][0]):
            return i
    for i in range(len(ops) - 1, -1, -1):
        if ops[i][0] in _NOT_ROOT:
            return i
    return None


def _xdsl_context():
    from xdsl.context import Context
    from xdsl.dialects import get_all_dialects

    ctx = Context(allow_unregistered=True)
    for name, factory in get_all_dialects().items():
        ctx.register_dialect(name, factory)
    return ctx


def read_dispatches(sources: Path) -> list[DispatchInfo]:
    """Every hal.executable.export of an executable-sources file with its root op's loop nest."""
    from iree.compiler import ir, passmanager
    from xdsl.parser import Parser

    ctx = ir.Context()
    text = sources.read_text()
    module = ir.Module.parse(text, ctx)
    named = _top_level_funcs(module)  # before generalisation
    pm = passmanager.PassManager.parse(
        "builtin.module(hal.executable(hal.executable.variant(builtin.module("
        "func.func(linalg-generalize-named-ops)))))", ctx)
    pm.run(module.operation)
    generic = _top_level_funcs(module)
    xctx = _xdsl_context()
    result = []
    for key in sorted(named):
        executable, export = key
        named_ops = named[key]
        func_op = generic[key]
        xmod = Parser(xctx, func_op.get_asm(print_generic_op_form=True)).parse_module()
        xfunc = next(op for op in xmod.walk() if op.name == "func.func")
        xops = list(xfunc.body.block.ops)
        if len(xops) != len(named_ops):
            raise AnalysisInputError(f"{export}: generalisation changed the op count")
        desc = [(_op_name(op), _all_parallel(op)) for op in xops]
        compute = tuple(n for n in named_ops if _is_compute(n))
        root = pick_root(desc)
        if root is None:
            nest, kind, root_name = _copy_nest(xops), "copy", "iree_tensor_ext.dispatch.tensor.store"
        else:
            root_name = named_ops[root]
            nest = _loop_nest(xops[root])
            kind = classify(root_name, nest)
        result.append(DispatchInfo(export, executable, root_name, kind, nest, compute))
    return result


def _top_level_funcs(module) -> dict[tuple[str, str], "_FuncView"]:
    """(executable, export) -> the export's func.func with its top-level op names."""
    out = {}
    for exe in module.body.operations:
        if exe.operation.name != "hal.executable":
            continue
        exe_name = exe.attributes["sym_name"].value
        for variant in exe.regions[0].blocks[0].operations:
            if variant.operation.name != "hal.executable.variant":
                continue
            exports = [op.attributes["sym_name"].value
                       for op in variant.regions[0].blocks[0].operations
                       if op.operation.name == "hal.executable.export"]
            for inner in variant.regions[0].blocks[0].operations:
                if inner.operation.name != "builtin.module":
                    continue
                for func in inner.regions[0].blocks[0].operations:
                    if func.operation.name != "func.func":
                        continue
                    fname = func.attributes["sym_name"].value
                    if fname in exports:
                        ops = [o.operation.name for o in func.regions[0].blocks[0].operations]
                        out[(exe_name, fname)] = _FuncView(func.operation, ops)
    return out


class _FuncView(list):
    def __init__(self, op, ops):
        super().__init__(ops)
        self.op = op

    def get_asm(self, **kw):
        return self.op.get_asm(**kw)


def _op_name(op) -> str:
    """Name of an xDSL op, also for unregistered ones (which xDSL names builtin.unregistered)."""
    op_name = getattr(op, "op_name", None)
    return op_name.data if op_name is not None else op.name


def _all_parallel(op) -> bool:
    its = getattr(op, "iterator_types", None)
    if its is None:
        return True
    return all(str(t.data.value if hasattr(t.data, "value") else t.data) == "parallel"
               for t in its.data)


def _elt_and_shape(t) -> tuple[str, tuple[int, ...]]:
    shape = tuple(int(s) for s in t.get_shape()) if hasattr(t, "get_shape") else ()
    elt = t.get_element_type() if hasattr(t, "get_element_type") else t
    return str(elt), shape


def _loop_nest(op) -> LoopNest:
    from xdsl.dialects.linalg.ops import GenericOp

    if isinstance(op, GenericOp):
        ranges = [int(r) for r in op.get_static_loop_ranges()]
        kinds = [str(t.data.value if hasattr(t.data, "value") else t.data)
                 for t in op.iterator_types.data]
        maps = [m.data for m in op.indexing_maps.data]
        operands = []
        for role, vals in (("input", op.inputs), ("output", op.outputs)):
            for v in vals:
                elt, shape = _elt_and_shape(v.type)
                operands.append((role, None, elt, shape))
        operands = [(r, _map_str(m), e, s) for (r, _, e, s), m in zip(operands, maps)]
        loops = tuple((f"d{i}", b, k) for i, (b, k) in enumerate(zip(ranges, kinds)))
        body = tuple(o.name for o in op.body.block.ops if o.name != "linalg.yield")
        terms = tuple(tuple(_terms(e) for e in m.results) for m in maps)
        return LoopNest(loops, tuple(operands), body, terms)
    # A TilingInterface op that is not generalised (linalg.softmax): all-parallel domain of its
    # input's rank, identity maps.
    ins = [v for v in op.operands]
    elt, shape = _elt_and_shape(ins[0].type)
    n = len(shape)
    ident = _identity(n)
    loops = tuple((f"d{i}", b, "parallel") for i, b in enumerate(shape))
    operands = (("input", ident, elt, shape), ("output", ident, elt, shape))
    return LoopNest(loops, operands, (_op_name(op),), _identity_terms(n, 2))


def _copy_nest(ops) -> LoopNest:
    store = next(o for o in ops if _op_name(o) == "iree_tensor_ext.dispatch.tensor.store")
    elt, shape = _elt_and_shape(store.operands[0].type)
    ident = _identity(len(shape))
    loops = tuple((f"d{i}", b, "parallel") for i, b in enumerate(shape))
    return LoopNest(loops, (("input", ident, elt, shape), ("output", ident, elt, shape)), (),
                    _identity_terms(len(shape), 2))


def _identity_terms(n: int, count: int):
    return tuple(tuple(((i, 1),) for i in range(n)) for _ in range(count))


def _terms(expr) -> tuple[tuple[int, int], ...]:
    """An affine result expression as sorted (dim, coefficient) terms; constants dropped."""
    from xdsl.ir.affine import AffineBinaryOpExpr, AffineBinaryOpKind, AffineConstantExpr, \
        AffineDimExpr

    acc: dict[int, int] = {}

    def walk(e, coef):
        if isinstance(e, AffineDimExpr):
            acc[e.position] = acc.get(e.position, 0) + coef
        elif isinstance(e, AffineConstantExpr):
            return
        elif isinstance(e, AffineBinaryOpExpr) and e.kind == AffineBinaryOpKind.Add:
            walk(e.lhs, coef)
            walk(e.rhs, coef)
        elif isinstance(e, AffineBinaryOpExpr) and e.kind == AffineBinaryOpKind.Mul:
            if isinstance(e.rhs, AffineConstantExpr):
                walk(e.lhs, coef * e.rhs.value)
            elif isinstance(e.lhs, AffineConstantExpr):
                walk(e.rhs, coef * e.lhs.value)
            else:
                raise AnalysisInputError(f"non-affine access {e}")
        else:
            raise AnalysisInputError(f"unsupported affine access {e} (mod/div)")

    walk(expr, 1)
    return tuple(sorted(acc.items()))


def _identity(n: int) -> str:
    dims = ", ".join(f"d{i}" for i in range(n))
    return f"({dims}) -> ({dims})"


def _map_str(m) -> str:
    return str(m)


def classify(root_name: str, nest: LoopNest) -> str:
    """Costing kind of a root op from its named op and its generic loop nest."""
    name = root_name
    kinds = [k for _, _, k in nest.loops]
    reds = {i for i, k in enumerate(kinds) if k == "reduction"}
    body = set(nest.body_ops)
    ins = [i for i, o in enumerate(nest.operands) if o[0] == "input"]
    outs = [i for i, o in enumerate(nest.operands) if o[0] == "output"]
    if name == "linalg.softmax":
        return "softmax"
    if name.startswith("linalg.batch_matmul"):
        return "batch_matmul"
    if name in _CONTRACTION_NAMES:
        return "matmul"
    if name.startswith("linalg.depthwise"):
        return "depthwise_conv"
    if name.startswith("linalg.conv"):
        return "conv"
    if name.startswith("linalg.pooling"):
        return "pooling"
    if reds and len(ins) == 2 and body & {"arith.mulf", "arith.muli"} and \
            body & {"arith.addf", "arith.addi"}:
        a, w, o = nest.operand_dims(ins[0]), nest.operand_dims(ins[1]), nest.operand_dims(outs[0])
        if not (nest.is_strided(ins[0]) or nest.is_strided(ins[1])):
            batch = a & w & o
            return "batch_matmul" if batch else "matmul"
        if w & a & o:
            return "depthwise_conv"  # the channel indexes input, weight and output
        return "conv"
    if reds:
        if len(ins) == 2 and nest.is_strided(ins[0]) and \
                body & {"arith.maximumf", "arith.maxnumf", "arith.addf", "arith.minimumf"}:
            return "pooling"
        return "reduction"
    if not body - {"arith.constant"}:
        if any(nest.is_strided(i) for i in ins):
            return "im2col"  # a windowed gather (im2col of a conv)
        if ins and any(nest.terms[i] != nest.terms[outs[0]] for i in ins):
            return "transpose" if all(len(nest.operands[i][3]) == len(nest.operands[outs[0]][3])
                                      for i in ins) else "broadcast"
        return "copy"
    return "elementwise"
