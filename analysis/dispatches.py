"""Reads every dispatch of a module as codegen configures it and extracts its root op's loop nest.

Recipe (see /work/shared/notes/toolchain-facts.md): `iree-compile
--compile-to=executable-configurations` with the target's compile flags (exactly what
codegen/compile.py rewrites); parse with IREE's own bindings; pick each dispatch's root op
with the rule codegen uses (common/iree_root.py: the last op whose `lowering_config` has the
`distribution` level) and mark it; run `linalg-generalize-named-ops` nested in
hal.executable/variant/module/func; print each dispatch's func.func alone in generic form and
parse it with xDSL, which gives the marked root's loops, maps and element types.

Reading the configurations rather than the executable sources matters: by then IREE has
re-inserted unit batch dims into depthwise convs and poolings, decomposed softmax and turned
copies into memref generics, and codegen compares its root op's loops with the analysis'.
IREE's own tile sizes in that IR are ignored.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

from common import iree_root

# Attribute put on the root op before printing, to find it again in xDSL's parse.
_ROOT_MARK = "analysis.root"
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
    # The root works on memrefs (IREE bufferised it early: copies between bindings).
    on_buffers: bool = False

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
    # IREE's own choice for the root op: its lowering_config levels ({"distribution": [...],
    # ...}) and the codegen pipeline named by the dispatch's translation_info.
    default_levels: dict = dataclasses.field(default_factory=dict, compare=False)
    pipeline: str = ""

    @property
    def pipeline_name(self) -> str:
        """e.g. "DoubleTilingExpert" from `#iree_codegen.translation_info<pipeline = ...>`."""
        import re

        m = re.search(r"pipeline<(\w+)>", self.pipeline)
        return m.group(1) if m else (self.pipeline or "no pipeline")

    def signature(self) -> str:
        payload = json.dumps([self.kind, self.nest.loops, self.nest.operands, self.nest.body_ops,
                              self.nest.on_buffers],
                             sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()[:16]


def compile_to_executable_configurations(module_path: Path, flags: list[str], workdir: Path,
                                        target_path: Path | None = None) -> Path:
    """`iree-compile --compile-to=executable-configurations`: the IR codegen rewrites.

    A CPU feature LLVM does not know is an error naming `target_path` (iree-compile only
    warns and ignores it, so the build would silently be for another target)."""
    from common.iree_tools import IreeCompileError, executable_configurations

    out = workdir / "executable_configurations.mlir"
    try:
        result = executable_configurations(module_path, ["--mlir-print-debuginfo=false", *flags], out,
                                           "executable configurations")
    except IreeCompileError as err:
        # Flags iree-compile refuses (an unknown cpu or flag) are the target file's fault.
        raise AnalysisInputError(f"{target_path if err.of_flags and target_path else module_path}: "
                                 f"{err}") from None
    unknown = result.unknown_cpu_features()
    if unknown:
        raise AnalysisInputError(f"{target_path or 'target'}: cpu_features {', '.join(unknown)}: "
                                 "not a feature LLVM knows for this target")
    if result.unknown_cpus():
        raise AnalysisInputError(f"{target_path or 'target'}: cpu {result.unknown_cpus()[0]}: not a "
                                 "processor LLVM knows for this target")
    return out


def _xdsl_context():
    from xdsl.context import Context
    from xdsl.dialects import get_all_dialects

    ctx = Context(allow_unregistered=True)
    for name, factory in get_all_dialects().items():
        ctx.register_dialect(name, factory)
    return ctx


def read_dispatches(configurations: Path) -> list[DispatchInfo]:
    """Every hal.executable.export of an executable-configurations file with its root op's
    loop nest (the root as codegen picks it)."""
    from iree.compiler import ir, passmanager
    from xdsl.parser import Parser

    ctx = ir.Context()
    module = ir.Module.parse(configurations.read_text(), ctx)
    funcs = _dispatch_funcs(module)
    marked: dict[tuple[str, str], tuple[str, tuple[str, ...]]] = {}
    defaults: dict[tuple[str, str], tuple[dict, str]] = {}
    for key, func in funcs.items():
        ops = iree_root.config_ops(func)
        r = iree_root.root_index(ops)
        names = tuple(o.name for o in ops)
        if r is None:
            marked[key] = ("", names)
            continue
        pipeline = str(func.attributes["translation_info"]) \
            if "translation_info" in func.attributes else ""
        defaults[key] = (iree_root.lowering_config_levels(ops[r].attributes["lowering_config"]),
                         pipeline)
        with ctx:
            ops[r].attributes[_ROOT_MARK] = ir.UnitAttr.get()
        marked[key] = (ops[r].name, names)
    pm = passmanager.PassManager.parse(
        "builtin.module(hal.executable(hal.executable.variant(builtin.module("
        "func.func(linalg-generalize-named-ops)))))", ctx)
    pm.run(module.operation)
    generic = _dispatch_funcs(module)
    xctx = _xdsl_context()
    result = []
    for key in sorted(funcs):
        executable, export = key
        root_name, config_names = marked[key]
        if not root_name:
            result.append(DispatchInfo(export, executable, "", "unconfigured",
                                       LoopNest((), (), ()), config_names))
            continue
        text = generic[key].get_asm(print_generic_op_form=True)
        try:
            xmod = Parser(xctx, text).parse_module()
        except Exception as err:  # xDSL cannot read this dispatch: say which and why
            first = (str(err).strip().splitlines() or [type(err).__name__])[0]
            raise AnalysisInputError(f"{export}: xDSL cannot parse the dispatch: {first}") from None
        (xroot,) = [op for op in xmod.walk() if _ROOT_MARK in op.attributes]
        nest = _loop_nest(xroot)
        kind = classify(root_name, nest)
        levels, pipeline = defaults[key]
        result.append(DispatchInfo(export, executable, root_name, kind, nest, config_names,
                                   levels, pipeline))
    return result


def _dispatch_funcs(module) -> dict[tuple[str, str], object]:
    """(executable, export) -> the export's func.func (IREE binding operation)."""
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
                        out[(exe_name, fname)] = func.operation
    return out


def _op_name(op) -> str:
    """Name of an xDSL op, also for unregistered ones (which xDSL names builtin.unregistered)."""
    op_name = getattr(op, "op_name", None)
    return op_name.data if op_name is not None else op.name


def _elt_and_shape(t) -> tuple[str, tuple[int, ...]]:
    shape = tuple(int(s) for s in t.get_shape()) if hasattr(t, "get_shape") else ()
    elt = t.get_element_type() if hasattr(t, "get_element_type") else t
    return str(elt), shape


def _loop_nest(op) -> LoopNest:
    from xdsl.dialects.builtin import MemRefType
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
        on_buffers = any(isinstance(v.type, MemRefType) for v in (*op.inputs, *op.outputs))
        return LoopNest(loops, tuple(operands), body, terms, on_buffers)
    # A TilingInterface root that is not a linalg.generic after generalisation (linalg.softmax,
    # iree_linalg_ext ops): all-parallel domain of its input's rank, identity maps. Codegen
    # reads loops from indexing maps only, so analysis leaves such roots to IREE.
    ins = [v for v in op.operands]
    elt, shape = _elt_and_shape(ins[0].type)
    n = len(shape)
    ident = _identity(n)
    loops = tuple((f"d{i}", b, "parallel") for i, b in enumerate(shape))
    operands = (("input", ident, elt, shape), ("output", ident, elt, shape))
    return LoopNest(loops, operands, (_op_name(op),), _identity_terms(n, 2))


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
