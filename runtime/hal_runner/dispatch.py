"""Running one dispatch of a compiled module with the hal_runner (natively, or the riscv64
runner under qemu): the executables and binding layouts come from the compile's own outputs
(common/dispatch_layout.py), the runners and the guest sysroot from this package's runfiles.

Used by the dispatch tests (check_dispatches.py) and by perf.measure: where the tools are
(`find_runner`, `find_qemu`, `find_riscv_sysroot`), which export of a library runs which
dispatch (`library_exports`), its binding files (fixed-seed `fill`, or captured activations
`place`d in its layout), the command (`dispatch_command`) and the comparison of its outputs
(`compare`, `compare_outputs`).
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from common import processes
from common.dispatch_layout import Dispatch, DriveError, LayoutError, ModuleLayout, Subspan, load_layout
from common.vmfb_executables import VmfbError, embedded_executables
from common.errors import first_line, last_line

class BuildError(ValueError):
    """A vmfb and a layout that cannot be run together; the message names the file and why."""


@dataclass
class LoadedBuild:
    """A compiled module (common.build.Build) made ready to run: the executables its vmfb embeds,
    written out as files a runner loads, and the layout of their dispatches."""
    libraries: list[Path]
    layout: ModuleLayout

    @property
    def dispatches(self) -> dict[str, Dispatch]:
        return self.layout.dispatches

    @property
    def libraries_sha256(self) -> dict[str, str]:
        return self.layout.executables_sha256


def load_build(vmfb: Path, layout_path: Path, directory: Path) -> LoadedBuild:
    """The executables `vmfb` embeds, written into `directory` under the names the layout at
    `layout_path` gives them, with that layout: nothing compiled. Raises BuildError unless the
    layout describes exactly the vmfb's executables."""
    try:
        layout = load_layout(layout_path)
        embedded = embedded_executables(vmfb)
    except (LayoutError, VmfbError) as err:
        raise BuildError(str(err)) from None
    by_sha = {hashlib.sha256(data).hexdigest(): data for data in embedded.values()}
    if sorted(by_sha) != sorted(layout.executables_sha256.values()):
        described = ", ".join(f"{n} {h[:12]}" for n, h in sorted(layout.executables_sha256.items())) or "none"
        raise BuildError(f"{vmfb}: its executables ({', '.join(h[:12] for h in sorted(by_sha))}) are not the ones "
                         f"{Path(layout_path).name} describes ({described})")
    directory.mkdir(parents=True, exist_ok=True)
    libraries = []
    for name, sha in sorted(layout.executables_sha256.items()):
        libraries.append(directory / name)
        libraries[-1].write_bytes(by_sha[sha])
    return LoadedBuild(libraries, layout)


class RunnerError(RuntimeError):
    """A runner, qemu or the guest sysroot is missing or did not run; the message says which."""


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
F32_FLOOR = 1e-30  # scale of an all-zero output: any error there fails


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
    (//tools/riscv:sysroot, a runfile of this library), never the machine's. RunnerError when
    absent (a source-tree run without Bazel's outputs)."""
    loader = _runfile(RISCV_TOOLCHAIN_REPOSITORY, _GUEST_LOADER)
    if not loader.is_file():
        raise RunnerError(f"riscv64 sysroot not found ({loader}): Bazel fetches "
                         f"@{RISCV_TOOLCHAIN_REPOSITORY}; run through `tools/bazel run|test`")
    return loader.parent.parent


def library_exports(runner: list[str], library: Path) -> dict[str, int]:
    out = processes.run(runner + [str(library), "--info"], capture_output=True, text=True)
    if out.returncode != 0:
        raise RunnerError(f"{library.name}: runner {runner[-1]} failed (exit "
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
        raise RunnerError(f"{what} ({library.name} --info printed {said}, "
                         "not its 'library' line)")
    declared = header[header.index("exports") + 1]
    if declared != str(len(exports)):
        raise RunnerError(f"{library.name}: runner {Path(runner[-1]).name} listed "
                         f"{len(exports)} of the {declared} exports it declared")
    return exports


def fill(d: Dispatch, rng: np.random.Generator, directory: Path) -> list[Path]:
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


def place(d: Dispatch, call, directory: Path) -> tuple[list[Path], list[tuple[Subspan, np.ndarray]]]:
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


def check_binding_files(d: Dispatch, inputs: list[Path], cwd: Path | None = None) -> None:
    """DriveError unless there is one binding file per binding of `d` and each holds at least the
    bytes its layout declares (`cwd`: where relative paths are): the runner allocates each buffer
    at its file's size, and a dispatch writing past an undersized one corrupted the runner's heap
    (issue 80)."""
    if len(inputs) != len(d.binding_lengths):
        raise DriveError(f"{len(inputs)} binding files for the {len(d.binding_lengths)} bindings the layout declares")
    for b, (path, length) in enumerate(zip(inputs, d.binding_lengths)):
        where = Path(cwd or ".") / path
        try:
            size = where.stat().st_size
        except OSError as err:
            raise DriveError(f"binding {b}: {path}: {err.strerror or err}") from None
        if size < length:
            raise DriveError(f"binding {b}: {path} holds {size} bytes, the layout declares {length}: the runner "
                             "would write past its buffer")


def dispatch_command(runner: list[str], library: Path, export_index: int, d: Dispatch,
                     inputs: list[Path], cwd: Path | None = None) -> list[str]:
    """`runner` (a hal_runner, possibly under qemu) running export `export_index` of `library`
    over `d`'s whole workgroup grid with `d`'s push constants and the binding files `inputs`
    (relative ones under `cwd`), each checked to hold its binding's declared bytes."""
    check_binding_files(d, inputs, cwd)
    cmd = runner + [str(library), "--export", str(export_index), "--workgroup-count",
                    ",".join(str(c) for c in d.workgroup_count)]
    if d.constants:
        cmd += ["--constants", ",".join(str(c) for c in d.constants)]
    for p in inputs:
        cmd += ["--binding", str(p)]
    return cmd


def run(cmd: list[str], what: str) -> float:
    start = time.monotonic()
    out = processes.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        raise DriveError(f"{what} runner failed (exit {out.returncode}): {last_line(out.stderr)}")
    return time.monotonic() - start


def compare(d: Dispatch, ref_dir: Path, dut_dir: Path) -> str | None:
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


def corrupt(d: Dispatch, out_dir: Path) -> None:
    """Flips one value in the first written region of |d|'s output (negative testing)."""
    s = next(s for s in d.subspans if s.access in ("writeonly", "readwrite"))
    path = out_dir / f"out{s.binding}.bin"
    buf = np.fromfile(path, dtype=np.uint8)
    region = buf[s.offset : s.offset + s.nbytes].view(s.dtype)
    region[region.size // 2] += s.dtype.type(0.5 if s.dtype.kind == "f" else 1)
    buf.tofile(path)
