"""Runs one peer's GEMM or convolution harness under qemu, checks its numbers, and prices what it executed.

The harnesses (peers/harness/, built by peers/BUILD.bazel for riscv64) read A and B from files,
run the library's GEMM once untimed and once inside the perf window markers, and write C.
Here, per (harness, shape):

1. Fixed-seed inputs are drawn (`inputs`), the harness runs under the plugin-capable qemu
   (//tools/qemu:qemu-riscv64) with `-L` the trixie riscv64 sysroot (@peers_riscv64) and the
   `insn_classes` plugin with the hardware description's caches (perf/memory_model.py's
   `plugin_cache_args`), at `vlen=` the description's VLEN, exactly as perf/measure.py runs one
   IREE dispatch (same guest directory scheme, same `-R`, PATH-only environment).
2. C is compared with numpy on the host (float64 reference): the largest error must be within
   `TOLERANCE` of the reference's largest magnitude, else `PeerError` (a wrong harness never
   yields a figure).
3. The window's blocks are priced by perf/mca.py on the description's `model_core` and its
   traffic by perf/memory_model.py: the same code that prices IREE's dispatches.

Nothing is skipped: a harness, qemu, sysroot or library that is missing is a `PeerError`.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np

from common.hardware import Hardware
from common import processes
from common.targets import named_target
from common.scratch import scratch_directory
from perf import counts as cnt
from perf import mca
from perf import memory_model as mem
from perf import guest
from perf.guest import GUEST_RUN_PREFIX, GUEST_RUN_ROOT
from peers.conv_shapes import ConvShape
from peers.shapes import GemmShape

# Largest |C - reference| allowed, as a fraction of the reference's largest magnitude; the
# riscv dispatch tests allow IREE's code the same (runtime/hal_runner/check_dispatches.py).
TOLERANCE = 1e-5
SEED = 50  # issue 50
# Each library harness's library in the sysroot (its RUNPATH is that directory).
LIBRARIES = {
    "openblas": "usr/lib/riscv64-linux-gnu/openblas-serial/libopenblas.so.0",
    "blis": "usr/lib/riscv64-linux-gnu/blis-serial/libblis.so.4",
    "xnnpack": "usr/lib/riscv64-linux-gnu/libXNNPACK.so.0.20241108",
    "eigen": "usr/lib/riscv64-linux-gnu/libstdc++.so.6",  # Eigen is headers; its C++ runtime is not
}
# Libraries the harnesses' libraries load in turn (NEEDED), beyond glibc and libgcc_s.
DEPENDENCIES = {"xnnpack": "usr/lib/riscv64-linux-gnu/libpthreadpool.so.0"}


def workspace_path(path: Path) -> Path:
    """`path` relative to the workspace under `bazel run` (BUILD_WORKSPACE_DIRECTORY), else as given."""
    ws = os.environ.get("BUILD_WORKSPACE_DIRECTORY")
    return path if path.is_absolute() or not ws else Path(ws) / path


def add_run_arguments(p) -> None:
    """The options of a CLI that runs harnesses under the plugin qemu and prices them
    (peers.measure, peers.onnxrt): the sysroot's VERSION, qemu, the plugin, the hardware, LLVM."""
    p.add_argument("--peers-repo", required=True, type=Path, metavar="VERSION",
                   help="@peers_riscv64's VERSION file (its package pins; the sysroot is beside it)")
    p.add_argument("--qemu", required=True, type=Path)
    p.add_argument("--plugin", required=True, type=Path, help="libinsn_classes.so")
    p.add_argument("--hardware", required=True, type=Path, action="append")
    mca.add_llvm_bin_argument(p)


class PeerError(RuntimeError):
    """A peer cannot be run, measured or trusted; the message names the culprit."""


@dataclass
class Run:
    """One harness run: what the library said it chose, the numerics, and the plugin's counts."""

    info: dict[str, str]
    max_abs_error: float
    reference_max: float
    counts: cnt.DispatchCounts | None


def inputs(shape: GemmShape) -> tuple[np.ndarray, np.ndarray]:
    """A[M][K] and B ([K][N], or [N][K] for trans_b), uniform in [-1, 1), from a seed of the shape."""
    rng = np.random.default_rng([SEED, shape.m, shape.n, shape.k, int(shape.trans_b)])
    a = rng.uniform(-1.0, 1.0, (shape.m, shape.k)).astype(np.float32)
    b_shape = (shape.n, shape.k) if shape.trans_b else (shape.k, shape.n)
    b = rng.uniform(-1.0, 1.0, b_shape).astype(np.float32)
    return a, b


def reference(shape: GemmShape, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    b64 = b.astype(np.float64)
    return a.astype(np.float64) @ (b64.T if shape.trans_b else b64)


def qemu_command(qemu: Path, sysroot: Path, vlen: int, directory: Path) -> list[str]:
    """qemu for a harness run, as perf.measure runs IREE's dispatches (perf.guest): the guest's
    root is the sysroot plus empty loader files, made under `directory`; run it with
    `env=guest.environment()`."""
    return guest.qemu_command(qemu, guest.guest_root(sysroot, Path(directory)), vlen)


def check_tools(harness: Path, qemu: Path, sysroot: Path, plugin: Path | None = None) -> None:
    for path, what in ((harness, "riscv64 harness"), (qemu, "qemu-riscv64 (//tools/qemu:qemu-riscv64)")):
        if not Path(path).is_file():
            raise PeerError(f"{path}: {what} not found")
    if plugin is not None and not Path(plugin).is_file():
        raise PeerError(f"{plugin}: insn_classes plugin not found")
    if not (Path(sysroot) / "lib" / "ld-linux-riscv64-lp64d.so.1").is_file():
        raise PeerError(f"{sysroot}: not a riscv64 sysroot (no lib/ld-linux-riscv64-lp64d.so.1; @peers_riscv64)")


def _run_harness(harness: Path, key: str, argv: list[str], files: dict[str, np.ndarray], out_file: str,
                 *, qemu: Path, sysroot: Path, vlen: int, plugin: Path | None,
                 plugin_args: list[str] | None) -> tuple[dict[str, str], np.ndarray, cnt.DispatchCounts | None]:
    """Runs `harness argv` under qemu in a fresh guest directory holding `files` (name -> array,
    written raw); returns its `info` lines, the float32 array it wrote to `out_file` and the
    plugin's counts if a plugin is given. `key` names the problem in errors."""
    check_tools(harness, qemu, sysroot, plugin)
    with scratch_directory(GUEST_RUN_PREFIX, GUEST_RUN_ROOT, suffix="") as tmp:
        here = Path(tmp)
        shutil.copy(harness, here / "harness")
        for name, array in files.items():
            array.tofile(here / name)
        cmd = qemu_command(qemu, sysroot, vlen, here)
        counts_path = here / "counts.txt"
        if plugin is not None:
            spec = ",".join([str(Path(plugin).absolute()), f"out={counts_path}", *(plugin_args or [])])
            cmd = [cmd[0], "-plugin", spec, *cmd[1:]]
        proc = processes.run(cmd + ["./harness", *argv], capture_output=True, text=True, cwd=here,
                             env=guest.environment())
        name = Path(harness).name
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
            raise PeerError(f"{name}: failed under qemu on {key} (exit {proc.returncode}): {last}")
        info = {}
        for line in proc.stdout.splitlines():
            if line.startswith("info "):
                _, k, value = (line.split(" ", 2) + [""])[:3]
                info[k] = value
        try:
            out = np.fromfile(here / out_file, dtype=np.float32)
        except FileNotFoundError:
            raise PeerError(f"{name}: wrote no output on {key}") from None
        counts = None
        if plugin is not None:
            try:
                counts = cnt.read_counts(counts_path)
            except cnt.CountsError as e:
                raise PeerError(f"{name}: {key}: {str(e).split(': ', 1)[-1]}") from None
    return info, out, counts


def _checked(name: str, key: str, got: np.ndarray, ref: np.ndarray) -> tuple[float, float]:
    """(max |got - ref|, max |ref|); a wrong size or result is a PeerError."""
    if got.size != ref.size:
        raise PeerError(f"{name}: wrote {got.size} floats on {key}, expected {ref.size}")
    err = float(np.max(np.abs(got.reshape(ref.shape) - ref)))
    scale = float(np.max(np.abs(ref)))
    if not np.isfinite(err) or err > TOLERANCE * scale:
        raise PeerError(f"{name}: wrong result on {key}: max |C - numpy| = {err:.3g}, "
                        f"allowed {TOLERANCE:g} x {scale:.3g}")
    return err, scale


def run(harness: Path, shape: GemmShape, *, qemu: Path, sysroot: Path, vlen: int,
        plugin: Path | None = None, plugin_args: list[str] | None = None) -> Run:
    """Runs the harness on the shape's inputs; checks C; returns the plugin's counts if a plugin
    is given. The guest sees the same paths on every machine (perf/measure.py says why)."""
    a, b = inputs(shape)
    argv = [str(shape.m), str(shape.n), str(shape.k), str(int(shape.trans_b)), "a.bin", "b.bin", "c.bin"]
    info, c, counts = _run_harness(harness, shape.key, argv, {"a.bin": a, "b.bin": b}, "c.bin", qemu=qemu,
                                   sysroot=sysroot, vlen=vlen, plugin=plugin, plugin_args=plugin_args)
    err, scale = _checked(Path(harness).name, shape.key, c, reference(shape, a, b))
    return Run(info=info, max_abs_error=err, reference_max=scale, counts=counts)


def run_conv(harness: Path, shape: ConvShape, *, qemu: Path, sysroot: Path, vlen: int,
             plugin: Path | None = None, plugin_args: list[str] | None = None) -> Run:
    """`run` for a convolution harness (harness/conv_main.c) on the shape's inputs."""
    x, f = conv_inputs(shape)
    argv = [str(v) for v in (shape.n, shape.h, shape.w, shape.c, shape.kh, shape.kw, shape.stride, shape.stride,
                             shape.pad, shape.pad, shape.pad, shape.pad, shape.oc, shape.groups)]
    info, y, counts = _run_harness(harness, shape.key, argv + ["in.bin", "filter.bin", "out.bin"],
                                   {"in.bin": x, "filter.bin": f}, "out.bin", qemu=qemu, sysroot=sysroot,
                                   vlen=vlen, plugin=plugin, plugin_args=plugin_args)
    err, scale = _checked(Path(harness).name, shape.key, y, conv_reference(shape, x, f))
    return Run(info=info, max_abs_error=err, reference_max=scale, counts=counts)


def conv_inputs(shape: ConvShape) -> tuple[np.ndarray, np.ndarray]:
    """The NHWC input and the [oc][kh][kw][c / groups] filter, uniform in [-1, 1), from a seed of the shape."""
    rng = np.random.default_rng([SEED, shape.n, shape.h, shape.w, shape.c, shape.kh, shape.kw, shape.stride,
                                 shape.pad, shape.oc, shape.groups])
    x = rng.uniform(-1.0, 1.0, (shape.n, shape.h, shape.w, shape.c)).astype(np.float32)
    f = rng.uniform(-1.0, 1.0, (shape.oc, shape.kh, shape.kw, shape.c // shape.groups)).astype(np.float32)
    return x, f


def conv_reference(shape: ConvShape, x: np.ndarray, f: np.ndarray) -> np.ndarray:
    """The convolution in float64 (NHWC out), by numpy: a sum over the window's taps."""
    p = shape.pad
    xp = np.pad(x.astype(np.float64), ((0, 0), (p, p), (p, p), (0, 0)))
    gic, goc = shape.c // shape.groups, shape.oc // shape.groups
    out = np.zeros((shape.n, shape.oh, shape.ow, shape.oc))
    f64 = f.astype(np.float64)
    for i in range(shape.kh):
        for j in range(shape.kw):
            window = xp[:, i:i + shape.stride * shape.oh:shape.stride, j:j + shape.stride * shape.ow:shape.stride, :]
            for g in range(shape.groups):
                xs = window[..., g * gic:(g + 1) * gic]  # [n][oh][ow][gic]
                ws = f64[g * goc:(g + 1) * goc, i, j, :]  # [goc][gic]
                out[..., g * goc:(g + 1) * goc] += xs @ ws.T
    return out


def mattr(hw: Hardware) -> str:
    """llvm-mc's -mattr for disassembling what ran: the riscv target's features at the VLEN."""
    return ",".join(named_target("riscv64_rvv").for_vector_bits(hw.compute.vector_bits).cpu_features)


def price(counts: cnt.DispatchCounts, hw: Hardware, macs: int) -> dict:
    """Model cycles, share of the FMA peak and memory-aware figures of one window on `hw`, by
    the functions that price IREE's dispatches (perf/mca.py, perf/memory_model.py)."""
    if hw.model_core is None:
        raise PeerError(f"{hw.name}: no model_core: nothing to price on")
    regions: dict[mca.Region, None] = {}
    for block in counts.priced_blocks:
        for region, _ in mca.regions_of(block):
            regions.setdefault(region)
    try:
        cycles, fenced = region_cycles(sorted(regions, key=lambda r: (r.code, r.slot if r.slot is not None else -1)),
                                       hw.model_core, mattr(hw))
    except mca.McaError as err:
        raise PeerError(f"{hw.name} ({hw.model_core}): {err}") from None
    model_cycles = round(sum((cycles[r] * n for b in counts.priced_blocks for r, n in mca.regions_of(b)), Fraction(0)))
    fences = sum(fenced.get(r, 0) * n for b in counts.priced_blocks for r, n in mca.regions_of(b))
    classes = counts.by_class()
    vector = sum(v for k, v in classes.items() if k.startswith("vector_") or k == "vset")
    weighted, unknown = counts.lmul_weighted_x8()
    memory = mem.memory_aware(hw, counts, model_cycles, macs)
    return {
        "instructions": counts.instructions,
        "classes": classes,
        "vector_share": round(vector / counts.instructions, 6) if counts.instructions else 0.0,
        "vector_fma": counts.vector_fma,
        "vector_lmul_weighted": weighted / 8,
        "vector_lmul_unknown": unknown,
        "blocks": len(counts.blocks),
        "model_cycles": model_cycles,
        "fma_peak_share": round(macs / (model_cycles * hw.macs_per_cycle), 6) if model_cycles else None,
        "memory": memory.model_dump(mode="json"),
        "unpriced_fences": fences,
    }


# llvm-mca 19 has no scheduling class for `fence` nor `fence.tso` on sifive-p670 ("unable to
# resolve scheduling class for write variant"). IREE's dispatches execute none; OpenBLAS's buffer
# lock executes a few `fence` per call, outside its kernels; ONNX Runtime's Run executes some
# `fence.tso` too (its own and its libraries' synchronisation). They are left out of the priced
# text and counted (`unpriced_fences` in each result), never guessed.
UNPRICED = ("fence", "fence.tso")


def region_cycles(regions: list[mca.Region], core: str, attrs: str) -> tuple[dict[mca.Region, Fraction], dict]:
    """perf.mca.region_cycles, except that `UNPRICED` instructions are left out of each region's
    text: (cycles per execution of each region, {region: instructions left out per execution}).
    A region without them is priced on exactly the text perf.mca prices."""
    codes = {r.code: r.insns for r in regions}
    asm = dict(zip(codes, mca.disassemble(list(codes.items()), attrs)))
    texts, left_out = [], {}
    for region in regions:
        lines = [l for l in asm[region.code] if l.split()[0] not in UNPRICED]
        if len(lines) != len(asm[region.code]):
            left_out[region] = len(asm[region.code]) - len(lines)
        instruments = None
        if region.slot is not None and region.slot != cnt.SLOT_UNKNOWN:
            instruments = cnt.slot_instruments(region.slot)
        texts.append((lines or ["nop"], instruments))  # a block of fences alone: priced as one nop
    return dict(zip(regions, mca.text_cycles(texts, core))), left_out

