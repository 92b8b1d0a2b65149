"""Reads what running each dispatch needs from IREE's own IR of a compile (IREE's Python
bindings), for the layout a compile writes beside its vmfb (common/dispatch_layout.py,
`codegen.compile --out-layout`):

- `--compile-to=executable-targets`: the host program's `stream.cmd.dispatch` (workload, push
  constants, binding ranges) and each `hal.executable.export` (its materialized workgroup-count
  region, evaluated here);
- the executable configurations ("tuned.mlir"): each binding's `hal.interface.binding.subspan`
  (offset, access, tensor type);
- for a data-tiled build, the executable sources: each encoded operand's packed layout.

It imports nothing of codegen.compile: codegen.compile._read_compiled gathers a compile's files into
a CompiledTarget and `module_layout` reads it (issue 78: no module circle).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from common.dispatch_layout import DTYPES, Dispatch, DriveError, ModuleLayout, Subspan, packed_tiling
from common.targets import IreeTarget

def _walk(op, visit):
    visit(op)
    for region in op.regions:
        for block in region.blocks:
            for child in block.operations:
                _walk(child.operation, visit)


def _inside(op, ancestor: str) -> bool:
    parent = op.parent
    while parent is not None:
        if parent.name == ancestor:
            return True
        parent = parent.parent
    return False


def _int_attr(attr) -> int:
    from iree.compiler import ir

    return ir.IntegerAttr(attr).value


def _owner_op(value):
    """The op defining |value|, or None for a block argument."""
    from iree.compiler import ir

    if isinstance(value.owner, ir.Block):
        return None
    return value.owner


def _affine_eval(expr, dims: list[int], syms: list[int]) -> int:
    from iree.compiler import ir

    if ir.AffineConstantExpr.isinstance(expr):
        return ir.AffineConstantExpr(expr).value
    if ir.AffineDimExpr.isinstance(expr):
        return dims[ir.AffineDimExpr(expr).position]
    if ir.AffineSymbolExpr.isinstance(expr):
        return syms[ir.AffineSymbolExpr(expr).position]
    for cls, fn in (
        (ir.AffineAddExpr, lambda a, b: a + b),
        (ir.AffineMulExpr, lambda a, b: a * b),
        (ir.AffineModExpr, lambda a, b: a % b),
        (ir.AffineFloorDivExpr, lambda a, b: a // b),
        (ir.AffineCeilDivExpr, lambda a, b: -((-a) // b)),
    ):
        if cls.isinstance(expr):
            e = cls(expr)
            return fn(_affine_eval(e.lhs, dims, syms), _affine_eval(e.rhs, dims, syms))
    raise DriveError(f"cannot evaluate affine expression {expr}")


class Evaluator:
    """Evaluates integer SSA values built from constants and known leaves."""

    def __init__(self, leaves: dict | None = None, constants: list[int] | None = None):
        self.leaves = leaves or {}  # block argument -> int
        self.constants = constants  # push-constant values for constant.load

    def __call__(self, value) -> int:
        from iree.compiler import ir

        for known, result in self.leaves.items():
            if known == value:
                return result
        op = _owner_op(value)
        if op is None:
            raise DriveError("value depends on an unknown block argument")
        name = op.name
        if name == "util.assume.int":
            # `%a, %b = util.assume.int %x<...>, %y<...>`: result i is operand i (bufferized
            # tuned IR annotates push-constant offsets this way).
            return self(op.operands[ir.OpResult(value).result_number])
        args = [self(v) for v in op.operands] if name not in ("arith.constant",) else []
        if name == "arith.constant":
            return _int_attr(op.attributes["value"])
        if name == "hal.interface.constant.load":
            if self.constants is None:
                raise DriveError("push constant used where none are known")
            ordinal = _int_attr(op.attributes["ordinal"])
            if ordinal >= len(self.constants):
                raise DriveError(f"push constant {ordinal} not provided")
            return self.constants[ordinal]
        simple = {
            "arith.addi": lambda a, b: a + b,
            "arith.subi": lambda a, b: a - b,
            "arith.muli": lambda a, b: a * b,
            "arith.divui": lambda a, b: a // b,
            "arith.divsi": lambda a, b: int(a / b),
            "arith.floordivsi": lambda a, b: a // b,
            "arith.ceildivui": lambda a, b: -((-a) // b),
            "arith.ceildivsi": lambda a, b: -((-a) // b),
            "arith.remui": lambda a, b: a % b,
            "arith.shli": lambda a, b: a << b,
            "arith.shrui": lambda a, b: a >> b,
            "arith.ori": lambda a, b: a | b,
            "arith.andi": lambda a, b: a & b,
            "arith.maxui": max,
            "arith.maxsi": max,
            "arith.minui": min,
            "arith.minsi": min,
        }
        if name in simple:
            return simple[name](*args)
        if name in ("arith.index_cast", "arith.index_castui", "arith.extui", "arith.extsi", "arith.trunci"):
            return args[0]
        if name in ("affine.apply", "affine.min", "affine.max"):
            amap = ir.AffineMapAttr(op.attributes["map"]).value
            dims, syms = args[: amap.n_dims], args[amap.n_dims :]
            results = [_affine_eval(e, dims, syms) for e in amap.results]
            return {"affine.apply": results[0], "affine.min": min(results), "affine.max": max(results)}[name]
        raise DriveError(f"cannot evaluate '{name}'")


def _subspan_type(op, context) -> tuple[str, tuple[int, ...], np.dtype]:
    """(access, shape, dtype) of a binding subspan: a dispatch tensor (executable sources)
    or, once bufferized (IREE 3.13's executable-configurations, i.e. tuned.mlir), a
    contiguous memref whose access comes from the subspan's flags."""
    from iree.compiler import ir

    type_text = str(op.results[0].type)
    if not type_text.startswith("memref<"):
        return _tensor_of_dispatch_type(type_text, context)
    mtype = ir.MemRefType(op.results[0].type)
    if not mtype.has_static_shape:
        raise DriveError(f"binding type {type_text} has a dynamic shape")
    shape = tuple(mtype.shape)
    strides, _offset = mtype.get_strides_and_offset()
    expected, step = [], 1
    for extent in reversed(shape):
        expected.insert(0, step)
        step *= extent
    if any(st != ex for st, ex, n in zip(strides, expected, shape) if n != 1):
        raise DriveError(f"binding type {type_text} is not contiguous")
    elem = str(mtype.element_type)
    if elem not in DTYPES:
        raise DriveError(f"element type {elem} not supported")
    # `flags("ReadOnly|Indirect")` is stored as descriptor_flags, a bit set (ReadOnly = 1).
    flags = _int_attr(op.attributes["descriptor_flags"]) if "descriptor_flags" in op.attributes else 0
    return ("readonly" if flags & 1 else "readwrite"), shape, np.dtype(DTYPES[elem])


def _tensor_of_dispatch_type(type_text: str, context) -> tuple[str, tuple[int, ...], np.dtype]:
    """`!iree_tensor_ext.dispatch.tensor<readonly:tensor<8x27xf32>>` -> parts."""
    from iree.compiler import ir

    inner = type_text.split("<", 1)[1].rsplit(">", 1)[0]
    access, tensor_text = inner.split(":", 1)
    ttype = ir.RankedTensorType(ir.Type.parse(tensor_text, context=context))
    if not ttype.has_static_shape:
        raise DriveError(f"binding type {tensor_text} has a dynamic shape")
    shape = tuple(ttype.shape)
    if ttype.encoding is not None:
        shape = _encoded_storage_shape(ttype, tensor_text, context)
    elem = str(ttype.element_type)
    if elem not in DTYPES:
        raise DriveError(f"element type {elem} not supported")
    return access, shape, np.dtype(DTYPES[elem])


def _encoded_storage_shape(ttype, tensor_text: str, context) -> tuple[int, ...]:
    """Storage of a data-tiled tensor (`#iree_encoding.layout` resolved for the CPU): each
    dim in `innerDimsPos` padded to a multiple of its `innerTileSizes` entry, as one flat
    extent (the dispatch reads it as packed tiles)."""
    dims, tiles, perm = _encoding_layout(ttype, tensor_text, context)
    _, split, _ = packed_tiling(tuple(ttype.shape), dims, tiles, perm)
    total = 1
    for extent in split:
        total *= extent
    return (total,)


def _encoding_layout(ttype, what: str, context) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """(innerDimsPos, innerTileSizes, outerDimsPerm) of a tensor type's CPU-resolved
    `#iree_encoding.layout`. The layout's dictionary is parsed with MLIR's own attribute parser:
    IREE's Python bindings have no accessor for it. Raises DriveError for a layout tensor.pack
    cannot describe (a swizzle, a scalable or dynamic tile)."""
    from iree.compiler import ir

    text = str(ttype.encoding)
    start = text.find("encoding_info = {")
    if start < 0 or "swizzle" in text:
        raise DriveError(f"{what} has an encoding this runner cannot lay out")
    depth, end = 0, None
    for i in range(start + len("encoding_info = "), len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            end = i + 1
            break
    info = ir.DictAttr(ir.Attribute.parse(text[start + len("encoding_info = "):end], context=context))
    dims, tiles = ([ir.IntegerAttr(a).value for a in ir.ArrayAttr(info[k])] for k in ("innerDimsPos", "innerTileSizes"))
    perm = ([ir.IntegerAttr(a).value for a in ir.ArrayAttr(info["outerDimsPerm"])] if "outerDimsPerm" in info
            else list(range(ttype.rank)))
    if any(t <= 0 for t in tiles):
        raise DriveError(f"{what} has a scalable or dynamic inner tile")
    return tuple(dims), tuple(tiles), tuple(perm)


class CompiledTarget:
    def __init__(self, target: IreeTarget, host_ir: str, libraries: list[Path], sources: list[Path],
                 libraries_sha256: dict[str, str] | None = None):
        from iree.compiler import ir

        self.target = target
        self.libraries = libraries
        self.libraries_sha256 = libraries_sha256 or {}  # library file name -> sha256
        self.context = ir.Context()
        self.context.allow_unregistered_dialects = True
        self.dispatches: dict[str, Dispatch] = {}
        module = ir.Module.parse(host_ir, self.context)
        exports: dict[str, object] = {}
        sites: dict[str, object] = {}

        def visit(op):
            if op.name == "hal.executable.export":
                exports[ir.StringAttr(op.attributes["sym_name"]).value] = op
            elif op.name == "stream.cmd.dispatch":
                where = "initializer_calls" if _inside(op, "util.initializer") else "calls"
                for ref in ir.ArrayAttr(op.attributes["entry_points"]):
                    name = str(ref).rsplit("::@", 1)[-1]
                    sites.setdefault(name, op)
                    per_export = counts.setdefault(name, {"calls": 0, "initializer_calls": 0})
                    per_export[where] += 1

        counts: dict[str, dict[str, int]] = {}
        _walk(module.operation, visit)
        for name, export in exports.items():
            d = self.dispatches[name] = Dispatch(name, **counts.get(name, {}))
            try:
                site = sites.get(name)
                if site is None:
                    raise DriveError("no stream.cmd.dispatch calls this export")
                self._read_site(d, export, site)
            except DriveError as err:
                d.error = str(err)
        for path in sources:
            self._read_sources(path)

    def _read_site(self, d: Dispatch, export, site) -> None:
        seg = [int(x) for x in str(site.attributes["operandSegmentSizes"]).split(":")[1].rstrip(">").split(",")]
        ops = list(site.operands)
        groups, pos = [], 0
        for n in seg:
            groups.append(ops[pos : pos + n])
            pos += n
        workload, uniforms, _res, _sizes, _offsets, lengths = groups
        ev = Evaluator()
        workload_values = [ev(v) for v in workload]
        for v in uniforms:
            if str(v.type) != "i32":
                raise DriveError(f"push constant of type {v.type} (expected packed i32)")
        d.constants = [ev(v) & 0xFFFFFFFF for v in uniforms]
        d.binding_lengths = [ev(v) for v in lengths]
        block = export.regions[0].blocks[0]
        args = list(block.arguments)
        leaves = {}
        # count(%device, %workload...): the device argument is never evaluated.
        for arg, value in zip(args[1:], workload_values):
            leaves[arg] = value
        ret = list(block.operations)[-1]
        if ret.name != "hal.return":
            raise DriveError("workgroup count region does not end in hal.return")
        count_ev = Evaluator(leaves)
        count = tuple(count_ev(v) for v in ret.operands)
        if len(count) != 3:
            raise DriveError(f"workgroup count has {len(count)} values")
        d.workgroup_count = count

    def _functions(self, path: Path) -> tuple[object, dict[str, object]]:
        """(the parsed module, each of its func.func by symbol name: one per dispatch). The
        caller keeps the module while it reads the functions: they are views into it."""
        from iree.compiler import ir

        module = ir.Module.parse(path.read_text(), self.context)
        funcs: dict[str, object] = {}

        def visit(op):
            if op.name == "func.func":
                funcs[ir.StringAttr(op.attributes["sym_name"]).value] = op

        _walk(module.operation, visit)
        return module, funcs

    def _read_sources(self, path: Path) -> None:
        module, funcs = self._functions(path)  # noqa: F841 (keeps the functions' module alive)
        for name, func in funcs.items():
            d = self.dispatches.get(name)
            if d is None or d.error:
                continue
            try:
                ev = Evaluator(constants=d.constants)
                found: list[Subspan] = []

                def collect(op):
                    if op.name == "hal.interface.binding.subspan":
                        binding = _int_attr(op.attributes["binding"])
                        # Operands: [offset, dynamic dims...]; none when offset is absent.
                        operands = list(op.operands)
                        offset = ev(operands[0]) if operands else 0
                        access, shape, dtype = _subspan_type(op, self.context)
                        found.append(Subspan(binding, offset, access, shape, dtype))

                _walk(func, collect)
                d.subspans = found
                if not found:
                    raise DriveError("no binding subspans found in the dispatch source")
            except DriveError as err:
                d.error = str(err)


    def read_encodings(self, path: Path) -> None:
        """Attaches each encoded operand's layout from the executable sources at |path| (the
        dispatch-tensor types, before bufferization) to the subspans read from the configurations;
        subspans pair up in order and must agree in binding and bytes, else the dispatch is not
        drivable (its error says why)."""
        module, funcs = self._functions(path)  # noqa: F841 (keeps the functions' module alive)
        for name, d in self.dispatches.items():
            if d.error:
                continue
            types = []
            if name in funcs:
                _walk(funcs[name], lambda op: types.append(op) if op.name == "hal.interface.binding.subspan" else None)
            try:
                if len(types) != len(d.subspans):
                    raise DriveError(f"{len(types)} binding subspans in the executable sources, "
                                     f"{len(d.subspans)} in the configurations")
                for s, op in zip(d.subspans, types):
                    _attach_encoding(s, op, self.context)
            except DriveError as err:
                d.error = str(err)


def _attach_encoding(s: Subspan, op, context) -> None:
    """Sets |s|'s layout from |op|, the same subspan in the executable sources."""
    from iree.compiler import ir

    if _int_attr(op.attributes["binding"]) != s.binding:
        raise DriveError(f"binding {s.binding}: the executable sources' subspan is another binding")
    inner = str(op.results[0].type).split("<", 1)[1].rsplit(">", 1)[0].split(":", 1)[1]
    ttype = ir.RankedTensorType(ir.Type.parse(inner, context=context))
    if ttype.encoding is None:
        return
    s.encoding, s.logical_shape = _encoding_layout(ttype, f"binding {s.binding}", context), tuple(ttype.shape)
    _, split, _ = packed_tiling(s.logical_shape, *s.encoding)
    if int(np.prod(split)) * s.dtype.itemsize != s.nbytes:
        raise DriveError(f"binding {s.binding}: layout {s.encoding} of {list(s.logical_shape)} is not the "
                         f"{s.nbytes} bytes bound")


def module_layout(compiled: CompiledTarget, infos: dict) -> ModuleLayout:
    """The layout file's content: `compiled`'s dispatches with their root op's kind and
    multiply-accumulates from `infos` (analysis.dispatches.DispatchInfo by dispatch name, as the
    analysis reads IREE's configurations of the module)."""
    from analysis.cost_model import element_bytes
    from common.op_kinds import MAC_KINDS

    for name, d in compiled.dispatches.items():
        info = infos.get(name)
        if info is None:
            continue
        d.kind = info.kind
        d.macs = math.prod(bound for _, bound, _ in info.nest.loops) if info.kind in MAC_KINDS else 0
        inputs = [o for o in info.nest.operands if o[0] == "input"]
        d.mac_element_bits = 8 * element_bytes(inputs[0][2]) if inputs else 32
    return ModuleLayout(compiled.target.name, dict(compiled.libraries_sha256), dict(compiled.dispatches))
