"""Checks every dispatch of a model on riscv64 (under qemu) against the host.

    python -m runtime.hal_runner.check_dispatches MODULE.mlirbc \
        [--target riscv64_rvv] [--reference host] [--vlen N] \
        [--analysis RISCV_ANALYSIS.json] [--reference-analysis HOST_ANALYSIS.json]

MODULE is MLIR (bytecode or text) IREE accepts, e.g. a model import's
`.mlirbc`. Both targets are compiled through codegen's one compile path with
their common/targets flags alone: the executables run are IREE's embedded ELF,
the bytes the vmfb ships (`--iree-hal-dump-executable-binaries-to` writes them
out from the same invocation; the hal_runner dlopens them). Everything a
dispatch needs is read from the compiled IR with IREE's Python bindings:

- `--compile-to=executable-targets`: the host program's `stream.cmd.dispatch`
  (workload, push constants, binding ranges) and each `hal.executable.export`
  (its materialized workgroup-count region, evaluated here);
- the executable configurations ("tuned.mlir"): each binding's
  `hal.interface.binding.subspan` (offset, access, tensor type).

With `--analysis`, the target is compiled exactly as the codegen stage does
(`codegen.compile.tuned_sources` + `run_codegen`, i.e. `codegen.compile
--out-binaries`): IREE's configurations with the analysis' tiles written in
("tuned.mlir"), then `--compile-from=executable-sources`.
Every applied lowering_config is proven to have landed (`check_landed` on the
dumped configurations), and the host program, workgroup counts and binding
subspans are all read from that same tuned IR, so the tiles' workgroup counts
are the ones run. `--reference-analysis` does the same for the reference;
without it the reference is IREE's untuned defaults (an independent check).

Each export is then run with the same fixed-seed inputs by `hal_runner`
natively (reference) and by the riscv64 `hal_runner` under
`qemu-riscv64 -cpu rv64,v=true,vlen=VLEN` (qemu 10 from bookworm-backports,
`@qemu_user_backport`: Debian's 7.2 aborts on some RVV code), and every written binding
region is compared. A dispatch that cannot be driven is a failure with its
reason. Prints one line per dispatch and `N checked, N passed`; exit status 1
when any dispatch failed.

With `--activations GOLDEN.npz` the inputs are real: the tensors each dispatch gets when the
reference build runs the model on the golden inputs (runtime/hal_runner/activations.py, IREE's
`--iree-flow-trace-dispatch-tensors`), placed in each side's own bindings (data-tiled operands
packed in that side's layout, `pack`), and the outputs are compared with the host run's: the
host runner's bit for bit (the placement is right), the riscv runner's within F32_TOLERANCE of
each output's largest magnitude (integers exactly). Every dispatch of a data-tiled or
microkernel build is then compared, not only run.
"""

from __future__ import annotations

import argparse
import os
import json
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from common import processes
from common.errors import first_line, last_line
from common.targets import IreeTarget, TargetError, load_target, named_target
from common.scratch import scratch_directory

if TYPE_CHECKING:
    from runtime.hal_runner.activations import Capture

HERE = Path(__file__).parent
SEED = 20261123
# Float outputs: max abs error / max |host output| <= 1e-5, about 80 ulps of the largest value.
# Host (x86-64-v3, FMA) and riscv (RVV, vfmacc) accumulate each output in the same order in IREE's
# codegen (tiling K keeps the sequential order), so most dispatches agree bit for bit even with
# tuned tiles (the 15 shipped zoo builds on their real activations, 2026-11-28: 0 in every
# dispatch; IREE's default riscv build of se_net: 1.4e-7); what may differ is a lane-order reduction (4 lanes at VLEN 128 vs 8 on AVX2, ~log2(n)
# ulps) and an FMA contraction in an expanded transcendental (a few ulps). A wrong executable is
# off by orders of magnitude more (the perturbed fixture: 1.8e-2).
F32_TOLERANCE = 1e-5
DATA_TILING_FLAG = "--iree-opt-data-tiling"
F32_FLOOR = 1e-30  # scale of an all-zero output: any error there fails


class DriveError(Exception):
    """A dispatch cannot be driven; the message is the reason."""


# --------------------------------------------------------------------------
# Compiling
# --------------------------------------------------------------------------


def compile_build(module: Path, target: IreeTarget, analysis: Path | None, workdir: Path):
    """Compiles |module| for |target| as codegen.compile does, through its one compile path
    (IREE's defaults when |analysis| is None, else its tiles written in), and returns
    (CompiledTarget, codegen.compile.TunedSources). The libraries are the executables the vmfb
    embeds (IREE's embedded ELF, which the hal_runner dlopens), from the same invocation, and
    their sha256 are what codegen's report records for the same build.

    Raises SystemExit with a one-line message when codegen rejects the analysis or a config
    does not land.
    """
    from iree.compiler import ir

    from codegen import compile as cg

    wd = workdir / f"{target.name}_{'tuned' if analysis is not None else 'default'}"
    try:
        tuned = cg.tuned_sources(module, analysis, target, wd)
        # Two halves of codegen's step 3 whose first holds the host program with the
        # materialized workgroup counts; the libraries are the bytes one call emits.
        dump = cg.run_codegen(tuned, targets_ir=True)
        ctx = ir.Context()  # one context, as compile_module: configs.mlir == its --out-configs
        cg.check_landed(tuned.entries, dump, ctx)
        shipped = cg.executables(wd)
    except cg.CompileError as err:
        raise SystemExit(f"check_dispatches: {target.name}: {err}") from None
    (wd / "configs.mlir").write_text(cg.dumped_configs_text(dump, ctx))
    # tuned.mlir holds each dispatch's func.func with its binding subspans.
    compiled = CompiledTarget(target, (wd / cg.TARGETS_IR).read_text(), [wd / "bin" / n for n in shipped],
                              [tuned.path], cg.executables_sha256(shipped))
    if DATA_TILING_FLAG in tuned.flags:
        # tuned.mlir is bufferized: its subspans hold the packed storage, not the layout. The
        # executable sources (same module, same flags) still carry each operand's encoding.
        try:
            cg.run_iree([str(target.compile_input(module)), *tuned.flags, "--compile-to=executable-sources", "-o",
                         str(wd / "sources.mlir")], "executable sources")
        except cg.CompileError as err:
            raise SystemExit(f"check_dispatches: {target.name}: {err}") from None
        compiled.read_encodings(wd / "sources.mlir")
    return compiled, tuned


def compile_target(module: Path, target: IreeTarget, workdir: Path) -> "CompiledTarget":
    """IREE's default build of |module| (compile_build without an analysis)."""
    return compile_build(module, target, None, workdir)[0]


def compile_tuned(module: Path, target: IreeTarget, analysis: Path, workdir: Path):
    """The build with |analysis|' tiles: (CompiledTarget, TunedSources) (compile_build)."""
    return compile_build(module, target, analysis, workdir)


# --------------------------------------------------------------------------
# Reading the IR
# --------------------------------------------------------------------------


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


@dataclass
class Subspan:
    binding: int
    offset: int
    access: str  # readonly | writeonly | readwrite
    shape: tuple[int, ...]
    dtype: np.dtype
    # A data-tiled operand: (innerDimsPos, innerTileSizes, outerDimsPerm) of its layout and the
    # logical tensor's shape (CompiledTarget.read_encodings); None for a plain row-major one.
    encoding: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]] | None = None
    logical_shape: tuple[int, ...] | None = None

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    def store(self, logical: np.ndarray) -> np.ndarray:
        """|logical| as this binding holds it (packed when encoded), flat."""
        if self.encoding is None:
            return np.ascontiguousarray(logical).reshape(-1)
        if tuple(logical.shape) != self.logical_shape:
            raise DriveError(f"binding {self.binding}: tensor of shape {list(logical.shape)} for an encoded "
                             f"operand of shape {list(self.logical_shape)}")
        return np.ascontiguousarray(pack(logical, *self.encoding)).reshape(-1)

    def load(self, stored: np.ndarray) -> np.ndarray:
        """The logical tensor of this binding's flat contents (unpacked when encoded)."""
        if self.encoding is None:
            return stored
        return unpack(stored, self.logical_shape, *self.encoding)


def _tiling(shape: tuple[int, ...], dims, tiles, perm) -> tuple[list[int], list[int], list[int]]:
    """(padded shape, shape with each tiled dim split into (outer, tile), axes order of the packed
    tensor) of tensor.pack's layout: outer dims in `perm` order, then the tiles in `dims` order."""
    padded = list(shape)
    for d, t in zip(dims, tiles):
        padded[d] = -(-padded[d] // t) * t
    split, outer, inner = [], {}, {}
    for i, n in enumerate(padded):
        outer[i] = len(split)
        if i in dims:
            t = tiles[list(dims).index(i)]
            split += [n // t, t]
            inner[i] = outer[i] + 1
        else:
            split.append(n)
    return padded, split, [outer[i] for i in perm] + [inner[d] for d in dims]


def pack(logical: np.ndarray, dims, tiles, perm) -> np.ndarray:
    """tensor.pack (IREE's data-tiling layout): pads each dim in `dims` with zeros to a multiple of
    its tile, splits it into (outer, tile), orders the outer dims by `perm` and puts the tiles last."""
    padded, split, order = _tiling(logical.shape, dims, tiles, perm)
    buf = np.zeros(padded, dtype=logical.dtype)
    buf[tuple(slice(0, n) for n in logical.shape)] = logical
    return buf.reshape(split).transpose(order)


def unpack(stored: np.ndarray, shape: tuple[int, ...], dims, tiles, perm) -> np.ndarray:
    """tensor.unpack: the inverse of `pack` (padding dropped) from the packed tensor's flat data."""
    padded, split, order = _tiling(shape, dims, tiles, perm)
    packed = stored.reshape([split[a] for a in order])
    return packed.transpose(np.argsort(order)).reshape(padded)[tuple(slice(0, n) for n in shape)]


@dataclass
class Dispatch:
    export: str
    workgroup_count: tuple[int, int, int] | None = None
    constants: list[int] = field(default_factory=list)
    binding_lengths: list[int] = field(default_factory=list)
    subspans: list[Subspan] = field(default_factory=list)
    error: str | None = None
    calls: int = 0  # dispatch sites in the program's functions: what one invocation runs
    initializer_calls: int = 0  # sites in util.initializer (once at load, e.g. packing weights)


_DTYPES = {
    "f32": np.float32, "f16": np.float16, "f64": np.float64,
    "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "i1": np.int8,
}


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
    if elem not in _DTYPES:
        raise DriveError(f"element type {elem} not supported")
    # `flags("ReadOnly|Indirect")` is stored as descriptor_flags, a bit set (ReadOnly = 1).
    flags = _int_attr(op.attributes["descriptor_flags"]) if "descriptor_flags" in op.attributes else 0
    return ("readonly" if flags & 1 else "readwrite"), shape, np.dtype(_DTYPES[elem])


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
    if elem not in _DTYPES:
        raise DriveError(f"element type {elem} not supported")
    return access, shape, np.dtype(_DTYPES[elem])


def _encoded_storage_shape(ttype, tensor_text: str, context) -> tuple[int, ...]:
    """Storage of a data-tiled tensor (`#iree_encoding.layout` resolved for the CPU): each
    dim in `innerDimsPos` padded to a multiple of its `innerTileSizes` entry, as one flat
    extent (the dispatch reads it as packed tiles)."""
    dims, tiles, perm = _encoding_layout(ttype, tensor_text, context)
    _, split, _ = _tiling(tuple(ttype.shape), dims, tiles, perm)
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

    def _read_sources(self, path: Path) -> None:
        from iree.compiler import ir

        module = ir.Module.parse(path.read_text(), self.context)
        funcs: dict[str, object] = {}

        def visit(op):
            if op.name == "func.func":
                funcs[ir.StringAttr(op.attributes["sym_name"]).value] = op

        _walk(module.operation, visit)
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
        from iree.compiler import ir

        module = ir.Module.parse(path.read_text(), self.context)
        funcs: dict[str, object] = {}

        def visit(op):
            if op.name == "func.func":
                funcs[ir.StringAttr(op.attributes["sym_name"]).value] = op

        _walk(module.operation, visit)
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
    _, split, _ = _tiling(s.logical_shape, *s.encoding)
    if int(np.prod(split)) * s.dtype.itemsize != s.nbytes:
        raise DriveError(f"binding {s.binding}: layout {s.encoding} of {list(s.logical_shape)} is not the "
                         f"{s.nbytes} bytes bound")


# --------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------


WORKSPACE = "riscv_ml_toolchain"
QEMU_REPOSITORY = "qemu_user_backport"  # WORKSPACE: debian_package(name = ...)


def _runfile(repo: str, rel: Path) -> Path:
    """`rel` of Bazel repository `repo`: in this file's runfiles tree (a py_binary's or a
    dependent py_test's), under RUNFILES_DIR or the cwd of a py_test, or in the workspace's
    build outputs (a source-tree run). The first candidate when none exists."""
    runfiles_root = HERE.parent.parent.parent
    candidates = [runfiles_root / repo / rel]
    if os.environ.get("RUNFILES_DIR"):
        candidates.append(Path(os.environ["RUNFILES_DIR"]) / repo / rel)
    candidates += [Path.cwd().parent / repo / rel, Path.cwd() / repo / rel]
    bazel_bin = HERE.parent.parent / "bazel-bin"
    if repo == WORKSPACE:
        candidates += [Path.cwd() / rel, bazel_bin / rel]
    elif bazel_bin.exists():
        # bazel-bin is <output_base>/execroot/<workspace>/bazel-out/<config>/bin.
        candidates.append(bazel_bin.resolve().parents[4] / "external" / repo / rel)
    for c in candidates:
        if c.is_file():
            return c
    return candidates[0]


def find_runner(name: str) -> Path:
    """`hal_runner` / `hal_runner_riscv64`, built by //runtime/hal_runner."""
    return _runfile(WORKSPACE, Path("runtime") / "hal_runner" / name)


def find_qemu() -> Path:
    """qemu-riscv64 from bookworm-backports (@qemu_user_backport, a runfile of this library)."""
    return _runfile(QEMU_REPOSITORY, Path("qemu-riscv64"))


RISCV_TOOLCHAIN_REPOSITORY = "riscv64_gcc"  # WORKSPACE: the pinned cross toolchain and guest glibc
_GUEST_LOADER = Path("root/usr/riscv64-linux-gnu/lib/ld-linux-riscv64-lp64d.so.1")


def find_riscv_sysroot() -> Path:
    """The guest sysroot for `qemu-riscv64 -L`: Debian's pinned riscv64 glibc and libgcc_s
    (//tools/riscv:sysroot, a runfile of this library), never the machine's. SystemExit when
    absent (a source-tree run without Bazel's outputs)."""
    loader = _runfile(RISCV_TOOLCHAIN_REPOSITORY, _GUEST_LOADER)
    if not loader.is_file():
        raise SystemExit(f"check_dispatches: riscv64 sysroot not found ({loader}): Bazel fetches "
                         f"@{RISCV_TOOLCHAIN_REPOSITORY}; run through `tools/bazel run|test`")
    return loader.parent.parent


def _library_exports(runner: list[str], library: Path) -> dict[str, int]:
    out = processes.run(runner + [str(library), "--info"], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"check_dispatches: {library.name}: runner {runner[-1]} failed (exit "
                         f"{out.returncode}): {last_line(out.stderr)}")
    exports = {}
    header = None
    for line in out.stdout.splitlines():
        if line.startswith("library ") and header is None:
            header = line.split()
        if line.startswith("export "):
            parts = line.split()
            exports[parts[2].split("=", 1)[1]] = int(parts[1])
    # A qemu (or runner) that exits 0 without running the program printed nothing: every export
    # was then reported missing, blaming the module (issue 62). hal_runner --info always prints
    # "library PATH version V exports N ..." first.
    if header is None or "exports" not in header[:-1]:
        said = repr(first_line(out.stdout)) if out.stdout.strip() else "nothing"
        what = (f"{Path(runner[0]).name}: exited 0 but did not run the runner {Path(runner[-1]).name}"
                if len(runner) > 1 else f"{Path(runner[0]).name}: exited 0 but did not run")
        raise SystemExit(f"check_dispatches: {what} ({library.name} --info printed {said}, "
                         "not its 'library' line)")
    declared = header[header.index("exports") + 1]
    if declared != str(len(exports)):
        raise SystemExit(f"check_dispatches: {library.name}: runner {Path(runner[-1]).name} listed "
                         f"{len(exports)} of the {declared} exports it declared")
    return exports


def _fill(d: Dispatch, rng: np.random.Generator, directory: Path) -> list[Path]:
    paths = []
    for b, length in enumerate(d.binding_lengths):
        spans = [s for s in d.subspans if s.binding == b]
        buf = np.zeros(length, dtype=np.uint8)
        # Fixed-seed random bytes, then each subspan region with values of its type.
        buf[:] = rng.integers(0, 256, size=length, dtype=np.uint8)
        for s in spans:
            if s.offset + s.nbytes > length:
                raise DriveError(
                    f"binding {b}: subspan at {s.offset} of {s.nbytes} bytes exceeds the {length}-byte range"
                )
            count = s.nbytes // s.dtype.itemsize
            if s.dtype.kind == "f":
                values = rng.uniform(-1.0, 1.0, size=count).astype(s.dtype)
            elif s.dtype == np.int64:
                # i64 tensors are indices (an embedding's tokens, a gather's positions): a negative
                # one reads outside its table, so they are drawn in range of any dimension >= 8.
                values = rng.integers(0, 8, size=count).astype(s.dtype)
            else:
                values = rng.integers(-8, 8, size=count).astype(s.dtype)
            buf[s.offset : s.offset + s.nbytes] = values.view(np.uint8)
        path = directory / f"binding{b}.bin"
        buf.tofile(path)
        paths.append(path)
    return paths


def _place(d: Dispatch, call, directory: Path) -> tuple[list[Path], list[tuple[Subspan, np.ndarray]]]:
    """Binding files holding |call|'s captured inputs (activations.Call) at |d|'s subspans, and the
    written subspans paired with the outputs the host run produced there. A dispatch's subspans
    follow its flow operand order (IREE outlines operands, then results; a result tied to an operand
    reuses that operand's read-write binding), so the first len(inputs) subspans are the inputs and
    the written ones the results. An encoded (data-tiled) operand is packed in its own layout:
    captured tensors are logical. Bytes outside the subspans are zero. Raises DriveError when the
    captured tensors do not fit (count, element type or size)."""
    spans, n_in = d.subspans, len(call.inputs)
    written = [s for s in spans if s.access != "readonly"]
    if n_in > len(spans) or len(call.outputs) != len(written) or any(
            s.access == "readonly" for s in spans[n_in:]):
        raise DriveError(f"{n_in} captured inputs and {len(call.outputs)} outputs do not fit its "
                         f"{len(spans) - len(written)} read-only and {len(written)} written bindings")
    bufs = [np.zeros(length, dtype=np.uint8) for length in d.binding_lengths]
    for what, s, a in [(f"input {i}", s, a) for i, (s, a) in enumerate(zip(spans, call.inputs))] + [
            (f"output {i}", s, a) for i, (s, a) in enumerate(zip(written, call.outputs))]:
        if a.dtype != s.dtype or (a.shape != s.logical_shape if s.encoding else a.nbytes != s.nbytes):
            raise DriveError(f"captured {what} {a.dtype}{list(a.shape)} does not fit binding {s.binding}'s "
                             f"{s.dtype}{list(s.shape)}")
        if s.offset + s.nbytes > len(bufs[s.binding]):
            raise DriveError(f"binding {s.binding}: subspan at {s.offset} of {s.nbytes} bytes exceeds the "
                             f"{len(bufs[s.binding])}-byte range")
    for s, a in zip(spans, call.inputs):
        bufs[s.binding][s.offset : s.offset + s.nbytes] = s.store(a).view(np.uint8)
    paths = []
    for b, buf in enumerate(bufs):
        paths.append(directory / f"binding{b}.bin")
        buf.tofile(paths[-1])
    return paths, list(zip(written, call.outputs))


def _error(expected: np.ndarray, got: np.ndarray) -> tuple[float, float]:
    """(max abs error, scale): scale is max |expected| (at least F32_FLOOR)."""
    if expected.dtype.kind != "f":
        return float(np.max(np.abs(expected.astype(np.int64) - got.astype(np.int64)), initial=0)), 1.0
    fin = np.isfinite(expected)
    err = float(np.max(np.abs(expected[fin].astype(np.float64) - got[fin]), initial=0.0))
    return err, max(F32_FLOOR, float(np.max(np.abs(expected[fin]), initial=0.0)))


def compare_outputs(out_dir: Path, expected: list[tuple[Subspan, np.ndarray]], exact: bool) -> tuple[str | None, float]:
    """Checks a run's written regions (out<b>.bin in |out_dir|, unpacked when encoded) against the
    host run's outputs:
    bit for bit when |exact|, else floats within F32_TOLERANCE of the output's scale (max abs error /
    max |expected|) with the same non-finite values in the same places, integers exactly.
    Returns (the problem or None, the worst relative error)."""
    worst = 0.0
    for i, (s, want) in enumerate(expected):
        buf = np.fromfile(out_dir / f"out{s.binding}.bin", dtype=np.uint8)
        # np.asarray(order="C"), not np.ascontiguousarray: that makes a 0-d output (an amax of
        # dynamic quantization) 1-d, and a shape () to (1,) compare failed as "non-finite values differ".
        got = np.asarray(s.load(buf[s.offset : s.offset + s.nbytes].view(s.dtype)).reshape(want.shape), order="C")
        if exact:
            want_bytes = np.asarray(want, order="C").reshape(-1).view(np.uint8)
            if not np.array_equal(got.reshape(-1).view(np.uint8), want_bytes):
                differ = int(np.sum(got.reshape(-1).view(np.uint8) != want_bytes))
                err, scale = _error(want, got)
                return (f"output {i} (binding {s.binding}): {differ} bytes differ, max abs error {err:.3g} "
                        f"(scale {scale:.3g})"), err / scale
            continue
        if want.dtype.kind == "f":
            if not np.array_equal(np.isfinite(want), np.isfinite(got)) or not np.array_equal(
                    want[~np.isfinite(want)], got[~np.isfinite(want)], equal_nan=True):
                return f"output {i} (binding {s.binding}): non-finite values differ", float("inf")
            err, scale = _error(want, got)
            worst = max(worst, err / scale)
            if err / scale > F32_TOLERANCE:
                return (f"output {i} (binding {s.binding}): max abs error {err:.3g} (scale {scale:.3g}, "
                        f"relative {err / scale:.3g}) > {F32_TOLERANCE}"), worst
        elif not np.array_equal(want, got):
            return (f"output {i} (binding {s.binding}): {int(np.sum(want != got))} of {want.size} values "
                    f"differ"), float("inf")
    return None, worst


def dispatch_command(runner: list[str], library: Path, export_index: int, d: Dispatch,
                     inputs: list[Path]) -> list[str]:
    """`runner` (a hal_runner, possibly under qemu) running export `export_index` of `library`
    over `d`'s whole workgroup grid with `d`'s push constants and the binding files `inputs`."""
    cmd = runner + [str(library), "--export", str(export_index), "--workgroup-count",
                    ",".join(str(c) for c in d.workgroup_count)]
    if d.constants:
        cmd += ["--constants", ",".join(str(c) for c in d.constants)]
    for p in inputs:
        cmd += ["--binding", str(p)]
    return cmd


def _run(cmd: list[str], what: str) -> float:
    start = time.monotonic()
    out = processes.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        raise DriveError(f"{what} runner failed (exit {out.returncode}): {last_line(out.stderr)}")
    return time.monotonic() - start


def _compare(d: Dispatch, ref_dir: Path, dut_dir: Path) -> str | None:
    written = [s for s in d.subspans if s.access in ("writeonly", "readwrite")]
    if not written:
        return "dispatch writes no binding"
    for s in written:
        ref = np.fromfile(ref_dir / f"out{s.binding}.bin", dtype=np.uint8)
        before = np.fromfile(ref_dir.parent / f"binding{s.binding}.bin", dtype=np.uint8)
        if np.array_equal(ref[s.offset : s.offset + s.nbytes], before[s.offset : s.offset + s.nbytes]):
            return f"binding {s.binding}: the reference run left the output region unchanged"
        dut = np.fromfile(dut_dir / f"out{s.binding}.bin", dtype=np.uint8)
        a = ref[s.offset : s.offset + s.nbytes].view(s.dtype)
        b = dut[s.offset : s.offset + s.nbytes].view(s.dtype)
        if s.dtype.kind == "f":
            if np.isnan(a).any() != np.isnan(b).any() or not np.array_equal(np.isnan(a), np.isnan(b)):
                return f"binding {s.binding}: NaN pattern differs"
            fin = ~np.isnan(a)
            err = float(np.max(np.abs(a[fin].astype(np.float64) - b[fin]), initial=0.0))
            scale = max(1.0, float(np.max(np.abs(a[fin]), initial=0.0)))
            if err / scale > F32_TOLERANCE:
                return f"binding {s.binding}: max abs error {err:.3g} (scale {scale:.3g}) > {F32_TOLERANCE}"
        elif not np.array_equal(a, b):
            return f"binding {s.binding}: {int(np.sum(a != b))} of {a.size} values differ"
    return None


def _corrupt(d: Dispatch, out_dir: Path) -> None:
    """Flips one value in the first written region of |d|'s output (negative testing)."""
    s = next(s for s in d.subspans if s.access in ("writeonly", "readwrite"))
    path = out_dir / f"out{s.binding}.bin"
    buf = np.fromfile(path, dtype=np.uint8)
    region = buf[s.offset : s.offset + s.nbytes].view(s.dtype)
    region[region.size // 2] += s.dtype.type(0.5 if s.dtype.kind == "f" else 1)
    buf.tofile(path)


def _target(name_or_file: str) -> IreeTarget:
    """A target file (e.g. one accelerator_target derived) or a name in common/targets."""
    if name_or_file.endswith(".yaml"):
        return load_target(name_or_file)
    return named_target(name_or_file)


def check(module: Path, target_name: str, reference_name: str, vlen: int | None,
          host_runner: Path | None = None, riscv_runner: Path | None = None, keep: Path | None = None,
          analysis: Path | None = None, reference_analysis: Path | None = None,
          tamper: str | None = None, qemu: Path | None = None,
          shipped: dict[str, str] | None = None, run_unmatched: bool = False,
          activations: Path | None = None, target_module: Path | None = None, every_call: bool = False) -> int:
    """Returns 0 when every dispatch passed, else 1. `tamper` names an export whose
    riscv64 output is corrupted before comparing (proves the comparison can fail).
    `shipped`: the executables' sha256 a manifest records: the riscv build compiled here must
    be those very bytes (it is what runs), else the check fails before running anything.
    `run_unmatched`: a riscv dispatch without a host counterpart of the same bindings (data
    tiling packs operands in a layout chosen per target) is still run under qemu, and must run,
    but cannot be compared; the summary counts it apart ("run only"), never as compared, and
    says so when nothing could be compared.
    `activations`: a golden .npz (input_<i>/output_<i>): every dispatch's inputs are the tensors it
    gets when the host build runs the model on those inputs (runtime.hal_runner.activations), and
    its outputs are compared with the host run's: the host runner must reproduce them bit for bit
    (the placement is right) when the reference is IREE's untuned build, and the riscv run within
    F32_TOLERANCE. Without it, inputs are fixed-seed random numbers. `every_call`: every call of
    each export in that run, not only its first.
    `target_module`: compile the riscv side from this module instead (negative testing: a
    deliberately wrong executable must fail)."""
    target = _target(target_name)
    reference = _target(reference_name)
    if not reference.runnable_on_host:
        raise SystemExit(f"check_dispatches: reference target '{reference_name}' is not runnable on this machine")
    if not target.is_riscv:
        raise SystemExit(f"check_dispatches: target '{target_name}' is not a riscv target")
    vlen = vlen or target.vector_bits
    host_runner = host_runner or find_runner("hal_runner")
    riscv_runner = riscv_runner or find_runner("hal_runner_riscv64")
    for path, what in ((analysis, "analysis"), (reference_analysis, "reference analysis")):
        if path is not None and not path.is_file():
            raise SystemExit(f"check_dispatches: {path}: {what} file not found")
    for tool in (host_runner, riscv_runner):
        if not tool.exists():
            raise SystemExit(f"check_dispatches: runner {tool} not found")
    qemu = qemu or find_qemu()
    if not qemu.is_file():
        raise SystemExit(f"check_dispatches: qemu {qemu} not found (Bazel fetches @{QEMU_REPOSITORY}; "
                         f"or pass --qemu)")
    version = subprocess.run([str(qemu), "--version"], capture_output=True, text=True).stdout.strip()
    version = version.splitlines()[0] if version else str(qemu)
    ref_cmd = [str(host_runner)]
    dut_cmd = [str(qemu), "-cpu", f"rv64,v=true,vlen={vlen}", "-L", str(find_riscv_sysroot()), str(riscv_runner)]

    with scratch_directory("check_dispatches_") as tmp:
        work = keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        start = time.monotonic()
        tuned_names = {}
        compiled = []
        for t, a, m in ((reference, reference_analysis, module), (target, analysis, target_module or module)):
            if a is None:
                compiled.append(compile_target(m, t, work))
                continue
            c, tuned = compile_tuned(m, t, a, work)
            compiled.append(c)
            applied = [e["name"] for e in tuned.entries if e["status"] == "applied"]
            tuned_names[t.name] = set(applied)
            print(f"{t.name}: tuned by {a.name}: {len(applied)} of {len(tuned.entries)} dispatches "
                  f"with analysis tiles, every config landed")
        ref_c, dut_c = compiled
        print(f"compiled {module.name} for {reference.name} and {target.name} in {time.monotonic() - start:.1f} s")
        captured = None
        if activations is not None:
            from runtime.hal_runner import activations as act

            try:
                captured = act.capture(module, reference, activations, work / "traced", every_call)
            except act.CaptureError as err:
                raise SystemExit(f"check_dispatches: {err}") from None
            kept = "every call" if every_call else "each export's first call"
            print(f"activations: {reference.name} run of {module.name} on {activations.name} traced "
                  f"({act.TRACE_FLAG}): {len(captured.calls)} exports, {sum(captured.counts.values())} calls, "
                  f"{captured.nbytes / 1e6:.1f} MB kept ({kept}), outputs within "
                  f"{captured.golden_error:.2g} of the golden, {captured.seconds:.1f} s")
        if shipped is not None:
            from common.vmfb_executables import sha256_set

            if sha256_set(dut_c.libraries_sha256) != sha256_set(shipped):
                raise SystemExit(f"check_dispatches: {target.name}: the executables compiled here are not "
                                 f"the shipped ones the manifest records")
            print(f"{target.name}: the executables run are the shipped ones "
                  f"({', '.join(h[:12] for h in sha256_set(shipped))})")
        ref_libs = {name: (lib, idx) for lib in ref_c.libraries for name, idx in _library_exports(ref_cmd, lib).items()}
        dut_libs = {name: (lib, idx) for lib in dut_c.libraries for name, idx in _library_exports(dut_cmd, lib).items()}

        names = sorted(set(ref_c.dispatches) | set(dut_c.dispatches))
        if run_unmatched:  # only what the riscv build has is checked; the host's extras are not ours
            names = sorted(dut_c.dispatches)
        passed = run_only = 0
        emu_time = 0.0
        rng = np.random.default_rng(SEED)
        for i, name in enumerate(names):
            try:
                rd, dd = ref_c.dispatches.get(name), dut_c.dispatches.get(name)
                if captured is not None:
                    ddir = work / f"d{i:03d}"
                    seconds, numerics = _check_on_activations(
                        name, rd, dd, captured, (ref_cmd, ref_libs, reference.name), (dut_cmd, dut_libs, target.name),
                        ddir, reference_analysis is None, tamper == name, rng)
                    emu_time += seconds
                    passed += 1
                    wg = "x".join(str(c) for c in dd.workgroup_count)
                    tag = ", tuned" if name in tuned_names.get(target.name, ()) else ""
                    print(f"PASS {name} (workgroups {wg}{tag}, {numerics}, {target.name} {seconds:.2f} s)")
                    continue
                if run_unmatched and dd is not None and not _matches(rd, dd):
                    if dd.error:
                        raise DriveError(f"{target.name}: {dd.error}")
                    if name not in dut_libs:
                        raise DriveError("export not found in the dumped libraries")
                    ddir = work / f"d{i:03d}"
                    (ddir / "dut").mkdir(parents=True, exist_ok=True)
                    lib, idx = dut_libs[name]
                    args = dispatch_command(dut_cmd, lib, idx, dd, _fill(dd, rng, ddir))
                    seconds = _run(args, target.name)
                    emu_time += seconds
                    run_only += 1
                    print(f"RAN {name} (no host dispatch with these bindings: run under qemu on random inputs, not compared; "
                          f"{target.name} {seconds:.2f} s)")
                    continue
                if rd is None or dd is None:
                    raise DriveError(f"export exists only for {target.name if rd is None else reference.name}")
                for d, who in ((dd, target.name), (rd, reference.name)):
                    if d.error:
                        raise DriveError(f"{who}: {d.error}")
                if (rd.workgroup_count is None) or rd.binding_lengths != dd.binding_lengths or rd.constants != dd.constants:
                    raise DriveError("binding ranges or push constants differ between the targets")
                # Byte regions, not shapes: bufferized (tuned) IR may add unit dims (1x8x8 vs 8x8).
                if [(s.binding, s.offset, s.nbytes, s.dtype) for s in rd.subspans] != [
                    (s.binding, s.offset, s.nbytes, s.dtype) for s in dd.subspans
                ]:
                    raise DriveError("binding layouts differ between the targets")
                if name not in ref_libs or name not in dut_libs:
                    raise DriveError("export not found in the dumped libraries")
                ddir = work / f"d{i:03d}"
                (ddir / "ref").mkdir(parents=True, exist_ok=True)
                (ddir / "dut").mkdir(parents=True, exist_ok=True)
                inputs = _fill(dd, rng, ddir)
                results = {}
                for label, cmd, libs, d in (("ref", ref_cmd, ref_libs, rd), ("dut", dut_cmd, dut_libs, dd)):
                    lib, idx = libs[name]
                    args = dispatch_command(cmd, lib, idx, d, inputs)
                    for s in {s.binding for s in d.subspans if s.access != "readonly"}:
                        args += ["--output", f"{s}={ddir / label / f'out{s}.bin'}"]
                    results[label] = _run(args, {"ref": reference.name, "dut": target.name}[label])
                emu_time += results["dut"]
                if tamper == name:
                    _corrupt(dd, ddir / "dut")
                problem = _compare(dd, ddir / "ref", ddir / "dut")
                if problem:
                    raise DriveError(problem)
                passed += 1
                wg = "x".join(str(c) for c in dd.workgroup_count)
                tag = ", tuned" if name in tuned_names.get(target.name, ()) else ""
                print(f"PASS {name} (workgroups {wg}{tag}, {target.name} {results['dut']:.2f} s)")
            except DriveError as err:
                print(f"FAIL {name}: {err}")
            if keep is None:
                # Each dispatch's binding files hold whole resources (ResNet-18's weights: ~47 MB
                # per binding file, per side): drop them as soon as the dispatch is done.
                shutil.rmtree(work / f"d{i:03d}", ignore_errors=True)
        print(f"{target.name} vs {reference.name}: qemu vlen={vlen} ({version}), {emu_time:.1f} s under emulation, "
              f"{time.monotonic() - start:.1f} s in all")
        print(f"{len(names)} checked, {passed} passed"
              + (f", {run_only} run only (not compared)" if run_unmatched and captured is None else ""))
        if run_unmatched and not passed:
            print(f"{target.name}: no dispatch has a host counterpart in the same layout: every one ran "
                  f"under qemu, none was compared (numerics unchecked)")
        return 0 if names and passed + run_only == len(names) else 1


def _run_dispatch(side: tuple[list[str], dict, str], name: str, d: Dispatch, inputs: list[Path],
                  out_dir: Path) -> float:
    """Runs export |name| of |side| (runner command, its libraries' exports, target name) on the
    binding files |inputs|, writing each written binding to out_dir/out<b>.bin; returns seconds."""
    cmd, libs, who = side
    lib, idx = libs[name]
    args = dispatch_command(cmd, lib, idx, d, inputs)
    for b in sorted({s.binding for s in d.subspans if s.access != "readonly"}):
        args += ["--output", f"{b}={out_dir / f'out{b}.bin'}"]
    return _run(args, who)


def _logical_shape(s: Subspan) -> tuple[int, ...]:
    """The tensor a subspan holds, unit dims aside (bufferized IR may add them)."""
    return tuple(n for n in (s.logical_shape if s.encoding else s.shape) if n != 1)


def _is_reencoding(d: Dispatch) -> bool:
    """One operand in, the same tensor out, in another layout: IREE's stream-level encode
    dispatches (`_encoding_N_encode_...`, packing constants), added after flow, so never traced."""
    if len(d.subspans) != 2:
        return False
    src, dst = d.subspans
    return (src.access == "readonly" and dst.access != "readonly" and src.dtype == dst.dtype
            and (src.encoding or dst.encoding) is not None and _logical_shape(src) == _logical_shape(dst))


def _check_on_activations(name: str, rd: Dispatch | None, dd: Dispatch | None, captured: "Capture",
                          ref_side: tuple[list[str], dict, str], dut_side: tuple[list[str], dict, str],
                          ddir: Path, exact: bool, tamper: bool, rng: np.random.Generator) -> tuple[float, str]:
    """Runs the riscv dispatch |dd| on the host run's activations for |name|, every captured call
    (each operand in the dispatch's own layout), and compares its outputs with the host run's; the
    host dispatch |rd|, when there is one, runs on its own placement of the same tensors and must
    reproduce the host run (bit for bit when |exact|): that proves the tensors sit where the
    dispatches read them. Returns (seconds under qemu, what was compared); raises DriveError
    naming the problem (and the call, when there are several)."""
    from runtime.hal_runner.activations import Call

    if dd is None:
        raise DriveError(f"export exists only for {ref_side[2]}")
    if dd.error:
        raise DriveError(f"{dut_side[2]}: {dd.error}")
    if name not in dut_side[1]:
        raise DriveError("export not found in the dumped libraries")
    calls = captured.calls.get(name, [])
    what = "real activations" + (f" ({len(calls)} calls)" if len(calls) > 1 else "")
    if not calls:
        if not _is_reencoding(dd):
            raise DriveError("no activations: the traced host run never called this export")
        # Data movement only (pack / re-layout): values do not matter, the output must be the input.
        src, dst = dd.subspans
        x = rng.uniform(-1.0, 1.0, size=src.logical_shape or src.shape) if src.dtype.kind == "f" else \
            rng.integers(-8, 8, size=src.logical_shape or src.shape)
        x = x.astype(src.dtype)
        calls = [Call([x], [x.reshape(dst.logical_shape or dst.shape)])]
        what = "random input (untraced re-encoding: output must be the input)"
    host = rd is not None and not rd.error and rd.workgroup_count is not None and name in ref_side[1]
    if not host:
        what += f"; no {ref_side[2]} dispatch of this name to check the placement"
    seconds, worst = 0.0, 0.0
    for k, call in enumerate(calls):
        cdir = ddir / f"call{k}"
        which = f"call {k + 1} of {len(calls)}: " if len(calls) > 1 else ""
        placed = None  # the host's binding files and expected outputs, reused when the layouts agree
        if host:
            (cdir / "ref").mkdir(parents=True, exist_ok=True)
            inputs, expected = placed = _place(rd, call, cdir / "ref")
            _run_dispatch(ref_side, name, rd, inputs, cdir / "ref")
            problem, _ = compare_outputs(cdir / "ref", expected, exact)
            if problem:
                raise DriveError(f"{which}the {ref_side[2]} runner does not reproduce the {ref_side[2]} run: {problem}")
        (cdir / "dut").mkdir(parents=True, exist_ok=True)
        layout = lambda d: (d.binding_lengths, [(s.binding, s.offset, s.nbytes, s.dtype, s.encoding) for s in d.subspans])
        if placed is not None and layout(rd) == layout(dd):
            inputs, expected = placed
        else:
            inputs, expected = _place(dd, call, cdir / "dut")
        seconds += _run_dispatch(dut_side, name, dd, inputs, cdir / "dut")
        if tamper:
            _corrupt(dd, cdir / "dut")
        problem, err = compare_outputs(cdir / "dut", expected, exact=False)
        if problem:
            raise DriveError(which + problem)
        worst = max(worst, err)
        if len(calls) > 1:  # a call's files are done with; the last stays for --keep
            if k + 1 < len(calls):
                shutil.rmtree(cdir, ignore_errors=True)
    return seconds, f"{what}, max error {worst:.2g} of scale"


def _matches(rd, dd) -> bool:
    """Whether the host dispatch `rd` can be compared with the riscv one `dd`: the same bindings
    in the same layout. A packed operand's storage shape carries its tiles (16x64x8x1 on the
    host, 8x64x16x1 on riscv for one 128x64 matrix: same bytes, other order), so shapes are
    compared too, unit dims aside (bufferized IR may add them)."""
    def layout(d):
        return [(s.binding, s.offset, s.nbytes, s.dtype, tuple(n for n in s.shape if n != 1))
                for s in d.subspans]

    return (rd is not None and not rd.error and rd.workgroup_count is not None
            and rd.binding_lengths == dd.binding_lengths and rd.constants == dd.constants
            and layout(rd) == layout(dd))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("module", type=Path, help="input MLIR (bytecode or text)")
    parser.add_argument("--target", default="riscv64_rvv", help="riscv target: a name in common/targets or a target .yaml file")
    parser.add_argument("--reference", default="host", help="host target to check against")
    parser.add_argument("--vlen", type=int, default=None, help="qemu VLEN (default: the target's vector_bits)")
    parser.add_argument("--analysis", type=Path, default=None,
                        help="analysis.json for --target: run the tuned dispatches, compiled as codegen does")
    parser.add_argument("--reference-analysis", type=Path, default=None,
                        help="analysis.json for --reference (default: the reference is IREE's untuned defaults)")
    parser.add_argument("--host-runner", type=Path, default=None,
                        help="host hal_runner (default: found next to this file, in runfiles or bazel-bin)")
    parser.add_argument("--riscv-runner", type=Path, default=None, help="riscv64 hal_runner (default: as above)")
    parser.add_argument("--qemu", type=Path, default=None,
                        help="qemu-riscv64 to run it (default: @qemu_user_backport's, qemu 10)")
    parser.add_argument("--keep", type=Path, default=None, help="keep binaries and buffers in this folder")
    parser.add_argument("--shipped", type=Path, default=None, metavar="MANIFEST",
                        help="a manifest (runtime.manifest) whose executables the riscv build must be")
    parser.add_argument("--run-unmatched", action="store_true",
                        help="run (not compare) riscv dispatches whose bindings no host dispatch has "
                             "(data-tiled builds: packed layouts are chosen per target)")
    parser.add_argument("--activations", type=Path, default=None, metavar="GOLDEN_NPZ",
                        help="inputs from a host run of the model on this golden .npz (real activations), "
                             "outputs compared with that run's (default: fixed-seed random inputs)")
    parser.add_argument("--every-call", action="store_true",
                        help="with --activations: run every call of each export in the host run, not only its first")
    parser.add_argument("--target-module", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--tamper", metavar="EXPORT", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    for path, what in ((args.module, "input module"), (args.activations, "golden activations file"),
                       (args.target_module, "target module")):
        if path is not None and not path.is_file():
            print(f"check_dispatches: {path}: {what} not found", file=sys.stderr)
            return 2
    if args.every_call and args.activations is None:
        print("check_dispatches: --every-call needs --activations (the calls are the traced run's)", file=sys.stderr)
        return 2
    try:
        shipped = None
        if args.shipped is not None:
            try:
                shipped = json.loads(args.shipped.read_text())["executables_sha256"]
            except (OSError, ValueError, KeyError) as err:
                print(f"check_dispatches: {args.shipped}: not a manifest with executables_sha256 ({err})",
                      file=sys.stderr)
                return 2
        return check(args.module, args.target, args.reference, args.vlen, args.host_runner, args.riscv_runner,
                     args.keep, args.analysis, args.reference_analysis, args.tamper, args.qemu, shipped,
                     args.run_unmatched, args.activations, args.target_module, args.every_call)
    except TargetError as err:
        print(f"check_dispatches: {err}", file=sys.stderr)
        return 2
    except SystemExit as err:
        if isinstance(err.code, str):
            print(err.code, file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main())
