"""Checks every dispatch of a model on riscv64 (under qemu) against the host.

    python -m runtime.hal_runner.check_dispatches MODULE.mlirbc \
        [--target riscv64_rvv] [--reference host] [--vlen N]

MODULE is MLIR (bytecode or text) IREE accepts, e.g. a model import's
`.mlirbc`. Both targets are compiled with their common/targets flags plus
`--iree-llvmcpu-link-embedded=false`, so each HAL executable is a system
shared library; `--iree-hal-dump-executable-binaries-to` writes them out.
Everything a dispatch needs is read from the compiled IR with IREE's Python
bindings:

- `--compile-to=executable-targets`: the host program's `stream.cmd.dispatch`
  (workload, push constants, binding ranges) and each `hal.executable.export`
  (its materialized workgroup-count region, evaluated here);
- `--iree-hal-dump-executable-sources-to`: each binding's
  `hal.interface.binding.subspan` (offset, access, tensor type).

Each export is then run with the same fixed-seed inputs by `hal_runner`
natively (reference) and by the riscv64 `hal_runner` under
`qemu-riscv64-static -cpu rv64,v=true,vlen=VLEN`, and every written binding
region is compared. A dispatch that cannot be driven is a failure with its
reason. Prints one line per dispatch and `N checked, N passed`; exit status 1
when any dispatch failed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from common.targets import IreeTarget, TargetError, named_target

HERE = Path(__file__).parent
QEMU = "qemu-riscv64-static"
RISCV_SYSROOT = "/usr/riscv64-linux-gnu"
RISCV_LINKER = "riscv64-linux-gnu-ld"
SEED = 20261123
F32_TOLERANCE = 1e-5


class DriveError(Exception):
    """A dispatch cannot be driven; the message is the reason."""


# --------------------------------------------------------------------------
# Compiling
# --------------------------------------------------------------------------


def _compile_flags(target: IreeTarget) -> list[str]:
    flags = target.compile_flags() + ["--iree-llvmcpu-link-embedded=false"]
    if target.is_riscv:
        linker = shutil.which(RISCV_LINKER)
        if not linker:
            raise SystemExit(f"check_dispatches: {RISCV_LINKER} not found (Debian binutils-riscv64-linux-gnu)")
        flags.append(f"--iree-llvmcpu-system-linker-path={linker}")
    return flags


def compile_target(module: Path, target: IreeTarget, workdir: Path) -> "CompiledTarget":
    from iree.compiler import tools

    flags = _compile_flags(target) + ["--mlir-print-debuginfo=false"]
    host_ir = tools.compile_file(
        str(module), extra_args=flags + ["--compile-to=executable-targets"], output_file=None
    )
    bins = workdir / f"{target.name}_binaries"
    srcs = workdir / f"{target.name}_sources"
    tools.compile_file(
        str(module),
        extra_args=flags
        + [f"--iree-hal-dump-executable-binaries-to={bins}", f"--iree-hal-dump-executable-sources-to={srcs}"],
        output_file=str(workdir / f"{target.name}.vmfb"),
    )
    return CompiledTarget(target, host_ir.decode(), sorted(bins.glob("*.so")), sorted(srcs.glob("*.mlir")))


# --------------------------------------------------------------------------
# Reading the IR
# --------------------------------------------------------------------------


def _walk(op, visit):
    visit(op)
    for region in op.regions:
        for block in region.blocks:
            for child in block.operations:
                _walk(child.operation, visit)


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

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize


@dataclass
class Dispatch:
    export: str
    workgroup_count: tuple[int, int, int] | None = None
    constants: list[int] = field(default_factory=list)
    binding_lengths: list[int] = field(default_factory=list)
    subspans: list[Subspan] = field(default_factory=list)
    error: str | None = None


_DTYPES = {
    "f32": np.float32, "f16": np.float16, "f64": np.float64,
    "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "i1": np.int8,
}


def _tensor_of_dispatch_type(type_text: str, context) -> tuple[str, tuple[int, ...], np.dtype]:
    """`!iree_tensor_ext.dispatch.tensor<readonly:tensor<8x27xf32>>` -> parts."""
    from iree.compiler import ir

    inner = type_text.split("<", 1)[1].rsplit(">", 1)[0]
    access, tensor_text = inner.split(":", 1)
    ttype = ir.RankedTensorType(ir.Type.parse(tensor_text, context=context))
    if not ttype.has_static_shape:
        raise DriveError(f"binding type {tensor_text} has a dynamic shape")
    if ttype.encoding is not None:
        raise DriveError(f"binding type {tensor_text} has an encoding")
    elem = str(ttype.element_type)
    if elem not in _DTYPES:
        raise DriveError(f"element type {elem} not supported")
    return access, tuple(ttype.shape), np.dtype(_DTYPES[elem])


class CompiledTarget:
    def __init__(self, target: IreeTarget, host_ir: str, libraries: list[Path], sources: list[Path]):
        from iree.compiler import ir

        self.target = target
        self.libraries = libraries
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
                for ref in ir.ArrayAttr(op.attributes["entry_points"]):
                    name = str(ref).rsplit("::@", 1)[-1]
                    sites.setdefault(name, op)

        _walk(module.operation, visit)
        for name, export in exports.items():
            d = self.dispatches[name] = Dispatch(name)
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
        from iree.compiler import ir

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
                        access, shape, dtype = _tensor_of_dispatch_type(str(op.results[0].type), self.context)
                        found.append(Subspan(binding, offset, access, shape, dtype))

                _walk(func, collect)
                d.subspans = found
                if not found:
                    raise DriveError("no binding subspans found in the dispatch source")
            except DriveError as err:
                d.error = str(err)


# --------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------


def _library_exports(runner: list[str], library: Path) -> dict[str, int]:
    out = subprocess.run(runner + [str(library), "--info"], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"check_dispatches: {library.name}: {out.stderr.strip()}")
    exports = {}
    for line in out.stdout.splitlines():
        if line.startswith("export "):
            parts = line.split()
            exports[parts[2].split("=", 1)[1]] = int(parts[1])
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
            else:
                values = rng.integers(-8, 8, size=count).astype(s.dtype)
            buf[s.offset : s.offset + s.nbytes] = values.view(np.uint8)
        path = directory / f"binding{b}.bin"
        buf.tofile(path)
        paths.append(path)
    return paths


def _run(cmd: list[str], what: str) -> float:
    start = time.monotonic()
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        raise DriveError(f"{what} runner failed (exit {out.returncode}): {out.stderr.strip()}")
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


def check(module: Path, target_name: str, reference_name: str, vlen: int | None,
          host_runner: Path, riscv_runner: Path, keep: Path | None = None) -> int:
    target = named_target(target_name)
    reference = named_target(reference_name)
    if not reference.runnable_on_host:
        raise SystemExit(f"check_dispatches: reference target '{reference_name}' is not runnable on this machine")
    if not target.is_riscv:
        raise SystemExit(f"check_dispatches: target '{target_name}' is not a riscv target")
    vlen = vlen or target.vector_bits
    for tool in (host_runner, riscv_runner):
        if not tool.exists():
            raise SystemExit(f"check_dispatches: runner {tool} not found")
    qemu = shutil.which(QEMU)
    if not qemu:
        raise SystemExit(f"check_dispatches: {QEMU} not found (Debian qemu-user-static)")
    ref_cmd = [str(host_runner)]
    dut_cmd = [qemu, "-cpu", f"rv64,v=true,vlen={vlen}", "-L", RISCV_SYSROOT, str(riscv_runner)]

    with tempfile.TemporaryDirectory(prefix="check_dispatches_") as tmp:
        work = keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        start = time.monotonic()
        ref_c = compile_target(module, reference, work)
        dut_c = compile_target(module, target, work)
        print(f"compiled {module.name} for {reference.name} and {target.name} in {time.monotonic() - start:.1f} s")
        ref_libs = {name: (lib, idx) for lib in ref_c.libraries for name, idx in _library_exports(ref_cmd, lib).items()}
        dut_libs = {name: (lib, idx) for lib in dut_c.libraries for name, idx in _library_exports(dut_cmd, lib).items()}

        names = sorted(set(ref_c.dispatches) | set(dut_c.dispatches))
        passed = 0
        emu_time = 0.0
        rng = np.random.default_rng(SEED)
        for i, name in enumerate(names):
            try:
                rd, dd = ref_c.dispatches.get(name), dut_c.dispatches.get(name)
                if rd is None or dd is None:
                    raise DriveError(f"export exists only for {target.name if rd is None else reference.name}")
                for d, who in ((dd, target.name), (rd, reference.name)):
                    if d.error:
                        raise DriveError(f"{who}: {d.error}")
                if (rd.workgroup_count is None) or rd.binding_lengths != dd.binding_lengths or rd.constants != dd.constants:
                    raise DriveError("binding ranges or push constants differ between the targets")
                if [(s.binding, s.offset, s.shape, s.dtype) for s in rd.subspans] != [
                    (s.binding, s.offset, s.shape, s.dtype) for s in dd.subspans
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
                    args = cmd + [str(lib), "--export", str(idx), "--workgroup-count",
                                  ",".join(str(c) for c in d.workgroup_count)]
                    if d.constants:
                        args += ["--constants", ",".join(str(c) for c in d.constants)]
                    for p in inputs:
                        args += ["--binding", str(p)]
                    for s in {s.binding for s in d.subspans if s.access != "readonly"}:
                        args += ["--output", f"{s}={ddir / label / f'out{s}.bin'}"]
                    results[label] = _run(args, {"ref": reference.name, "dut": target.name}[label])
                emu_time += results["dut"]
                problem = _compare(dd, ddir / "ref", ddir / "dut")
                if problem:
                    raise DriveError(problem)
                passed += 1
                wg = "x".join(str(c) for c in dd.workgroup_count)
                print(f"PASS {name} (workgroups {wg}, {target.name} {results['dut']:.2f} s)")
            except DriveError as err:
                print(f"FAIL {name}: {err}")
        print(f"{target.name} vs {reference.name}: qemu vlen={vlen}, {emu_time:.1f} s under emulation")
        print(f"{len(names)} checked, {passed} passed")
        return 0 if names and passed == len(names) else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("module", type=Path, help="input MLIR (bytecode or text)")
    parser.add_argument("--target", default="riscv64_rvv", help="riscv target (common/targets/<name>.yaml)")
    parser.add_argument("--reference", default="host", help="host target to check against")
    parser.add_argument("--vlen", type=int, default=None, help="qemu VLEN (default: the target's vector_bits)")
    parser.add_argument("--host-runner", type=Path, default=HERE / "hal_runner")
    parser.add_argument("--riscv-runner", type=Path, default=HERE / "hal_runner_riscv64")
    parser.add_argument("--keep", type=Path, default=None, help="keep binaries and buffers in this folder")
    args = parser.parse_args(argv)
    if not args.module.is_file():
        print(f"check_dispatches: {args.module}: input module not found", file=sys.stderr)
        return 2
    try:
        return check(args.module, args.target, args.reference, args.vlen, args.host_runner, args.riscv_runner, args.keep)
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
